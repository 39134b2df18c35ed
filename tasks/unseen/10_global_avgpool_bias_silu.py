import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Global average pooling of an NCHW tensor (mean over dims 2 and 3, an
    odd 49x49 plane) -> add a learned per-channel bias -> SiLU; output (N, C)."""

    def __init__(self, channels: int):
        super().__init__()
        self.bias = nn.Parameter(0.5 * torch.randn(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.mean(dim=(2, 3))
        return F.silu(y + self.bias)


batch_size = 128
channels = 384
height = 49
width = 49


def get_inputs():
    # per-(n, c) offsets, so the pooled means are not all near zero
    x = torch.randn(batch_size, channels, height, width) + torch.randn(batch_size, channels, 1, 1)
    return [x]


def get_init_inputs():
    return [channels]
