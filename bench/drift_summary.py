"""How much one worker's timings drift between candidates (bench/gpu_steps.sh
step_drift): per run store, per task, each measured node's candidate and
in-process eager medians next to the clean process's eager, and the spread.

    python3 drift_summary.py LABEL=RUNS_DB ...
"""
import json
import sqlite3
import sys


def medians(db_path):
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    rows = db.execute("select t.name, o.node_id, o.outcome from outcomes o join tasks t "
                      "using (run_id, task_index) where o.verdict = 'measured' order by o.finished_at")
    for name, node, text in rows:
        o = json.loads(text)
        med = lambda k: (o.get(k) or {}).get("median")
        yield name, node, med("time_ms"), med("eager_ms"), med("clean_eager_ms")


def spread(xs):
    xs = [x for x in xs if x]
    return (max(xs) / min(xs) - 1) * 100 if xs else float("nan")


for arg in sys.argv[1:]:
    label, path = arg.split("=", 1)
    by_task = {}
    for name, node, t, e, c in medians(path):
        by_task.setdefault(name, []).append((node, t, e, c))
    for name, rows in by_task.items():
        print(f"{label} {name}")
        for node, t, e, c in rows:
            print(f"  node {node:>3}  candidate {t:.4f}  eager beside it {e:.4f}  clean eager {c or float('nan'):.4f}"
                  f"  candidate/eager {t / e:.3f}")
        print(f"  spread of eager beside the candidates: {spread([r[2] for r in rows]):.1f}%; "
              f"of candidate/eager: {spread([r[1] / r[2] for r in rows]):.1f}%")
