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
# hard_rss_limit_mb there.
if [ "${FABRICLAB_SANITIZED:-0}" = 1 ]; then
  export ASAN_OPTIONS="${ASAN_OPTIONS:-}:hard_rss_limit_mb=4096"
  limited=(timeout 10)
else
  limited=(bash -c 'ulimit -v 4194304 && exec timeout 10 "$@"' limited)
fi

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
printf 'x = %s1%s\n' "$(times $deep '[')" "$(times $deep ']')" >"$tmp/values.toml"
located="^fabriclab: error: $tmp/[a-z]+\.toml:[0-9]+:[0-9]+: "

# Scenario files: run, offload, and the same text as a tune search space.
for f in header key inline longkey tables; do
  expect "run-$f" 2 "$located" -- "${limited[@]}" "$fl" run "$tmp/$f.toml" --out "$tmp/o"
  expect "offload-$f" 2 "$located" -- "${limited[@]}" "$fl" offload "$tmp/$f.toml" --out "$tmp/o"
  expect "tune-space-$f" 2 "$located" -- "${limited[@]}" "$fl" tune "$ex/incast.toml" --space "$tmp/$f.toml" --out "$tmp/o"
done
# Nested values: toml++'s own bound (256), located as well.
expect run-values 2 "${located}malformed TOML: .*nest" -- "${limited[@]}" "$fl" run "$tmp/values.toml" --out "$tmp/o"
expect nothing-written-by-toml 0 '^$' -- test ! -e "$tmp/o"

# Schedules and programs: JSON nested 100 000 deep, in an array and in objects.
times $deep '[' >"$tmp/arrays.json"
printf '{"ops": %s1%s}' "$(times $deep '{"a": ')" "$(times $deep '}')" >"$tmp/objects.json"
for f in arrays objects; do
  expect "verify-$f" 2 "^fabriclab: error: $tmp/$f.json:1:[0-9]+: objects and arrays nested deeper than 64 levels" -- \
    "${limited[@]}" "$fl" verify "$tmp/$f.json"
  expect "plan-$f" 2 "^fabriclab: error: $tmp/$f.json:1:[0-9]+: objects and arrays nested deeper than 64 levels" -- \
    "${limited[@]}" "$fl" plan --program "$tmp/$f.json"
done

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
  expect "flows-$f" 2 "^fabriclab: error: $tmp/flows-$f.csv:[12]: " -- "${limited[@]}" "$fl" run \
    "$ex/congestion-spreading.toml" --set "traffic.flows_file=$tmp/flows-$f.csv" --out "$tmp/o"
  expect "workload-$f" 2 "^fabriclab: error: $tmp/workload-$f.csv:[12]: " -- "${limited[@]}" "$fl" offload \
    "$ex/offload.toml" --set workload.arrival=file --set "workload.file=$tmp/workload-$f.csv" --out "$tmp/o"
done
expect nothing-written-by-tables 0 '^$' -- test ! -e "$tmp/o"

finish
