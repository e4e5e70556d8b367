#!/usr/bin/env bash
# End-to-end checks of the fabriclab command: exit codes (0 ok, 1 unsafe, 2 bad input)
# and the messages a user sees. Usage: FABRICLAB=path/to/fabriclab cli_test.sh DATA_DIR
set -u
data=$1
fl=${FABRICLAB:?set FABRICLAB}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/expect.sh"

expect version 0 '^fabriclab [0-9]+\.[0-9]+\.[0-9]+$' -- "$fl" --version
expect help-counters 0 'Build a collective' -- "$fl" counters --help
expect help-verify 0 'Prove a schedule file' -- "$fl" verify --help
expect no-subcommand 2 'A subcommand is required' -- "$fl"
expect unknown-subcommand 2 "^fabriclab: error: unknown command 'bogus' \(expected one of: counters, verify, plan, advise, exec, run, offload, experiment, collbench, import-ns3, sweep, tune, analyze, stream\)$" -- "$fl" bogus
# import-ns3: the HPCC ns-3 model's inputs as a scenario that runs; a key it cannot honour
# is named with its line, an approximation only taken when asked for.
expect import-ns3 0 "^run it: fabriclab run $tmp/ns3/scenario.toml$" -- \
  "$fl" import-ns3 "$data/ns3/leaf-spine/config.txt" --out "$tmp/ns3"
expect import-ns3-copied 0 '^topology.txt$' -- ls "$tmp/ns3"
expect import-ns3-runs 0 '4 of 4 flows delivered' -- "$fl" run "$tmp/ns3/scenario.toml" --out "$tmp/ns3/run"
expect import-ns3-fct 0 '^0b000001 0b000301 [0-9]+ 100 1000000 10000 [0-9]+ [0-9]+$' -- cat "$tmp/ns3/run/fct.txt"
sed 's/^CC_MODE .*/CC_MODE 2/; s/^ACK_HIGH_PRIO .*/ACK_HIGH_PRIO 1/' "$data/ns3/dcqcn-incast/config.txt" >"$tmp/ns3-bad.txt"
cp "$data/ns3/dcqcn-incast/topology.txt" "$data/ns3/dcqcn-incast/flow.txt" "$tmp/"
expect import-ns3-refused 2 "ns3-bad.txt:11: CC_MODE: 2: expected 1 \\(DCQCN\\), 3 \\(HPCC\\)" -- \
  "$fl" import-ns3 "$tmp/ns3-bad.txt" --out "$tmp/ns3-bad"
sed 's/^ACK_HIGH_PRIO .*/ACK_HIGH_PRIO 1/' "$data/ns3/dcqcn-incast/config.txt" >"$tmp/ns3-approx.txt"
expect import-ns3-approximation 2 'ns3-approx.txt:38: ACK_HIGH_PRIO: 1: the model' -- \
  "$fl" import-ns3 "$tmp/ns3-approx.txt" --out "$tmp/ns3-approx"
expect import-ns3-approximated 0 '^approximated: .*ns3-approx.txt:38: ACK_HIGH_PRIO' -- \
  "$fl" import-ns3 "$tmp/ns3-approx.txt" --out "$tmp/ns3-approx" --approximate
# collbench: nccl-tests' table on the fabric; its errors name what cannot run.
expect collbench-table 0 '^#       size         count      type   redop    root     time   algbw   busbw #wrong$' -- \
  "$fl" collbench allreduce --algorithm ring --ranks 4 -b 1MB -e 4MB -f 4 --out "$tmp/collbench" --quiet
expect collbench-own-collective 2 "collbench adds the one \\[\\[collective\\]\\] it measures; the scenario has 1 of its own" -- \
  "$fl" collbench allreduce "$data/../../examples/collectives.toml" --out "$tmp/collbench2" --quiet
expect collbench-size 2 "collbench: --minbytes: '1 MQ' is not a size" -- \
  "$fl" collbench allreduce -b '1 MQ' --out "$tmp/collbench3" --quiet
expect unknown-collective 2 "unknown collective 'allreduse'" -- \
  "$fl" counters --collective allreduse --algorithm ring --ranks 4
expect unknown-algorithm 2 "unknown algorithm 'tree' for bcast \(expected one of: binomial, knomial\)" -- \
  "$fl" counters --collective bcast --algorithm tree --ranks 4
expect one-rank 2 '--ranks: ranks must be in 2..1048576 \(got 1\)' -- \
  "$fl" counters --collective bcast --algorithm binomial --ranks 1
expect ranks-list 2 "--ranks: expected a number of ranks in 2..1048576, got .x.$" -- "$fl" counters --table --ranks 8,x
# The planner's options are checked as the scenario keys are (offload/options.h), by the
# same table: a 1-nomial tree is refused where it is read, naming the option.
expect counters-radix-range 2 '^fabriclab: error: --radix: 1 is below the minimum 2$' -- \
  "$fl" counters --collective bcast --algorithm knomial --ranks 8 --radix 1
expect plan-strategy 2 "strategy: unknown strategy 'best' \(expected naive, optimized, exact, all\)" -- \
  "$fl" plan --program "$data/../../examples/programs/bcast4.json" --strategy best

# One collective: every strategy verified; files written and read back by verify.
expect counters 0 'optimized/local +[0-9]+ +0 +1 +8 +1 / 8 +safe\+live' -- \
  "$fl" counters --collective bcast --algorithm binomial --ranks 8 --json "$tmp/b.json" --dot "$tmp/b.dot"
expect json-written 0 'b.optimized-local.json' -- ls "$tmp"
expect verify-own-output 0 'verdict: safe and live' -- "$fl" verify "$tmp/b.optimized-local.json"
expect dot-written 0 'digraph schedule' -- cat "$tmp/b.naive.dot"

# A global assignment beyond P = 64 (asked for: auto stops at 64) is verified by the
# global analysis it was made under, not judged by the local one (it is safe only there).
expect counters-global-verified-globally 0 'optimized/global +10296 .* safe\+live \(global\)$' -- \
  "$fl" counters --collective alltoall --algorithm pairwise --ranks 72 --strategy optimized --analysis global
