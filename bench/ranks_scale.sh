#!/usr/bin/env bash
# A fabric run split over MPI ranks against one process (a benchmark, not a test):
# leaf-spine fabrics of 4096 and 16384 hosts (examples/leaf-spine.toml, 1:1, permutation
# traffic of 100 MB flows, one QP each), 100 us simulated, run
#   undivided    one process, one thread;
#   2 threads    one process, sim.partitions = 2;
#   2 ranks      mpirun -n 2, one part each.
# For each: the run's wall time (after set-up) and packet-hops/s as `fabriclab run`
# reports them, the whole command's wall time (set-up included), every process's peak
# RSS (GNU time), and for the ranks the frames between them per window and the longest
# time a rank spent in the windows' exchanges. Same outputs in all three (the script
# checks flows.csv and ports.csv).
#
#   bench/ranks_scale.sh [path/to/fabriclab] [HOSTS...]     (HOSTS: 4096 16384)
set -euo pipefail
fl=${1:-build/release/fabriclab}
shift || true
sizes=("${@:-4096 16384}")
read -r -a sizes <<<"${sizes[*]}"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

shape() {  # HOSTS -> the --set arguments of a 1:1 leaf-spine with that many hosts
  case $1 in
    4096) echo "--set topology.leaves=128 --set topology.hosts_per_leaf=32 --set topology.spines=32" ;;
    16384) echo "--set topology.leaves=256 --set topology.hosts_per_leaf=64 --set topology.spines=64" ;;
    *) echo "ranks_scale: no shape for $1 hosts (4096 or 16384)" >&2; exit 2 ;;
  esac
}

report() {  # NAME OUTPUT TIMES
  local hops_line rss wall
  hops_line=$(grep -E 'packet-hops in' "$2" | sed -E 's/^ *//')
  rss=$(awk '{printf "%s%.0f MiB", (NR > 1 ? ", " : ""), $1 / 1024}' "$3")
  wall=$(awk 'BEGIN {m = 0} {if ($2 > m) m = $2} END {print m}' "$3")
  printf '  %-11s %s; %s s with set-up; peak RSS %s\n' "$1" "$hops_line" "$wall" "$rss"
  grep -E 'on [0-9]+ MPI ranks' "$2" | sed -E 's/^ */              /' || true
}

for hosts in "${sizes[@]}"; do
  read -r -a set <<<"$(shape "$hosts")"
  run=(run "$here/examples/leaf-spine.toml" "${set[@]}" --set sim.stop_time=100us --set traffic.bytes=100MB
    --set traffic.qps_per_flow=1 --quiet)
  echo "leaf-spine, $hosts hosts, 100 us simulated ($(nproc) cores)"
  timed=(/usr/bin/time -a -o "$tmp/times" -f '%M %e')
  : >"$tmp/times"
  "${timed[@]}" "$fl" "${run[@]}" --out "$tmp/one" >"$tmp/one.txt"
  report undivided "$tmp/one.txt" "$tmp/times"
  : >"$tmp/times"
  "${timed[@]}" "$fl" "${run[@]}" --set sim.partitions=2 --out "$tmp/threads" >"$tmp/threads.txt"
  report "2 threads" "$tmp/threads.txt" "$tmp/times"
  : >"$tmp/times"
  mpirun -n 2 "${timed[@]}" "$fl" "${run[@]}" --out "$tmp/ranks" >"$tmp/ranks.txt"
  report "2 ranks" "$tmp/ranks.txt" "$tmp/times"
  for d in threads ranks; do
    for f in flows.csv ports.csv; do cmp -s "$tmp/one/$f" "$tmp/$d/$f" || echo "  ($d: $f differs from the undivided run's)"; done
  done
done
