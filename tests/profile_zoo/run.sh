#!/usr/bin/env bash
# Profiles every zoo entry with `kopt profile` on the local GPU and prints the
# confusion matrix (confusion.py). Each entry's raw profile is kept in
# OUT/<name>/ (kopt profile --save) for tests/data/profile_zoo.
#
#   tests/profile_zoo/run.sh OUT [NAME_REGEX]     KOPT=path/to/kopt to choose the binary
set -u
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
kopt="${KOPT:-$root/build/kopt}"
out=${1:?usage: run.sh OUT [NAME_REGEX]}
filter=${2:-}
mkdir -p "$out"
cd "$root"
# ZOO_ORDER="a b c" runs those entries first, in that order; ZOO_ARGS adds
# kopt profile options to every entry except the first ZOO_TIERED_FIRST ones.
python3 - "$here/expected.json" "$filter" "${ZOO_ORDER:-}" > "$out/list" <<'PY'
import json, os, re, sys
entries = json.load(open(sys.argv[1]))
pending = os.path.join(os.path.dirname(sys.argv[1]), "pending.json")
if os.path.exists(pending):  # registered, not yet recorded
    entries += json.load(open(pending))
order = sys.argv[3].split()
entries.sort(key=lambda e: order.index(e["name"]) if e["name"] in order else len(order))
for e in entries:
    if sys.argv[2] and not re.search(sys.argv[2], e["name"]):
        continue
    print(e["name"], e["task"], e["candidate"], sep="\t")
PY
n=0
while IFS=$'\t' read -r name task cand; do
  t0=$(date +%s.%N)
  n=$((n + 1))
  extra=${ZOO_ARGS:-}
  [ "$n" -le "${ZOO_TIERED_FIRST:-0}" ] && extra=
  timeout -k 5 "${ZOO_TIMEOUT:-150}" "$kopt" profile "$here/$task" "$here/$cand" --max-seconds 0.2 $extra \
    --save "$out/$name" --json "$out/$name.json" > "$out/$name.log" 2>&1
  echo "$name rc=$? $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s" | tee -a "$out/wall.txt"
done < "$out/list"
python3 "$here/confusion.py" "$here/expected.json" "$out"
