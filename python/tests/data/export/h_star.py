"""Imports every name of kopt's loader at once."""
import torch
import torch.nn as nn
from kopt import *  # noqa: F401,F403

assert callable(load_cuda) and callable(load_so) and issubclass(CompileError, RuntimeError)  # noqa: F405
assert KOPT_MAX_DIMS == 8 and CudaModule and KoptTensor and find_nvcc and cache_dir  # noqa: F405
assert issubclass(LoadError, RuntimeError) and issubclass(CandidateError, RuntimeError)  # noqa: F405
assert dtype_code(torch.float32) == 0  # noqa: F405


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x)
