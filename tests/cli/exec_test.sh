#!/usr/bin/env bash
# fabriclab exec, end to end on libfabric's sockets provider: every collective and
# algorithm at P = 2 and 4 with both assignments, two at P = 8 (up to 1 MiB), the software
# fallback, 100 iterations, a wrong threshold that the watchdog must report (not hang),
# and the bad inputs that must exit 2.
# Usage: FABRICLAB=path/to/fabriclab exec_test.sh DATA_DIR
set -u
fl=${FABRICLAB:?set FABRICLAB}
data=${1:?usage: exec_test.sh DATA_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/expect.sh"

# The backend is a module beside the binary, loaded by exec alone: other commands start
# without libfabric, and a binary without it says what is missing.
expect no-libfabric-linked 0 '' -- bash -c "! ldd '$fl' | grep 'libfabric\.so\|psm'"
cp "$fl" "$tmp/fabriclab-alone"
expect backend-missing 2 'cannot load the libfabric backend .*/libfabriclab_libfabric.so: .*scripts/install-deps.sh' -- \
  "$tmp/fabriclab-alone" exec --collective allreduce --algorithm ring --ranks 2
expect others-without-backend 0 'operations in the DAG' -- "$tmp/fabriclab-alone" counters --collective allreduce --algorithm ring \
  --ranks 4

# Loading the backend (and libfabric's PSM provider with it) leaves fabriclab's signal
# handlers in place: an interrupted exec says so, exits 130 and leaves no rank running.
"$fl" exec --collective allreduce --algorithm ring --ranks 4 --iterations 1000000 >"$tmp/int.out" 2>&1 &
pid=$!
for _ in $(seq 1 100); do grep -q '^path:' "$tmp/int.out" && break; sleep 0.1; done
sleep 0.5
kill -INT "$pid"
wait "$pid"
expect exec-interrupted 0 '^130$' -- echo $?
expect exec-interrupted-says 0 '^fabriclab: interrupted \(SIGINT\)$' -- cat "$tmp/int.out"
sleep 0.5
expect exec-interrupted-no-rank-left 1 '' -- pgrep -f "[f]abriclab exec --collective allreduce --algorithm ring --ranks 4 --iterations 1000000"

algorithms="allreduce:recursive_doubling allreduce:ring allreduce:binomial
allreduce:rabenseifner bcast:binomial bcast:knomial reduce:binomial
barrier:dissemination barrier:binomial allgather:ring allgather:recursive_doubling
reduce_scatter:ring alltoall:pairwise alltoall:all_at_once"

# Under the sanitizers (FABRICLAB_SANITIZED=1, the asan test preset: this script took 7
# minutes there) every algorithm once, at P = 4 with the optimized assignment, then the
# watchdog, the schedule files and the bad inputs; the P = 8 sizes, datatypes, fallbacks
# and 100 iterations -- the same backend calls on other plans -- only in `make test`.
quick=${FABRICLAB_SANITIZED:-0}
ranks_grid="2 4" strategies="naive optimized"
[ "$quick" = 1 ] && ranks_grid=4 strategies=optimized
for ca in $algorithms; do
  c=${ca%%:*} a=${ca#*:}
  for p in $ranks_grid; do
    for s in $strategies; do
      # A root other than 0 where the collective has one, and an odd element count.
      root=()
      case $c in bcast|reduce) root=(--root $((p - 1))) ;; esac
      expect "$c-$a-P$p-$s" 0 'result: 3/3 iterations verified on every rank' -- \
        "$fl" exec --collective "$c" --algorithm "$a" --ranks "$p" --strategy "$s" \
        --count 1001 --iterations 3 --timeout 20 "${root[@]}"
    done
  done
done

if [ "$quick" != 1 ]; then
# P = 8: a broadcast of 1 MiB (131072 doubles), a ring allreduce of 128 KiB whose
# atomics are split at the provider's 512 elements, and recursive doubling of 1 MiB, whose
# bursts of 256 atomic segments per partner stalled the sockets provider in half the runs
# until the plan paced them 8 at a time (docs/exec.md). (Unpaced it passed half the time,
# so one run here catches a regression only with probability 1/2 per run.)
expect bcast-P8-1MiB 0 'path: triggered operations.*result: 2/2 iterations verified' -- \
  bash -o pipefail -c "'$fl' exec --collective bcast --algorithm binomial --ranks 8 \
           --count 131072 --iterations 2 --timeout 30 | tr '\n' ' '"
expect ring-P8-128KiB 0 'path: triggered operations.*result: 2/2 iterations verified' -- \
  bash -o pipefail -c "'$fl' exec --collective allreduce --algorithm ring --ranks 8 \
           --count 16384 --iterations 2 --timeout 30 | tr '\n' ' '"
expect rd-P8-1MiB-paced 0 'bursts paced 8 transfers at a time through flow counters.*result: 3/3 iterations verified' -- \
  bash -o pipefail -c "'$fl' exec --collective allreduce --algorithm recursive_doubling --ranks 8 \
           --count 131072 --iterations 3 --timeout 30 | tr '\n' ' '"
# The software path posts plain atomics, paced per peer the same way.
expect rd-P8-1MiB-software 0 'path: software fallback.*result: 2/2 iterations verified' -- \
  bash -o pipefail -c "'$fl' exec --collective allreduce --algorithm recursive_doubling --ranks 8 \
           --count 131072 --iterations 2 --budget 0 --timeout 30 | tr '\n' ' '"
# Other datatypes.
expect int64 0 'result: 2/2' -- "$fl" exec --collective allreduce --algorithm recursive_doubling \
  --ranks 4 --datatype int64 --count 333 --iterations 2
expect float 0 'result: 2/2' -- "$fl" exec --collective reduce_scatter --algorithm ring \
  --ranks 4 --datatype float --count 1000 --iterations 2
# Over budget: the software path, verified the same way; or a refusal.
expect fallback-software 0 'path: software fallback \(the plan needs 6 counters.*result: 3/3' -- \
  bash -o pipefail -c "'$fl' exec --collective allreduce --algorithm ring --ranks 4 --budget 2 \
           --iterations 3 | tr '\n' ' '"
expect fallback-software-alltoall 0 'software fallback.*result: 3/3' -- \
  bash -o pipefail -c "'$fl' exec --collective alltoall --algorithm pairwise --ranks 4 --budget 0 \
           --iterations 3 | tr '\n' ' '"
expect fallback-refuse 1 'refused: the plan needs 6 counters on its busiest rank and the budget is 2' -- \
  "$fl" exec --collective allreduce --algorithm ring --ranks 4 --budget 2 --fallback refuse
# 100 iterations re-using the counters (base offsets carried forward).
expect hundred-iterations 0 'result: 100/100 iterations verified' -- \
  "$fl" exec --collective allreduce --algorithm recursive_doubling --ranks 4 --iterations 100
fi

# A threshold one too high: the watchdog names the rank, counter and values; exit 1.
expect wrong-threshold 1 'rank 1 made no progress for 2 s:.*host_wait \(op [0-9]+\) on counter [0-9]+ \(schedule counter [0-9]+\): at [0-9]+, needs [0-9]+' -- \
  bash -o pipefail -c "'$fl' exec --collective allreduce --algorithm ring --ranks 2 \
           --perturb-threshold 1:1 --timeout 2 | tr '\n' ' '"
# A schedule file written by `counters --json` runs as it is; one that fails the verifier
# (a host_wait threshold lowered from 3 to 2) or has no data layout is refused.
"$fl" counters --collective allreduce --algorithm ring --ranks 2 --strategy naive \
  --json "$tmp/ring2.json" >/dev/null
expect schedule-file 0 'exec .*ring2.json \(allreduce ring on 2 ranks.*result: 2/2' -- \
  bash -o pipefail -c "'$fl' exec --schedule '$tmp/ring2.json' --iterations 2 | tr '\n' ' '"
# Empty blocks at the window's end: reduce_scatter of one double on 4 ranks gives rank 0
# the element and ranks 1..3 0-byte output blocks at byte 8 of the 8-byte window. The file
# reads back and computes the collective; rank 0's 8-byte block moved there does not fit.
"$fl" counters --collective reduce_scatter --algorithm ring --ranks 4 --strategy optimized \
  --analysis local --json "$tmp/rs4.json" >/dev/null
expect schedule-empty-blocks 0 'exec .*rs4.json \(reduce_scatter ring on 4 ranks, 8 B.*result: 3/3 iterations verified' -- \
  bash -o pipefail -c "'$fl' exec --schedule '$tmp/rs4.json' --iterations 3 | tr '\n' ' '"
sed 's/"output_offset":\[0,/"output_offset":[8,/' "$tmp/rs4.json" >"$tmp/rs4-off-end.json"
expect schedule-block-off-end 2 "rs4-off-end.json: layout: rank 0's input \(8 bytes at 0\) or output \(8 bytes at 8\) does not fit the 8-byte window" -- \
  "$fl" exec --schedule "$tmp/rs4-off-end.json"
sed '0,/"threshold": 3/s//"threshold": 2/' "$tmp/ring2.json" >"$tmp/ring2-early.json"
expect schedule-unsafe 2 'ring2-early.json: the schedule fails the verifier, so it is not run: op 11 \(host_wait on rank 0\) can fire before its parent' -- \
  "$fl" exec --schedule "$tmp/ring2-early.json"
expect schedule-no-layout 2 'unsafe_two_arrivals.json: the schedule has no data layout' -- \
  "$fl" exec --schedule "$data/unsafe_two_arrivals.json"
"$fl" counters --collective bcast --algorithm binomial --ranks 4 --strategy naive \
  --uncounted-sends --json "$tmp/bcast-uncounted.json" >/dev/null
expect schedule-uncounted 2 'operation 0 is a put whose completion is not counted' -- \
  "$fl" exec --schedule "$tmp/bcast-uncounted.json"
expect schedule-and-collective 2 'give either --schedule FILE or --collective' -- \
  "$fl" exec --schedule "$tmp/ring2.json" --ranks 3

# Bad input: exit 2 with a clear message.
expect no-provider 2 "no usable libfabric provider: 'nosuch'" -- \
  "$fl" exec --collective allreduce --algorithm ring --ranks 2 --provider nosuch
expect too-many-ranks 2 'ranks 65 is outside 2..64' -- \
  "$fl" exec --collective allreduce --algorithm ring --ranks 65
expect bad-datatype 2 "datatype: 'int8' is not one of: int64, double, float" -- \
  "$fl" exec --collective allreduce --algorithm ring --ranks 2 --datatype int8
expect exact-strategy 2 'strategy: exact is for counting, not for a run \(expected naive or optimized\)' -- \
  "$fl" exec --collective allreduce --algorithm ring --ranks 2 --strategy exact
expect bad-perturb 2 "perturb-threshold 'x': expected RANK:DELTA" -- \
  "$fl" exec --collective allreduce --algorithm ring --ranks 2 --perturb-threshold x
expect bad-fallback 2 "fallback 'maybe': expected software or refuse" -- \
  "$fl" exec --collective allreduce --algorithm ring --ranks 2 --fallback maybe
expect too-big 2 'limit is 256 MiB' -- \
  "$fl" exec --collective alltoall --algorithm pairwise --ranks 64 --count 1000000

finish
