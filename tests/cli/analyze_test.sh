#!/usr/bin/env bash
# `fabriclab analyze` end to end. On the simulator's own captures (the reorder, incast and
# congestion-spreading scenarios) every per-QP and per-PFC-sender count is compared with
# tshark's dissection, and the reorder metrics, pauses, NAKs and damaged frames with the
# simulator's own counters; then the same capture cut by a snap length and converted to
# pcapng, and captures that cannot be read. Usage: FABRICLAB=path analyze_test.sh EXAMPLES_DIR
set -u
ex=$1
fl=${FABRICLAB:?set FABRICLAB}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/expect.sh"

# Per QP, from tshark: "src dst qp(hex) data-packets payload-bytes CE ACKs NAKs CNPs" (data:
# RC opcodes below 17 and UC ones; NAK: AETH syndrome 011xxxxx), sorted.
tshark_qps() {
  tshark -r "$1" -Y infiniband -T fields -E separator=, -e ip.src -e ip.dst -e infiniband.bth.destqp \
    -e infiniband.bth.opcode -e data.len -e ip.dsfield.ecn -e infiniband.aeth.syndrome 2>/dev/null |
    awk -F, '{
      k = $1 " " $2 " " $3; op = $4 + 0; seen[k] = 1
      if (op < 17 || (op >= 32 && op < 64)) { data[k]++; bytes[k] += $5; if ($6 == 3) ce[k]++ }
      else if (op == 17) { if (int($7 / 32) % 4 == 3) nak[k]++; else if (int($7 / 32) % 4 == 0) ack[k]++ }
      else if (op == 129) cnp[k]++
    } END { for (k in seen) printf "%s %d %d %d %d %d %d\n", k, data[k], bytes[k], ce[k], ack[k], nak[k], cnp[k] }' |
    sort
}
# The same from qps.csv, by column name.
our_qps() {
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { naks = $c["naks_psn_sequence"] + $c["naks_invalid_request"] + $c["naks_remote_access"] + $c["naks_remote_operational"] + $c["naks_other"]
      printf "%s %s 0x%06x %d %d %d %d %d %d\n", $c["src"], $c["dst"], $c["qp"], $c["data_packets"], $c["payload_bytes"],
        $c["ce"], $c["acks"], naks, $c["cnps"] }' "$1" | sort
}
# PFC per sender MAC and priority: "mac priority xoff xon", from tshark and from pfc.csv.
tshark_pfc() {
  local fields=()
  for c in 0 1 2 3 4 5 6 7; do fields+=(-e "macc.cbfc.enbv.c$c" -e "macc.cbfc.pause_time.c$c"); done
  tshark -r "$1" -Y 'macc.opcode == 0x0101' -T fields -E separator=, -e eth.src "${fields[@]}" 2>/dev/null |
    awk -F, '{ for (c = 0; c < 8; c++) if ($(2 + 2 * c) == 1) { k = $1 " " c; if ($(3 + 2 * c) > 0) xoff[k]++; else xon[k]++; seen[k] = 1 } }
      END { for (k in seen) printf "%s %d %d\n", k, xoff[k], xon[k] }' | sort
}
our_pfc() { awk -F, 'NR > 1 { print $2, $3, $4, $5 }' "$1" | sort; }
same() {  # NAME A-COMMAND B-COMMAND: both print the same non-empty text
  local a b
  a=$(eval "$2")
  b=$(eval "$3")
  if [ -n "$a" ] && [ "$a" == "$b" ]; then passed=$((passed + 1)); else
    echo "FAIL $1:"; diff <(echo "$a") <(echo "$b") | head -20; failed=$((failed + 1)); fi
}

# 1. Reorder: one QP sprayed over two links, 1 % held back, 0.2 % lost and 0.2 % damaged on
# the first link. Captured where s2 hands the packets to the receiver (s2:0) and on the
# damaged link's far end (s2:1).
"$fl" run "$ex/reorder.toml" --out "$tmp/ro" --set impair.corrupt_probability=0.002 \
  --set impair.drop_probability=0.002 --set output.pcap=s2:0,s2:1 >/dev/null 2>&1
expect analyze-reorder 0 "s2-p0.pcap: [0-9]+ frames over [0-9.]+ us: [0-9]+ RoCE, 0 PFC, 0 other" -- \
  "$fl" analyze "$tmp/ro/s2-p0.pcap" --out "$tmp/a-ro"
