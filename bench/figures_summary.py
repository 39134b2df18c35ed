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

print("\nrepeatability: two separate `kopt eval` invocations")
print(f"{'candidate':28} {'run 1 ms':>9} {'run 2 ms':>9} {'spread':>7}")
spreads = []
for p in sorted(glob.glob(os.path.join(out, "repeat_*_1.json"))):
    q = p[:-len("_1.json")] + "_2.json"
    if not os.path.exists(q):
        continue
    a, b = record(p), record(q)
    if a["outcome"]["verdict"] != "measured" or b["outcome"]["verdict"] != "measured":
        print(f"{a['candidate']:28} not measured: {a['outcome']['summary']} / {b['outcome']['summary']}")
        continue
    ma, mb = a["outcome"]["time_ms"]["median"], b["outcome"]["time_ms"]["median"]
    spread = abs(ma - mb) / min(ma, mb)
    spreads.append((spread, ma))
    print(f"{a['candidate']:28} {ma:9.4f} {mb:9.4f} {100 * spread:6.2f}%")
big = [s for s, m in spreads if m >= 0.1]
if big:
    print(f"largest spread for kernels >= 100 us: {100 * max(big):.2f}% over {len(big)} candidates")
