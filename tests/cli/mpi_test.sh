#!/usr/bin/env bash
# Sweeps and runs over MPI ranks (Open MPI's mpirun, as CI runs it: as root,
# oversubscribed), end to end: the same sweep.csv byte for byte as on one machine; a rank
# killed in the middle, then the same command again: the points it was running are
# named, none is lost, the table is again the same; a run split over ranks (collectives
# on the NIC engine included) gives the undivided run's outputs, finds its deadlock, and
# ends naming a rank that hangs or dies; without mpirun nothing changes; other commands
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
# Under the sanitizers (the asan test preset sets FABRICLAB_SANITIZED=1, where this script
# took 7 minutes): the rank hand-out once, by the 3-rank sweep, with 6 MB points; the
# repeats by other commands and rank counts, and the kill, only in `make test`. Every
# split run (the exchange between ranks) runs in both.
quick=${FABRICLAB_SANITIZED:-0}
point_bytes=60MB
[ "$quick" = 1 ] && point_bytes=6MB

# Six points of about a second each (60 MB flows on the leaf-spine example); two vary
# traffic.bytes upward, so "biggest first" hands those out first.
sweep=(sweep "$examples/leaf-spine.toml" --set traffic.bytes=$point_bytes --vary switch.buffer=4MiB,8MiB,16MiB
  --vary nic.congestion_control=none,dcqcn --quiet)

expect one-machine 0 'sweep: 6 points \(6 run now, 0 done before\)' -- "$fl" "${sweep[@]}" --out "$tmp/one" --jobs 2
expect three-ranks 0 'sweep: 6 points \(6 run now, 0 done before\)' -- \
  "${mpirun[@]}" -n 3 "$fl" "${sweep[@]}" --out "$tmp/mpi" --jobs 1
expect same-table 0 '' -- cmp "$tmp/one/sweep.csv" "$tmp/mpi/sweep.csv"
expect same-report 0 '' -- bash -c "cmp '$tmp/one/report.md' '$tmp/mpi/report.md' && \
  cmp '$tmp/one/vary-switch.buffer.dat' '$tmp/mpi/vary-switch.buffer.dat'"
[ "$quick" = 1 ] || for n in 2 4; do
  expect "ranks-$n" 0 'sweep: 6 points \(6 run now' -- "${mpirun[@]}" -n $n "$fl" "${sweep[@]}" --out "$tmp/mpi$n" --jobs 1
  expect "same-table-$n" 0 '' -- cmp "$tmp/one/sweep.csv" "$tmp/mpi$n/sweep.csv"
done
expect every-rank-ran 0 'rank 2 on' -- cat "$tmp/mpi/points.log"
expect no-tmp-left 0 '^0$' -- bash -c "find '$tmp/mpi' -name '*.tmp' | wc -l"

if [ "$quick" != 1 ]; then
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

fi

# Again, complete: nothing runs.
expect rerun-skips 0 'sweep: 6 points \(0 run now, 6 done before\)' -- \
  "${mpirun[@]}" -n 2 "$fl" "${sweep[@]}" --out "$tmp/mpi" --jobs 1
# Bad input: said once, by rank 0, and the job exits 2.
expect bad-input 2 "fabriclab: error: --vary: unknown key 'nope'" -- \
  "${mpirun[@]}" -n 2 "$fl" sweep "$examples/incast.toml" --vary nope=1,2 --out "$tmp/bad"
expect bad-input-once 0 '^1$' -- bash -c "$(printf '%q ' "${mpirun[@]}") -n 2 '$fl' sweep '$examples/incast.toml' \
  --vary nope=1,2 --out '$tmp/bad' 2>&1 | grep -c 'unknown key'"
if [ "$quick" != 1 ]; then
# A tuning over two ranks: the same search, so the same trials.csv, best.toml and report
# as on one machine, byte for byte (the trials' runs spread over both ranks' workers).
tune=(tune "$examples/incast.toml" --set nic.congestion_control=dcqcn
  --param switch.wred.green_min_threshold=5KB..100KB:log --param nic.roce_rp.rate_to_set_on_first_cnp=0..20000
  --maximize goodput_gbps --constraint 'totals.lossless_drops<=0' --trials 5 --seeds 2 --quiet)
