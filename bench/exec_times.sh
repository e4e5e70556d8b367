#!/usr/bin/env bash
# Times `fabriclab exec` for every collective and algorithm on libfabric's sockets
# provider: P ranks, COUNT doubles, ITERATIONS runs each; prints the median and minimum
# collective time (the slowest rank's, from START to its last host_wait) and the median
# per operation (the busiest rank's wall time over the operations it queued).
# These are software-trigger timings over loopback TCP, not NIC offload.
# Usage: bench/exec_times.sh [P] [COUNT] [ITERATIONS]   (defaults: 4 1024 30)
set -euo pipefail
p=${1:-4} count=${2:-1024} iters=${3:-30}
fl=${FABRICLAB:-./build/release/fabriclab}
printf '%-32s %8s %10s %12s %12s %10s\n' "collective/algorithm" "counters" "ops/rank" \
  "median_us" "min_us" "us/op"
for ca in allreduce:recursive_doubling allreduce:ring allreduce:binomial \
          allreduce:rabenseifner bcast:binomial bcast:knomial reduce:binomial \
          barrier:dissemination barrier:binomial allgather:ring allgather:recursive_doubling \
          reduce_scatter:ring alltoall:pairwise alltoall:all_at_once; do
  c=${ca%%:*} a=${ca#*:}
  out=$("$fl" exec --collective "$c" --algorithm "$a" --ranks "$p" --count "$count" \
        --iterations "$iters" --timeout 60)
  median=$(sed -n 's/^collective time: median \([0-9.]*\) us, min \([0-9.]*\) us.*/\1/p' <<<"$out")
  min=$(sed -n 's/^collective time: median \([0-9.]*\) us, min \([0-9.]*\) us.*/\2/p' <<<"$out")
  # The rank table: the busiest rank (most ops) gives counters, ops and us/op.
  read -r counters ops usop < <(awk '$1 ~ /^[0-9]+$/ && NF == 7 {print $2, $3, $7}' <<<"$out" |
                                sort -k2,2n | tail -1)
  printf '%-32s %8s %10s %12s %12s %10s\n' "$c/$a" "$counters" "$ops" "$median" "$min" "$usop"
done
