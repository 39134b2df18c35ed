"""Changes global torch state at import and exits from forward."""
import sys

import torch
import torch.nn as nn

torch.set_default_dtype(torch.float64)
torch.backends.cudnn.benchmark = True


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        sys.exit(5)
