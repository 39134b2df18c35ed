#!/usr/bin/env bash
# Runs named measurement steps on a GPU machine, each under its own time
# limit, and packs everything measured so far into one archive after every
# step (so a run cut short still returns what it finished).
#
#   bench/gpu_steps.sh OUT_ARCHIVE STEP[:SECONDS] ...
#
# Steps: env, ncu_record, repeat, bench_solutions, bench_all, adversarial,
#        zoo, gpu_tests (= gpu_ctests + gpu_pytests), sandbox, cost,
#        optimize_tune, optimize_expert, optimize_replay, kill_resume, export_kb, drift,
#        optimize_profile. The kopt binary is $KOPT (default build/kopt);
# the GPU test binaries are $KOPT_TESTS/gpu_*_test (default build/tests; carry
# stripped copies, e.g. in .devbin, and point KOPT_TESTS there).
# Results go to $W (default /tmp/kopt-gpu-steps)/<step>/.
set -u
archive=$1; shift
K=${KOPT:-build/kopt}
T=${KOPT_TESTS:-build/tests}
W=${W:-/tmp/kopt-gpu-steps}
mkdir -p "$W"
export KOPT_ROOT=${KOPT_ROOT:-$PWD}
export KOPT_CACHE=${KOPT_CACHE:-$PWD/.kopt/cache}
export PYTHONUNBUFFERED=1

