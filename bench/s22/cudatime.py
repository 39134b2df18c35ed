# The median time of a GPU callable over n calls, by CUDA events around each
# (one warm-up call first): the bench/s22 probes' one timer.
import statistics

import torch


def median_ms(fn, n=30):
    fn(); torch.cuda.synchronize()
    ts = []
    for _ in range(n):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize(); ts.append(a.elapsed_time(b))
    return statistics.median(ts)
