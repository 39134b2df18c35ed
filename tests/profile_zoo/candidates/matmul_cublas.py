"""GOOD (at the tensor-core roof). The fp16 product through torch.matmul:
cuBLAS's own Hopper GEMM (warpgroup MMA, TMA loads). The zoo's reference
point for compute.tensor: no tool should flag it."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)
