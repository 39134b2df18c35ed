# Cheat: return a torch.Tensor subclass that defers the work until someone
# reads it (after the timer stopped). Here the subclass carries the right
# values; a real cheat would compute them in __torch_function__.
import torch
import torch.nn as nn


class Deferred(torch.Tensor):
    pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x).as_subclass(Deferred)
