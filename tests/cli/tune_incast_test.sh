#!/usr/bin/env bash
# The shipped incast tuning (examples/tune-incast.sh) does what the issue asked of it: on
# examples/incast.toml with DCQCN, the tuned settings, rerun on fresh seeds, cause not one
# PFC pause and deliver at least the goodput of the scenario as given and of every DCQCN
# preset; the report's numbers are those of the rerun (checked by running the best
# settings by hand). About 4 s on two cores; labelled slow (not under the sanitizers).
# Usage: FABRICLAB=path tune_incast_test.sh EXAMPLES_DIR
set -u
ex=$1
fl=${FABRICLAB:?set FABRICLAB}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/expect.sh"

# Quiet: one line, the result (settings that cannot load are not run, so no worker
# prints an error for them).
FABRICLAB=$fl "$ex/tune-incast.sh" --quiet --out "$tmp/t" >"$tmp/out.txt" 2>&1
expect incast-tuned 0 '^tune: 1000 trials \([0-9]+ run now\); best t[0-9]{4}: .*/t/report.md$' -- cat "$tmp/out.txt"
expect incast-quiet-one-line 0 '^1$' -- bash -c "wc -l <'$tmp/out.txt'"
# Kmax at or below Kmin: recorded as invalid, with the reason, not run.
expect incast-invalid-recorded 0 ',invalid,.*must be above green_min_threshold' -- cat "$tmp/t/trials.csv"
expect incast-invalid-not-run 0 '^absent$' -- bash -c "t=\$(grep -m1 ',invalid,' '$tmp/t/trials.csv' | cut -d, -f1);
  [ -e '$tmp/t/trials/'\$t/s0 ] && echo present || echo absent"

# The rerun table: the tuned row against every other.
cat >"$tmp/table.py" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    cells = [c.strip() for c in line.strip().strip('|').split('|')]
    if len(cells) == 6 and cells[1] == 'ok':
        rows[cells[0]] = (float(cells[3]), float(cells[4]), float(cells[5]))
tuned = [k for k in rows if k.startswith('tuned (')]
others = [k for k in rows if not k.startswith('tuned (')]
if len(tuned) != 1 or not any(k.startswith('preset ') for k in others):
    sys.exit(f'rows: {sorted(rows)}')
goodput, pauses, drops = rows[tuned[0]]
best_other = max(others, key=lambda k: rows[k][0])
print(f'tuned {goodput} Gb/s, {pauses:g} pauses, {drops:g} drops; best other: {best_other} {rows[best_other][0]} Gb/s, '
      f'{rows[best_other][1]:g} pauses')
if pauses == 0 and drops == 0 and goodput >= rows[best_other][0]:
    print('ECN does the job')
PY
expect incast-no-pause-and-the-most-goodput 0 'ECN does the job' -- python3 "$tmp/table.py" "$tmp/t/report.md"

# The tuned row is a rerun on fresh seeds (3 and 4: the scenario's sim.seed 1 after the
# search's two): the best settings run by hand at those seeds give its numbers.
sets=()
while IFS= read -r s; do sets+=(--set "$s"); done < <(python3 - "$tmp/t/best.toml" <<'PY'
import sys, tomllib
def walk(prefix, t):
    for k, v in t.items():
        if isinstance(v, dict):
            yield from walk(prefix + k + '.', v)
        else:
            yield f'{prefix}{k}={v}'
print('\n'.join(walk('', tomllib.load(open(sys.argv[1], 'rb')))))
PY
)
for seed in 3 4; do
  "$fl" run "$ex/incast.toml" --set nic.congestion_control=dcqcn "${sets[@]}" --set sim.seed=$seed \
    --out "$tmp/by-hand-$seed" >/dev/null 2>&1
done
by_hand=$(python3 - "$tmp/by-hand-3/summary.json" "$tmp/by-hand-4/summary.json" <<'PY'
import json, sys
runs = [json.load(open(p)) for p in sys.argv[1:]]
goodput = sum(r['totals']['data_bytes_arrived'] * 8 / float(r['run']['simulated_end_ns']) for r in runs) / len(runs)
pauses = max(r['totals']['pfc_pause_frames'] for r in runs)
print('{:.6g} \\| {:.6g} \\| {:.6g} \\| {}'.format(goodput, goodput, pauses, 0).replace('.', '\\.'))
PY
)
expect incast-report-is-the-rerun 0 "^\| tuned \(t[0-9]{4}\) \| ok \| $by_hand \|$" -- cat "$tmp/t/report.md"
finish
