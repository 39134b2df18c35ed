#!/usr/bin/env python3
"""Judge a KernelBench solution file the way KernelBench's harness does.

    python3 kernelbench_eval.py REF.py NEW.py [--device cuda] [--trials 5]

prints a one-line JSON verdict as the last line of stdout: compiled, correct,
max_diff, parameter agreement, and on CUDA runtime statistics for ModelNew and
Model. Exit status 0 when correct, 1 when not, 2 for a usage error.

This is our own code. It follows the procedure of `eval_kernel_against_ref`
and `run_and_check_correctness` in KernelBench's src/eval.py
(github.com/ScalingIntelligence/KernelBench; src/kernelbench/eval.py in newer
trees), step by step:

 1. The reference source is exec'd into a fresh dict `context`; Model,
    get_init_inputs and get_inputs are taken from it.
 2. set_seed(seed) (torch.manual_seed and torch.cuda.manual_seed), then
    init_inputs = get_init_inputs(), tensors moved to the device.
 3. Under no_grad: set_seed(seed); Model(*init_inputs).
 4. The custom source is exec'd into the *same* `context` (the default CUDA
    backend's load_custom_model; `--loader module` instead imports it from a
    temporary file, as KernelBench does for Triton/CuTe/TileLang) and ModelNew
    taken from it. Any exception here: compiled=false.
 5. Under no_grad: set_seed(seed); ModelNew(*init_inputs); both models moved
    to the device. An exception here: compiled=true, correct=false.
 6. Correctness: torch.manual_seed(seed), then one trial seed per trial from
    torch.randint(0, 2**32 - 1); per trial, under no_grad: set_seed(trial
    seed); inputs = get_inputs() on the device; set_seed(trial seed) before
    fetching each model; output = Model(*inputs); output_new =
    ModelNew(*inputs); shapes must match and torch.allclose(output,
    output_new, atol, rtol) hold (KernelBench v0/v0.1: atol = rtol = 1e-2;
    newer trees use 1e-4 for fp32 through get_tolerance_for_precision). Every
    trial must pass.
 7. Timing, only when correct and on CUDA: set_seed(seed); inputs =
    get_inputs(); 3 warm-up calls each followed by a synchronize; then per
    trial a pair of CUDA events around one call and a synchronize
    (time_execution_with_cuda_event). The same timing is done for Model, so
    the speedup is Model's mean over ModelNew's.

Where we differ, on purpose: forwards returning a tuple are compared output by
output (KernelBench compares one tensor and would report a runtime error;
`notes` says so); `--device cpu` runs steps 1-6 on the CPU (KernelBench needs
CUDA); and the verdict also says whether ModelNew's parameters and buffers,
built under the seed, equal Model's in the same order (KernelBench does not
copy weights, so a ModelNew that creates them differently fails there).
"""

import argparse
import importlib.util
import json
import math
import os
import sys
import tempfile
import traceback

import torch


def set_seed(seed):
    torch.manual_seed(seed)
    torch.cuda.manual_seed(seed)  # lazy: harmless without CUDA


def to_device(x, device):
    return x.to(device) if isinstance(x, torch.Tensor) else x


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device=device)


def error_name(e):
    return f"{type(e).__module__}.{type(e).__name__}"


def flat_outputs(out):
    if isinstance(out, (tuple, list)):
        flat = []
        for o in out:
            flat.extend(flat_outputs(o))
        return flat
    return [out]


