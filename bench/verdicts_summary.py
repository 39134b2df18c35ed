"""One line per exported ModelNew (bench/gpu_steps.sh step_export_kb): kopt's
verdict on the file (kopt eval, the file as a hybrid candidate) next to the
verdict of KernelBench's procedure (python/tests/kernelbench_eval.py), with
each one's speedup over eager and whether the verdicts agree.

    python3 verdicts_summary.py TASK KOPT_EVAL.json KB_EVAL.json
"""
import json
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        return {"error": f"{path}: {e}"}


task, kopt_path, kb_path = sys.argv[1:4]
k, kb = load(kopt_path), load(kb_path)
recs = k.get("records") or []
outcome = recs[0].get("outcome", {}) if recs else {}
kopt_verdict = outcome.get("verdict", k.get("error", "no record"))
kopt_ok = kopt_verdict == "measured"
kopt_x = outcome.get("speedup_vs_eager")
time_ms = (outcome.get("time_ms") or {}).get("median")
host_ms = (outcome.get("host_ms") or {}).get("median")
kb_ok = bool(kb.get("compiled")) and bool(kb.get("correct"))
kb_x = kb.get("speedup")
kb_ms = kb.get("runtime_ms")


def fmt(x, spec):
    return format(x, spec) if isinstance(x, (int, float)) else "-"


print(f"{task:<14} kopt {kopt_verdict:<10} {fmt(kopt_x, '.2f')}x (event {fmt(time_ms, '.4f')} ms, "
      f"host {fmt(host_ms, '.4f')} ms)   KernelBench {'correct' if kb_ok else 'not correct'} "
      f"{fmt(kb_x, '.2f')}x ({fmt(kb_ms, '.4f')} ms per synchronized call)   "
      f"verdicts {'agree' if kopt_ok == kb_ok else 'DISAGREE'}")
