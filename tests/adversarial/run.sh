#!/usr/bin/env bash
# Runs every case in cases.json through `kopt eval ... --json` (with the
# case's own "args": its contract, --sandbox) and prints the table (table.py):
# attack -> verdict -> PASS/MISS (OPEN for known undefended cheats) -> reason,
# then honest kernel -> verdict -> ACCEPTED/FALSE ALARM.
#
#   tests/adversarial/run.sh [kopt options...]     e.g. --device cuda:0
#   KOPT=build-int/kopt tests/adversarial/run.sh
#   CASES='patch|lazy' tests/adversarial/run.sh     only attacks matching a regex
#   ADV_CPU_ONLY=1 tests/adversarial/run.sh --device cpu   skip the cases marked gpu
#
# Exit status: 0 when no attack is a MISS and no honest kernel a FALSE ALARM.
# KEEP=DIR keeps every case's log and record in DIR.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
kopt="${KOPT:-$root/build/kopt}"
if [ -n "${KEEP:-}" ]; then
  out="$KEEP"
  mkdir -p "$out"
else
  out="$(mktemp -d)"
  trap 'rm -rf "$out"' EXIT
fi
cd "$root"

python3 - "$here/cases.json" "${CASES:-}" "${ADV_CPU_ONLY:-}" "$out" > "$out/list" <<'PY'
import json, os, re, sys
cases = json.load(open(sys.argv[1]))["cases"]
for i, c in enumerate(cases):
    if sys.argv[2] and not re.search(sys.argv[2], c["attack"]):
        continue
    if sys.argv[3] and c.get("gpu"):
        continue
    with open(os.path.join(sys.argv[4], f"{i}.args"), "w") as f:
        f.writelines(a + "\n" for a in c.get("args", []))
    print(i, c["task"], c["candidate"], sep="\t")
PY

while IFS=$'\t' read -r i task cand; do
  mapfile -t extra < "$out/$i.args"
  echo "kopt eval $task $cand ${extra[*]} $*" >&2
  "$kopt" eval "$task" "$here/$cand" --json "$out/$i.json" "${extra[@]}" "$@" > "$out/$i.log" 2>&1
done < "$out/list"

python3 "$here/table.py" "$here/cases.json" "$out"
