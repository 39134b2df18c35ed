"""What the trust checks cost per candidate (bench/gpu_steps.sh step_cost).

    python3 cost_summary.py OFF_AND_ON_JSONS...

Each file is a `kopt eval --json` result named off_<task>.json (no clean
process, no extra distributions, no timed-call checks) or on_<task>.json
(the defaults). Prints, per task and candidate, source to verdict (nvcc +
verification) and timing seconds with the checks off and on.
"""
import json
import os
import sys

runs = {}
for path in sys.argv[1:]:
    name = os.path.basename(path)[:-5]
    mode, task = name.split("_", 1)
    runs.setdefault(task, {})[mode] = json.load(open(path))["records"]

print(f"{'task':<14} {'cand':<5} {'s2v off':>8} {'s2v on':>8} {'added':>7} {'verify off':>10} {'verify on':>9} "
      f"{'time off':>8} {'time on':>8}")
added_all = []
for task, modes in sorted(runs.items()):
    off, on = modes.get("off", []), modes.get("on", [])
    for i, (a, b) in enumerate(zip(off, on)):
        s_off, s_on = a["source_to_verdict_s"], b["source_to_verdict_s"]
        added = (s_on - s_off) / s_off if s_off > 0 else float("nan")
        if i > 0:
            added_all.append(added)
        print(f"{task:<14} {i:<5} {s_off:8.2f} {s_on:8.2f} {100 * added:6.1f}% {a['verify_s']:10.2f} "
              f"{b['verify_s']:9.2f} {a['time_s']:8.2f} {b['time_s']:8.2f}  ({b['outcome']['verdict']})")
if added_all:
    added_all.sort()
    print(f"added to source-to-verdict after a task's first candidate (the clean process's reference is computed "
          f"once per task): median {100 * added_all[len(added_all) // 2]:.1f}%")
