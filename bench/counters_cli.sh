#!/usr/bin/env bash
# The planner's command line end to end at scale: `fabriclab counters --collective C
# --algorithm A --ranks P --strategy optimized --json FILE` for every built-in collective
# (the DAG, the optimized assignment, its verification by the rule and by execution, the
# closed-form check and the schedule file written), each as a whole process: wall time,
# peak RSS and the file's size. The target (issue 26) is under 10 s and 2 GiB each at
# P = 1024 on the 2-core VM.
#   bench/counters_cli.sh [P]      (default 1024)
set -euo pipefail
ranks=${1:-1024}
bin=$(dirname "$0")/../build/release/fabriclab
[ -x "$bin" ] || { echo "build the release preset first (make build)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-15s %-19s %9s %10s %9s  %s\n' collective algorithm wall "peak RSS" "file" verdict
"$bin" counters --table --ranks 2 --quiet 2>/dev/null |
  awk 'NF > 3 && $3 == "2" {print $1, $2}' | while read -r c a; do
  rm -f "$tmp/s.json"
  code=0
  /usr/bin/time -o "$tmp/time" -f '%e %M' "$bin" counters --collective "$c" --algorithm "$a" --ranks "$ranks" \
    --strategy optimized --json "$tmp/s.json" >"$tmp/out" 2>&1 || code=$?
  read -r wall rss < <(tail -n 1 "$tmp/time")  # (time says "Command exited with ..." first on a failure)
  verdict=$(awk '/^optimized/ {print $(NF - 1), $NF; exit}' "$tmp/out")
  [ "$code" -eq 0 ] || verdict="FAILED (exit $code): $(tail -n 1 "$tmp/out")"
  printf '%-15s %-19s %7.2f s %6d MiB %5d MiB  %s\n' "$c" "$a" "$wall" $((rss / 1024)) \
    $(($(stat -c %s "$tmp/s.json" 2>/dev/null || echo 0) / 1048576)) "$verdict"
done