# Every file counters writes reads back: reduce_scatter of 8 bytes (one double) on 4 ranks
# gives ranks 1..3 empty output blocks, which start at the end of the 8-byte window.
expect counters-rs-empty-blocks 0 'exact/global .*safe\+live' -- \
  "$fl" counters --collective reduce_scatter --algorithm ring --ranks 4 --json "$tmp/rs.json"
for t in naive optimized-local optimized-global exact-local exact-global; do
  expect "verify-rs-empty-blocks-$t" 0 'verdict: safe and live' -- "$fl" verify "$tmp/rs.$t.json"
done

# Segments (--segment, what exec does with a NIC's atomic size): a 64 KiB recursive-doubling
# allreduce on 8 ranks with atomics of at most 4 KiB. Each of the 48 atomics (24 to a peer,
# each with its arrival; 24 local) becomes 16: 15 x (48 + 24) = 1080 more operations. The
# optimized count is the unsegmented one (k = 3), naive has no closed form, and the file
# holds 768 atomics of 4096 bytes, the same 3 MiB in all, and verifies.
seg=("$fl" counters --collective allreduce --algorithm recursive_doubling --ranks 8 --bytes 65536 --segment 4096)
expect counters-segment 0 'segments of at most 4096 bytes: 1080 more operations\): 1160 operations' -- "${seg[@]}"
expect counters-segment-optimized 0 'optimized/local +1160 +0 +3 +24 +3 / 24 +safe\+live' -- \
  "${seg[@]}" --strategy optimized --analysis local --json "$tmp/seg.json"
expect counters-segment-naive 0 'naive +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +n/a +safe\+live' -- "${seg[@]}" --strategy naive
expect counters-segment-file 0 '^768 4096 3145728$' -- python3 -c "import json
a = [o for o in json.load(open('$tmp/seg.json'))['ops'] if o['kind'] == 'atomic']
print(len(a), max(o['bytes'] for o in a), sum(o['bytes'] for o in a))"
expect verify-segmented 0 'verdict: safe and live' -- "$fl" verify "$tmp/seg.json"
expect counters-segment-bad 2 '^fabriclab: error: --segment 12: expected a positive multiple of the 8-byte double elements' -- \
  "$fl" counters --collective allreduce --algorithm ring --ranks 4 --segment 12
expect counters-segment-zero 2 '^fabriclab: error: --segment 0: expected a positive multiple' -- \
  "$fl" counters --collective allreduce --algorithm ring --ranks 4 --segment 0
expect counters-segment-table 2 '^fabriclab: error: --segment is for one collective' -- \
  "$fl" counters --table --ranks 4 --segment 8 --quiet
# Nothing to split (a broadcast has no atomics): the closed forms stand, naive's too.
expect counters-segment-nothing 0 'naive +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ / [0-9]+ +safe' -- \
  "$fl" counters --collective bcast --algorithm binomial --ranks 8 --segment 8 --strategy naive

# The reference's own example, and a planted unsafe schedule.
expect verify-doc-example 0 'verdict: safe and live' -- "$fl" verify "$data/doc_example.json"
expect verify-unsafe 1 'op 4 \(host_wait on rank 1\) can fire before its parent op 1' -- \
  "$fl" verify "$data/unsafe_two_arrivals.json"
expect verify-unsafe-execution 1 'EARLY FIRING' -- "$fl" verify "$data/unsafe_two_arrivals.json"

# Counter ids are per rank (triggered-ops.md sections 1 and 8): both ranks of an exchange
# use their counters 0 and 1. Safe as written; with rank 1's wait at 1 instead of 2 its
# relay or its arrival alone fires it. The same with schedule-wide ids reads the same way.
expect verify-per-rank 0 'counters per rank max 2 total 4' -- "$fl" verify "$data/per_rank_exchange.json"
expect verify-per-rank-verdict 0 'verdict: safe and live' -- "$fl" verify "$data/per_rank_exchange.json"
expect verify-per-rank-low 1 "op 7 \(host_wait on rank 1\) can fire before its parent op 5: it waits for rank 1's counter 0 >= 1" -- \
  "$fl" verify "$data/per_rank_exchange_low.json"
expect verify-per-rank-low-verdict 1 'verdict: REJECTED' -- "$fl" verify "$data/per_rank_exchange_low.json"
expect verify-global-ids 0 'verdict: safe and live' -- "$fl" verify "$data/per_rank_exchange_global_ids.json"
expect verify-global-ids-low 1 "op 7 \(host_wait on rank 1\) can fire before its parent op 5: it waits for rank 1's counter 2 >= 1" -- \
  "$fl" verify "$data/per_rank_exchange_global_ids_low.json"
# Written files number each rank's counters from 0: binomial bcast needs one counter per
# rank (optimized), so every id in the file is 0.
expect counters-json-per-rank 0 '^0$' -- \
  bash -c "grep -cE '\"(completion|counter|target)\": [1-9]' '$tmp/b.optimized-local.json' || true"

# Advice: one fits, one never can.
expect advise 0 'ring P=8 +9 +14 +global +software +needs 9 counters on a NIC that has 4 \(naive would need 29\)' -- \
  "$fl" advise --counters 4 bcast:binomial:8 allreduce:ring:8
# advise needs what counters proves: the global analysis where it fits (7 counters for a
# 64-rank Rabenseifner allreduce, 12 under the local one).
expect advise-as-counters 0 'rabenseifner P=64 +7 +18 +global +offload' -- "$fl" advise --counters 8 allreduce:rabenseifner:64
expect advise-local 0 'rabenseifner P=64 +12 +18 +local +software +needs 12 counters on a NIC that has 8' -- \
  "$fl" advise --counters 8 --analysis local allreduce:rabenseifner:64
expect advise-bad-analysis 2 "--analysis: unknown analysis .best. \(expected local, global or auto\)" -- \
  "$fl" advise --analysis best allreduce:ring:8
expect counters-bad-analysis 2 "--analysis: unknown analysis .best. \(expected local, global or auto\)" -- \
  "$fl" counters --collective allreduce --algorithm ring --ranks 8 --analysis best
expect advise-bad-algorithm 2 "collective 'allreduce:rung:8': unknown algorithm 'rung' for allreduce \(expected one of: recursive_doubling, ring," -- \
  "$fl" advise allreduce:rung:8
# Where the files go is checked before the work; exact is not dropped silently.
expect counters-json-no-folder 2 '^fabriclab: error: --json /nonexistent-folder/x.json: the folder /nonexistent-folder does not exist$' -- \
  "$fl" counters --collective allreduce --algorithm ring --ranks 8 --json /nonexistent-folder/x.json
