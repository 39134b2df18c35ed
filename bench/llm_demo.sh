#!/usr/bin/env bash
# The LLM proposer and learned memory, shown end to end in one command
# (issue 13): `kopt optimize --proposer llm` against a scripted model on a
# loopback server (build/tests/llm_script_server), no network needed.
#
#   bench/llm_demo.sh OUT_DIR
#
# Run 1 optimizes three tasks: one improved by the scripted replies (the
# second prompt carries the first candidate's profile), one repaired (the
# first reply does not compile on a GPU, is wrong on the CPU; the error goes
# back and the second reply verifies), one that survives every injected fault
# (a truncated stream, a timeout, 429 and 503 with Retry-After, a garbage
# body). Run 2, a second kopt sharing the same --memory, optimizes a similar
# task: its prompt must carry the entry run 1 learned. Then
# bench/llm-demo/demo.py reads the run store, the knowledge base and the
# server's request logs and prints what happened, with a PASS/FAIL line per
# claim (exit 1 if any fails); OUT_DIR/summary.txt keeps it.
#
# The replies and the kopt options of each run are in bench/llm-demo/gpu.json
# (cpu.json with DEMO_DEVICE=cpu: hybrid candidates on small CPU tasks).
#
# Environment:
#   KOPT          the kopt binary (default build/kopt)
#   LLM_SERVER    the server (default build/tests/llm_script_server)
#   DEMO_DEVICE   cuda (default) or cpu
#   DEMO_CACHE    kopt's cache folder (default OUT_DIR/cache; its LLM reply
#                 cache is emptied first, so every request reaches the server)
#   KOPT_PYTHON   the worker's Python, as for kopt itself
# The API key is a made-up secret (sk-demo-SECRET-...); the server's log says
# each request carried it, and the summary checks it is nowhere under OUT_DIR.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:?usage: bench/llm_demo.sh OUT_DIR}
KOPT=${KOPT:-$ROOT/build/kopt}
LLM_SERVER=${LLM_SERVER:-$ROOT/build/tests/llm_script_server}
DEVICE=${DEMO_DEVICE:-cuda}
case "$DEVICE" in
  cpu) MANIFEST=$ROOT/bench/llm-demo/cpu.json ;;
  cuda*) MANIFEST=$ROOT/bench/llm-demo/gpu.json ;;
  *) echo "llm_demo: DEMO_DEVICE is '$DEVICE': use cuda or cpu" >&2; exit 2 ;;
esac
DEMO="python3 $ROOT/bench/llm-demo/demo.py"
for bin in "$KOPT" "$LLM_SERVER"; do
  [[ -x $bin ]] || { echo "llm_demo: $bin is not an executable (set KOPT / LLM_SERVER)" >&2; exit 2; }
done
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
if [[ -e $OUT/runs.db || -e $OUT/memory.db ]]; then
  echo "llm_demo: $OUT already holds a demo's runs.db or memory.db: give a fresh OUT_DIR" >&2
  exit 2
fi
KOPT=$(cd "$(dirname "$KOPT")" && pwd)/$(basename "$KOPT")
LLM_SERVER=$(cd "$(dirname "$LLM_SERVER")" && pwd)/$(basename "$LLM_SERVER")

export KOPT_CACHE=${DEMO_CACHE:-$OUT/cache}
rm -rf "$KOPT_CACHE/llm"
OPENAI_API_KEY="sk-demo-SECRET-$(date +%s)-do-not-store"
export OPENAI_API_KEY
export KOPT_LLM_TIMEOUT_S
KOPT_LLM_TIMEOUT_S=$($DEMO get "$MANIFEST" llm_timeout_s)
unset KOPT_LLM KOPT_MEMORY KOPT_RUNS OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL KOPT_LLM_COMMAND

SERVER_PID=
stop_server() {
  if [[ -n $SERVER_PID ]]; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
  fi
}
trap stop_server EXIT

cd "$ROOT"
START=$(date +%s)
echo "llm_demo: $DEVICE, kopt $KOPT, server $LLM_SERVER, out $OUT" | tee "$OUT/timing.txt"
for run in run1 run2; do
  $DEMO script "$MANIFEST" "$run" "$OUT/$run.script.json"
  rm -f "$OUT/$run.port"
  "$LLM_SERVER" --script "$OUT/$run.script.json" --port-file "$OUT/$run.port" \
    --log "$OUT/$run.requests.json" --key-env OPENAI_API_KEY > "$OUT/$run.server.txt" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 100); do [[ -s $OUT/$run.port ]] && break; sleep 0.1; done
  [[ -s $OUT/$run.port ]] || { cat "$OUT/$run.server.txt" >&2; echo "llm_demo: the server did not start" >&2; exit 1; }
  PORT=$(cat "$OUT/$run.port")
  mapfile -t TASKS < <($DEMO get "$MANIFEST" "$run.tasks")
  mapfile -t ARGS < <($DEMO get "$MANIFEST" "$run.kopt_args")
  LIMIT=$($DEMO get "$MANIFEST" "$run.timeout_s")
  T0=$(date +%s)
  echo "== $run: kopt optimize ${TASKS[*]} --proposer llm ... (server on port $PORT)"
  set +e
  timeout --signal=INT --kill-after=20 "$LIMIT" "$KOPT" optimize "${TASKS[@]}" \
    --proposer llm --llm openai:demo --llm-base-url "http://127.0.0.1:$PORT/v1" \
    --store "$OUT/runs.db" --memory "$OUT/memory.db" --json "$OUT/$run.result.json" \
    "${ARGS[@]}" > "$OUT/$run.kopt.txt" 2>&1
  RC=$?
  set -e
  stop_server
  T1=$(date +%s)
  echo "$run: kopt exit $RC after $((T1 - T0)) s" | tee -a "$OUT/timing.txt"
  grep -v '^kopt: \[' "$OUT/$run.kopt.txt" | sed -n '/^task /,$p' || true
done
"$KOPT" memory list --db "$OUT/memory.db" > "$OUT/memory-list.txt" 2>&1 || true
"$KOPT" memory list --db "$OUT/memory.db" --json > "$OUT/memory.json" 2>/dev/null || true
echo "total: $(($(date +%s) - START)) s" | tee -a "$OUT/timing.txt"
set +e
$DEMO summary "$MANIFEST" "$OUT" | tee "$OUT/summary.txt"
RC=${PIPESTATUS[0]}
exit "$RC"
