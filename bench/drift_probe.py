"""Where does the ~11% bimodal drift of memory-bound timings come from?

Times torch.relu over a 512 MB tensor (01_relu's shape) the way kopt's timer
does (L2 read-flush before each call, CUDA events, median) while changing one
thing at a time, and prints one JSON line per measurement:

- "same":   the same input, again and again (process- or device-level state);
- "fresh":  a fresh copy of the input after a ballast allocation of varying
            size, beside the original (placement of the input);
- "out":    the original input into preallocated outputs (placement of the
            output);
- "dynamo": the original after importing torch._dynamo and compiling a
            function, as kopt's worker does;
with nvidia-smi's clocks before and after.

    python3 bench/drift_probe.py [TAG]
"""
import json
import statistics
import subprocess
import sys

import torch

TAG = sys.argv[1] if len(sys.argv) > 1 else ""
dev = torch.device("cuda")
l2 = torch.cuda.get_device_properties(0).L2_cache_size
flush = torch.zeros(2 * l2 // 4, device=dev)
flush_out = torch.empty((), device=dev)


def median_ms(fn, n=40):
    ts = []
    for _ in range(3):
        fn()
    for _ in range(n):
        torch.sum(flush, dim=0, out=flush_out)
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        r = fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
        del r
    return round(statistics.median(ts), 4)


def smi():
    q = "clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active"
    try:
        return subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:  # noqa: BLE001
        return str(e)


def emit(kind, i, **kw):
    print(json.dumps({"tag": TAG, "kind": kind, "i": i, **kw}), flush=True)


emit("smi", 0, smi=smi())
torch.manual_seed(0)
x0 = torch.randn(8192, 16384, device=dev)
for i in range(4):
    emit("same", i, ms=median_ms(lambda: torch.relu(x0)), ptr=hex(x0.data_ptr()))

keep = []
for i in range(10):
    keep.append(torch.empty(int((1 + (i * 7) % 5) * 300e6) // 4, device=dev))
    xi = x0.clone()
    keep.append(xi)
    emit("fresh", i, ms=median_ms(lambda: torch.relu(xi)), ptr=hex(xi.data_ptr()),
         beside=median_ms(lambda: torch.relu(x0)),
         allocated_gb=round(torch.cuda.memory_allocated() / 1e9, 2))
    o = torch.empty_like(x0)
    keep.append(o)
    emit("out", i, ms=median_ms(lambda: torch.clamp(x0, min=0, out=o)), ptr=hex(o.data_ptr()))
emit("smi", 1, smi=smi())
del keep
torch.cuda.empty_cache()

import torch._dynamo  # noqa: E402,F401

f = torch.compile(lambda t: torch.relu(t))
f(x0)
for i in range(3):
    emit("dynamo", i, eager=median_ms(lambda: torch.relu(x0)), compiled=median_ms(lambda: f(x0)))
emit("smi", 2, smi=smi())
