#!/usr/bin/env bash
# Builds the libFuzzer targets (preset "asan": clang++, address and undefined-behaviour
# sanitizers, the same build as `make test-asan`) and runs each for a bounded time on its corpus: the seeds derived from the
# shipped files (examples/, tests/data/, the planner's own schedules and programs, the
# command lines in README.md, docs/ and examples/), plus what earlier runs kept in
# build/fuzz/corpus/. Fails, naming the target and the file, on any crash, sanitizer
# report, unexpected exception, timeout (-timeout, seconds per input) or memory beyond
# -rss_limit_mb; and first replays fuzz/regressions/TARGET/*, the inputs of earlier findings.
#
#   scripts/fuzz.sh                  # every target, 60 s each
#   scripts/fuzz.sh 120 cli flows_csv
#   FUZZ_JOBS=2 scripts/fuzz.sh      # two targets at a time (one core each)
#   FUZZ_KEEP_GOING=1 scripts/fuzz.sh 600 schedule_json   # collect every finding, don't stop
#   FUZZ_SEED=1 scripts/fuzz.sh 30  # libFuzzer's random seed fixed (CI: the same mutations
#                                    # every run, so a red run is a regression, not luck)
#
# Findings go to build/fuzz/findings/TARGET/ (crash-*, timeout-*, oom-*, leak-*); logs to
# build/fuzz/logs/TARGET.log. Reproduce one with build/asan/fuzz/fuzz_TARGET FILE, and
# minimise it with -minimize_crash=1 -runs=100000 -exact_artifact_path=OUT FILE.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
all_targets=(scenario_toml flows_csv cdf ns3_topology ns3_import schedule_json program_json capture cli)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")
jobs=${FUZZ_JOBS:-1}
timeout=${FUZZ_TIMEOUT:-10}
rss_limit=${FUZZ_RSS_LIMIT_MB:-2048}
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "fuzz: unknown target '$t' (one of: ${all_targets[*]})" >&2; exit 2; }
done

if [ "${FUZZ_BUILD:-1}" = 1 ]; then
  cmake --preset asan >/dev/null
  cmake --build --preset asan --target fabriclab_fuzzers
fi
out=build/fuzz
bin=build/asan/fuzz

# Seeds, derived from the tree on every run.
seeds=$out/seeds
rm -rf "$seeds"
mkdir -p "$seeds"/{scenario_toml,flows_csv,cdf,ns3_topology,ns3_import,schedule_json,program_json,capture,cli} "$out/dicts"
cp examples/*.toml "$seeds/scenario_toml/"
cp examples/*.csv "$seeds/flows_csv/"
cp examples/cdf/*.cdf "$seeds/cdf/"
cp tests/data/ns3/*topology.txt "$seeds/ns3_topology/"
# import-ns3's inputs as one file: config.txt (naming topology.txt and flow.txt beside it),
# "---", flow.txt, "---", topology.txt.
for d in tests/data/ns3/*/; do
  topo=$d/topology.txt
  [ -f "$topo" ] || topo=tests/data/ns3/leaf-spine-topology.txt
  { sed -e 's/^TOPOLOGY_FILE .*/TOPOLOGY_FILE topology.txt/' -e 's/^FLOW_FILE .*/FLOW_FILE flow.txt/' "$d/config.txt"
    printf -- '---\n'; cat "$d/flow.txt"; printf -- '---\n'; cat "$topo"; } >"$seeds/ns3_import/$(basename "$d").txt"