same reorder-qps-vs-tshark "tshark_qps $tmp/ro/s2-p0.pcap" "our_qps $tmp/a-ro/qps.csv"
# The reorder metrics are the simulator's for the same port (reorder.csv), the late time
# within the pcap's whole-ns stamps.
same reorder-metrics-vs-simulator \
  "awk -F, 'NR == 2 { printf \"%s %s %s %s %.0f\\n\", \$6, \$7, \$8, \$9, \$10 }' $tmp/ro/reorder.csv" \
  "awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[\$i] = i; next } \$c[\"data_packets\"] > 0 {
     printf \"%s %s %s %s %.0f\\n\", \$c[\"duplicates\"], \$c[\"reordered\"], \$c[\"reordered_ratio\"], \$c[\"max_extent\"], \$c[\"max_late_ns\"] }' $tmp/a-ro/qps.csv"
naks=$(sed -n 's/.*"naks_sent": \([0-9]*\).*/\1/p' "$tmp/ro/summary.json")
expect reorder-naks-vs-simulator 0 "^$naks\$" -- bash -c "awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[\$i] = i; next }
  { n += \$c[\"naks_psn_sequence\"] } END { print n }' '$tmp/a-ro/qps.csv'"
# captures.csv: frames $3, roce $5, short_captured $12, icrc_ok $14, icrc_bad $15, icrc_unchecked $16
expect reorder-icrc-all-good 0 '^0 0 1$' -- bash -c "awk -F, 'NR == 2 { print \$15, \$16, (\$14 == \$5) }' '$tmp/a-ro/captures.csv'"
corrupted=$(sed -n 's/.*"corrupted": \([0-9]*\).*/\1/p' "$tmp/ro/summary.json")
"$fl" analyze "$tmp/ro/s2-p1.pcap" --out "$tmp/a-ro1" --quiet
expect damaged-frames-have-bad-icrc 0 "^$corrupted\$" -- bash -c "awk -F, 'NR == 2 { print \$15 }' '$tmp/a-ro1/captures.csv'"
expect damaged-frames-some 0 '^[1-9]' -- echo "$corrupted"

# The same capture with a 64-byte snap length (headers up to the BTH kept): the payload
# still comes from the headers, the ICRC goes unchecked, the metrics stay.
editcap -s 64 "$tmp/ro/s2-p0.pcap" "$tmp/cut.pcap" 2>/dev/null
"$fl" analyze "$tmp/cut.pcap" --out "$tmp/a-cut" --quiet
same snaplen-same-qps "cut -d, -f2- $tmp/a-ro/qps.csv" "cut -d, -f2- $tmp/a-cut/qps.csv"
expect snaplen-counted 0 '^yes$' -- bash -c "awk -F, 'NR == 2 { print (\$12 == \$3 && \$16 == \$5 && \$14 == 0 ? \"yes\" : \"no: \" \$0) }' '$tmp/a-cut/captures.csv'"
# As pcapng: the same analysis, byte for byte, but the file's name.
editcap -F pcapng "$tmp/ro/s2-p0.pcap" "$tmp/ro.pcapng" 2>/dev/null
"$fl" analyze "$tmp/ro.pcapng" --out "$tmp/a-ng" --quiet
same pcapng-same-analysis "cat $tmp/a-ro/qps.csv $tmp/a-ro/throughput.csv $tmp/a-ro/reorder_density.csv" \
  "cat $tmp/a-ng/qps.csv $tmp/a-ng/throughput.csv $tmp/a-ng/reorder_density.csv"
# From standard input ("-"), the same analysis.
"$fl" analyze - --out "$tmp/a-stdin" --quiet <"$tmp/ro/s2-p0.pcap"
same stdin-same-analysis "cat $tmp/a-ro/qps.csv" "cat $tmp/a-stdin/qps.csv"
# Deterministic: a second analysis writes the same files.
"$fl" analyze "$tmp/ro/s2-p0.pcap" --out "$tmp/a-ro2" --quiet
expect deterministic 0 '^same$' -- bash -c "cd '$tmp/a-ro' && for f in *.csv *.json *.md *.dat; do cmp -s \$f '$tmp/a-ro2/'\$f || echo \"differs: \$f\"; done; echo same"

# 2. Incast: 16 senders into h0; sw0:0 faces h0 (data, CE marks, ACKs, CNPs), h1 is a
# paused sender (PFC). Both captures in one analysis.
"$fl" run "$ex/incast.toml" --out "$tmp/in" --set output.pcap=sw0:0,h1 >/dev/null 2>&1
expect analyze-incast 0 "1 PFC sender/priority pairs" -- \
  "$fl" analyze "$tmp/in/sw0-p0.pcap" "$tmp/in/h1-p0.pcap" --out "$tmp/a-in" --link-speed 100Gbps
same incast-qps-vs-tshark "(tshark_qps $tmp/in/sw0-p0.pcap; tshark_qps $tmp/in/h1-p0.pcap) | sort" \
  "our_qps $tmp/a-in/qps.csv"
same incast-pfc-vs-tshark "tshark_pfc $tmp/in/h1-p0.pcap" "our_pfc $tmp/a-in/pfc.csv"
cnps=$(sed -n 's/.*"cnps_sent": \([0-9]*\).*/\1/p' "$tmp/in/summary.json")
expect incast-cnps-vs-simulator 0 "^$cnps\$" -- bash -c "awk -F, 'NR > 1 && \$1 == 0 { n += \$3 } END { print n }' '$tmp/a-in/cnp_ports.csv'"
expect incast-plots 0 '^89504e47 89504e47 89504e47$' -- bash -c "cd '$tmp/a-in' && for f in throughput pause_timeline cnp_intervals; do
  head -c 4 \$f.png | od -An -tx1 | tr -d ' \\n'; echo; done | paste -sd ' '"
expect incast-json 0 '"pfc": \[' -- cat "$tmp/a-in/analysis.json"

# 3. Congestion spreading: the s1-s2 link at s1 (port 4): the victim and culprit flows'
# data, CNPs, and s2's pauses of s1. The paused time agrees with the simulator's own
# ports.csv within the pcap's rounding to whole ns (1 ns per pause).
"$fl" run "$ex/congestion-spreading.toml" --out "$tmp/cs" --set output.pcap=s1:4 >/dev/null 2>&1
"$fl" analyze "$tmp/cs/s1-p4.pcap" --out "$tmp/a-cs" --link-speed 100Gbps --quiet
same spreading-qps-vs-tshark "tshark_qps $tmp/cs/s1-p4.pcap" "our_qps $tmp/a-cs/qps.csv"
same spreading-pfc-vs-tshark "tshark_pfc $tmp/cs/s1-p4.pcap" "our_pfc $tmp/a-cs/pfc.csv"
expect spreading-paused-vs-simulator 0 '^ok' -- bash -c "awk -F, 'NR == FNR && FNR == 1 { for (i = 1; i <= NF; i++) c[\$i] = i; next }
  NR == FNR && \$1 == \"s1\" && \$2 == 4 { sim = \$c[\"paused_ns\"]; pauses = \$c[\"pfc_pause_received\"] - \$c[\"pfc_resume_received\"] }
  NR != FNR && FNR == 2 { ours = \$8; n = \$7 } END { d = sim - ours; if (d < 0) d = -d;
  print (n == pauses && d <= n ? \"ok\" : \"differ\"), sim, ours, n, pauses }' '$tmp/cs/ports.csv' '$tmp/a-cs/pfc.csv'"

# The simulator counts PFC pauses and resumes apart (ports.csv): at s1:4 as many of each
# as tshark finds XOFF and XON frames from s2 in the capture.
same spreading-pause-resume-vs-tshark "tshark_pfc $tmp/cs/s1-p4.pcap | awk '{ print \$3, \$4 }'" \
  "awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[\$i] = i; next } \$1 == \"s1\" && \$2 == 4 {
     print \$c[\"pfc_pause_received\"] - \$c[\"pfc_resume_received\"], \$c[\"pfc_resume_received\"] }' $tmp/cs/ports.csv"

# 4. What cannot be read: exit 2 naming the file; nothing marked complete.
expect missing-capture 2 "nope.pcap: cannot read the capture" -- "$fl" analyze "$tmp/nope.pcap" --out "$tmp/a-x"
head -c 100 /dev/urandom >"$tmp/junk.pcap"
expect junk-capture 2 "junk.pcap: cannot read the capture" -- "$fl" analyze "$tmp/junk.pcap" --out "$tmp/a-x"
editcap -T rawip "$tmp/ro/s2-p0.pcap" "$tmp/raw.pcap" 2>/dev/null
expect not-ethernet 2 "raw.pcap: link type [0-9]+ \(RAW\) is not supported: captures must be Ethernet" -- \
  "$fl" analyze "$tmp/raw.pcap" --out "$tmp/a-x"
head -c 5000 "$tmp/ro/s2-p0.pcap" >"$tmp/torn.pcap"
expect torn-capture 2 "torn.pcap: cannot read the capture after [0-9]+ frames" -- "$fl" analyze "$tmp/torn.pcap" --out "$tmp/a-x"
expect no-report-after-error 0 '^absent$' -- bash -c "test -e '$tmp/a-x/report.md' && echo present || echo absent"
expect bad-link-speed 2 "100 parsecs" -- "$fl" analyze "$tmp/ro/s2-p0.pcap" --out "$tmp/a-x" --link-speed "100 parsecs"
expect bad-bin 2 "--bin must be above 0" -- "$fl" analyze "$tmp/ro/s2-p0.pcap" --out "$tmp/a-x" --bin 0ns

# 5. Test streams (fabriclab stream). One QP of 64 packets (256 KiB in 4 KiB) through the
# reorder box's rules: PSN 10 held for 5 later packets, 20 dropped, 30 duplicated. As
# received: 0-9, 11-15, 10, 16-19, 21-30, 30, 31-63 -- 64 frames; gaps 2 (11 and 21 skip
# ahead), missing 1, duplicates 1, reordered 1 with extent 5. tshark reads the PSNs and
# the FCS of every frame.
"$fl" stream --out "$tmp/s" --bytes 256KiB --rules "hold 0/10 5; drop 0/20; dup 0/30" --fcs --quiet
want_psns=$( (seq 0 9; seq 11 15; echo 10; seq 16 19; seq 21 30; echo 30; seq 31 63) | paste -sd ' ')
expect stream-psns-by-tshark 0 "^$want_psns\$" -- bash -c "tshark -r '$tmp/s/stream.pcap' -T fields -e infiniband.bth.psn 2>/dev/null | paste -sd ' '"
# A rule naming a flow the stream lacks is refused; one whose PSN never comes is a
# warning, and summary.json lists it (64 packets: PSNs 0..63).
expect stream-rule-no-flow 2 "impair.rules: 'drop 1/5': there is no flow 1 \(the run has 1 flow, 0\.\.0\)" -- \
  "$fl" stream --out "$tmp/s-noflow" --bytes 256KiB --rules "drop 1/5" --quiet
expect stream-rule-no-psn 0 "warning: impair.rules: 'drop 0/64': flow 0 sent no PSN 64 through the box: the rule did nothing" -- \
  "$fl" stream --out "$tmp/s-nopsn" --bytes 256KiB --rules "drop 0/64; dup 0/63/2" --quiet
expect stream-rule-twice 0 "'dup 0/63/2': flow 0 sent PSN 63 through the box 1 time, not 2" -- \
  cat "$tmp/s-nopsn/run/summary.json"
expect stream-in-order-psns 0 "^$(seq 0 63 | paste -sd ' ')\$" -- \
  bash -c "tshark -r '$tmp/s/stream-in-order.pcap' -T fields -e infiniband.bth.psn 2>/dev/null | paste -sd ' '"
expect stream-fcs-good 0 '^ +64 1$' -- bash -c "tshark -o eth.fcs:always -o eth.check_fcs:TRUE -r '$tmp/s/stream.pcap' \
  -T fields -e eth.fcs.status 2>/dev/null | sort | uniq -c"
expect stream-icrc-fcs-ours 0 '^64 64 0 64 0$' -- bash -c "awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[\$i] = i; next }
  { print \$c[\"frames\"], \$c[\"icrc_ok\"], \$c[\"icrc_bad\"], \$c[\"fcs_ok\"], \$c[\"fcs_bad\"] }' '$tmp/s/expected/captures.csv'"
expect stream-expected-metrics 0 '^64 2 1 1 1 5$' -- bash -c "awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[\$i] = i; next }
  \$c[\"data_packets\"] > 0 { print \$c[\"data_packets\"], \$c[\"psn_gaps\"], \$c[\"missing_psns\"], \$c[\"duplicates\"],
  \$c[\"reordered\"], \$c[\"max_extent\"] }' '$tmp/s/expected/qps.csv'"
expect stream-note 0 'largest reorder extent is 5 packets' -- cat "$tmp/s/stream.md"
# The same stream from PSN 2^24 - 16 crosses the wrap: on the wire (tshark) every PSN is
# shifted mod 2^24; unwrapped, the analysis is the same.
"$fl" stream --out "$tmp/sw" --bytes 256KiB --rules "hold 0/10 5; drop 0/20; dup 0/30" --first-psn 16777200 --quiet
expect stream-wrap-psns-by-tshark 0 "^$(for p in $want_psns; do echo $(((p + 16777200) % 16777216)); done | paste -sd ' ')\$" -- \
  bash -c "tshark -r '$tmp/sw/stream.pcap' -T fields -e infiniband.bth.psn 2>/dev/null | paste -sd ' '"
same stream-wrap-same-metrics "cut -d, -f28-35 $tmp/s/expected/qps.csv" "cut -d, -f28-35 $tmp/sw/expected/qps.csv"
# The simulated device re-assembles with a re-sequencer of B packets on its port to h0:
# with 4 it gives up on the extent-5 hold (its output, analysed, is still reordered);
# with 5 it absorbs it (in order; the dropped PSN stays missing).
for b in 4 5; do
  "$fl" stream --out "$tmp/s$b" --bytes 256KiB --rules "hold 0/10 5; drop 0/20; dup 0/30" --quiet \
    --set reseq.link=sw0:0 --set reseq.buffer=$b
  "$fl" analyze "$tmp/s$b/device-output.pcap" --out "$tmp/d$b" --quiet
done
device_reorder() { awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
  $c["data_packets"] > 0 { print $c["reordered"], $c["max_extent"], $c["missing_psns"] }' "$1"; }
export -f device_reorder
expect device-gives-up-below-the-extent 0 '^1 5 1$' -- bash -c "device_reorder '$tmp/d4/qps.csv'"
expect device-absorbs-at-the-extent 0 '^0 0 1$' -- bash -c "device_reorder '$tmp/d5/qps.csv'"
# The real loop on the loopback: tcpreplay sends the stream (no FCS: the interface adds
# none on lo), tshark captures it, and the capture's analysis is the expected one (but
# the timing: frames leave as fast as tcpreplay goes).
"$fl" stream --out "$tmp/r" --bytes 256KiB --rules "hold 0/10 5; drop 0/20; dup 0/30" --quiet
# On a loaded machine (CI runs two tests at a time on two cores) the capture can start late
# or its socket buffer overflow while tshark waits for a core: give it an 8 MiB buffer, pace
# the replay, and try again (at most three times) until all 64 frames were captured.
for attempt in 1 2 3; do
  rm -f "$tmp/replayed.pcapng"
  timeout 30 tshark -i lo -B 8 -f 'udp port 4791' -c 64 -w "$tmp/replayed.pcapng" >"$tmp/tshark.log" 2>&1 &
  capture=$!
  for _ in $(seq 100); do grep -q "Capturing on" "$tmp/tshark.log" && break; sleep 0.1; done
  sleep 0.5
  tcpreplay -i lo --pps 2000 "$tmp/r/stream.pcap" >"$tmp/tcpreplay.log" 2>&1
  wait "$capture" || true
  captured=$(tshark -r "$tmp/replayed.pcapng" 2>/dev/null | wc -l)
  [ "$captured" = 64 ] && break
  echo "replay attempt $attempt captured $captured of 64 frames; trying again" >&2
done
"$fl" analyze "$tmp/replayed.pcapng" --out "$tmp/a-replayed" --quiet
same replayed-as-expected "cut -d, -f1-4,7-9,11-21,25-35,37- $tmp/r/expected/qps.csv" \
  "cut -d, -f1-4,7-9,11-21,25-35,37- $tmp/a-replayed/qps.csv"
expect stream-bad-bytes 2 "^fabriclab: error: stream: --bytes: '12parsecs' is not a size" -- "$fl" stream --out "$tmp/x" --bytes 12parsecs
expect stream-fixed-key 2 "^fabriclab: error: stream: --set topology.kind=ring: topology.kind is fixed by the stream" -- \
  "$fl" stream --out "$tmp/x" --set topology.kind=ring
expect stream-own-option 2 "^fabriclab: error: stream: --set sim.seed=2: sim.seed is the stream's --seed option" -- \
  "$fl" stream --out "$tmp/x" --set sim.seed=2
expect stream-bad-key 2 "unknown key 'impair.rulez' \\(did you mean 'impair.rules'\\?\\)" -- "$fl" stream --out "$tmp/x" --set impair.rulez=1

finish
