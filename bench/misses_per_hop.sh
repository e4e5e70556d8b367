#!/usr/bin/env bash
# Where a packet-hop's instructions and data-cache misses go: bench/fabric_scale under
# cachegrind (bench/cachegrind_fabric.sh: the caches instructions_per_hop.sh simulates),
# stopped at FROM and at TO; the difference of the two (cg_diff) per
# function (cg_annotate), over the packet-hops between FROM and TO, summed by component
# (the event queue, packets and their pool, ports and their queues, NICs and their QPs,
# switches' forwarding and routing, counters, the run's loop; a function the patterns do
# not place is "other"), then the functions with the most last-level data misses.
# FROM after the flows' first round trip gives the warm run; FROM = 1ns, the run with its
# start (the set-up alone is what a run stopped at 1 ns does).
#   bench/misses_per_hop.sh CASE FROM TO [FUNCTIONS]   e.g. leaf_spine:8192 10us 20us
# CASE as bench/fabric_scale takes it. Slow: cachegrind runs 50 to 100 times slower.
set -euo pipefail
shopt -s inherit_errexit  # a failure inside $(...) ends the script too
case=${1:?usage: misses_per_hop.sh CASE FROM TO [FUNCTIONS]}
from=${2:?usage: misses_per_hop.sh CASE FROM TO [FUNCTIONS]}
to=${3:?usage: misses_per_hop.sh CASE FROM TO [FUNCTIONS]}
top=${4:-12}
bin=$(dirname "$0")/../build/release/bench/fabric_scale
[ -x "$bin" ] || { echo "build the release preset first (make build)" >&2; exit 2; }
# shellcheck source=bench/cachegrind_fabric.sh
source "$(dirname "$0")/cachegrind_fabric.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() {  # STOP NAME: cachegrind's file $tmp/NAME; prints the packet-hops
  local out
  out=$(cachegrind_fabric misses_per_hop.sh "$bin" "$case" "$1" "$tmp/$2" "$tmp/$2.err")
  sed -n 's/.* packet-hops \([0-9]*\) .*/\1/p' <<<"$out"
}
hops_from=$(run "$from" a)
hops_to=$(run "$to" b)
if [ -z "$hops_from" ] || [ -z "$hops_to" ]; then
  echo "misses_per_hop.sh: cannot read fabric_scale's output" >&2
  exit 1
fi
cg_diff "$tmp/a" "$tmp/b" >"$tmp/diff" 2>/dev/null
cg_annotate --show=Ir,D1mr,D1mw,DLmr,DLmw --sort=DLmr,Ir --threshold=0 --show-percs=no --auto=no "$tmp/diff" \
  >"$tmp/annotated"
python3 - "$tmp/annotated" "$((hops_to - hops_from))" "$case" "$from" "$to" "$top" <<'PY'
import re, sys
path, hops, case, frm, to, top = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6])
if hops <= 0:
    sys.exit(f"{case}: no packet-hops between {frm} and {to}")
# Components by the function's name (the first pattern that matches).
parts = [
    ("event queue", r"CalendarQueue|LaneQueue|EventQueue|Simulator::(schedule|push|pop|run|step)|Heap"),
    ("packets, pool", r"Pool<|Packet(Fifo|List)|packets_|::release\(Packet|::take\("),
    ("ports, queues", r"Port::|Link|Serializer|PfcState|Wred"),
    ("NICs, QPs", r"Host::|CongestionControl|Dcqcn|Dctcp|Timely|Hpcc|Swift|Nscc|SendQp|RecvQp"),
    ("switch forwarding, routing", r"Switch::|route|Route|ecmp|Ecmp|hash|Hash|next_hop"),
    ("counters", r"[Cc]ounters?"),
    ("run loop, parts", r"Run::|Network::|Part|Window|Barrier"),
    ("memory functions", r"mem(cpy|move|set)|malloc|free|operator new|operator delete"),
]
rows = []
for line in open(path):
    m = re.match(r"^\s*([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+(\S.*)$", line)
    if not m or "PROGRAM TOTALS" in line:
        continue
    ir, d1r, d1w, llr, llw = (int(m.group(i).replace(",", "")) for i in range(1, 6))
    rows.append((m.group(6).strip(), ir, d1r + d1w, llr + llw))
total = [sum(r[i] for r in rows) for i in (1, 2, 3)]
by = {}
for name, ir, d1, ll in rows:
    fn = name.split(":", 1)[-1]
    part = next((p for p, pat in parts if re.search(pat, fn)), "other")
    acc = by.setdefault(part, [0, 0, 0])
    acc[0] += ir; acc[1] += d1; acc[2] += ll
print(f"{case}, {frm} to {to}: {hops} packet-hops; per packet-hop {total[0] / hops:.1f} instructions, "
      f"{total[1] / hops:.1f} D1 misses, {total[2] / hops:.2f} LL data misses")
print(f"{'component':<28} {'instr/hop':>10} {'D1 miss/hop':>12} {'LL miss/hop':>12}  share of LL")
for part, (ir, d1, ll) in sorted(by.items(), key=lambda kv: -kv[1][2]):
    share = ll / total[2] if total[2] else 0
    print(f"{part:<28} {ir / hops:>10.1f} {d1 / hops:>12.2f} {ll / hops:>12.3f}  {share:>6.1%}")
print(f"\nthe {top} functions with the most LL data misses:")
for name, ir, d1, ll in sorted(rows, key=lambda r: -r[3])[:top]:
    print(f"  {ll / hops:>8.3f} LL  {d1 / hops:>7.2f} D1  {ir / hops:>8.1f} instr  {name[:110]}")
PY