expect counters-json-folder 2 "--dot $tmp: is a folder" -- \
  "$fl" counters --collective allreduce --algorithm ring --ranks 8 --dot "$tmp"
expect counters-all-says-exact-not-run 0 'exact: not run with --strategy all beyond P = 16' -- \
  "$fl" counters --collective bcast --algorithm binomial --ranks 32
expect advise-huge-p 2 "ranks must be in 2..1048576 \(got 4294967300\)" -- "$fl" advise allreduce:ring:4294967300
expect too-big 2 'would have about 39999700000 operations' -- \
  "$fl" counters --collective allreduce --algorithm ring --ranks 100000
expect advise-bad-spec 2 "collective 'ring:8': expected collective:algorithm:ranks" -- \
  "$fl" advise ring:8

# Programs: recovery, re-assignment, and an ambiguous one.
expect plan 0 'optimized/local +10 +0 +1 +4 +safe\+live' -- \
  "$fl" plan --program "$data/../../examples/programs/bcast4.json"
expect plan-json 0 'naive +12 +2 +3 +7 +safe\+live' -- \
  "$fl" plan --program "$data/../../examples/programs/bcast4.json" --strategy naive --json "$tmp/plan.json"
expect verify-plan-output 0 'counters per rank max 3 total 7.*verdict: safe and live' -- \
  bash -o pipefail -c "'$fl' verify '$tmp/plan.json' | tr '\n' ' '"
printf '%s' '{"format": "fabriclab.program/1", "ranks": 3, "buffers": [{"rank": 1, "name": "in", "counter": 0}],
 "calls": [{"rank": 0, "kind": "put", "peer": 1, "buffer": "in", "bytes": 8, "trigger": null, "completion": null},
           {"rank": 2, "kind": "put", "peer": 1, "buffer": "in", "bytes": 8, "trigger": null, "completion": null},
           {"rank": 1, "kind": "host_wait", "trigger": {"counter": 0, "threshold": 1}}]}' >"$tmp/amb.json"
expect plan-ambiguous 2 'call 2 \(host_wait on rank 1\): threshold 1 on counter 0 leaves 1 of the 2 arrivals' -- \
  "$fl" plan --program "$tmp/amb.json"

# Bad files: exit 2 with the place named.
printf '{\n  "format": "fabriclab.schedule/1",\n  "ranks": 2,\n  "ops": [ }\n' >"$tmp/bad.json"
expect malformed-json 2 'bad.json:4:12: malformed JSON' -- "$fl" verify "$tmp/bad.json"
expect missing-file 2 'nope.json: cannot open the schedule file: No such file or directory' -- "$fl" verify "$tmp/nope.json"

# fabriclab run: the shipped scenarios, overrides, and what a bad scenario gets.
examples="$data/../../examples"
expect run-incast 0 'incast.toml: 16 of 16 flows delivered' -- "$fl" run "$examples/incast.toml" --out "$tmp/incast"
expect run-summary 0 '"lossless_drops": 0' -- cat "$tmp/incast/summary.json"
expect run-ports-csv 0 '^sw0,0,[0-9]+,3920,0,' -- cat "$tmp/incast/ports.csv"
expect run-flows-csv 0 '^15,h16,h0,1000000,0.000,' -- cat "$tmp/incast/flows.csv"
expect run-set 0 'incast.toml: 4 of 4 flows delivered' -- \
  "$fl" run "$examples/incast.toml" --out "$tmp/incast4" --set traffic.incast.senders=4 --seed 3
expect run-summary-seed 0 '"sim.seed": "3"' -- cat "$tmp/incast4/summary.json"
expect run-leaf-spine 0 'leaf-spine.toml: 64 of 64 flows delivered' -- \
  "$fl" run "$examples/leaf-spine.toml" --out "$tmp/ls"
expect run-collectives 0 '4 of 4 collectives done \(4 offloaded, 0 in software\)' -- \
  "$fl" run "$examples/collectives.toml" --out "$tmp/coll" --quiet
expect run-collectives-csv 0 '^allreduce,2,allreduce,ring,optimized,64,1048576,([0-9.]+),\1,[0-9.]+,0.000,[0-9.]+,offloaded,126,' -- \
  cat "$tmp/coll/collectives.csv"
expect run-collectives-again 0 '' -- "$fl" run "$examples/collectives.toml" --out "$tmp/coll2" --quiet
expect run-collectives-same 0 '' -- cmp "$tmp/coll/collectives.csv" "$tmp/coll2/collectives.csv"
expect run-trace-ops 0 'collectives.csv, ops.csv' -- \
  "$fl" run "$examples/collectives.toml" --out "$tmp/coll3" --quiet --trace-ops
expect run-trace-ops-csv 0 '^allreduce,0,0,0,[a-z_]+,0.000,0.000,[0-9.]+$' -- sed -n 2p "$tmp/coll3/ops.csv"
# A schedule whose last host_wait waits for one arrival too many: nothing is lost, but the
# collective can never complete, and the run says so.
"$fl" counters --collective bcast --algorithm binomial --ranks 2 --strategy optimized --analysis local \
  --json "$tmp/hang.json" >/dev/null
sed -i '0,/"threshold": 1/s//"threshold": 2/' "$tmp/hang.json"
printf '[topology]\nkind = "back_to_back"\n[traffic]\npattern = "none"\n[[collective]]\nschedule = "%s"\n' \
  "$tmp/hang.json" >"$tmp/hang.toml"
expect run-collective-hangs 1 "collective 'c0' \(iteration 0\) never completed: the run ran out of events" -- \
  "$fl" run "$tmp/hang.toml" --out "$tmp/hang" --quiet
# A collective that can never start under stall is a "no" (exit 1), not bad input.
expect run-collective-never-starts 1 "^fabriclab: error: .*could never start \(use the fallback policy\)" -- \
  "$fl" run "$examples/collectives.toml" --out "$tmp/never" --quiet --set nic.counters=8 --set collective.0.policy=stall
