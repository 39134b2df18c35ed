# Honest: softmax for tasks/level1/04_softmax.py computed in place on a
# private scratch copy of the input, then copied into a fresh output. The
# in-place steps touch only the scratch tensor (never the input, never a
# parameter) and the output shares memory with nothing: it must pass the
# mutation and alias checks.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        tmp = x.clone()
        tmp.sub_(tmp.amax(dim=1, keepdim=True))
        tmp.exp_()
        tmp.div_(tmp.sum(dim=1, keepdim=True))
        out = torch.empty_like(x)
        out.copy_(tmp)
        return out
