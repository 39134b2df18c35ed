"""Summarizes bench/figures.sh output: source-to-verdict seconds and the
spread between two separate kopt eval invocations."""
import glob
import json
import os
import statistics
import sys

out = sys.argv[1]


def record(path):
    with open(path) as f:
        return json.load(f)["records"][0]


def s2v(kind):
    rows = []
    for p in sorted(glob.glob(os.path.join(out, f"s2v_{kind}_*.json"))):
        r = record(p)
        rows.append((r["candidate"], r["source_to_verdict_s"], r["build_s"], r["verify_s"],
                     r["outcome"]["verdict"]))
    return rows


for kind in ("cuda", "inline"):
    rows = s2v(kind)
    if not rows:
        continue
    print(f"\nsource to verdict, {kind} candidates (cold build cache, timing excluded)")
    print(f"{'candidate':28} {'total s':>8} {'build s':>8} {'verify s':>9}  verdict")
    for name, total, build, verify, verdict in rows:
        print(f"{name:28} {total:8.2f} {build:8.2f} {verify:9.2f}  {verdict}")
    print(f"median {statistics.median(r[1] for r in rows):.2f} s over {len(rows)}")

print("\nrepeatability: separate `kopt eval` invocations of the same candidate")
print(f"{'candidate':28} {'runs (median ms)':>36} {'spread':>7} {'eager spread':>12} {'vs eager':>16}")
spreads = []
for p in sorted(glob.glob(os.path.join(out, "repeat_*_1.json"))):
    stem = p[:-len("_1.json")]
    recs = [record(q) for q in sorted(glob.glob(stem + "_*.json"))]
    bad = [r for r in recs if r["outcome"]["verdict"] != "measured"]
    if bad:
        print(f"{recs[0]['candidate']:28} not measured: {bad[0]['outcome']['summary']}")
        continue
    ms = [r["outcome"]["time_ms"]["median"] for r in recs]
    eager = [(r["outcome"].get("eager_ms") or {}).get("median", 0) for r in recs]
    ratio = [r["outcome"].get("speedup_vs_eager") or 0 for r in recs]
    spread = (max(ms) - min(ms)) / min(ms)
    es = (max(eager) - min(eager)) / min(eager) if min(eager) > 0 else float("nan")
    spreads.append((spread, min(ms)))
    runs = " ".join(f"{m:.4f}" for m in ms)
    sp = "/".join(f"{x:.3f}" for x in ratio)
    print(f"{recs[0]['candidate']:28} {runs:>36} {100 * spread:6.2f}% {100 * es:11.2f}% {sp:>16}")
big = [s for s, m in spreads if m >= 0.1]
if big:
    print(f"largest spread (max-min)/min for kernels >= 100 us: {100 * max(big):.2f}% over {len(big)} candidates")