expect tune-one-machine 0 '^tune: 5 trials \(5 run now\)' -- "$fl" "${tune[@]}" --out "$tmp/t1" --jobs 2
expect tune-two-ranks 0 '^tune: 5 trials \(5 run now\)' -- "${mpirun[@]}" -n 2 "$fl" "${tune[@]}" --out "$tmp/t2" --jobs 1
for f in trials.csv best.toml report.md; do
  expect "tune-same-$f" 0 '' -- cmp "$tmp/t1/$f" "$tmp/t2/$f"
done
expect tune-two-ranks-resumed 0 '^tune: 5 trials \(0 run now\)' -- \
  "${mpirun[@]}" -n 2 "$fl" "${tune[@]}" --out "$tmp/t2" --jobs 1
fi
# Other commands stay on one process.
expect counters-refused 2 'fabriclab counters runs on one process; of the commands, `run` splits over MPI ranks' -- \
  "${mpirun[@]}" -n 2 "$fl" counters --collective allreduce --algorithm ring --ranks 4

# A run split over ranks: the undivided run's flows.csv and ports.csv (and with
# collectives, collectives.csv and ops.csv) byte for byte, and its summary.json but for
# the wall time and the peak of packets alive (a split run's is the sum of its parts'
# peaks); with sim.partitions = 4 and two threads on each of two ranks, the threaded
# run's summary.json too, peak included.
same_summary() {  # NAME A B [what else to leave out]
  local skip="wall_seconds${4:+|$4}"
  expect "$1" 0 '' -- bash -c "diff <(grep -Ev '$skip' '$2') <(grep -Ev '$skip' '$3')"
}
split_runs() {  # NAME SCENARIO [--set ...]; $also: more files to compare
  local name=$1
  shift
  expect "$name-one" 0 'flows delivered' -- "$fl" run "$@" --quiet --out "$tmp/$name-one"
  local files=(flows.csv ports.csv ${also:-})
  expect "$name-threads" 0 'flows delivered' -- "$fl" run "$@" --quiet --out "$tmp/$name-4x2" \
    --set sim.partitions=4 --set sim.threads=2
  [ "$quick" = 1 ] || for n in 2 4; do
    expect "$name-ranks-$n" 0 "on $n MPI ranks: [0-9]+ windows" -- "${mpirun[@]}" -n $n "$fl" run "$@" --quiet \
      --out "$tmp/$name-r$n"
    for f in "${files[@]}"; do expect "$name-ranks-$n-$f" 0 '' -- cmp "$tmp/$name-one/$f" "$tmp/$name-r$n/$f"; done
    same_summary "$name-ranks-$n-summary" "$tmp/$name-one/summary.json" "$tmp/$name-r$n/summary.json" \
      peak_packets_alive
  done
  expect "$name-4x2-ranks" 0 'on 2 MPI ranks' -- "${mpirun[@]}" -n 2 "$fl" run "$@" --quiet --out "$tmp/$name-4x2r" \
    --set sim.partitions=4 --set sim.threads=2
  for f in "${files[@]}"; do expect "$name-4x2-ranks-$f" 0 '' -- cmp "$tmp/$name-one/$f" "$tmp/$name-4x2r/$f"; done
  same_summary "$name-4x2-ranks-summary" "$tmp/$name-4x2/summary.json" "$tmp/$name-4x2r/summary.json"
}
split_runs incast "$examples/incast.toml"
split_runs leaf-spine "$examples/leaf-spine.toml"
split_runs spreading "$examples/congestion-spreading.toml"
split_runs fat-tree "$examples/leaf-spine.toml" --set topology.kind=fat_tree --set topology.k=4
# A policy that reads ACKs, with the receiver's hold and the hops echoed on them (Swift,
# the NICs draining their receive buffers at 80 Gb/s).
split_runs incast-swift "$examples/incast.toml" --set nic.congestion_control=swift --set nic.rx_rate=80Gbps
# INT stacks crossing between ranks beside their frames (HPCC on the leaf-spine: three
# switches per path, links between ranks).
split_runs leaf-spine-hpcc "$examples/leaf-spine.toml" --set nic.congestion_control=hpcc
# Adaptive routing: each switch's choice from its own queues, across ranks.
split_runs leaf-spine-adaptive "$examples/leaf-spine.toml" --set switch.lb=adaptive --set nic.reorder_window=256
# Packet trimming: the trimmed bit crosses with its frame, the bytes cut in each rank's ledger.
split_runs incast-trim "$examples/incast.toml" --set switch.pfc.enabled=false --set switch.trim.threshold=200KB \
  --set nic.congestion_control=hpcc