def load_custom(new_src, new_path, context, loader):
    if loader == "context":
        exec(compile(new_src, new_path or "<custom>", "exec"), context)
        return context.get("ModelNew")
    # As load_custom_model_with_tempfile: the source written to a temporary .py and imported.
    fd, path = tempfile.mkstemp(suffix=".py")
    with os.fdopen(fd, "w") as f:
        f.write(new_src)
    try:
        spec = importlib.util.spec_from_file_location("temp_module", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return getattr(module, "ModelNew")
    finally:
        os.unlink(path)


def same_tensors(a, b):
    """(values, names) agreement of two lists of (name, tensor)."""
    if len(a) != len(b):
        return False, False
    values = all(x.shape == y.shape and x.dtype == y.dtype and torch.equal(x.detach().cpu(), y.detach().cpu())
                 for (_, x), (_, y) in zip(a, b))
    return values, [n for n, _ in a] == [n for n, _ in b]


def time_calls(fn, inputs, device, trials, warmup=3):
    with torch.no_grad():
        for _ in range(warmup):
            fn(*inputs)
            torch.cuda.synchronize(device=device)
        times = []
        for _ in range(trials):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn(*inputs)
            end.record()
            torch.cuda.synchronize(device=device)
            times.append(start.elapsed_time(end))
    n = len(times)
    mean = sum(times) / n
    std = math.sqrt(sum((t - mean) ** 2 for t in times) / (n - 1)) if n > 1 else 0.0
    ordered = sorted(times)
    median = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    return {"mean": mean, "std": std, "min": ordered[0], "max": ordered[-1], "median": median, "num_trials": n,
            "hardware": torch.cuda.get_device_name(device), "device": str(device)}


def evaluate(ref_src, new_src, device="cuda", seed=42, trials=5, perf_trials=100, atol=1e-2, rtol=1e-2,
             loader="context", new_path=None, measure=True):
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:  # "cuda": the current device, named by index
        device = torch.device("cuda", torch.cuda.current_device())
    if device.type == "cuda":
        torch.cuda.set_device(device)
    v = {"compiled": False, "correct": False, "device": str(device), "loader": loader, "seed": seed,
         "atol": atol, "rtol": rtol, "notes": []}

    context = {}
    exec(compile(ref_src, "<reference>", "exec"), context)
    Model, get_init_inputs, get_inputs = context["Model"], context["get_init_inputs"], context["get_inputs"]
    set_seed(seed)
    init_inputs = [to_device(x, device) for x in get_init_inputs()]
    with torch.no_grad():
        set_seed(seed)
        original = Model(*init_inputs)

    try:
        ModelNew = load_custom(new_src, new_path, context, loader)
        if ModelNew is None:
            raise NameError("the custom source defines no ModelNew")
        synchronize(device)
    except Exception as e:
        v.update(error=f"{e}", error_name=error_name(e), traceback=traceback.format_exc())
        return v
    v["compiled"] = True

    try:
        with torch.no_grad():
            set_seed(seed)
            custom = ModelNew(*init_inputs)
            original = original.to(device)
            custom = custom.to(device)
            synchronize(device)
    except Exception as e:
        v.update(error=f"{e}", error_name=error_name(e), traceback=traceback.format_exc())
        return v
    v["params_match"], v["param_names_match"] = same_tensors(list(original.named_parameters()),
                                                             list(custom.named_parameters()))
    v["buffers_match"], v["buffer_names_match"] = same_tensors(list(original.named_buffers()),
                                                               list(custom.named_buffers()))

    torch.manual_seed(seed)
    trial_seeds = [torch.randint(0, 2 ** 32 - 1, (1,)).item() for _ in range(trials)]
    passed, max_diff, diffs = 0, 0.0, []
    try:
        with torch.no_grad():
            for trial_seed in trial_seeds:
                set_seed(trial_seed)
                inputs = [to_device(x, device) for x in get_inputs()]
                set_seed(trial_seed)
                model = original.to(device)
                set_seed(trial_seed)
                model_new = custom.to(device)
                output = model(*inputs)
                synchronize(device)
                output_new = model_new(*inputs)
                synchronize(device)
                outs, news = flat_outputs(output), flat_outputs(output_new)
                if len(outs) > 1 and "tuple output" not in " ".join(v["notes"]):
                    v["notes"].append("tuple output compared output by output; KernelBench's harness compares "
                                      "one tensor and would report a runtime error")
                if len(outs) != len(news) or any(a.shape != b.shape for a, b in zip(outs, news)):
                    v["error"] = (f"output shape mismatch: expected {[tuple(a.shape) for a in outs]}, got "
                                  f"{[tuple(getattr(b, 'shape', ())) for b in news]}")
                    v["error_name"] = "correctness_issue"
                    break
                ok = True
                for a, b in zip(outs, news):
                    if a.numel():
                        d = (a.double() - b.double()).abs()
                        max_diff = max(max_diff, d.max().item())
                        diffs.append(d.mean().item())
                    ok = ok and bool(torch.allclose(a, b, atol=atol, rtol=rtol))
                passed += ok
    except Exception as e:
        v.update(error=f"{e}", error_name=error_name(e), traceback=traceback.format_exc())
    v["trials"] = f"({passed} / {trials})"
    v["max_diff"] = max_diff
    v["avg_diff"] = sum(diffs) / len(diffs) if diffs else 0.0
    v["correct"] = passed == trials and "error" not in v

    if measure and v["correct"] and device.type == "cuda":
        set_seed(seed)
        inputs = [to_device(x, device) for x in get_inputs()]
        v["runtime_stats"] = time_calls(custom, inputs, device, perf_trials)
        v["ref_runtime_stats"] = time_calls(original, inputs, device, perf_trials)
        v["runtime_ms"] = v["runtime_stats"]["mean"]
        v["ref_runtime_ms"] = v["ref_runtime_stats"]["mean"]
        v["speedup"] = v["ref_runtime_ms"] / v["runtime_ms"] if v["runtime_ms"] > 0 else None
    return v


def finite(x):
    """JSON without NaN/Infinity tokens."""
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, dict):
        return {k: finite(y) for k, y in x.items()}
    if isinstance(x, list):
        return [finite(y) for y in x]
    return x


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("ref", help="KernelBench task file (Model, get_inputs, get_init_inputs)")
    p.add_argument("new", help="solution file defining ModelNew")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--trials", type=int, default=5, help="correctness trials (KernelBench: num_correct_trials)")
    p.add_argument("--perf-trials", type=int, default=100, help="timed calls (KernelBench: num_perf_trials)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--atol", type=float, default=1e-2)
    p.add_argument("--rtol", type=float, default=1e-2)
    p.add_argument("--loader", choices=["context", "module"], default="context",
                   help="context: exec in the reference's namespace (CUDA backend); module: import a temp file")
    p.add_argument("--no-perf", action="store_true", help="skip timing")
    a = p.parse_args(argv)
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        p.error("--device cuda but torch sees no CUDA device")
    with open(a.ref) as f:
        ref_src = f.read()
    with open(a.new) as f:
        new_src = f.read()
    v = evaluate(ref_src, new_src, device=a.device, seed=a.seed, trials=a.trials, perf_trials=a.perf_trials,
                 atol=a.atol, rtol=a.rtol, loader=a.loader, new_path=os.path.abspath(a.new), measure=not a.no_perf)
    v["ref"], v["new"] = a.ref, a.new
    sys.stdout.flush()
    print(json.dumps(finite(v)))
    return 0 if v["correct"] else 1


if __name__ == "__main__":
    sys.exit(main())
