#!/usr/bin/env bash
# Instructions and cache misses per packet-hop of the fabric simulator's run, without its
# set-up: the benchmark under cachegrind (this machine's VM exposes no hardware counters),
# once to STOP and once stopped at 1 ns (the set-up alone), the differences over the
# packet-hops. The caches simulated are fixed, not detected (the VM reports a 508 MiB
# direct-mapped L3): a 32 KiB 8-way first-level data cache and a 32 MiB 16-way last level.
#   bench/instructions_per_hop.sh CASE [STOP]     e.g. leaf_spine:1024 100us
# CASE as bench/fabric_scale takes it. Slow: cachegrind runs 50 to 100 times slower.
set -euo pipefail
shopt -s inherit_errexit  # a failure inside $(...) ends the script too
case=${1:?usage: instructions_per_hop.sh CASE [STOP]}
stop=${2:-100us}
bin=$(dirname "$0")/../build/release/bench/fabric_scale
[ -x "$bin" ] || { echo "build the release preset first (make build)" >&2; exit 2; }
# shellcheck source=bench/cachegrind_fabric.sh
source "$(dirname "$0")/cachegrind_fabric.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() {  # STOP -> "instructions D1-misses LLd-misses packet-hops", or a message and exit 1
  local out
  out=$(cachegrind_fabric instructions_per_hop.sh "$bin" "$case" "$1" "$tmp/cg" "$tmp/err")
  field() { sed -n "s/.*$1 *\([0-9,]*\).*/\1/p" "$tmp/err" | head -1 | tr -d ,; }
  local values=("$(field 'I *refs:')" "$(field 'D1  misses:')" "$(field 'LLd misses:')"
    "$(sed -n 's/.* packet-hops \([0-9]*\) .*/\1/p' <<<"$out")")
  for v in "${values[@]}"; do
    [ -n "$v" ] || { echo "instructions_per_hop.sh: cannot read cachegrind's or fabric_scale's output" >&2; exit 1; }
  done
  echo "${values[*]}"
}
counts=$(count 1ns)
read -r ir0 d10 ll0 hops0 <<<"$counts"
counts=$(count "$stop")
read -r ir1 d11 ll1 hops1 <<<"$counts"
hops=$((hops1 - hops0))
[ "$hops" -gt 0 ] || { echo "$case: no packet-hops by $stop" >&2; exit 1; }
per() { python3 -c "print(f'{($1) / $hops:.1f}')"; }
echo "$case $stop: per packet-hop $(per "$ir1 - $ir0") instructions, $(per "$d11 - $d10") D1 misses," \
  "$(per "$ll1 - $ll0") LL data misses ($hops packet-hops; set-up $ir0 instructions)"