# Every scenario key is listed, a list entry's as collective.N.KEY, and sweep varies it.
expect run-parameters-list-keys 0 '^collective\.N\.algorithm ' -- "$fl" run --parameters
expect sweep-parameters 0 '^collective\.N\.algorithm ' -- "$fl" sweep --parameters
expect sweep-vary-list-key-missing 2 "collective.3.algorithm=ring' : the scenario has 1 \[\[collective\]\] entries|the scenario has 1 \[\[collective\]\] entries" -- \
  "$fl" sweep "$examples/collectives.toml" --vary collective.3.algorithm=ring --out "$tmp/sw3"
# Schedule files are relative to the scenario that names them.
mkdir -p "$tmp/rel"
"$fl" counters --collective bcast --algorithm binomial --ranks 2 --strategy optimized --analysis local \
  --json "$tmp/rel/bcast.json" >/dev/null
printf '[topology]\nkind = "back_to_back"\n[traffic]\npattern = "none"\n[[collective]]\nschedule = "bcast.json"\n' \
  >"$tmp/rel/rel.toml"
expect run-schedule-relative 0 '1 of 1 collectives done' -- \
  bash -c "cd / && '$fl' run '$tmp/rel/rel.toml' --out '$tmp/rel/out' --quiet"
expect run-collective-bad-key 2 'collective.toml:2:14: unknown key .collective.0.algorithmm. \(did you mean .collective.0.algorithm.\?\)' -- \
  sh -c "printf '[[collective]]\nalgorithmm = \"ring\"\n' >'$tmp/collective.toml' && '$fl' run '$tmp/collective.toml' --out '$tmp/x'"
expect run-lossless-drop 1 'dropped on a lossless priority' -- \
  "$fl" run "$examples/incast.toml" --out "$tmp/drop" --set switch.pfc.headroom=given --set switch.pfc.headroom_size=1KiB
expect run-unknown-key 2 "--set: unknown key 'traffic.byts' \(did you mean 'traffic.bytes'\?\)" -- \
  "$fl" run "$examples/incast.toml" --out "$tmp/x" --set traffic.byts=1MB
expect run-bad-unit 2 "'5furlongs' is not a time" -- \
  "$fl" run "$examples/incast.toml" --out "$tmp/x" --set topology.link_delay=5furlongs
printf '[topology]\nkind = "torus"\n' >"$tmp/torus.toml"
expect run-bad-choice 2 'torus.toml:2:8: .*topology.kind' -- "$fl" run "$tmp/torus.toml" --out "$tmp/x"
expect run-missing 2 'nope.toml: cannot open the scenario: No such file or directory' -- "$fl" run "$tmp/nope.toml"
expect run-pcap-bad-node 2 "output.pcap: no node 'sw9'" -- \
  "$fl" run "$examples/incast.toml" --out "$tmp/x" --set output.pcap=sw9:0
expect run-pcap-bad-port 2 "output.pcap: 'sw0:17': expected NODE:PORT, NODE:A-B or NODE:\*; sw0 has ports 0..16" -- \
  "$fl" run "$examples/incast.toml" --out "$tmp/x" --set output.pcap=sw0:17
expect run-pcap-bad-pattern 2 "output.pcap: 'spine\*' matches no node \(hosts are h0..h16, switches sw0..\)" -- \
  "$fl" run "$examples/incast.toml" --out "$tmp/x" --set 'output.pcap=spine*:0'
# A pattern and a range: ports 8 and 9 of every leaf, its first two uplinks (4 leaves of 8
# hosts, 2 spines; files named NODE-pPORT.pcap).
expect run-pcap-pattern 0 '^leaf0-p8.pcap leaf0-p9.pcap leaf1-p8.pcap leaf1-p9.pcap leaf2-p8.pcap leaf2-p9.pcap leaf3-p8.pcap leaf3-p9.pcap$' -- \
  bash -c "'$fl' run '$examples/leaf-spine.toml' --out '$tmp/pat' --quiet --set traffic.bytes=64KB \
  --set topology.leaves=4 --set topology.spines=2 --set 'output.pcap=leaf*:8-9' >/dev/null && cd '$tmp/pat' && ls *.pcap | paste -sd ' '"
expect run-impair-rule 2 "impair.rules: impairment rule 'swap 0/1': unknown action 'swap'" -- \
  "$fl" run "$examples/incast.toml" --out "$tmp/x" --set impair.link=sw0:0 --set 'impair.rules=swap 0/1'
expect run-impair-needs-link 2 'impair.rules needs impair.link' -- \
  "$fl" run "$examples/incast.toml" --out "$tmp/x" --set 'impair.rules=drop 0/1'
# A drop planted on the receiver's link: go-back-N resends the rest of that QP's message.
expect run-impair-drop 0 '; [1-9][0-9]* packets retransmitted' -- \
  "$fl" run "$examples/incast.toml" --out "$tmp/impair" --set impair.link=sw0:0 --set 'impair.rules=drop 3/100'
expect run-impair-summary 0 '"dropped": 1' -- cat "$tmp/impair/summary.json"

# Static routes: s1's second link to s2 carries the flow; a bad port is named.
printf '[topology]\nkind = "two_switches"\ns1_hosts = 1\ns2_hosts = 1\ninter_switch_links = 2\n[traffic]\npattern = "flows"\nflows_file = "one.csv"\n' >"$tmp/sr.toml"
printf 'src,dst,bytes,start,priority,qps\n0,1,1MB,0ns,3,1\n' >"$tmp/one.csv"
expect static-route 0 '^s1,2,[0-9]+,245,' -- bash -c "'$fl' run '$tmp/sr.toml' --out '$tmp/sr' --set 'routing.static=s1 h1 2' >/dev/null && cat '$tmp/sr/ports.csv'"
expect static-route-bad-port 2 "routing.static: 's1 h1 5': port '5': s1 has ports 0..2" -- \
  "$fl" run "$tmp/sr.toml" --out "$tmp/sr" --set 'routing.static=s1 h1 5'

# Time series: 14 samples (0, 100, ..., 1300 us; the run ends at 1309 us) of the
# receiver's port, whose queue is deep once the incast is on; one row per QP per sample.
expect run-timeseries 0 'outputs' -- "$fl" run "$examples/incast.toml" --out "$tmp/ts" \
  --set output.timeseries_interval=100us --set output.timeseries_ports=sw0:0