# IRN over sprayed paths: SACKs and the NACKs' PSNs crossing between ranks.
split_runs leaf-spine-irn "$examples/leaf-spine.toml" --set switch.lb=spray_rr --set nic.transport=irn \
  --set nic.irn.reorder_tolerance=8
# UET: entropies sprayed by ECMP, NSCC; then receiver credits with trimming (pulls and
# trimmed headers crossing between ranks).
split_runs leaf-spine-uet "$examples/leaf-spine.toml" --set nic.transport=uet --set nic.congestion_control=nscc
split_runs incast-uet-rccc "$examples/incast.toml" --set switch.pfc.enabled=false --set switch.trim.threshold=60KB \
  --set nic.transport=uet --set nic.congestion_control=nscc --set nic.uet.rccc=true
# HPCC-PINT: one code per stack, the senders reading half their ACKs.
split_runs leaf-spine-pint "$examples/leaf-spine.toml" --set nic.congestion_control=hpcc --set nic.hpcc.feedback=pint \
  --set nic.hpcc.pint_prob=0.5
# Collectives on the NIC engine: each rank steps its copy of the NIC model, the copies
# share their parts' progress before each step; four ring allreduces beside an incast,
# then the same in software (fallback, 100 counters: a 64-rank ring needs 126), then on
# a fat-tree split by METIS, with a random placement.
# (The traffic matrix with the collectives' messages, each rank counting its senders'.)
also="collectives.csv ops.csv traffic_matrix.csv" split_runs collectives "$examples/collectives.toml" \
  --set output.ops=true --set output.traffic_matrix=true
also="collectives.csv ops.csv" split_runs collectives-software "$examples/collectives.toml" --set nic.counters=100 \
  --set collective.0.policy=fallback --set output.ops=true
also="collectives.csv ops.csv" split_runs collectives-fat-tree "$examples/collectives.toml" \
  --set topology.kind=fat_tree --set topology.k=4 --set sim.partitioner=metis --set collective.0.placement=random \
  --set collective.0.ranks=12 --set output.ops=true
# A load fed as the run goes (each rank adds the same flows and frees the same QPs, from
# what the ranks found finished), beside collectives on the engine: both coordinators'
# steps.
also="collectives.csv" split_runs load-collectives "$examples/../tests/data/load/with-collectives.toml"
# The training pattern's allreduces on the engine, four buckets an iteration, issued when
# the iteration before is seen done (without the distribution flows, which a split run
# refuses).
expect training-one 0 '8 of 8 collectives done' -- "$fl" run "$examples/training.toml" --quiet --out "$tmp/train-one" \
  --set traffic.training.distribution_bytes=0B
expect training-ranks 0 'on 3 MPI ranks' -- "${mpirun[@]}" -n 3 "$fl" run "$examples/training.toml" --quiet \
  --out "$tmp/train-r3" --set traffic.training.distribution_bytes=0B
for f in collectives.csv ports.csv; do expect "training-ranks-$f" 0 '' -- cmp "$tmp/train-one/$f" "$tmp/train-r3/$f"; done
# output.window over ranks: each rank reads its own nodes at the span's ends, rank 0
# gathers them; the undivided run's window files and summary, inside the run and cut by
# its end.
for win in 100us..700us 1ms..50ms; do
  "$fl" run "$examples/incast.toml" --quiet --out "$tmp/win-$win-one" --set output.window=$win
  expect "window-$win-ranks" 0 'on 3 MPI ranks' -- "${mpirun[@]}" -n 3 "$fl" run "$examples/incast.toml" --quiet \
    --out "$tmp/win-$win-r3" --set output.window=$win
  for f in ports_window.csv flows_window.csv; do
    expect "window-$win-ranks-$f" 0 '' -- cmp "$tmp/win-$win-one/$f" "$tmp/win-$win-r3/$f"
  done
  same_summary "window-$win-ranks-summary" "$tmp/win-$win-one/summary.json" "$tmp/win-$win-r3/summary.json" \
    peak_packets_alive
done
expect window-cut-named 0 '"cut_by_the_run_end": true' -- cat "$tmp/win-1ms..50ms-r3/summary.json"
# METIS's parts instead of pods: the same outputs again.
expect fat-tree-metis 0 'on 3 MPI ranks' -- "${mpirun[@]}" -n 3 "$fl" run "$examples/leaf-spine.toml" --quiet \
  --set topology.kind=fat_tree --set topology.k=4 --set sim.partitioner=metis --out "$tmp/fat-tree-metis"
for f in flows.csv ports.csv; do expect "fat-tree-metis-$f" 0 '' -- cmp "$tmp/fat-tree-one/$f" "$tmp/fat-tree-metis/$f"; done

