# Cheat: remember the result per input *contents*; repeated contents replay
# it. Logs hit/miss lines to $KOPT_TEST_CACHE_LOG when set (for the test).
import hashlib
import os

import torch.nn as nn
import torch.nn.functional as F

_cache = {}


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        key = hashlib.sha1(x.detach().cpu().numpy().tobytes()).hexdigest()
        hit = key in _cache
        if not hit:
            _cache[key] = F.relu(self.linear(x))
        log = os.environ.get("KOPT_TEST_CACHE_LOG")
        if log:
            with open(log, "a") as f:
                f.write("hit\n" if hit else "miss\n")
        return _cache[key].clone()
