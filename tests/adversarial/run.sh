#!/usr/bin/env bash
# Runs every case in cases.json through `kopt eval ... --json` and prints
# attack -> verdict -> reason -> PASS/MISS (OPEN for known undefended cheats).
#
#   tests/adversarial/run.sh [kopt options...]     e.g. --device cuda:0
#   KOPT=build-int/kopt tests/adversarial/run.sh
#   CASES='patch|lazy' tests/adversarial/run.sh     only attacks matching a regex
#   ADV_CPU_ONLY=1 tests/adversarial/run.sh --device cpu   skip the cases marked gpu
#
# Exit status: 0 when no case is a MISS.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
kopt="${KOPT:-$root/build/kopt}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cd "$root"

python3 - "$here/cases.json" "${CASES:-}" "${ADV_CPU_ONLY:-}" > "$out/list" <<'PY'
import json, re, sys
cases = json.load(open(sys.argv[1]))["cases"]
for i, c in enumerate(cases):
    if sys.argv[2] and not re.search(sys.argv[2], c["attack"]):
        continue
    if sys.argv[3] and c.get("gpu"):
        continue
    print(i, c["task"], c["candidate"], sep="\t")
PY

while IFS=$'\t' read -r i task cand; do
  "$kopt" eval "$task" "$here/$cand" --json "$out/$i.json" "$@" > "$out/$i.log" 2>&1
done < "$out/list"

python3 - "$here/cases.json" "$out" <<'PY'
import json, os, sys
cases = json.load(open(sys.argv[1]))["cases"]
out = sys.argv[2]
rows, misses = [], 0
for line in open(os.path.join(out, "list")):
    i = int(line.split("\t")[0])
    c = cases[i]
    path = os.path.join(out, f"{i}.json")
    verdict, reason, speedup = "no result", "", None
    if os.path.exists(path):
        rec = json.load(open(path))["records"][0]["outcome"]
        verdict = rec.get("verdict", "?")
        reason = " | ".join(rec.get("reasons") or []) or rec.get("summary", "")
        speedup = rec.get("speedup_vs_eager")
    else:
        log = open(os.path.join(out, f"{i}.log")).read().strip().splitlines()
        reason = log[-1] if log else ""
    phrases = c.get("reason") or []
    if isinstance(phrases, str):
        phrases = [phrases] if phrases else []
    ok = verdict == c["expect"] and (not phrases or any(p in reason for p in phrases))
    if ok and "max_speedup" in c and speedup is not None and speedup >= c["max_speedup"]:
        ok = False
        reason = f"speed-up {speedup:.3g}x >= {c['max_speedup']}x: the cheat paid; " + reason
    status = "PASS" if ok else ("OPEN" if c.get("defended", True) is False else "MISS")
    misses += status == "MISS"
    rows.append((c["attack"], verdict, reason, status))
w = max(len(r[0]) for r in rows) if rows else 10
print(f"{'attack':<{w}}  {'verdict':<11}  status  reason")
for a, v, r, s in rows:
    print(f"{a:<{w}}  {v:<11}  {s:<6}  {r[:160]}")
print(f"\n{len(rows)} case(s), {misses} miss(es)")
sys.exit(1 if misses else 0)
PY
