"""Which kernels eager PyTorch and torch.compile launch for a task, and how
long each takes: a diagnostic for the tasks where compile beats kopt.

    python3 bench/s28/torch_kernels.py TASK.py [TASK.py ...]

Prints, per task and mode, the kernels of one call (name, microseconds,
count) from torch.profiler after warm-up, the strides of the output, and the
median of 50 CUDA-event timed calls.
"""
import importlib.util
import statistics
import sys

import torch
from torch.profiler import ProfilerActivity, profile


def load(path):
    spec = importlib.util.spec_from_file_location("task", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def timed(fn, inputs, n=50):
    times = []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(*inputs)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def show(label, fn, inputs):
    with torch.no_grad():
        for _ in range(5):
            out = fn(*inputs)
        torch.cuda.synchronize()
        ms = timed(fn, inputs)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn(*inputs)
            torch.cuda.synchronize()
    outs = out if isinstance(out, (tuple, list)) else [out]
    print(f"-- {label}: median {ms:.4f} ms; output strides "
          + ", ".join(str(tuple(o.stride())) for o in outs if torch.is_tensor(o)))
    rows = {}
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            t, c = rows.get(ev.name, (0.0, 0))
            us = ev.device_time if hasattr(ev, "device_time") else ev.cuda_time
            rows[ev.name] = (t + us, c + 1)
    for name, (t, c) in sorted(rows.items(), key=lambda kv: -kv[1][0]):
        print(f"   {t:9.1f} us  x{c}  {name[:150]}")


def main():
    torch.manual_seed(0)
    for path in sys.argv[1:]:
        mod = load(path)
        model = mod.Model(*mod.get_init_inputs()).cuda().eval()
        inputs = [x.cuda() if torch.is_tensor(x) else x for x in mod.get_inputs()]
        print(f"== {path}")
        show("eager", model, inputs)
        show("compile", torch.compile(model), inputs)
        show("eager channels_last input",
             model.to(memory_format=torch.channels_last),
             [x.contiguous(memory_format=torch.channels_last) if torch.is_tensor(x) and x.dim() == 4 else x
              for x in inputs])


if __name__ == "__main__":
    main()
