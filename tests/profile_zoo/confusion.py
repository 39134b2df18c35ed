"""The zoo's confusion matrix from `kopt profile --json` results.

    python3 tests/profile_zoo/confusion.py tests/profile_zoo/expected.json OUT

A tool "fires" on an entry when it returned a diagnosis of severity warning
or critical (info findings are listed but count as quiet). For every entry:
the class kopt gave against the expected class (or one of the alternatives
registered before recording, `alt_classes`), each expected tool that fired
(hit) or not (MISS), and each other tool that fired (FALSE ALARM) — except,
on a flawed kernel, the secondary findings predicted before recording
(`may_also_fire`), which are listed apart. A good kernel gets no tolerance. Exit 0
when there is no miss and no misclassification, and at most one false alarm.

The counts are given separately for the entries whose expectation was
registered before their recording (`registered: before_recording`, a real
prediction) and after it (`after_recording`, written knowing the result;
see registration.py for how each was determined from git history).
"""
import json
import os
import sys

FIRING = ("warning", "critical")


def entry_result(path):
    j = json.load(open(path))
    rep = j["report"]
    fired, info = set(), set()
    for d in rep.get("call_diagnoses", []):
        (fired if d["severity"] in FIRING else info).add(d["tool"])
    for k in rep.get("kernels", []):
        for d in k.get("diagnoses", []):
            (fired if d["severity"] in FIRING else info).add(d["tool"])
    # The call's class (README: expect_class); a one-kernel call is judged
    # by its kernel's class, which carries the kernel's own counters.
    cls = rep["call"]["bound"]
    if cls != "launch_host" and len(rep.get("kernels", [])) == 1:
        cls = rep["kernels"][0]["roofline"]["bound"]
    return cls, fired, info - fired, j.get("tier_seconds", {})


def main():
    expected = json.load(open(sys.argv[1]))
    out = sys.argv[2]
    tools = sorted({t for e in expected for t in e.get("expect_tools", [])})
    misses = false_alarms = wrong_class = missing = 0
    groups = {}  # registered -> [entries, misses, false alarms, misclassified, without a result]
    tier_costs = {}
    rows = []
    for e in expected:
        group = groups.setdefault(e.get("registered", "unknown"), [0, 0, 0, 0, 0])
        group[0] += 1
        path = os.path.join(out, e["name"] + ".json")
        if not os.path.exists(path):
            log = os.path.join(out, e["name"] + ".log")
            last = (open(log).read().strip().splitlines() if os.path.exists(log) else [])[-1:] or ["not run"]
            rows.append((e["name"], "no result", e["expect_class"], "", "", last[0][:100]))
            missing += 1
            group[4] += 1
            continue
        cls, fired, info, tiers = entry_result(path)
        for k, v in tiers.items():
            tier_costs.setdefault(k, []).append(v)
        want = set(e.get("expect_tools", []))
        hit = sorted(want & fired)
        miss = sorted(want - fired)
        # A good kernel gets no tolerance. On a flawed one, the secondary
        # findings predicted before recording (may_also_fire) are listed but
        # not counted as false alarms.
        predicted = set() if e.get("good") else set(e.get("may_also_fire") or [])
        fa = sorted(fired - want - predicted)
        also = sorted((fired - want) & predicted)
        misses += len(miss)
        false_alarms += len(fa)
        ok_class = cls == e["expect_class"] or cls in (e.get("alt_classes") or [])
        wrong_class += not ok_class
        group[1] += len(miss)
        group[2] += len(fa)
        group[3] += not ok_class
        rows.append((e["name"] + ("" if e.get("registered") == "before_recording" else " *"),
                     cls + ("" if ok_class else " (WRONG)"), e["expect_class"],
                     " ".join(hit) + (" MISS:" + ",".join(miss) if miss else ""),
                     ",".join(fa), ",".join(also + sorted("(info) " + t for t in info))))
    w = max(len(r[0]) for r in rows)
    print(f"{'entry':<{w}}  {'class given':<24} {'expected class':<17} {'expected tools (hit / MISS)':<40} "
          f"{'false alarms':<28} also fired (predicted) / info")
    for r in rows:
        print(f"{r[0]:<{w}}  {r[1]:<24} {r[2]:<17} {r[3] or '-':<40} {r[4] or '-':<28} {r[5] or '-'}")
    print(f"\n{len(rows)} entries: {misses} miss(es), {false_alarms} false alarm(s), "
          f"{wrong_class} misclassified, {missing} without a result")
    print("* expectation registered after the entry's recording (knowing the result)")
    titles = {"before_recording": "registered before recording (predictions)",
              "after_recording": "registered after recording (written knowing the result)"}
    for key in ("before_recording", "after_recording") + tuple(sorted(set(groups) - set(titles))):
        if key in groups:
            n, gm, gfa, gwc, gmiss = groups[key]
            print(f"  {titles.get(key, key + ' (registration not recorded)')}: {n} entries, {gm} miss(es), "
                  f"{gfa} false alarm(s), {gwc} misclassified, {gmiss} without a result")
    print("\nper-tool: fired on its own kernel / fired elsewhere")
    for t in tools + sorted({x for r in rows for x in r[4].split(",") if x} - set(tools)):
        own = sum(1 for e, r in zip(expected, rows) if t in e.get("expect_tools", []) and t in r[3].split(" "))
        made = sum(1 for e in expected if t in e.get("expect_tools", []))
        elsewhere = sum(1 for r in rows if t in r[4].split(","))
        print(f"  {t:<28} {own}/{made}   {elsewhere}")
    if tier_costs:
        print("\nseconds per candidate by tier (median, max over entries)")
        for k, v in sorted(tier_costs.items()):
            v = sorted(v)
            print(f"  {k:<12} {v[len(v) // 2]:6.1f} {v[-1]:6.1f}   (n={len(v)})")
    bad = misses or wrong_class or missing or false_alarms > 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