solution_tasks_regex() {  # every task with a shipped solution, as one regex
  for s in tasks/*/solutions/*; do
    stem=$(basename "$s"); stem=${stem%.*}
    echo "$(basename "$(dirname "$(dirname "$s")")")/$stem"
  done | sort -u | paste -sd'|' -
}

task_of() {  # tasks/<level>/solutions/<stem>[_variant].<ext> -> the task file
  local dir stem t
  dir=$(dirname "$(dirname "$1")"); stem=$(basename "$1"); stem=${stem%.*}
  for t in "$dir"/*.py; do
    case "$stem" in "$(basename "$t" .py)"*) echo "$t"; return ;; esac
  done
}

step_env() {  # give it 20 s: nvidia-smi and ncu --version are slow to start
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,persistence_mode --format=csv
  ncu --version | tail -1; nvcc --version | tail -1
  python3 -c 'import torch; print("torch", torch.__version__)'
}
step_ncu_record() {
  tests/data/ncu/record.sh && cp tests/data/ncu/h200_* "$1"/
}
step_repeat() {
  S2V_SOLUTIONS="${S2V_SOLUTIONS:-tasks/level1/solutions/04_softmax.cu tasks/level1/solutions/13_argmax.cu tasks/level1/solutions/30_var_mean.cu}" \
  REPEAT_COUNT=${REPEAT_COUNT:-3} INLINE_SOLUTIONS=${INLINE_SOLUTIONS-} \
  REPEAT_SOLUTIONS="${REPEAT_SOLUTIONS:-tasks/level1/solutions/01_relu.cu tasks/level1/solutions/04_softmax.cu tasks/level1/solutions/06_layernorm.cu tasks/level1/solutions/14_maxpool2d.cu tasks/level1/solutions/24_matvec.cu}" \
    bench/figures.sh "$K" "$1"
}
step_bench_solutions() {
  "$K" bench tasks --filter "$(solution_tasks_regex)" --no-compile --max-seconds 0.4 --json "$1/bench.json"
}
step_bench_all() {
  "$K" bench tasks --max-seconds 0.4 --json "$1/bench.json"
}
step_adversarial() {
  KEEP="$1/cases" KOPT="$K" tests/adversarial/run.sh --max-seconds 0.5
}
step_zoo() {
  KOPT="$K" tests/profile_zoo/run.sh "$1" "${ZOO_FILTER:-}"
}
step_gpu_tests() {  # both of the two below (about 60 + 85 + 90 s on the H200)
  step_gpu_ctests "$1"
  step_gpu_pytests "$1"
}
step_gpu_ctests() {
  export KOPT_BIN="$(cd "$(dirname "$K")" && pwd)/$(basename "$K")"
  for t in "$T"/gpu_*_test; do [ -x "$t" ] && "$t" --gtest_brief=1; done
}
step_gpu_pytests() {
  (cd python && python3 -m pytest -q tests/test_gpu.py)
}
step_sandbox() {
  "$K" eval tasks/level1/01_relu.py tasks/level1/solutions/01_relu.cu tasks/level1/solutions/01_relu.cu --sandbox --max-seconds 0.3
  for s in tasks/*/solutions/*.py; do
    "$K" eval "$(task_of "$s")" "$s" --sandbox --max-seconds 0.3
  done
}

# What the new checks of verification cost per candidate: the same two
# candidates per task with every trust check off (no clean process, no extra
# distributions, no timed-call checks) and on.
step_cost() {
  for t in 01_relu 04_softmax 06_layernorm; do
    v=$(ls bench/replay-candidates/$t/*.cu | sed -n 2p)
    KOPT_CLEAN_WORKER=0 "$K" eval tasks/level1/$t.py tasks/level1/solutions/$t.cu "$v" --distributions none \
      --timed-checks 0 --max-seconds 0.5 --json "$1/off_$t.json" > "$1/off_$t.txt" 2>&1
    "$K" eval tasks/level1/$t.py tasks/level1/solutions/$t.cu "$v" --max-seconds 0.5 --json "$1/on_$t.json" \
      > "$1/on_$t.txt" 2>&1
  done
  python3 bench/cost_summary.py "$1"/off_*.json "$1"/on_*.json
}
OPT_TASKS=${OPT_TASKS:-"tasks/level1/01_relu.py tasks/level1/04_softmax.py tasks/level1/06_layernorm.py tasks/level1/10_sum_dim.py tasks/level1/13_argmax.py tasks/level1/16_cumsum.py tasks/level1/24_matvec.py tasks/level1/30_var_mean.py"}
step_optimize_tune() {  # the tuner on 8 tasks, one run
  "$K" optimize $OPT_TASKS --budget "${OPT_BUDGET:-wall=240s,candidates=96}" --max-seconds 0.3 \
    --store "$1/runs.db" --json "$1/tune.json" --out "$1/best"
}
step_optimize_expert() {  # the expert proposer (the default) on $OPT_TASKS, one run
  "$K" optimize $OPT_TASKS --budget "${OPT_BUDGET:-wall=460s}" --max-seconds 0.3 --profile "${OPT_PROFILE:-none}" \
    --store "$1/runs.db" --json "$1/expert.json" --out "$1/best"
  run=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['run'])" "$1/expert.json")
  "$K" show "$run" --store "$1/runs.db" > "$1/show.txt" 2>&1
}
step_optimize_replay() {  # the replay proposer: each task's folder of candidates, ranked
  for t in $OPT_TASKS; do
    n=$(basename "$t" .py)
    "$K" optimize "$t" --proposer replay --candidates "bench/replay-candidates/$n" --max-seconds 0.3 \
      --store "$1/runs.db" --json "$1/replay_$n.json" --no-compile
  done
}
step_kill_resume() {  # kill -9 mid-search, then --resume to completion
  "$K" optimize tasks/level1/02_gelu.py --budget candidates=20 --max-seconds 0.3 --store "$1/runs.db" \
    > "$1/killed.txt" 2>&1 &
  pid=$!
  # Kill once a few outcomes are stored (mid-search), not after a fixed time:
  # session 5's 35 s outlived the whole run.
  python3 - "$1/runs.db" "${KILL_AT_OUTCOMES:-6}" <<'PY'
import os, sqlite3, sys, time
path, want = sys.argv[1], int(sys.argv[2])
for _ in range(600):
    time.sleep(0.2)
    if not os.path.exists(path):
        continue
    try:
        n = sqlite3.connect(f"file:{path}?mode=ro", uri=True).execute("select count(*) from outcomes").fetchone()[0]
    except sqlite3.Error:
        continue
    if n >= want:
        break
PY
  pkill -9 -P "$pid"; kill -9 "$pid"; wait "$pid" 2>/dev/null
  python3 bench/run_state.py "$1/runs.db" > "$1/before.json"
  run=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['run'])" "$1/before.json")
  "$K" optimize --resume "$run" --store "$1/runs.db" --json "$1/resumed.json"
  python3 bench/run_state.py "$1/runs.db" "$1/before.json"
}
# Does a worker's allocation history move memory-bound times? The same small
# tune run of two 512 MB tasks twice: as is, and with the caching allocator
# emptied before each timing (KOPT_FRESH_ALLOCATOR=1). No finalists, so every
# node is one search-time measurement.
step_drift() {
  for mode in asis fresh; do
    fresh=0; [ "$mode" = fresh ] && fresh=1
    KOPT_FRESH_ALLOCATOR=$fresh "$K" optimize tasks/level1/01_relu.py tasks/level1/06_layernorm.py \
      --budget candidates=16 --finalists 0 --max-seconds 0.3 --store "$1/$mode.db" > "$1/$mode.txt" 2>&1
  done
  python3 bench/drift_summary.py asis="$1/asis.db" fresh="$1/fresh.db"
}
# Exported winners judged twice: by kopt eval (the ModelNew file as a hybrid
# candidate) and by KernelBench's own procedure (python/tests/kernelbench_eval.py).
# The winners come from optimize_tune's run in this W, or from $EXPORTED (a
# folder `kopt export` wrote, carried to the machine).
step_export_kb() {
  if [ -n "${EXPORTED:-}" ]; then
    cp -r "$EXPORTED" "$1/exported"
  else
    run=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['run'])" "$W/optimize_tune/tune.json")
    "$K" export "$run" --store "$W/optimize_tune/runs.db" --out "$1/exported"
  fi
  for d in "$1"/exported/*/; do
    t=$(basename "$d")
    "$K" eval "tasks/level1/$t.py" "$d"/*_modelnew.py --max-seconds 0.3 --json "$1/kopt_$t.json" \
      > "$1/kopt_$t.txt" 2>&1
    python3 python/tests/kernelbench_eval.py "tasks/level1/$t.py" "$d"/*_modelnew.py --device cuda --trials 5 \
      > "$1/kb_$t.json" 2> "$1/kb_$t.err"
    python3 bench/verdicts_summary.py "$t" "$1/kopt_$t.json" "$1/kb_$t.json"
  done
}
# The loop's profile stage on the GPU: each new best profiled (ncu tiers 1
# and 2) and diagnosed during the search, then the run shown and reported.
step_optimize_profile() {
  "$K" optimize tasks/level1/04_softmax.py tasks/level1/16_cumsum.py --budget candidates=16 --profile best \
    --profile-limit 2 --max-seconds 0.3 --store "$1/runs.db" --json "$1/r.json"
  run=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['run'])" "$1/r.json")
  "$K" show "$run" --store "$1/runs.db"
  "$K" report "$run" --store "$1/runs.db" --html "$1/report.html"
}

export K T W OPT_TASKS
export -f solution_tasks_regex task_of $(declare -F | awk '$3 ~ /^step_/ {print $3}')
for spec in "$@"; do
  name=${spec%%:*}; limit=${spec#*:}; [ "$limit" = "$spec" ] && limit=300
  mkdir -p "$W/$name"
  t0=$(date +%s.%N)
  # timeout signals the step's whole process group (workers included).
  timeout -k 10 "$limit" bash -c "step_$name \"\$1\"" _ "$W/$name" > "$W/$name/log.txt" 2>&1
  rc=$?
  printf "%s rc=%s %s s\n" "$name" "$rc" "$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")" | tee -a "$W/steps.txt"
  tar -czf "$archive.tmp" -C "$W" . && mv "$archive.tmp" "$archive"
done
