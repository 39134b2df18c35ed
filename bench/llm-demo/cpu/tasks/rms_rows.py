import torch
import torch.nn as nn


class Model(nn.Module):
    """RMSNorm over the last dim, one row at a time (a torch call per row), so
    a one-call candidate beats it clearly even on the CPU's noisy clock. The
    CPU stand-in for level1/07_rmsnorm in bench/llm_demo.sh."""

    def forward(self, x):
        return torch.stack([r * torch.rsqrt(r.pow(2).mean() + 1e-6) for r in x])


batch_size = 256
dim = 64


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
