"""Drives a real worker over the task suite: capture every task, evaluate
and time every solution. A manual smoke run for GPU machines (not a pytest
file):

    PYTHONPATH=python python3 python/tests/smoke_tasks.py [--device cuda:0] [--out FILE] [TASK_GLOB...]

Prints one summary line per step; --out writes every raw reply as JSON lines.
"""

import argparse
import glob
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from conftest import Worker  # noqa: E402

import kopt  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))


def solutions_for(task_path):
    folder = os.path.join(os.path.dirname(task_path), "solutions")
    stem = os.path.splitext(os.path.basename(task_path))[0]
    return sorted(glob.glob(os.path.join(folder, stem + ".cu")) + glob.glob(os.path.join(folder, stem + ".py")))


def short(r):
    if not r.get("ok"):
        e = r.get("error", {})
        return f"ERROR {e.get('kind')}: {e.get('message', '')[:300]}"
    return "ok"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--out", default=None)
    p.add_argument("--timing", action="store_true", help="also time each solution")
    p.add_argument("tasks", nargs="*")
    a = p.parse_args()
    tasks = [os.path.abspath(t) for t in a.tasks] or sorted(glob.glob(os.path.join(REPO, "tasks", "level*", "*.py")))
    out = open(a.out, "w") if a.out else None
    w = Worker(a.device)

    def call(op, **kw):
        t0 = time.perf_counter()
        nonlocal w
        if w.proc.poll() is not None:
            w = Worker(a.device)
        try:
            r = w.call(op, **kw)
        except RuntimeError as e:
            r = {"ok": False, "error": {"kind": "worker_died", "message": str(e)[-2000:]}}
            w = Worker(a.device)
        r["_wall_s"] = time.perf_counter() - t0
        if out:
            out.write(json.dumps({"op": op, "req": kw, "reply": r}) + "\n")
            out.flush()
        return r

    print(json.dumps(call("hello")), flush=True)
    for t in tasks:
        name = os.path.relpath(t, REPO)
        r = call("capture", task=t, seeds=[0, 1, 2], profile=True)
        if r.get("ok"):
            g = r["graph"]
            print(f"capture {name}: ok {r['_wall_s']:.1f}s flops={g['flops']:.3g} matrix={g['flops_by_class']['matrix']:.3g} "
                  f"min_bytes={r['min_bytes']:.3g} kernels={len(r['kernels'])} repeat={r['repeat_rel_diff']} "
                  f"ref_error={[round(e['rel_l2'], 9) for e in r['ref_error']] if r['ref_error'] else None}", flush=True)
        else:
            print(f"capture {name}: {short(r)}", flush=True)
            continue
        for s in solutions_for(t):
            sname = os.path.relpath(s, REPO)
            if s.endswith(".cu"):
                try:
                    so = kopt.load_cuda(open(s).read(), name=os.path.basename(s).replace(".", "_")).path
                except kopt.CompileError as e:
                    print(f"  build {sname}: {str(e)[:500]}", flush=True)
                    continue
                cand = {"kind": "cuda", "so": so}
            else:
                cand = {"kind": "hybrid", "path": s}
            timing = {"contenders": ["candidate", "eager"], "max_seconds": 1.0} if a.timing else None
            r = call("evaluate", task=t, candidate=cand, seeds=[11, 12, 13],
                     kernelbench_tol={"atol": 1e-4, "rtol": 1e-4}, fp64=True, timing=timing)
            if not r.get("ok"):
                print(f"  evaluate {sname}: {short(r)}", flush=True)
                continue
            worst = max(o["vs_ref32"]["worst_ratio"] if o.get("vs_ref32") else float("inf")
                        for c in r["checks"] for o in c["outputs"])
            rel64 = max((o["vs_ref64"] or {}).get("rel_l2", -1) for c in r["checks"] for o in c["outputs"])
            poison = sum(o["poison_left"] for c in r["checks"] for o in c["outputs"])
            mut = any(c["inputs_mutated"] for c in r["checks"])
            line = (f"  evaluate {sname}: ok {r['_wall_s']:.1f}s worst_ratio={worst:.3g} rel64={rel64:.3g} "
                    f"poison={poison} mutated={mut}")
            if r.get("timing"):
                import statistics

                sm = r["timing"]["samples"]
                med = {k: statistics.median(v["event_ms"] or v["host_ms"]) for k, v in sm.items() if v.get("host_ms")}
                line += " " + " ".join(f"{k}={v:.4g}ms" for k, v in med.items())
            print(line, flush=True)
    w.close()


if __name__ == "__main__":
    main()
