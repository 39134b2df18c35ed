"""The issue-12 table from a `kopt optimize tasks/ --json` result: per group
(level1, level2, level3, unseen) the geometric-mean speedup vs eager and vs
torch.compile of what the run exports (the winner, or the reference where it
was kept or nothing was measured: 1.00x vs eager), how many tasks are slower
than torch.compile and than eager, and the median fraction of the floor on
memory-bound tasks.

    python3 bench/suite_summary.py SUITE_JSON [MORE_JSON ...] [TASKS_DIR]

Several JSONs (each call of a run resumed over calls; .json or .json.gz):
the last one's tasks, each completed by an earlier call's finalists where
the later file lacks them (runs resumed before session 26 dropped them).

Memory-bound is the floor's bound (`floor_bound`, from the roofline of the
captured graph); results without it are judged by op class from the task's
name (elementwise, norms, reductions, scans, pooling, losses, matvec).
"""
import json
import math
import re
import statistics
import sys

MEMORY = re.compile(r"relu|gelu|swish|softmax|norm|sum_dim|mean_dim|max_dim|argmax|pool|cumsum|mse|"
                    r"cross_entropy|matvec|var_mean|silu|clamp|logsumexp|cumprod|l2_normalize")

import glob
import os

import gzip


def load(path):
    return json.load(gzip.open(path, "rt") if path.endswith(".gz") else open(path))


files = [a for a in sys.argv[1:] if a.endswith((".json", ".json.gz"))]
dirs = [a for a in sys.argv[1:] if not a.endswith((".json", ".json.gz"))]
root = dirs[0] if dirs else "tasks"
j = load(files[-1])
for earlier in files[:-1]:
    old = {t["task"]: t for t in load(earlier)["tasks"]}
    for t in j["tasks"]:
        o = old.get(t["task"])
        if o and not t.get("finalists") and o.get("finalists") and o.get("best_node") == t.get("best_node"):
            t["finalists"] = o["finalists"]
groups = {}
for t in j["tasks"]:
    name = t["task"]
    if "/" in name:
        group = name.split("/")[0]
    else:  # a name printed without its folder: find it
        found = glob.glob(os.path.join(root, "*", name + ".py"))
        group = os.path.basename(os.path.dirname(found[0])) if len(found) == 1 else "?"
    eager, comp = t.get("eager_ms"), t.get("compile_ms")
    fin = [f for f in t.get("finalists") or [] if f.get("winner")]
    time_ms, searched = None, t.get("measured", 0) > 1 or bool(fin) or t.get("best_node", 0) > 0
    if fin and not t.get("reference_kept"):
        time_ms = fin[0]["time_ms"]
        vs_eager = fin[0].get("speedup_vs_eager")
    else:
        best = (t.get("best") or {}).get("outcome") or {}
        vs_eager = best.get("speedup_vs_eager") if not t.get("reference_kept") and t.get("best_node", -1) > 0 else None
        if vs_eager:
            time_ms = best["time_ms"]["median"]
    if not vs_eager or vs_eager <= 1.0 and time_ms is None:
        vs_eager, time_ms = 1.0, eager
    vs_comp = comp / time_ms if comp and time_ms else None
    floor = t.get("floor_ms")
    # The floor's own bound where the run gives it (from the roofline of
    # the captured graph), else a guess from the task's name.
    bound = t.get("floor_bound")
    memory = bound == "memory" if bound else bool(MEMORY.search(name))
    frac = floor / time_ms if floor and time_ms and memory else None
    winner = "reference"
    if not t.get("reference_kept") and (fin or t.get("best_node", 0) > 0):
        winner = fin[0]["name"] if fin else t.get("best_candidate") or "reference"
    groups.setdefault(group, []).append((name, vs_eager, vs_comp, frac, searched, time_ms, winner))


def geo(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


print(f"{'group':8} {'tasks':>5} {'searched':>8} {'vs eager':>8} {'vs compile':>10} {'<compile':>8} {'<eager':>6} "
      f"{'floor (mem, median)':>19}")
for g in sorted(groups):
    rows = groups[g]
    fr = [r[3] for r in rows if r[3]]
    print(f"{g:8} {len(rows):5d} {sum(r[4] for r in rows):8d} {geo([r[1] for r in rows]):7.2f}x "
          f"{geo([r[2] for r in rows]):9.2f}x {sum(1 for r in rows if r[2] and r[2] < 1):8d} "
          f"{sum(1 for r in rows if r[1] < 1):6d} {statistics.median(fr) * 100 if fr else float('nan'):18.0f}%")
print()
for g in sorted(groups):
    for name, ve, vc, fr, s, tm, win in groups[g]:
        print(f"  {name:45} {'searched' if s else 'no candidate':12} {ve:5.2f}x eager  "
              f"{(f'{vc:5.2f}x' if vc else '   - '):6} compile  {(f'{fr * 100:3.0f}%' if fr else '  -')} floor  {win}")
ph = [t["phase_s"] for t in j["tasks"] if t.get("phase_s", {}).get("capture")]
if ph:
    print("\nper task, mean over the " + str(len(ph)) + " this process ran: " +
          ", ".join(f"{k} {statistics.mean(p[k] for p in ph):.1f} s" for k in ("capture", "search", "finishing")))
w = j.get("spent", {})
print(f"\nwall {w.get('wall_s', 0) / 60:.1f} min, GPU {w.get('gpu_s', 0) / 60:.1f} min over {sum(len(r) for r in groups.values())} "
      f"tasks: {w.get('gpu_s', 0) / 60 / max(1, sum(len(r) for r in groups.values())):.2f} GPU-min per task")
