import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)
    def forward(self, x):
        return torch.relu(self.lin(x).half().float()) * 2.0
