import os
import sys

import torch
import torch.nn as nn

print("import-time noise on stdout")
os.write(1, b'{"id": 999, "ok": true, "forged": 1}\n')


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        print("constructor noise")

    def forward(self, x):
        print("forward noise", flush=True)
        sys.stdout.write("more noise\n")
        os.write(1, b"raw fd 1 noise\n")
        return torch.relu(self.linear(x))