done
cp tests/data/*.json "$seeds/schedule_json/"
cp examples/programs/*.json "$seeds/program_json/"
# Nesting past the readers' depth bound (64 levels), which mutations of the shipped
# files would take long to reach: arrays and objects 100 levels deep, in an operation and
# in the header. (fuzz/regressions/ keeps the 100 000-level files that once crashed:
# schedule_json, program_json, and scenario_toml's header 100 000 parts deep.)
deep_arrays=$(printf '[%.0s' {1..100})
deep_objects=$(printf '{"a":%.0s' {1..100})
printf '{"format":"fabriclab.schedule/1","ranks":2,"ops":[{"id":0,"deps":%s' "$deep_arrays" \
  >"$seeds/schedule_json/deep-arrays.json"
printf '{"format":"fabriclab.schedule/1","layout":%s' "$deep_objects" >"$seeds/schedule_json/deep-objects.json"
printf '{"format":"fabriclab.program/1","ranks":2,"calls":%s' "$deep_arrays" >"$seeds/program_json/deep-arrays.json"
printf 'a = %s\n' "$deep_arrays" >"$seeds/scenario_toml/deep-arrays.toml"
# A TOML key or table header just under, at and past its bounds (64 dotted parts, 1024
# bytes; src/scenario/toml_input.h), as a header, a dotted key and an inline table's key;
# arrays and inline tables just under, at and past 65 536 elements.
chain() { local c=a i; for ((i = 1; i < $1; i++)); do c+=.a; done; printf '%s' "$c"; }
for n in 63 64 65 100; do
  printf '[%s]\nx = 1\n' "$(chain $n)" >"$seeds/scenario_toml/header-$n-parts.toml"
  printf '[[%s]]\n' "$(chain $n)" >"$seeds/scenario_toml/list-header-$n-parts.toml"
  printf '%s = 1\n' "$(chain $n)" >"$seeds/scenario_toml/key-$n-parts.toml"
  printf 'x = { %s = 1 }\n' "$(chain $n)" >"$seeds/scenario_toml/inline-key-$n-parts.toml"
done
for n in 65535 65536 65537; do  # elements of an array and an inline table (kTomlMaxElements)
  python3 -c "import sys; n = int(sys.argv[1]); print('x = [' + ','.join(['0'] * n) + ']')" "$n" \
    >"$seeds/scenario_toml/array-$n-elements.toml"
  python3 -c "import sys; n = int(sys.argv[1]); print('x = {' + ','.join(f'k{i}=0' for i in range(n)) + '}')" "$n" \
    >"$seeds/scenario_toml/inline-table-$n-elements.toml"
done
for n in 1022 1024 1025 2000; do  # quoted: n + 2 bytes
  printf '"%s" = 1\n' "$(head -c "$n" /dev/zero | tr '\0' k)" >"$seeds/scenario_toml/key-$n-bytes.toml"
done
# Strings (a key, a value) just under, at and past their bound (4096 bytes;
# src/offload/json_fields.h). The element bound (2^25) and the 32 MiB document bound are
# too large for a fuzz input: tests/cli/hostile_test.sh and the unit tests hold them.
for n in 4095 4096 4097 8000; do
  x=$(head -c "$n" /dev/zero | tr '\0' x)
  printf '{"format":"fabriclab.schedule/1","ranks":2,"collective":"%s","ops":[]}' "$x" >"$seeds/schedule_json/string-$n-bytes.json"
  printf '{"format":"fabriclab.schedule/1","%s":1}' "$x" >"$seeds/schedule_json/key-$n-bytes.json"
  printf '{"format":"fabriclab.program/1","ranks":2,"buffers":[{"rank":0,"name":"%s","counter":0}],"calls":[]}' "$x" \
    >"$seeds/program_json/string-$n-bytes.json"
done
# Tables (src/core/csv.h): headers of 1023, 1024, 1025 and 2000 columns, a row one wider
# than its header, and lines at and past 1 MiB.
python3 - "$seeds/flows_csv" <<'PY'
import sys
d = sys.argv[1]
head = "src,dst,bytes,start,priority,qps"
for n in (1023, 1024, 1025, 2000):
    open(f"{d}/header-{n}-columns.csv", "w").write(",".join(["c"] * n) + "\n0\n")
open(f"{d}/row-wider.csv", "w").write(head + "\n0,1,1000,0,3,1,9\n")
for n in ((1 << 20) - 1, 1 << 20, (1 << 20) + 1):
    line = "0,1,1000,0,3," + "1" * (n - 13)  # n bytes
    open(f"{d}/line-{n}-bytes.csv", "w").write(head + "\n" + line + "\n")
PY
FABRICLAB_FUZZ_SEEDS=$seeds/schedule_json "$bin/fuzz_schedule_json"
FABRICLAB_FUZZ_SEEDS=$seeds/program_json "$bin/fuzz_program_json"
FABRICLAB_FUZZ_SEEDS=$seeds/capture "$bin/fuzz_capture"
# Captures past libpcap's bounds: a record claiming 2 GiB (its most is 256 KiB), a pcapng
# block claiming 4 GiB (its most is 16 MiB); and 300 QPs, one frame each. (The analysis's
# own bounds, 2^19 QPs and 2^24 bins, are tests/cli/hostile_test.sh's.)
python3 tests/cli/roce_pcap.py record "$seeds/capture/record-2-GiB.pcap"
python3 tests/cli/roce_pcap.py block "$seeds/capture/block-4-GiB.pcapng"
python3 tests/cli/roce_pcap.py qps "$seeds/capture/qps-300.pcap" 300
# Every `fabriclab COMMAND ...` in the documentation, one argument a line.
n=0
{ grep -hoE '(^|[`$# ]+)(\./build/release/)?fabriclab [a-z][a-z-]+[^`|;>&#\\]*' \
  README.md docs/*.md examples/*.toml examples/*.sh || true; } |
  sed -E 's/^[`$# ]*(\.\/build\/release\/)?fabriclab //; s/[[:space:]]+$//' | sort -u |
  while read -r line; do
    n=$((n + 1))
    tr -s ' ' '\n' <<<"$line" >"$seeds/cli/doc-$n"
  done
FABRICLAB_FUZZ_DICT=$out/dicts/scenario_toml.dict "$bin/fuzz_scenario_toml"
FABRICLAB_FUZZ_DICT=$out/dicts/cli.dict "$bin/fuzz_cli"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# One target: replay its regressions, then fuzz. Writes $out/status/TARGET: "ok", or what
# failed.
fuzz_one() {
  local t=$1  # (its own line: a `local` expands all its words before it assigns any)
  local status=$out/status/$t log=$out/logs/$t.log
  local regress=fuzz/regressions/$t findings=$out/findings/$t corpus=$out/corpus/$t
  mkdir -p "$findings" "$corpus"
  : >"$log"
  local failed=()
  if [ -d "$regress" ] && [ -n "$(ls -A "$regress")" ]; then
    for f in "$regress"/*; do
      if ! "$bin/fuzz_$t" -timeout="$timeout" -rss_limit_mb="$rss_limit" "$f" >>"$log" 2>&1 </dev/null; then
        failed+=("earlier finding still fails: $f")
      fi
    done
  fi
  local dict=()
  [ -f "$out/dicts/$t.dict" ] && dict=(-dict="$out/dicts/$t.dict")
  # Inputs as large as the largest seed (libFuzzer would otherwise cut them at 1 MiB, or
  # at 4096 bytes for a corpus of small files), and at least 4096 bytes.
  local max_len
  max_len=$(find "$seeds/$t" "$corpus" -type f -printf '%s\n' | sort -n | tail -1)
  [ "${max_len:-0}" -lt 4096 ] && max_len=4096
  echo "max_len $max_len" >>"$log"
  local more=()
  [ -n "${FUZZ_SEED:-}" ] && more+=(-seed="$FUZZ_SEED")
  [ "${FUZZ_KEEP_GOING:-0}" = 1 ] && more+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  local before
  before=$(ls "$findings" | sort)
  if ! "$bin/fuzz_$t" -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb="$rss_limit" \
    -artifact_prefix="$findings/" -print_final_stats=1 -max_len="$max_len" "${dict[@]}" "${more[@]}" \
    "$corpus" "$seeds/$t" >>"$log" 2>&1 </dev/null; then
    failed+=("fuzzing failed (see $log)")
  fi
  local new
  new=$(comm -13 <(echo "$before") <(ls "$findings" | sort) | sed "s|^|$findings/|")
  [ -n "$new" ] && failed+=("new findings: $(echo $new)")
  if [ ${#failed[@]} -eq 0 ]; then echo ok >"$status"; else printf '%s\n' "${failed[@]}" >"$status"; fi
}

mkdir -p "$out/logs" "$out/status"
rm -f "$out"/status/*
echo "fuzz: ${targets[*]}, ${seconds} s each, ${jobs} at a time (logs in $out/logs)"
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait

rc=0
for t in "${targets[@]}"; do
  log=$out/logs/$t.log
  # libFuzzer's last status line: "#N DONE cov: C ft: F corp: ..." ("#N: cov: ..." with -fork).
  last=$(grep -aE '^#[0-9]+' "$log" | tail -1 || true)
  execs=$(grep -oE '^#[0-9]+' <<<"$last" | tr -d '#' || true)
  speed=$(grep -aoE 'stat::average_exec_per_sec:[[:space:]]+[0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$' || true)
  [ -z "$speed" ] && [ -n "$execs" ] && speed=$((execs / seconds))
  cov=$(grep -aoE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+(/[0-9]+[a-zA-Z]*)?' <<<"$last" || true)
  status=$(cat "$out/status/$t" 2>/dev/null || echo "did not run")
  printf '%-14s %10s execs %6s/s  %s\n' "$t" "${execs:-?}" "${speed:-?}" "${cov:-}"
  if [ "$status" != ok ]; then
    rc=1
    sed "s/^/  $t: /" <<<"$status"
    grep -aE 'ERROR: (AddressSanitizer|UndefinedBehaviorSanitizer|LeakSanitizer|libFuzzer)|FINDING:|runtime error:|Test unit written to' \
      "$log" | head -5 | sed 's/^/    /'
  fi
done
exit $rc
