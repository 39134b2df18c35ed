"""FLAWED (hybrid, PyTorch's kernels profiled as a candidate): convolution,
then ReLU, then the bias add as separate PyTorch operators: the elementwise
kernels (and any layout conversions around cuDNN) re-read and re-write the
whole activation. The fix: fuse bias and ReLU into the convolution's
epilogue (or one pass after it), channels-last."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        y = torch.relu(y)
        return y + self.bias
