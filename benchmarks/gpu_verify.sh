#!/usr/bin/env bash
# gpu_verify.sh OUTDIR: check a streamflow GPU install, in one call, on a machine with a GPU.
#
# Steps (each recorded; a failed step does not stop the next ones):
#   1. environment  GPUs, driver, CUDA, package versions, GPUDirect Storage or
#                   kvikio compat mode: printed and saved as OUTDIR/environment.json
#   2. detection    stops with exit 3 if a GPU is present (nvidia-smi -L, /dev/nvidia0)
#                   but streamflow sees none (every GPU test would be skipped), with
#                   the probe's error; stops with exit 2 if there is no GPU at all
#   3. gpu tests    every test marked `gpu`, not stopping at a failure: OUTDIR/gpu-tests.log
#                   and gpu-tests.xml (JUnit); a GPU test skipped here is a failure
#   4. benchmarks   gpu_pipeline.py --quick, numpy_roi.py --quick --gpu (kvikio as
#                   configured, then KVIKIO_COMPAT_MODE=ON): OUTDIR/bench-*.json, *.log
# Every result goes into OUTDIR/summary.json. Usually a few minutes; no step starts
# or runs past BUDGET seconds from the start.
#
# Exit status:
#   0   every GPU test passed (none skipped) and the benchmarks ran on the GPU
#   1   something failed: a test, a skipped GPU test, a benchmark, a time-out
#   2   no GPU on this machine: nothing to verify
#   3   a GPU is present but streamflow cannot use it (cupy missing, or built
#       for another CUDA, or a driver too old for CUDA 13)
#   64  wrong usage
#
# Environment:
#   PYTHON        interpreter with streamflow installed (default: python3)
#   TIMEOUT       seconds per step (default: 300)
#   TEST_TIMEOUT  seconds per test, pytest-timeout (default: 120)
#   BUDGET        seconds for the whole run (default: 540)
#   KVIKIO_COMPAT_MODE, KVIKIO_NTHREADS are passed on to the tests and benchmarks.
#
# For a bug report, attach environment.json, summary.json and gpu-tests.log.
set -uo pipefail

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
esac
if [ $# -ne 1 ] || [ -z "$1" ]; then
  usage >&2
  exit 64
fi

PY=${PYTHON:-python3}
TIMEOUT=${TIMEOUT:-300}
TEST_TIMEOUT=${TEST_TIMEOUT:-120}
BUDGET=${BUDGET:-540}
for var in TIMEOUT TEST_TIMEOUT BUDGET; do
  case "${!var}" in
    ''|0|*[!0-9]*) echo "gpu_verify: $var must be a positive whole number of seconds, got '${!var}'" >&2; exit 64 ;;
  esac
done
if ! command -v "$PY" > /dev/null; then
  echo "gpu_verify: ERROR: no Python interpreter '$PY' (set PYTHON)" >&2
  exit 1
