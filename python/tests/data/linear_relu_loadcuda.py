"""Hybrid candidate using kopt.load_cuda for the whole forward."""
import os

import torch
import torch.nn as nn

import kopt

_SRC = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "linear_relu.cu")).read()
_k = kopt.load_cuda(_SRC, name="linear_relu_test")


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = torch.empty(x.shape[0], self.linear.weight.shape[0], device=x.device)
        _k([x, self.linear.weight, self.linear.bias], [y])
        return y