expect ts-queue-rows 0 '^15$' -- bash -c "wc -l <'$tmp/ts/queues.csv'"
expect ts-queue-deep 0 '^100000.000,sw0,0,[1-9][0-9]{5,},0.000$' -- cat "$tmp/ts/queues.csv"
expect ts-qp-rows 0 '^225$' -- bash -c "wc -l <'$tmp/ts/qps.csv'"
# A host's port: no switch queue (empty), the pause its NIC received (the incast pauses
# the senders from its first round trip on).
expect ts-host-port 0 '^100000.000,h1,0,,[1-9][0-9]*\.[0-9]{3}$' -- bash -c "'$fl' run '$examples/incast.toml' \
  --out '$tmp/tsh' --set output.timeseries_interval=100us --set output.timeseries_ports=h1 >/dev/null &&
  cat '$tmp/tsh/queues.csv'"

# A PFC deadlock: five switches in a ring, every host sending two switches clockwise.
printf 'src,dst,bytes,start,priority,qps\n' >"$tmp/ring_flows.csv"
for s in 0 1 2 3 4; do for k in 0 1; do
  echo "$((s * 2 + k)),$(( ((s + 2) % 5) * 2 + k)),20MB,0ns,3,1" >>"$tmp/ring_flows.csv"
done; done
printf '[topology]\nkind = "ring"\nring_switches = 5\nhosts_per_switch = 2\n[switch]\nbuffer = "1MiB"\n[switch.mmu]\nthreshold = "static"\nstatic_th = "32KiB"\n[traffic]\npattern = "flows"\nflows_file = "ring_flows.csv"\n' >"$tmp/ring.toml"
expect run-deadlock 1 'PFC deadlock at 600.000 us: .*sw0 port 2 priority 3 -> sw1 port 3 priority 3 -> .*sw4 port 3 priority 3' -- \
  "$fl" run "$tmp/ring.toml" --out "$tmp/ring"
expect run-deadlock-summary 0 '"pfc_deadlock": \{' -- cat "$tmp/ring/summary.json"

# pcap: tshark (installed by the dependency script) dissects what the simulator wrote,
# and what it reads agrees with the simulator's own counters. sw0 port 0 faces the
# receiver h0 (the tap sees both directions of its link: data one way, ACKs (opcode 17)
# and CNPs (0x81) the other); h1 is one of the paused senders.
"$fl" run "$examples/incast.toml" --out "$tmp/pcap" --set output.pcap=sw0:0,h1 >/dev/null 2>&1
expect pcap-magic 0 '^4d3cb2a1' -- bash -c "head -c 4 '$tmp/pcap/sw0-p0.pcap' | od -An -tx1 | tr -d ' '"
# The first frame out of sw0 port 0: WRITE FIRST from h1 (10.0.0.2) to QP 0x100, whose
# last bit leaves at 2 x 335.84 ns + 1 us = 1671.68 ns (stamped in whole ns).
expect pcap-first-frame 0 '^0\.000001671 6 0x000100 0 1000000 10\.0\.0\.2$' -- \
  bash -c "tshark -r '$tmp/pcap/sw0-p0.pcap' -c 1 -T fields -E separator=' ' -e frame.time_epoch \
    -e infiniband.bth.opcode -e infiniband.bth.destqp -e infiniband.bth.psn -e infiniband.reth.dmalen -e ip.src \
    2>/dev/null"
expect pcap-data-packets 0 '^3920$' -- bash -c "tshark -r '$tmp/pcap/sw0-p0.pcap' -Y 'infiniband.bth.opcode < 17' 2>/dev/null | wc -l"
expect pcap-ce-equals-marks 0 '^3808$' -- bash -c "tshark -r '$tmp/pcap/sw0-p0.pcap' -Y 'ip.dsfield.ecn == 3' 2>/dev/null | wc -l"
expect pcap-marks-in-csv 0 '^sw0,0,[0-9]+,3920,0,3808,' -- cat "$tmp/pcap/ports.csv"
expect pcap-psns-in-order 0 '^245 in order$' -- bash -c "tshark -r '$tmp/pcap/sw0-p0.pcap' \
  -Y 'infiniband.bth.destqp == 0x100 && infiniband.bth.opcode < 17' -T fields -e infiniband.bth.psn 2>/dev/null |
  awk 'BEGIN{ok=1} {if (\$1 != NR-1) ok=0} END{print NR, (ok ? \"in order\" : \"out of order\")}'"
expect pcap-pfc 0 '^40 3 65535$' -- bash -c "tshark -r '$tmp/pcap/h1-p0.pcap' -Y 'macc.opcode == 0x0101' \
  -T fields -e macc.cbfc.enbv.c3 -e macc.cbfc.pause_time.c3 2>/dev/null |
  awk '{n++; if (\$1 == 1 && \$2 > max) max = \$2} END{print n, 3, max}'"
expect pcap-pfc-in-csv 0 '^h1,0,[0-9]+,245,0,0,0,40,' -- cat "$tmp/pcap/ports.csv"
expect pcap-priority 0 '^3920 24 3$' -- bash -c "tshark -r '$tmp/pcap/sw0-p0.pcap' -Y 'infiniband.bth.opcode < 17' \
  -T fields -e ip.dsfield.dscp -e vlan.priority 2>/dev/null | sort | uniq -c | awk '{print \$1, \$2, \$3}'"
# A capture that cannot be written stops the run with exit 2, naming the file: here a
# file-size limit stands in for a full disk (writes fail with EFBIG, not ENOSPC). The
# run leaves neither the capture nor a summary.json saying it completed, and the
# packets it abandoned are not reported as a leak (one line of output: the error).
full_run="trap '' XFSZ; ulimit -f 200; '$fl' run '$examples/incast.toml' --out '$tmp/pcap-full' --set output.pcap=sw0:0,h1"
expect pcap-write-error 2 "^fabriclab: error: $tmp/pcap-full/h1-p0.pcap: cannot write the pcap file \([0-9]+ frames captured\): File too large$" -- \
  bash -c "$full_run"
expect pcap-write-error-one-line 0 '^1$' -- bash -c "($full_run) 2>&1 | wc -l"
expect pcap-write-error-nothing-left 0 '^flows-csv-absent$' -- \
  bash -c "ls '$tmp/pcap-full' | grep -E 'pcap|summary|flows' || echo flows-csv-absent"
