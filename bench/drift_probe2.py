"""Second drift probe: which part of kopt's timing loop brings the slow
stretches? (bench/drift_probe.py found none in a plain loop; in kopt's worker
blocks of ~10 calls ran ~11% slower, candidate and eager alike.)

Each variant times torch.relu over 01_relu's 512 MB input 150 times and
prints the median and the samples as a string: F (< 0.262 ms), S (slow).

    python3 bench/drift_probe2.py
"""
import json
import random
import statistics
import time

import torch

dev = torch.device("cuda")
l2 = torch.cuda.get_device_properties(0).L2_cache_size
flush = torch.zeros(2 * l2 // 4, device=dev)
flush_out = torch.empty((), device=dev)
x = torch.randn(8192, 16384, device=dev)
y = x.clone()
cycles = int(50 * 1980)
rng = random.Random(0)


def refresh(t):
    n = t.numel()
    j = rng.randrange(n)
    i = (j + 1 + rng.randrange(n - 1)) % n
    flat = t.view(-1)
    flat[j:j + 1].copy_(flat[i:i + 1])


def one(fn, spin=False, gap_s=0.0, pre=None):
    torch.cuda.synchronize()
    if gap_s:
        time.sleep(gap_s)
    if pre:
        pre()
    if spin:
        torch.cuda._sleep(cycles)
    torch.sum(flush, dim=0, out=flush_out)
    s = torch.cuda.Event(enable_timing=True)
    e = torch.cuda.Event(enable_timing=True)
    s.record()
    r = fn()
    e.record()
    torch.cuda.synchronize()
    del r
    return s.elapsed_time(e)


def report(name, ts):
    pattern = "".join("F" if t < 0.262 else "S" for t in ts)
    print(json.dumps({"variant": name, "median": round(statistics.median(ts), 4),
                      "slow_share": round(pattern.count("S") / len(pattern), 3), "pattern": pattern}),
          flush=True)


def relu_x():
    return torch.relu(x)


def relu_y():
    return torch.relu(y)


for _ in range(20):
    one(relu_x)
# The host's gap of 1 ms, bare and bridged: kopt's bridge (reads of the
# flush buffer, kopt.timing._bridge) or one spinning thread (torch.cuda._sleep).
import sys  # noqa: E402
import os  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from kopt import integrity  # noqa: E402
from kopt.device import Device  # noqa: E402
from kopt.timing import _bridge  # noqa: E402

integrity.install()

reads = _bridge(flush, Device("cuda:0"))


def bridged(work):
    def pre():
        work()
        time.sleep(0.001)
    return pre


report("gap_1ms", [one(relu_x, gap_s=0.001) for _ in range(150)])
report("gap_1ms_bridged_reads", [one(relu_x, pre=bridged(lambda: reads(1200.0))) for _ in range(150)])
report("gap_1ms_again", [one(relu_x, gap_s=0.001) for _ in range(150)])
report("gap_1ms_bridged_spin", [one(relu_x, pre=bridged(lambda: torch.cuda._sleep(int(1200 * 1980))))
                                 for _ in range(150)])
report("gap_1ms_third", [one(relu_x, gap_s=0.001) for _ in range(150)])
report("plain", [one(relu_x) for _ in range(150)])
report("spin", [one(relu_x, spin=True) for _ in range(150)])
report("gap_1ms", [one(relu_x, gap_s=0.001) for _ in range(150)])
report("refresh", [one(relu_x, pre=lambda: refresh(x)) for _ in range(150)])
report("spin_refresh", [one(relu_x, spin=True, pre=lambda: refresh(x)) for _ in range(150)])
# kopt's loop: two contenders in batches of 5, then 5 empty calls.
a, b = [], []
for r in range(30):
    for _ in range(5):
        a.append(one(relu_x, spin=True, pre=lambda: refresh(x)))
    for _ in range(5):
        b.append(one(relu_y, spin=True, pre=lambda: refresh(y)))
    for _ in range(5):
        one(lambda: None, spin=True)
report("kopt_loop_a", a)
report("kopt_loop_b", b)
report("plain_again", [one(relu_x) for _ in range(150)])
