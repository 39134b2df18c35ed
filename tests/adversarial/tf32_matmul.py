# Cheat under a strict fp32 contract: switch cuBLAS to TF32 tensor cores
# (about 8x the fp32 rate on an H200; ~3e-4 relative error where the fp32
# reference is near 1e-6). Under a contract that allows TF32 (--precision
# tf32) the same file is honest and must pass. kopt restores the flag before
# every reference call, so the reference stays fp32.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        torch.backends.cuda.matmul.allow_tf32 = True
        return torch.matmul(A, B)