# CNPs: the receiver h0 answers CE marks with BTH opcode 0x81 on priority 6 / DSCP 48
# (nic.roce_np defaults), as many on the wire as the summary counts.
"$fl" run "$examples/incast.toml" --out "$tmp/cnp" --set output.pcap=h0 >/dev/null 2>&1
cnps=$(sed -n 's/.*"cnps_sent": \([0-9]*\).*/\1/p' "$tmp/cnp/summary.json")
expect pcap-cnp 0 "^$cnps 48 6\$" -- bash -c "tshark -r '$tmp/cnp/h0-p0.pcap' -Y 'infiniband.bth.opcode == 0x81' \
  -T fields -e ip.dsfield.dscp -e vlan.priority 2>/dev/null | sort | uniq -c | awk '{print \$1, \$2, \$3}'"
# Every CNP sets BECN (BTH byte 4, bit 6; RoCEv2 Annex A17), and no other frame does:
# the frames with BECN, and those that are also CNPs, both number the CNPs sent.
expect pcap-cnp-becn 0 "^$cnps $cnps\$" -- bash -c "echo \$(tshark -r '$tmp/cnp/h0-p0.pcap' \
  -Y 'udp.payload[4:1] == 40' 2>/dev/null | wc -l) \$(tshark -r '$tmp/cnp/h0-p0.pcap' \
  -Y 'udp.payload[4:1] == 40 && infiniband.bth.opcode == 0x81' 2>/dev/null | wc -l)"
expect run-dcqcn 0 '"preset": "paper"' -- bash -c "'$fl' run '$examples/incast.toml' --out '$tmp/dcqcn' \
  --set nic.congestion_control=dcqcn --set nic.roce_rp.preset=paper >/dev/null && cat '$tmp/dcqcn/summary.json'"
expect run-dcqcn-bad-preset 2 "nic.roce_rp.preset.*nvidia, paper" -- \
  "$fl" run "$examples/incast.toml" --set nic.roce_rp.preset=mellanox
# INT (HPCC): every data frame and ACK carries the 42-byte header before the ICRC (a 1 MB
# flow of 4096-byte packets: 4216 first with its RETH, 4200, then 576 bytes in 680; ACKs
# 108), and every ACK through sw0 port 0 echoes one hop (UDP payload bytes 16-17, after
# BTH and AETH) whose word starts with rate code 2, 100 Gb/s (a first hex digit of 4 or 5).
"$fl" run "$examples/incast.toml" --out "$tmp/int" --set nic.congestion_control=hpcc --set output.pcap=sw0:0 \
  >/dev/null 2>&1
expect pcap-int-sizes 0 '^108 680 4200 4216$' -- bash -c "tshark -r '$tmp/int/sw0-p0.pcap' -T fields -e frame.len \
  2>/dev/null | sort -un | paste -sd ' '"
