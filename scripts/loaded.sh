#!/usr/bin/env bash
# Runs the whole test suite (scripts/test.sh) N times in a row on a loaded machine: two CPU-bound
# processes run beside it the whole time (stress-ng --cpu 2 when installed, else two shell busy
# loops). Each run's output goes to a log; the script prints one line per run and a summary, and
# exits non-zero if any run failed.
#
#   scripts/loaded.sh [N]          (default 5; LOGDIR picks the log directory, default a new
#                                   temporary one; FAILFAST=1 stops after the first failed run;
#                                   the other variables go to scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-5}
logdir=${LOGDIR:-$(mktemp -d /tmp/ringev-loaded.XXXXXX)}
mkdir -p "$logdir"

hogs=()
stop_hogs() {
  for p in "${hogs[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${hogs[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap stop_hogs EXIT
if command -v stress-ng >/dev/null; then
  stress-ng --cpu 2 --cpu-method int64 --timeout 0 --quiet &
  hogs+=($!)
  load="stress-ng --cpu 2"
else
  for _ in 1 2; do
    sh -c 'while :; do :; done' &
    hogs+=($!)
  done
  load="two shell busy loops"
fi

echo "loaded.sh: $n runs of scripts/test.sh beside $load; logs in $logdir"
passed=0
failed=0
for i in $(seq 1 "$n"); do
  start=$(date +%s)
  if ./scripts/test.sh >"$logdir/run$i.log" 2>&1; then
    result=pass
    passed=$((passed + 1))
  else
    result=FAIL
    failed=$((failed + 1))
  fi
  took=$(($(date +%s) - start))
  echo "run $i: $result in ${took}s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  if [ "$result" = FAIL ]; then
    grep -E '^(--- FAIL|FAIL|panic:)|_test\.go:[0-9]+:' "$logdir/run$i.log" | head -20 | sed 's/^/    /'
    if [ "${FAILFAST:-0}" = 1 ]; then
      n=$i
      break
    fi
  fi
done
echo "loaded.sh: $passed of $n runs passed, $failed failed (logs in $logdir)"
[ "$failed" -eq 0 ]
