#!/usr/bin/env bash
# One call that checks a streamflow GPU install on a machine with a GPU:
# environment, every `gpu` test, the GPU benchmarks in quick mode.
#
#   benchmarks/gpu_verify.sh OUTDIR
#
# Writes into OUTDIR: environment.json, gpu-tests.xml (JUnit), gpu-tests.log,
# summary.json, bench-*.json and bench-*.log. Finishes in a few minutes.
# Exit status: 0 all good; 1 something failed (tests, a skipped GPU test, a
# benchmark); 2 no GPU on this machine (nothing to verify); 3 a GPU is present
# but streamflow cannot use it (every GPU test would be skipped).
# Environment: PYTHON (default python3), TIMEOUT per step in seconds (default 420).
set -uo pipefail

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }
if [ $# -ne 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
  usage
  [ $# -eq 1 ] && exit 0 || exit 64
fi

OUT=$1
PY=${PYTHON:-python3}
STEP_TIMEOUT=${TIMEOUT:-420}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
REPORT="$ROOT/benchmarks/gpu_verify_report.py"
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
cd "$ROOT" || exit 1
failed=()

echo "== environment"
"$PY" "$REPORT" environment "$OUT" || failed+=("environment")

echo "== GPU detection"
"$PY" "$REPORT" detect
status=$?
if [ "$status" -ne 0 ]; then
  exit "$status"
fi

echo "== gpu tests (every test marked gpu; does not stop at the first failure)"
timeout "$STEP_TIMEOUT" "$PY" -m pytest -m gpu -rA -p no:cacheprovider --timeout=300 \
  --junitxml="$OUT/gpu-tests.xml" tests 2>&1 | tee "$OUT/gpu-tests.log"
if [ -f "$OUT/gpu-tests.xml" ]; then
  "$PY" "$REPORT" summary "$OUT/gpu-tests.xml" "$OUT" --gpu-present || failed+=("gpu tests")
else
  failed+=("gpu tests (no report: timed out or crashed)")
fi

echo "== benchmarks (quick)"
bench() {
  local name=$1; shift
  if timeout "$STEP_TIMEOUT" "$PY" "$@" > "$OUT/bench-$name.log" 2>&1; then
    echo "  $name: ok"
  else
    echo "  $name: FAILED (see bench-$name.log)"
    failed+=("benchmark $name")
  fi
  tail -n 15 "$OUT/bench-$name.log"
}
bench gpu_pipeline benchmarks/gpu_pipeline.py --quick --out "$OUT/bench-gpu_pipeline.json"
bench numpy_roi benchmarks/numpy_roi.py --quick --gpu --output "$OUT/bench-numpy_roi.json"

if [ ${#failed[@]} -ne 0 ]; then
  echo "== FAILED: ${failed[*]}"
  exit 1
fi
echo "== all GPU checks passed; results in $OUT"