# A PFC deadlock across ranks (five switches in a ring, every host sending two switches
# clockwise): found at the same check, the same cycle, exit 1 from rank 0.
printf 'src,dst,bytes,start,priority,qps\n' >"$tmp/ring_flows.csv"
for s in 0 1 2 3 4; do for k in 0 1; do
  echo "$((s * 2 + k)),$(( ((s + 2) % 5) * 2 + k)),20MB,0ns,3,1" >>"$tmp/ring_flows.csv"
done; done
printf '[topology]\nkind = "ring"\nring_switches = 5\nhosts_per_switch = 2\n[switch]\nbuffer = "1MiB"\n[switch.mmu]\nthreshold = "static"\nstatic_th = "32KiB"\n[traffic]\npattern = "flows"\nflows_file = "ring_flows.csv"\n' >"$tmp/ring.toml"
cycle='PFC deadlock at 600.000 us: .*sw0 port 2 priority 3 -> sw1 port 3 priority 3 -> .*sw4 port 3 priority 3'
expect ring-one 1 "$cycle" -- "$fl" run "$tmp/ring.toml" --quiet --out "$tmp/ring-one"
expect ring-ranks 1 "$cycle" -- "${mpirun[@]}" -n 3 "$fl" run "$tmp/ring.toml" --quiet --out "$tmp/ring-r3"
for f in flows.csv ports.csv; do expect "ring-ranks-$f" 0 '' -- cmp "$tmp/ring-one/$f" "$tmp/ring-r3/$f"; done
same_summary ring-ranks-summary "$tmp/ring-one/summary.json" "$tmp/ring-r3/summary.json" peak_packets_alive

# What acts across parts within a window is refused by its key, once, exit 2.
expect ranks-distribution 2 'training.toml:[0-9]+:[0-9]+: traffic.training.distribution_bytes = 15625KiB is not supported on 2 MPI ranks' -- \
  "${mpirun[@]}" -n 2 "$fl" run "$examples/training.toml" --quiet --out "$tmp/x"
expect ranks-impairment 2 'reorder.toml:[0-9]+:[0-9]+: impair.link is not supported on 2 MPI ranks \(one part each\); run it without mpirun' -- \
  "${mpirun[@]}" -n 2 "$fl" run "$examples/reorder.toml" --quiet --out "$tmp/x"
expect ranks-fewer-parts 2 'sim.partitions = 3: fewer parts than the 4 MPI ranks' -- \
  "${mpirun[@]}" -n 4 "$fl" run "$examples/incast.toml" --set sim.partitions=3 --quiet --out "$tmp/x"

# A rank that hangs (stopped) or dies (killed) mid-run ends the whole run, naming it;
# no summary.json is left to pass for a finished run's.
long=(run "$examples/leaf-spine.toml" --set traffic.bytes=1GB --quiet)
stop_rank1() {  # SIGNAL OUT: the signal to rank 1 of the run writing OUT, once it runs
  for _ in $(seq 1 100); do
    sleep 0.1
    for pid in $(pgrep -f "[f]abriclab run .*--out $2"); do
      if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then
        sleep 1  # well into the run
        kill "-$1" "$pid"
        return
      fi
    done
  done
}
for sig in STOP KILL; do
  ("${mpirun[@]}" -n 2 "$fl" "${long[@]}" --rank-timeout 3 --out "$tmp/$sig" >"$tmp/$sig.out" 2>&1; echo $? >"$tmp/$sig.rc") &
  job=$!
  stop_rank1 "$sig" "$tmp/$sig"
  wait "$job"
  expect "rank-$sig-failed" 0 '^[1-9]' -- cat "$tmp/$sig.rc"
  expect "rank-$sig-no-summary" 1 '' -- test -e "$tmp/$sig/summary.json"
  expect "rank-$sig-nothing-left" 1 '' -- pgrep -f "[f]abriclab run .*--out $tmp/$sig"
done
expect rank-hung-named 0 'at the end of a window, rank 1 answered nothing for 3 s \(--rank-timeout\): hung or dead' -- \
  cat "$tmp/STOP.out"
expect rank-killed-named 0 'process rank 1 .* exited on signal 9' -- cat "$tmp/KILL.out"
# One rank under mpirun is an ordinary run.
expect one-rank-run 0 'flows delivered' -- "${mpirun[@]}" -n 1 "$fl" run "$examples/incast.toml" --out "$tmp/r"
finish
