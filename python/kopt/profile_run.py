"""Runs one candidate for a profiler: `python -m kopt.profile_run ...`.

Two modes, both on the task's inputs for one seed:

- `ncu`: warm-up calls, then `--calls` calls between cudaProfilerStart and
  cudaProfilerStop, so `ncu --profile-from-start off` sees only the
  candidate's own kernels (not input generation, not the reference);
- `timeline`: the same calls under the PyTorch profiler (CUPTI underneath):
  kernels per call, GPU busy time, launch gaps, copies, synchronisations and
  the host time per call. Prints one JSON object on the last line of stdout.

For `cuda` candidates the output buffers are allocated by the caller as in
timing (`torch.empty`, no kernels); hybrids run their own forward.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def _load(args):
    import torch

    from . import LOADED_SO
    from .device import Device
    from .inputs import make_inputs
    from .tasks import get_reference, load_candidate

    device = Device(args.device)
    task, ref = get_reference(args.task, device.torch_device, args.init_seed)
    inputs = make_inputs(task, args.seed, device.torch_device)
    spec = {"kind": args.kind, "so": args.candidate, "path": args.candidate}
    cand = load_candidate(spec, ref, device)
    if args.kind == "cuda":
        with torch.no_grad():
            outs = ref.forward(inputs, args.seed)
        cand.set_output_specs([o for o in outs if isinstance(o, torch.Tensor)])
    fn = cand.timed_fn(inputs)
    return device, fn, list(LOADED_SO)


def _is_cuda_event(evt) -> bool:
    import torch

    dt = getattr(evt, "device_type", None)
    cuda = getattr(torch.autograd, "DeviceType", None)
    return cuda is not None and dt == cuda.CUDA


def _interval(evt):
    tr = getattr(evt, "time_range", None)
    return (float(tr.start), float(tr.end)) if tr is not None else None


def timeline(fn, device, calls: int) -> dict:
    """Kernels and gaps over `calls` calls, per call (milliseconds)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    device.sync()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    device.sync()
    host_ms = (time.perf_counter() - t0) * 1e3 / calls

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    device.sync()
    events_ms = start.elapsed_time(end) / calls

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        device.sync()
    kernels: dict = {}
    order: list = []
    spans = []
    copies = memsets = syncs = launches_api = 0
    for evt in prof.events():
        name = evt.name
        if _is_cuda_event(evt):
            span = _interval(evt)
            low = name.lower()
            if low.startswith("memcpy"):
                copies += 1
            elif low.startswith("memset"):
                memsets += 1
            else:
                if name not in kernels:
                    kernels[name] = [0, 0.0]
                    order.append(name)
                kernels[name][0] += 1
                if span:
                    kernels[name][1] += (span[1] - span[0]) / 1e3
            if span:
                spans.append(span)
        else:
            if name in ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize") or (
                    name.startswith("cudaMemcpy") and "Async" not in name):
                syncs += 1
            if name in ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx"):
                launches_api += 1
    spans.sort()
    busy = gaps = 0.0
    cur = None
    for s, e in spans:
        if cur is None:
            cur = [s, e]
        elif s <= cur[1]:
            cur[1] = max(cur[1], e)
        else:
            busy += cur[1] - cur[0]
            gaps += s - cur[1]
            cur = [s, e]
    if cur is not None:
        busy += cur[1] - cur[0]
    n_kernels = sum(v[0] for v in kernels.values())
    # The last call's device sync is one of ours, not the candidate's.
    syncs = max(0, syncs - 1)
    return {
        "calls": calls,
        "host_ms": host_ms,
        "events_ms": events_ms,
        "kernel_launches_per_call": n_kernels / calls,
        "kernel_ms_per_call": sum(v[1] for v in kernels.values()) / calls,
        "busy_ms_per_call": busy / 1e3 / calls,
        "gap_ms_per_call": gaps / 1e3 / calls,
        "copies_per_call": copies / calls,
        "memsets_per_call": memsets / calls,
        "syncs_per_call": syncs / calls,
        "kernels": [{"name": n, "launches_per_call": kernels[n][0] / calls, "ms_per_call": kernels[n][1] / calls}
                    for n in order],
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m kopt.profile_run")
    p.add_argument("--task", required=True)
    p.add_argument("--kind", choices=["cuda", "hybrid"], required=True)
    p.add_argument("--candidate", required=True, help=".so for cuda, ModelNew .py for hybrid")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--mode", choices=["ncu", "timeline"], required=True)
    p.add_argument("--calls", type=int, default=1)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--init-seed", type=int, default=42)
    args = p.parse_args(argv)

    import torch

    # The Device's synchronize is the saved reference (kopt/integrity.py), as
    # in the worker; torch._dynamo first, since importing it rebinds
    # torch.manual_seed.
    try:
        import torch._dynamo  # noqa: F401
    except Exception:  # noqa: BLE001
        pass
    from . import integrity

    integrity.install()
    device, fn, loaded = _load(args)
    for _ in range(max(0, args.warmup)):
        fn()
    device.sync()
    if args.mode == "ncu":
        torch.cuda.profiler.start()
        for _ in range(max(1, args.calls)):
            fn()
        device.sync()
        torch.cuda.profiler.stop()
        result = {"calls": max(1, args.calls)}
    else:
        result = timeline(fn, device, max(1, args.calls))
    result["loaded_so"] = loaded
    sys.stdout.flush()
    print("\nKOPT_PROFILE_JSON " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
