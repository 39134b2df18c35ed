"""The adversarial suite's table: one row per case of cases.json that ran.

    python3 table.py CASES_JSON OUT_DIR

OUT_DIR holds `list` (index, task, candidate per line, as run.sh writes it)
and per case `<i>.json` (kopt eval --json) or, when kopt wrote none,
`<i>.log`. Attacks get PASS (the expected verdict and reason phrase), MISS
(a defence failed) or OPEN (a cheat not defended yet); honest kernels get
ACCEPTED or FALSE ALARM. Exit status 1 when any attack is a MISS or any
honest kernel a FALSE ALARM.
"""

import json
import os
import sys


def load(cases_path, out):
    cases = json.load(open(cases_path))["cases"]
    rows = []
    for line in open(os.path.join(out, "list")):
        if not line.strip():
            continue
        i = int(line.split("\t")[0])
        rows.append((cases[i], result(out, i)))
    return rows


def result(out, i):
    """(verdict, reason, speedup) from the case's record, else its log."""
    path = os.path.join(out, f"{i}.json")
    if os.path.exists(path):
        try:
            rec = json.load(open(path))["records"][0]["outcome"]
        except (ValueError, KeyError, IndexError) as e:
            return "no result", f"unreadable record: {e}", None
        reason = " | ".join(rec.get("reasons") or []) or rec.get("summary", "")
        return rec.get("verdict", "?"), reason, rec.get("speedup_vs_eager")
    log_path = os.path.join(out, f"{i}.log")
    log = open(log_path).read().strip().splitlines() if os.path.exists(log_path) else []
    return "no result", (log[-1] if log else ""), None


def judge(case, verdict, reason, speedup):
    """(status, reason as shown)."""
    phrases = case.get("reason") or []
    if isinstance(phrases, str):
        phrases = [phrases] if phrases else []
    ok = verdict == case["expect"] and (not phrases or any(p in reason for p in phrases))
    if ok and "max_speedup" in case and speedup is not None and speedup >= case["max_speedup"]:
        ok = False
        reason = f"speed-up {speedup:.3g}x >= {case['max_speedup']}x: the cheat paid; " + reason
    if case.get("honest"):
        if ok and speedup is not None:
            reason = f"{speedup:.2f}x vs eager" + (f"; {reason}" if reason else "")
        return ("ACCEPTED" if ok else "FALSE ALARM"), reason
    if ok:
        return "PASS", reason
    return ("OPEN" if case.get("defended", True) is False else "MISS"), reason


def render(rows, width=160):
    """The table as text, and how many rows are a MISS or a FALSE ALARM."""
    judged = [(c, verdict, *judge(c, verdict, reason, speedup)) for c, (verdict, reason, speedup) in rows]
    lines = []
    for title, honest in (("attack", False), ("honest kernel", True)):
        group = [r for r in judged if bool(r[0].get("honest")) == honest]
        if not group:
            continue
        w = max([len(title)] + [len(c["attack"]) for c, *_ in group])
        lines.append(f"{title:<{w}}  {'verdict':<11}  {'status':<11}  reason")
        for c, verdict, status, reason in group:
            lines.append(f"{c['attack']:<{w}}  {verdict:<11}  {status:<11}  {reason[:width]}")
        lines.append("")
    attacks = [r for r in judged if not r[0].get("honest")]
    honest = [r for r in judged if r[0].get("honest")]
    misses = sum(r[2] == "MISS" for r in attacks)
    alarms = sum(r[2] == "FALSE ALARM" for r in honest)
    lines.append(f"{len(attacks)} attack(s), {misses} miss(es); {len(honest)} honest kernel(s), "
                 f"{alarms} false alarm(s)")
    return "\n".join(lines), misses + alarms


def main(argv):
    text, bad = render(load(argv[1], argv[2]))
    print(text)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