expect pcap-int-echo 0 '^[1-9][0-9]* acks, all one hop at 100G$' -- bash -c "tshark -r '$tmp/int/sw0-p0.pcap' \
  -Y 'infiniband.bth.opcode == 17' -T fields -e udp.payload 2>/dev/null |
  awk '{n++; if (substr(\$1, 33, 4) == \"0001\" && substr(\$1, 37, 1) ~ /[45]/) ok++}
       END{print n \" acks, \" (ok == n ? \"all one hop at 100G\" : ok \" of them one hop at 100G\")}'"
# HPCC-PINT: the header is PINT's 1-byte code (log base 1.05), 41 bytes less than INT's.
"$fl" run "$examples/incast.toml" --out "$tmp/pint" --set nic.congestion_control=hpcc --set nic.hpcc.feedback=pint \
  --set output.pcap=sw0:0 >/dev/null 2>&1
expect pcap-pint-sizes 0 '^67 639 4159 4175$' -- bash -c "tshark -r '$tmp/pint/sw0-p0.pcap' -T fields -e frame.len \
  2>/dev/null | sort -un | paste -sd ' '"
# Trimming (8 senders at once, PFC off, IRN): each data packet sw0 port 0's queue cut to
# its headers leaves as a 62-byte frame (66 without the FCS: no payload) with the BTH's
# lowest reserved bit set, and the receiver answers each with a NACK of code 0x65: as
# many of both as ports.csv counts, and some.
"$fl" run "$examples/incast.toml" --out "$tmp/trim" --set switch.pfc.enabled=false --set nic.transport=irn \
  --set switch.trim.threshold=100KB --set traffic.incast.senders=8 --set output.pcap=sw0:0 >/dev/null 2>&1
expect pcap-trimmed 0 '^([1-9][0-9]*) frames of 62 bytes, \1 NACKs 0x65, \1 in ports.csv$' -- bash -c "
  echo \$(tshark -r '$tmp/trim/sw0-p0.pcap' -Y 'udp.payload[4:1] == 01' 2>/dev/null | wc -l) frames of \
    \$(tshark -r '$tmp/trim/sw0-p0.pcap' -Y 'udp.payload[4:1] == 01' -T fields -e frame.len 2>/dev/null |
      sort -u | paste -sd ' ') bytes, \
    \$(tshark -r '$tmp/trim/sw0-p0.pcap' -Y 'infiniband.aeth.syndrome == 0x65' 2>/dev/null | wc -l) NACKs 0x65, \
    \$(awk -F, '\$1 == \"sw0\" && \$2 == 0 {print \$NF}' '$tmp/trim/ports.csv') in ports.csv"

# fabriclab offload: the timed NIC model on the shipped workload.
expect offload 0 'offload.toml: 32 collectives, 32 offloaded, 0 in software' -- \
  "$fl" offload "$examples/offload.toml" --out "$tmp/offload"
expect offload-csv 0 '^name,collective,algorithm,ranks,bytes,issue_ns,start_ns,done_ns,stall_ns,completion_ns,path,counters_max_per_nic' -- \
  cat "$tmp/offload/collectives.csv"
expect offload-plots 0 '^89504e47 89504e47$' -- bash -c "for f in usage completion; do head -c 4 '$tmp/offload/'\$f.png | od -An -tx1 | tr -d ' \\n'; echo; done | paste -sd ' '"
expect offload-fallback 0 'in software; makespan' -- \
  "$fl" offload "$examples/offload.toml" --out "$tmp/offload2" --set offload.policy=fallback
expect offload-never-fits 1 "needs 253 counters .* it could never start \(use the fallback policy\)" -- \
  "$fl" offload "$examples/offload.toml" --out "$tmp/x" --set offload.strategy=naive
expect offload-bad-key 2 "unknown key 'nic.countres' \(did you mean 'nic.counters'\?\)" -- \
  "$fl" offload "$examples/offload.toml" --set nic.countres=4
expect offload-bad-collective 2 "workload.collectives: 'allreduce': expected COLLECTIVE:ALGORITHM" -- \
  "$fl" offload "$examples/offload.toml" --set workload.collectives=allreduce
# A grid's collectives and ranks are checked before any point runs, as the builder checks them.
expect offload-grid-bad-ranks 2 "--set: experiment.ranks: ranks must be in 2..1048576 \(got 1\)$" -- \
  "$fl" offload "$examples/offload-concurrency.toml" --out "$tmp/x" --set experiment.ranks=1,16
expect offload-grid-bad-kind 2 "--set: experiment.collectives: unknown algorithm 'rung' for allreduce" -- \
  "$fl" offload "$examples/offload-concurrency.toml" --out "$tmp/x" --set experiment.collectives=bcast:binomial,allreduce:rung
expect counters-ranks-list-one 2 "--ranks: '8,64': a list is only for --table" -- \
  "$fl" counters --collective allreduce --algorithm ring --ranks 8,64

# Reordering: metrics of the egress toward the receiver, a re-sequencer there.
expect run-reorder-metrics 0 '^s2:0,h1,0,0,1954,0,10,0.005118,16,' -- bash -c "'$fl' run '$examples/reorder.toml' \
  --out '$tmp/ro' --set nic.reorder_window=32 >/dev/null && cat '$tmp/ro/reorder.csv'"
expect run-reseq 0 '"give_ups_full": 0' -- bash -c "'$fl' run '$examples/reorder.toml' --out '$tmp/rs' \
  --set reseq.link=s2:0 --set reseq.buffer=32 >/dev/null && cat '$tmp/rs/summary.json'"
expect run-reseq-on-box 2 'reseq.link: s1:1 already carries the reorder box' -- \
  "$fl" run "$examples/reorder.toml" --set reseq.link=s1:1

# fabriclab experiment / sweep: the standard experiments and parameter sweeps.
expect experiment 0 'pfc-only: the victim gets [0-9.]+ Gb/s' -- \
  "$fl" experiment congestion-spreading --scenario "$examples/congestion-spreading.toml" --out "$tmp/exp"
expect experiment-report 0 '^## What was varied' -- cat "$tmp/exp/report.md"
expect experiment-plot 0 '^89504e47' -- bash -c "head -c 4 '$tmp/exp/throughput.png' | od -An -tx1 | tr -d ' '"
expect experiment-unknown 2 "unknown experiment 'reorderr' \(expected one of: " -- "$fl" experiment reorderr
# From any folder an experiment finds its shipped scenario.
expect experiment-from-anywhere 0 '^experiment reorder: e/report.md' -- \
  bash -c "cd '$tmp' && '$fl' experiment reorder --out e --quiet"
expect experiment-no-scenario 2 'nothere.toml: not found$' -- \
  bash -c "cd '$tmp' && '$fl' experiment training --scenario nothere.toml"
expect sweep 0 '^sweep: 4 points \(4 run now, 0 done before\)' -- \
  "$fl" sweep "$examples/incast.toml" --vary nic.congestion_control=none,dcqcn --vary switch.buffer=2MiB,4MiB \
  --set traffic.bytes=100KB --out "$tmp/sweep"
expect sweep-resume 0 '^sweep: 4 points \(0 run now, 4 done before\)' -- \
  "$fl" sweep "$examples/incast.toml" --vary nic.congestion_control=none,dcqcn --vary switch.buffer=2MiB,4MiB \
  --set traffic.bytes=100KB --out "$tmp/sweep"
expect sweep-csv 0 '^p0003,dcqcn,4MiB,[0-9]+,ok,' -- cat "$tmp/sweep/sweep.csv"
# report.md: per varied key a plot and a table of goodput_gbps, one column per value of
# the other key; each cell is the point's sweep.csv value (to the report's 4 digits).
expect sweep-report-plots 0 '^89504e47 89504e47$' -- bash -c "for k in nic.congestion_control switch.buffer; do \
  head -c 4 '$tmp/sweep/vary-'\$k.png | od -An -tx1 | tr -d ' \n'; echo -n ' '; done | sed 's/ $//'"
expect sweep-report-table 0 '^4 cells of 2 tables match sweep.csv$' -- python3 - "$tmp/sweep" <<'PY'
import csv, sys
d = sys.argv[1]
rows = list(csv.DictReader(open(d + "/sweep.csv")))
good = {(r["nic.congestion_control"], r["switch.buffer"]): float(r["goodput_gbps"]) for r in rows}
text = open(d + "/report.md").read()
tables = {}
for section in text.split("\n## ")[1:]:
    title, body = section.split("\n", 1)
    lines = [l for l in body.splitlines() if l.startswith("| ")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    tables[title] = [(head, [c.strip() for c in l.strip("|").split("|")]) for l in lines[1:]]
n = 0
for head, cells in tables["goodput_gbps against switch.buffer"]:
    for col, cell in zip(head[1:], cells[1:]):
        want = good[(col.split("=")[1], cells[0])]
        assert abs(float(cell) - want) <= 5e-4 * abs(want), (col, cells[0], cell, want)
        n += 1
for head, cells in tables["goodput_gbps against nic.congestion_control"]:
    for col, cell in zip(head[1:], cells[1:]):
        assert abs(float(cell) - good[(cells[0], col.split("=")[1])]) <= 5e-4 * good[(cells[0], col.split("=")[1])]
print(f"{n} cells of {len(tables)} tables match sweep.csv")
PY
# Another metric redraws the report without running a point; a metric that is no column
# is refused, naming the file whose columns it may be.
expect sweep-metric 0 '^sweep: 4 points \(0 run now, 4 done before\)' -- \
  "$fl" sweep "$examples/incast.toml" --vary nic.congestion_control=none,dcqcn --vary switch.buffer=2MiB,4MiB \
  --set traffic.bytes=100KB --out "$tmp/sweep" --metric totals.pfc_pause_frames
expect sweep-metric-report 0 '^## totals.pfc_pause_frames against switch.buffer$' -- cat "$tmp/sweep/report.md"
expect sweep-metric-unknown 2 'sweep: --metric goodput: not a column of .*/sweep.csv' -- \
  "$fl" sweep "$examples/incast.toml" --vary nic.congestion_control=none,dcqcn --vary switch.buffer=2MiB,4MiB \
  --set traffic.bytes=100KB --out "$tmp/sweep" --metric goodput
expect sweep-mixed 2 'holds a different sweep' -- \
  "$fl" sweep "$examples/incast.toml" --vary switch.buffer=2MiB --out "$tmp/sweep"

# Bounded input: a device, a directory or an oversized file is refused before it is read;
# a named pipe is read on purpose.
ex="$data/../../examples"
expect input-device 2 '^fabriclab: error: /dev/zero: the scenario is a character device; expected a file$' -- \
  "$fl" run /dev/zero
expect input-directory 2 'error: \.: the scenario is a directory; expected a file' -- "$fl" run .
truncate -s 17M "$tmp/big.toml"
expect input-too-big 2 'big.toml: the scenario is 17 MiB, more than the 16 MiB a scenario may be' -- \
  "$fl" run "$tmp/big.toml"
expect input-flows-device 2 '/dev/zero: the flows file is a character device; expected a file' -- \
  "$fl" run "$ex/incast.toml" --set traffic.pattern=flows --set traffic.flows_file=/dev/zero
expect input-schedule-device 2 '/dev/zero: the schedule file is a character device; expected a file' -- \
  "$fl" verify /dev/zero
mkfifo "$tmp/pipe.toml"
(cat "$ex/incast.toml" >"$tmp/pipe.toml" &)
expect input-pipe 0 'flows delivered' -- "$fl" run "$tmp/pipe.toml" --out "$tmp/pipe-out"

# A number no double holds, in a schedule file: located, not an internal error.
printf '{\n  "format": "fabriclab.schedule/1",\n  "ranks": 1e400,\n  "ops": []\n}\n' >"$tmp/huge.json"
expect json-number-out-of-range 2 'huge.json:3:12: the number 1e400 is out of range' -- "$fl" verify "$tmp/huge.json"

# An unknown collective in an offload workload names the key or the file's line.
expect offload-unknown-collective 2 "^fabriclab: error: --set: workload.collectives: unknown collective 'bogus'" -- \
  "$fl" offload "$ex/offload.toml" --set workload.collectives=bogus:ring --out "$tmp/o"
printf 'name,collective,algorithm,ranks,bytes,issue\nx,allreduce,tree,4,1KiB,0ns\n' >"$tmp/wl.csv"
expect offload-file-unknown-algorithm 2 "wl.csv:2: unknown algorithm 'tree' for allreduce" -- \
  "$fl" offload "$ex/offload.toml" --set workload.arrival=file --set "workload.file=$tmp/wl.csv" --out "$tmp/o"

# Negative or empty where they mean nothing: refused, naming the option.
expect verify-runs-negative 2 '^--runs: Value -1 not in range 0 to' -- "$fl" verify "$data/doc_example.json" --runs -1
expect advise-slots-negative 2 '^--slots: Value -1 not in range 0 to' -- "$fl" advise --slots -1 allreduce:ring:8
expect exec-budget-negative 2 '^--budget: Value -1 not in range 0 to' -- \
  "$fl" exec --collective allreduce --algorithm ring --ranks 2 --budget -1
expect sweep-empty-value 2 "--vary switch.buffer: an empty value in '1MiB,,2MiB'" -- \
  "$fl" sweep "$ex/incast.toml" --vary switch.buffer=1MiB,,2MiB --out "$tmp/sw"
expect sweep-repeated-value 2 "--vary switch.buffer: value '1MiB' is given twice" -- \
  "$fl" sweep "$ex/incast.toml" --vary switch.buffer=1MiB,1MiB --out "$tmp/sw"

# Interrupted: a message and 128 + the signal (130, 143), never a verdict's exit code;
# the earlier run's summary.json (the mark of a complete run) is gone.
"$fl" run "$ex/incast.toml" --out "$tmp/sig" >/dev/null 2>&1
for sig in INT TERM; do
  "$fl" run "$data/../../examples/leaf-spine.toml" --set traffic.bytes=2GB --out "$tmp/sig" >"$tmp/sig.out" 2>&1 &
  pid=$!
  # Once it runs (the earlier summary is gone: the sanitizer build starts slowly).
  for _ in $(seq 1 300); do [ -e "$tmp/sig/summary.json" ] || break; sleep 0.1; done
  sleep 0.5
  kill -s "$sig" "$pid"
  wait "$pid"
  rc=$?
  want=$([ "$sig" = INT ] && echo 130 || echo 143)
  what=$([ "$sig" = INT ] && echo 'interrupted \(SIGINT\)' || echo 'terminated \(SIGTERM\)')
  if [ "$rc" -ne "$want" ] || ! grep -Eq "^fabriclab: $what$" "$tmp/sig.out" || [ -e "$tmp/sig/summary.json" ]; then
    echo "FAIL signal-$sig: exit $rc (want $want), output:"
    sed 's/^/    /' "$tmp/sig.out" | head -5
    failed=$((failed + 1))
  else
    passed=$((passed + 1))
  fi
done
# The same for an experiment: an earlier one's results.json (written last) goes first.
mkdir -p "$tmp/xsig"
echo stale >"$tmp/xsig/results.json"
"$fl" experiment collectives --scenario "$ex/collectives.toml" --out "$tmp/xsig" --jobs 1 --quiet >"$tmp/xsig.out" 2>&1 &
pid=$!
for _ in $(seq 1 300); do [ -e "$tmp/xsig/results.json" ] || break; sleep 0.1; done
sleep 0.5
kill -s INT "$pid"
wait "$pid"
rc=$?
if [ "$rc" -ne 130 ] || [ -e "$tmp/xsig/results.json" ]; then
  echo "FAIL experiment-interrupted: exit $rc (want 130), results.json $([ -e "$tmp/xsig/results.json" ] && echo left || echo gone)"
  sed 's/^/    /' "$tmp/xsig.out" | head -5
  failed=$((failed + 1))
else
  passed=$((passed + 1))
fi

finish
