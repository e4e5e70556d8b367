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
limited=(bash -c 'ulimit -v 4194304 && exec timeout 10 "$@"' limited)

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
expect nothing-written 0 '^$' -- test ! -e "$tmp/o"

# Schedules and programs: JSON nested 100 000 deep, in an array and in objects.
times $deep '[' >"$tmp/arrays.json"
printf '{"ops": %s1%s}' "$(times $deep '{"a": ')" "$(times $deep '}')" >"$tmp/objects.json"
for f in arrays objects; do
  expect "verify-$f" 2 "^fabriclab: error: $tmp/$f.json:1:[0-9]+: objects and arrays nested deeper than 64 levels" -- \
    "${limited[@]}" "$fl" verify "$tmp/$f.json"
  expect "plan-$f" 2 "^fabriclab: error: $tmp/$f.json:1:[0-9]+: objects and arrays nested deeper than 64 levels" -- \
    "${limited[@]}" "$fl" plan --program "$tmp/$f.json"
done

finish
