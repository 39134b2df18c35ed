"""A run's state in the run store, to show a killed run resumed with nothing
measured twice (bench/gpu_steps.sh step_kill_resume).

    python3 run_state.py RUNS_DB              -> JSON: the newest run's nodes and outcomes
    python3 run_state.py RUNS_DB BEFORE.json  -> compares with an earlier state
"""
import json
import sqlite3
import sys

db = sqlite3.connect(sys.argv[1])
run, status, cands = db.execute(
    "SELECT id, status, spent_candidates FROM runs ORDER BY created_at DESC LIMIT 1").fetchone()
nodes = db.execute("SELECT node_id, source_hash FROM nodes WHERE run_id=?", (run,)).fetchall()
outcomes = {str(n): f for n, f in db.execute(
    "SELECT node_id, finished_at FROM outcomes WHERE run_id=?", (run,)).fetchall()}
state = {"run": run, "status": status, "spent_candidates": cands, "nodes": len(nodes),
         "distinct_sources": len({h for _, h in nodes}), "outcomes": outcomes}
if len(sys.argv) < 3:
    print(json.dumps(state))
    sys.exit(0)
before = json.load(open(sys.argv[2]))
kept = all(outcomes.get(n) == f for n, f in before["outcomes"].items())
print(f"run {run}: before the kill {len(before['outcomes'])} outcome(s) of {before['nodes']} node(s), status "
      f"{before['status']}; after --resume {len(outcomes)} outcome(s) of {len(nodes)} node(s), status {status}, "
      f"{cands} candidates spent; every outcome recorded before the kill unchanged: {kept}; one node per source: "
      f"{state['distinct_sources'] == len(nodes)}")