fi
case "$PY" in  # a relative path keeps working after the cd to the checkout below
  */*) PY="$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")" ;;
esac
if ! command -v timeout > /dev/null; then
  echo "gpu_verify: ERROR: the 'timeout' command (coreutils) is needed" >&2
  exit 1
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPORT="$ROOT/benchmarks/gpu_verify_report.py"
mkdir -p "$1" || { echo "gpu_verify: ERROR: cannot create $1" >&2; exit 1; }
OUT=$(cd "$1" && pwd)
STEPS="$OUT/steps.tsv"
rm -f "$STEPS" "$OUT/summary.json" "$OUT/gpu-tests.xml" "$OUT/gpu-tests.log" "$OUT"/bench-*.json "$OUT"/bench-*.log
cd "$ROOT" || exit 1
deadline=$((SECONDS + BUDGET))
failed=()

# run LOG CMD...: CMD under the step's time limit, output to stdout and LOG; sets RC and TOOK.
run() {
  local log=$1; shift
  local limit=$((deadline - SECONDS)) start=$SECONDS
  if [ "$limit" -lt 5 ]; then
    echo "  not run: the time budget (BUDGET=$BUDGET s) is spent" | tee -a "$log"
    RC=125; TOOK=0; return
  fi
  [ "$limit" -gt "$TIMEOUT" ] && limit=$TIMEOUT
  # SIGINT first: pytest still writes its JUnit report for the tests that ran.
  timeout -s INT -k 15 "$limit" "$@" 2>&1 | tee -a "$log"
  RC=${PIPESTATUS[0]}
  TOOK=$((SECONDS - start))
  if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then
    echo "  TIMED OUT after $limit s (TIMEOUT=$TIMEOUT, BUDGET=$BUDGET)" | tee -a "$log"
  fi
}

# record NAME STATUS RC SECONDS COMMAND: one line of steps.tsv.
record() {
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >> "$STEPS"
  [ "$2" = ok ] || failed+=("$1")
}

finish() {
  local code=$1
  "$PY" "$REPORT" finish "$OUT" "$code" || echo "gpu_verify: could not write summary.json"
  echo
  case "$code" in
    0) echo "== OK: every GPU check passed. Results in $OUT" ;;
    2) echo "== nothing to verify: no GPU on this machine (exit 2). Environment in $OUT/environment.json" ;;
    3) echo "== FAILED: a GPU is present but streamflow cannot use it (exit 3); see above and $OUT/environment.json" ;;
    *) echo "== FAILED: ${failed[*]:-see above} (exit $code). Details in $OUT/summary.json" ;;
  esac
  exit "$code"
}

echo "== 1. environment"
run /dev/null "$PY" "$REPORT" environment "$OUT"
record environment "$([ "$RC" -eq 0 ] && echo ok || echo failed)" "$RC" "$TOOK" "$PY $REPORT environment $OUT"

echo
echo "== 2. GPU detection"
run /dev/null "$PY" "$REPORT" detect
case "$RC" in
  0) record detection ok 0 "$TOOK" "$PY $REPORT detect" ;;
  2|3) record detection "$([ "$RC" -eq 2 ] && echo no_gpu || echo failed)" "$RC" "$TOOK" "$PY $REPORT detect"
       finish "$RC" ;;
  *) record detection failed "$RC" "$TOOK" "$PY $REPORT detect"
     echo "gpu_verify: ERROR: the GPU detection itself failed (exit $RC)"
     finish 1 ;;
esac

echo
echo "== 3. gpu tests (every test marked gpu; per test at most $TEST_TIMEOUT s)"
if ! "$PY" -c "import pytest, pytest_timeout" 2> /dev/null; then
  echo "gpu_verify: ERROR: the tests need pytest and pytest-timeout in $PY:"
  echo "    $PY -m pip install pytest pytest-timeout hypothesis pillow"
  record "gpu tests" failed 1 0 ""
else
  tests_cmd=("$PY" -m pytest -m gpu -rA -v -p no:cacheprovider --continue-on-collection-errors
             --timeout="$TEST_TIMEOUT" --junitxml="$OUT/gpu-tests.xml" tests)
  run "$OUT/gpu-tests.log" "${tests_cmd[@]}"
  pytest_rc=$RC took=$TOOK
  if "$PY" "$REPORT" tests "$OUT/gpu-tests.xml" --rc "$pytest_rc" --gpu-present; then
    record "gpu tests" ok "$pytest_rc" "$took" "${tests_cmd[*]}"
  else
    record "gpu tests" failed "$pytest_rc" "$took" "${tests_cmd[*]}"
  fi
fi

# bench NAME CMD...: one benchmark, then the check of its JSON (OUTDIR/bench-NAME.json).
bench() {
  local name=$1; shift
  echo
  echo "== 4. benchmark $name"
  run "$OUT/bench-$name.log" "$@"
  local rc=$RC took=$TOOK
  if "$PY" "$REPORT" bench "$name" "$OUT/bench-$name.json" --rc "$rc"; then
    record "benchmark $name" ok "$rc" "$took" "$*"
  else
    record "benchmark $name" failed "$rc" "$took" "$*"
  fi
}
bench gpu_pipeline "$PY" benchmarks/gpu_pipeline.py --quick --out "$OUT/bench-gpu_pipeline.json"
bench numpy_roi "$PY" benchmarks/numpy_roi.py --quick --gpu --output "$OUT/bench-numpy_roi.json"
bench numpy_roi-compat env KVIKIO_COMPAT_MODE=ON "$PY" benchmarks/numpy_roi.py --quick --gpu \
  --output "$OUT/bench-numpy_roi-compat.json"

[ ${#failed[@]} -eq 0 ] && finish 0
finish 1
