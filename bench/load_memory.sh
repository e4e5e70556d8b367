#!/usr/bin/env bash
# What a load's flows cost in memory: `fabriclab run examples/load.toml` (a k = 4
# fat-tree, a web-search load at 30 % and an incast every 500 us) with the Poisson load's
# sizes from 1 to 10 KB (many flows, little traffic) for DURATION, against the same run
# for 1 ms; prints each run's flows and peak RSS (GNU time), and the bytes per flow
# between the two: what one more flow costs, the outputs' (flows.csv's rows) included.
#   bench/load_memory.sh [DURATION [FABRICLAB]]   e.g. 20ms
set -euo pipefail
shopt -s inherit_errexit  # a failure inside $(...) ends the script too
duration=${1:-20ms}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${2:-$root/build/release/fabriclab}
[ -x "$bin" ] || { echo "build the release preset first (make build)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '# 1 to 10 KB, uniform\n1000 0\n10000 1\n' >"$tmp/small.cdf"
run() {  # DURATION: prints "FLOWS PEAK_KB"
  local kb flows
  kb=$(/usr/bin/time -f %M "$bin" run "$root/examples/load.toml" --quiet --out "$tmp/out" \
    --set load.0.cdf="$tmp/small.cdf" --set load.0.duration="$1" --set load.1.duration="$1" \
    --set sim.stop_time=1s 2>&1 >/dev/null | tail -n 1)
  flows=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["flows"]["count"])' "$tmp/out/summary.json")
  echo "$flows $kb"
}
read -r f1 k1 < <(run 1ms)
read -r f2 k2 < <(run "$duration")
echo "1ms: $f1 flows, peak RSS $k1 KB"
echo "$duration: $f2 flows, peak RSS $k2 KB"
awk -v f1="$f1" -v k1="$k1" -v f2="$f2" -v k2="$k2" \
  'BEGIN { printf "%.0f bytes per flow\n", (k2 - k1) * 1024 / (f2 - f1) }'
