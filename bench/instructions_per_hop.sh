#!/usr/bin/env bash
# Instructions per packet-hop of the fabric simulator's run, without its set-up: the
# benchmark under callgrind (this machine's VM exposes no hardware counters), once to
# STOP and once stopped at 1 ns (set-up only), the difference over the packet-hops.
#   bench/instructions_per_hop.sh CASE [STOP]     e.g. leaf_spine:1024 100us
# CASE as bench/fabric_scale takes it. Slow: callgrind runs about 50 times slower.
set -euo pipefail
case=${1:?usage: instructions_per_hop.sh CASE [STOP]}
stop=${2:-100us}
bin=$(dirname "$0")/../build/release/bench/fabric_scale
[ -x "$bin" ] || { echo "build the release preset first (make build)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() {  # STOP -> "instructions packet-hops"
  local out
  out=$(valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$bin" "$case" "$1" 2>"$tmp/err")
  local ir hops
  ir=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/err")
  hops=$(sed -n 's/.* packet-hops \([0-9]*\) .*/\1/p' <<<"$out")
  echo "$ir $hops"
}
read -r ir_setup hops_setup < <(count 1ns)
read -r ir_run hops_run < <(count "$stop")
hops=$((hops_run - hops_setup))
[ "$hops" -gt 0 ] || { echo "$case: no packet-hops by $stop" >&2; exit 1; }
echo "$case $stop: $(( (ir_run - ir_setup) / hops )) instructions per packet-hop" \
  "($((ir_run - ir_setup)) instructions, $hops packet-hops; set-up $ir_setup instructions)"
