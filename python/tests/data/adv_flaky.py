# Emulates a kernel with a race or an uninitialised read that shows only on
# some calls: every second call is wrong. The checked seeds (odd calls) look
# right; only running the same inputs again shows it.
import torch
import torch.nn as nn
import torch.nn.functional as F

_calls = [0]


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        _calls[0] += 1
        y = F.relu(self.linear(x))
        if _calls[0] % 2 == 0:
            y = y.clone()
            y.view(-1)[::2] = 0.5  # stale data in half the elements
        return y
