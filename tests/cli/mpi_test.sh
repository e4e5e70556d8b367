#!/usr/bin/env bash
# Sweeps over MPI ranks (Open MPI's mpirun, as CI runs it: as root, oversubscribed),
# end to end: the same sweep.csv byte for byte as on one machine; a rank killed in the
# middle, then the same command again: the points it was running are named, none is
# lost, the table is again the same; without mpirun nothing changes; other commands
# refuse to run over several ranks. Usage: FABRICLAB=path/to/fabriclab mpi_test.sh EXAMPLES_DIR
set -u
examples=$1
fl=${FABRICLAB:?set FABRICLAB}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/expect.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Under the sanitizer build: Open MPI's plugins, unloaded at MPI_Finalize, leave blocks
# LeakSanitizer reports (in modules gone by then, so no suppression can name them).
# Address and UB checks stay on; the rest of the suite checks fabriclab's own leaks.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export OMPI_MCA_rmaps_base_oversubscribe=1
mpirun=(mpirun --oversubscribe)

# Six points of about a second each (60 MB flows on the leaf-spine example); two vary
# traffic.bytes upward, so "biggest first" hands those out first.
sweep=(sweep "$examples/leaf-spine.toml" --set traffic.bytes=60MB --vary switch.buffer=4MiB,8MiB,16MiB
  --vary nic.congestion_control=none,dcqcn --quiet)

expect one-machine 0 'sweep: 6 points \(6 run now, 0 done before\)' -- "$fl" "${sweep[@]}" --out "$tmp/one" --jobs 2
expect three-ranks 0 'sweep: 6 points \(6 run now, 0 done before\)' -- \
  "${mpirun[@]}" -n 3 "$fl" "${sweep[@]}" --out "$tmp/mpi" --jobs 1
expect same-table 0 '' -- cmp "$tmp/one/sweep.csv" "$tmp/mpi/sweep.csv"
for n in 2 4; do
  expect "ranks-$n" 0 'sweep: 6 points \(6 run now' -- "${mpirun[@]}" -n $n "$fl" "${sweep[@]}" --out "$tmp/mpi$n" --jobs 1
  expect "same-table-$n" 0 '' -- cmp "$tmp/one/sweep.csv" "$tmp/mpi$n/sweep.csv"
done
expect every-rank-ran 0 'rank 2 on' -- cat "$tmp/mpi/points.log"
expect no-tmp-left 0 '^0$' -- bash -c "find '$tmp/mpi' -name '*.tmp' | wc -l"

# Kill rank 1 while it runs a point: the job ends (mpirun takes the others down).
(
  "${mpirun[@]}" -n 2 "$fl" "${sweep[@]}" --out "$tmp/killed" --jobs 1 >"$tmp/killed.out" 2>&1
  echo $? >"$tmp/killed.rc"
) &
job=$!
rank1=""
for _ in $(seq 1 200); do
  sleep 0.05
  grep -q 'rank 1 on' "$tmp/killed/points.log" 2>/dev/null || continue
  for pid in $(pgrep -f "[f]abriclab sweep .*$tmp/killed"); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then
      # The rank itself, not a point it forked (those share its environment): its
      # parent is the launcher, not fabriclab.
      parent=$(ps -o ppid= -p "$pid" | tr -d ' ')
      [ "$(ps -o comm= -p "$parent")" != fabriclab ] && rank1=$pid
    fi
  done
  [ -n "$rank1" ] && break
done
if [ -n "$rank1" ]; then
  kill -9 "$rank1"
  wait "$job"
  expect killed-job-failed 0 '^[1-9]' -- cat "$tmp/killed.rc"
  sleep 0.5  # the points the dead rank forked die with it
  expect nothing-left-running 1 '' -- pgrep -f "[f]abriclab sweep .*$tmp/killed"
  expect resumed-names-lost 0 'p000[0-9] was running \(rank 1 on [^)]*\) when an earlier run stopped' -- \
    "${mpirun[@]}" -n 2 "$fl" sweep "$examples/leaf-spine.toml" --set traffic.bytes=60MB \
    --vary switch.buffer=4MiB,8MiB,16MiB --vary nic.congestion_control=none,dcqcn --out "$tmp/killed" --jobs 1
  expect resumed-same-table 0 '' -- cmp "$tmp/one/sweep.csv" "$tmp/killed/sweep.csv"
else
  echo "FAIL kill-rank: rank 1 never started a point"
  failed=$((failed + 1))
  wait "$job"
fi

# An experiment's variants over two ranks: the same results and report as on one machine.
expect experiment-one 0 'experiment ecmp-vs-spray' -- bash -c "cd '$examples/..' && '$fl' experiment ecmp-vs-spray \
  --out '$tmp/e1' --quiet"
expect experiment-ranks 0 'experiment ecmp-vs-spray' -- bash -c "cd '$examples/..' && $(printf '%q ' "${mpirun[@]}") \
  -n 2 '$fl' experiment ecmp-vs-spray --out '$tmp/e2' --quiet"
for f in results.csv report.md; do expect "experiment-same-$f" 0 '' -- cmp "$tmp/e1/$f" "$tmp/e2/$f"; done

# An offload grid over two ranks: the same table; a single offload simulation is refused.
grid=(offload "$examples/offload-concurrency.toml" --quiet --set experiment.concurrency=1,4 --set experiment.ranks=16
  --set experiment.counters=16,128 --set experiment.cache_entries=8 --set experiment.collectives=allreduce:ring,bcast:binomial)
expect offload-grid-one 0 '32 grid points' -- "$fl" "${grid[@]}" --out "$tmp/o1"
expect offload-grid-ranks 0 '32 grid points' -- "${mpirun[@]}" -n 2 "$fl" "${grid[@]}" --out "$tmp/o2" --jobs 1
expect offload-grid-same 0 '' -- cmp "$tmp/o1/experiment.csv" "$tmp/o2/experiment.csv"
expect offload-single-refused 2 'only its experiment grids \(experiment.concurrency\) spread over ranks' -- \
  "${mpirun[@]}" -n 2 "$fl" offload "$examples/offload.toml" --out "$tmp/o3"

# Again, complete: nothing runs.
expect rerun-skips 0 'sweep: 6 points \(0 run now, 6 done before\)' -- \
  "${mpirun[@]}" -n 2 "$fl" "${sweep[@]}" --out "$tmp/mpi" --jobs 1
# Bad input: said once, by rank 0, and the job exits 2.
expect bad-input 2 "fabriclab: error: --vary: unknown key 'nope'" -- \
  "${mpirun[@]}" -n 2 "$fl" sweep "$examples/incast.toml" --vary nope=1,2 --out "$tmp/bad"
expect bad-input-once 0 '^1$' -- bash -c "$(printf '%q ' "${mpirun[@]}") -n 2 '$fl' sweep '$examples/incast.toml' \
  --vary nope=1,2 --out '$tmp/bad' 2>&1 | grep -c 'unknown key'"
# Only sweep spreads over ranks.
expect run-refused 2 'fabriclab run runs on one process; of the commands, only `sweep`, `experiment` and `offload` grids' -- \
  "${mpirun[@]}" -n 2 "$fl" run "$examples/incast.toml"
# One rank under mpirun is an ordinary run.
expect one-rank-run 0 'flows delivered' -- "${mpirun[@]}" -n 1 "$fl" run "$examples/incast.toml" --out "$tmp/r"
finish
