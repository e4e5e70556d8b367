#!/usr/bin/env bash
# Hostile inputs for every reader of a file, against the binary (issue 49): inputs
# generated at extreme depth and size, each run with a time limit (10 s) and a memory
# limit (4 GiB of address space). Each must end with exit 2 and an error located at
# file:line:column, in well under a second -- never a signal, never a hang. The bounds are
# listed in docs/limits.md.
#
# Usage: FABRICLAB=build/release/fabriclab hostile_test.sh EXAMPLES_DIR
set -uo pipefail
fl=${FABRICLAB:?set FABRICLAB to the fabriclab binary}
ex=${1:?usage: hostile_test.sh EXAMPLES_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/expect.sh"

# Runs the command under the limits; its exit status as it ended (a signal: 128 + N).
# Under the sanitizers (FABRICLAB_SANITIZED=1, the asan test preset) the address space is
# the sanitizer's own (its shadow memory alone is terabytes): the memory limit is ASan's
# hard_rss_limit_mb there, and the time limit 60 s (what is instrumented runs several
# times slower).
if [ "${FABRICLAB_SANITIZED:-0}" = 1 ]; then
  export ASAN_OPTIONS="${ASAN_OPTIONS:-}:hard_rss_limit_mb=4096"
  limited=(timeout 60)
else
  limited=(bash -c 'ulimit -v 4194304 && exec timeout 10 "$@"' limited)
fi

# `expect`, printing how long the case took (the rejection's time, for docs/limits.md).
timed() {
  local name=$1 start
  start=$(date +%s%N)
  expect "$@"
  printf '%-32s %6d ms\n' "$name" $((($(date +%s%N) - start) / 1000000))
}

# A dotted chain of N parts (a.a.a...).
chain() { python3 -c "import sys; print('.'.join(['a'] * int(sys.argv[1])), end='')" "$1"; }
# N times TEXT.
times() { python3 -c "import sys; print(sys.argv[2] * int(sys.argv[1]), end='')" "$1" "$2"; }

deep=100000
printf '[%s]\n' "$(chain $deep)" >"$tmp/header.toml"
printf '%s = 1\n' "$(chain $deep)" >"$tmp/key.toml"
printf 'x = { %s = 1 }\n' "$(chain $deep)" >"$tmp/inline.toml"
printf '"%s" = 1\n' "$(times 1000000 k)" >"$tmp/longkey.toml"
times 70000 '[[collective]]\n' | sed 's/\\n/\n/g' >"$tmp/tables.toml"
printf 'x = [%s0]\n' "$(times 1000000 '0,')" >"$tmp/array.toml"
python3 -c "print('x = {' + ','.join(f'k{i} = 0' for i in range(100000)) + '}')" >"$tmp/inlinetable.toml"
printf 'x = %s1%s\n' "$(times $deep '[')" "$(times $deep ']')" >"$tmp/values.toml"
located="^fabriclab: error: $tmp/[a-z]+\.toml:[0-9]+:[0-9]+: "

# Scenario files: run, offload, and the same text as a tune search space.
for f in header key inline longkey tables array inlinetable; do
  timed "run-$f" 2 "$located" -- "${limited[@]}" "$fl" run "$tmp/$f.toml" --out "$tmp/o"
  timed "offload-$f" 2 "$located" -- "${limited[@]}" "$fl" offload "$tmp/$f.toml" --out "$tmp/o"
  timed "tune-space-$f" 2 "$located" -- "${limited[@]}" "$fl" tune "$ex/incast.toml" --space "$tmp/$f.toml" --out "$tmp/o"
done
# Nested values: toml++'s own bound (256), located as well.
timed run-values 2 "${located}malformed TOML: .*nest" -- "${limited[@]}" "$fl" run "$tmp/values.toml" --out "$tmp/o"
expect nothing-written-by-toml 0 '^$' -- test ! -e "$tmp/o"

# Schedules and programs: JSON nested 100 000 deep, in an array and in objects.
times $deep '[' >"$tmp/arrays.json"
printf '{"ops": %s1%s}' "$(times $deep '{"a": ')" "$(times $deep '}')" >"$tmp/objects.json"
for f in arrays objects; do
  timed "verify-$f" 2 "^fabriclab: error: $tmp/$f.json:1:[0-9]+: objects and arrays nested deeper than 64 levels" -- \
    "${limited[@]}" "$fl" verify "$tmp/$f.json"
  timed "plan-$f" 2 "^fabriclab: error: $tmp/$f.json:1:[0-9]+: objects and arrays nested deeper than 64 levels" -- \
    "${limited[@]}" "$fl" plan --program "$tmp/$f.json"
done
# A string value of 30 MB and a key of 5000 bytes (past 4096), in a schedule and a
# program; 2^25 + 1 operations (past the planner's most); a schedule over 32 MiB that
# names its header after "ops" (a document that size is not read whole); a program over
# 32 MiB.
python3 - "$tmp" <<'PY'
import sys
d = sys.argv[1]
for kind in ("schedule", "program"):
    open(f"{d}/{kind}-string.json", "w").write(f'{{"format": "fabriclab.{kind}/1",\n "collective": "' + "x" * 30_000_000 + '"}')
    open(f"{d}/{kind}-key.json", "w").write('{"format": 1,\n "' + "k" * 5000 + '": 1}')
ops = "0," * (1 << 25) + "0"
open(f"{d}/schedule-ops.json", "w").write('{"format": "fabriclab.schedule/1", "ranks": 2, "ops": [' + ops + "]}")
zeros = "0," * (17 << 20) + "0"
open(f"{d}/schedule-document.json", "w").write('{"ops": [' + zeros + '], "format": "fabriclab.schedule/1", "ranks": 2}')
open(f"{d}/program-document.json", "w").write('{"format": "fabriclab.program/1", "ranks": 2, "calls": [' + zeros + "]}")
PY
for k in schedule program; do
  [ $k = schedule ] && cmd=(verify) || cmd=(plan --program)
  timed "$k-string" 2 "^fabriclab: error: $tmp/$k-string.json:2:16: a string longer than 4096 bytes" -- \
    "${limited[@]}" "$fl" "${cmd[@]}" "$tmp/$k-string.json"
  timed "$k-key" 2 "^fabriclab: error: $tmp/$k-key.json:2:2: a string longer than 4096 bytes" -- \
    "${limited[@]}" "$fl" "${cmd[@]}" "$tmp/$k-key.json"
done
timed schedule-ops 2 "^fabriclab: error: $tmp/schedule-ops.json:1:67108919: an array or object of more than 33554432 elements" -- \
  "${limited[@]}" "$fl" verify "$tmp/schedule-ops.json"
timed schedule-document 2 "^fabriclab: error: $tmp/schedule-document.json: a schedule of more than 32 MiB must give" -- \
  "${limited[@]}" "$fl" verify "$tmp/schedule-document.json"
timed program-document 2 "^fabriclab: error: $tmp/program-document.json: the program file is 34 MiB, more than the 32 MiB" -- \
  "${limited[@]}" "$fl" plan --program "$tmp/program-document.json"
rm -f "$tmp"/*.json

# Flows and workload tables (CSV): a row of a hundred million commas, a header of as many
# columns, a line of 200 MB (all under the tables' 1 GiB).
python3 - "$tmp" <<'PY'
import sys
d = sys.argv[1]
commas = "," * 100_000_000
open(f"{d}/flows-wide.csv", "w").write("src,dst,bytes,start,priority,qps\n" + commas + "\n")
open(f"{d}/flows-header.csv", "w").write(commas + "\n")
open(f"{d}/flows-line.csv", "w").write("src,dst,bytes,start,priority,qps\n" + "1" * 200_000_000 + "\n")
for f in ("wide", "header", "line"):
    text = open(f"{d}/flows-{f}.csv").read().replace("src,dst,bytes,start,priority,qps", "name,collective,algorithm,ranks,bytes,issue")
    open(f"{d}/workload-{f}.csv", "w").write(text)
PY
for f in wide header line; do
  timed "flows-$f" 2 "^fabriclab: error: $tmp/flows-$f.csv:[12]: " -- "${limited[@]}" "$fl" run \
    "$ex/congestion-spreading.toml" --set "traffic.flows_file=$tmp/flows-$f.csv" --out "$tmp/o"
  timed "workload-$f" 2 "^fabriclab: error: $tmp/workload-$f.csv:[12]: " -- "${limited[@]}" "$fl" offload \
    "$ex/offload.toml" --set workload.arrival=file --set "workload.file=$tmp/workload-$f.csv" --out "$tmp/o"
done
expect nothing-written-by-tables 0 '^$' -- test ! -e "$tmp/o"
rm -f "$tmp"/*.csv

# Captures (analyze): 2^19 + 1 QPs, one RoCE frame each (past what one analysis tracks);
# with --bin 1 ns, five QPs of 2^22 bins each (past 2^24 bins over all QPs); a record
# claiming 2 GiB (libpcap's bound, 256 KiB); a pcapng block claiming 4 GiB (libpcap's,
# 16 MiB).
pcap=$(dirname "$0")/roce_pcap.py
python3 "$pcap" qps "$tmp/qps.pcap" $(((1 << 19) + 1))
python3 "$pcap" bins "$tmp/bins.pcap" 5 4194303
python3 "$pcap" record "$tmp/record.pcap"
python3 "$pcap" block "$tmp/block.pcapng"
timed capture-qps 2 "^fabriclab: error: $tmp/qps.pcap: frame 524289: more than 524288 QPs" -- \
  "${limited[@]}" "$fl" analyze --quiet "$tmp/qps.pcap" --out "$tmp/o"
timed capture-bins 2 "^fabriclab: error: $tmp/bins.pcap: frame 9: 1 ns throughput bins would be more than 16777216" -- \
  "${limited[@]}" "$fl" analyze --quiet --bin 1ns "$tmp/bins.pcap" --out "$tmp/o"
timed capture-record 2 "^fabriclab: error: $tmp/record.pcap: cannot read the capture after 0 frames: invalid packet capture length 2147483647" -- \
  "${limited[@]}" "$fl" analyze --quiet "$tmp/record.pcap" --out "$tmp/o"
timed capture-block 2 "^fabriclab: error: $tmp/block.pcapng: cannot read the capture: pcapng block size 4294967280 > maximum" -- \
  "${limited[@]}" "$fl" analyze --quiet "$tmp/block.pcapng" --out "$tmp/o"
expect nothing-written-by-captures 0 '^$' -- test ! -e "$tmp/o"

finish
