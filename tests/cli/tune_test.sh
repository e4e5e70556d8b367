#!/usr/bin/env bash
# End-to-end checks of `fabriclab tune` on the shipped incast scenario: the outputs, the
# report's rerun, resuming, and the refusals. Usage: FABRICLAB=path tune_test.sh EXAMPLES_DIR
set -u
ex=$1
fl=${FABRICLAB:?set FABRICLAB}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/expect.sh"

# Two dimensions, a constraint every run meets, six trials of one seed each.
tune=("$fl" tune "$ex/incast.toml" --set nic.congestion_control=dcqcn
  --param switch.wred.green_min_threshold=5KB..100KB:log --param nic.roce_rp.rate_to_set_on_first_cnp=0..20000
  --maximize goodput_gbps --constraint totals.lossless_drops\<=0 --trials 6 --jobs 2 --quiet --out "$tmp/t")
expect tune 0 '^tune: 6 trials \(6 run now\); best t000[0-5]: .*/t/report.md$' -- "${tune[@]}"
expect tune-trials-csv 0 '^7$' -- bash -c "wc -l <'$tmp/t/trials.csv'"
expect tune-trials-header 0 '^trial,switch.wred.green_min_threshold,nic.roce_rp.rate_to_set_on_first_cnp,status,feasible,objective,goodput_gbps,totals.lossless_drops \(worst\),note$' -- \
  head -1 "$tmp/t/trials.csv"
# The best is the feasible trial with the highest objective (read back from the table).
best=$(awk -F, 'NR > 1 && $5 == 1 && (b == "" || $6 > v) {b = $1; v = $6} END {print b}' "$tmp/t/trials.csv")
expect tune-best-is-the-maximum 0 "best $best:" -- "${tune[@]}"
expect tune-best-toml 0 '^green_min_threshold = "[0-9.]+KB"$' -- cat "$tmp/t/best.toml"
expect tune-best-toml-table 0 '^\[nic.roce_rp\]$' -- cat "$tmp/t/best.toml"
# The report's tuned row is a rerun on a fresh seed (the scenario's sim.seed 1 + 1 seed):
# the same settings run by hand at sim.seed = 2 give the same goodput.
sets=$(awk -F' = ' '/^\[/ {t = substr($0, 2, length($0) - 2)} / = / {gsub(/"/, "", $2); printf "--set %s.%s=%s ", t, $1, $2}' "$tmp/t/best.toml")
# shellcheck disable=SC2086
"$fl" run "$ex/incast.toml" --set nic.congestion_control=dcqcn $sets --set sim.seed=2 --out "$tmp/by-hand" >/dev/null 2>&1
goodput=$(python3 -c "import json; t = json.load(open('$tmp/by-hand/summary.json')); \
print('{:.6g}'.format(t['totals']['data_bytes_arrived'] * 8 / float(t['run']['simulated_end_ns'])))")
expect tune-report-rerun 0 "^\| tuned \(t000[0-5]\) \| ok \| $goodput \| $goodput \| 0 \|$" -- cat "$tmp/t/report.md"
expect tune-report-presets 0 '^\| preset paper \| ok \| [0-9.]+ \|' -- cat "$tmp/t/report.md"
# Under another policy the references are that policy's presets (HPCC's paper and ns3),
# not DCQCN's.
"$fl" tune "$ex/incast.toml" --set nic.congestion_control=hpcc --param nic.hpcc.eta=0.8..0.99 \
  --maximize goodput_gbps --trials 2 --quiet --out "$tmp/th" >/dev/null 2>&1
expect tune-report-policy-presets 0 '^preset ns3 preset paper$' -- bash -c \
  "grep -o '^| preset [^ ]*' '$tmp/th/report.md' | cut -c3- | sort | paste -sd ' '"
# The same settings for the devices: the switch's Kmin in bytes, the NIC's rate in Mb/s.
kmin=$(sed -n 's/^green_min_threshold = "\([0-9.]*\)KB"$/\1/p' "$tmp/t/best.toml")
expect tune-sonic 0 "\"green_min_threshold\": \"$(python3 -c "print(round($kmin * 1000))")\"" -- cat "$tmp/t/best-sonic.json"
rate=$(sed -n 's/^rate_to_set_on_first_cnp = //p' "$tmp/t/best.toml")
expect tune-nic 0 "^echo $rate > \"/sys/class/net/\\\$IF/ecn/roce_rp/rate_to_set_on_first_cnp\"$" -- cat "$tmp/t/best-nic.sh"
expect tune-plots 0 '^3$' -- bash -c "ls '$tmp/t' | grep -cE '^(objective|tradeoff|sensitivity)\.png$'"
# Resumed: nothing runs again and the table is the same; a trial whose run was lost runs
# again, alone, with the same result.
cp "$tmp/t/trials.csv" "$tmp/trials.first.csv"
expect tune-resumed 0 '^tune: 6 trials \(0 run now\)' -- "${tune[@]}"
# Quiet means one line: the result (no progress, no gnuplot warnings on flat data).
"${tune[@]}" >"$tmp/out.txt" 2>&1
expect tune-quiet-one-line 0 '^1$' -- bash -c "wc -l <'$tmp/out.txt'"
rm "$tmp/t/trials/t0003/s0/summary.json"
expect tune-resumed-lost 0 '^tune: 6 trials \(1 run now\)' -- "${tune[@]}"
expect tune-resumed-same 0 '^same$' -- bash -c "cmp '$tmp/trials.first.csv' '$tmp/t/trials.csv' && echo same"
# Runs under a trial's name that another setting made (an earlier search that went
# another way) are not taken: that trial runs again.
echo "switch.buffer=1MiB" >"$tmp/t/trials/t0004/settings.txt"
expect tune-resumed-other-settings 0 '^tune: 6 trials \(1 run now\)' -- "${tune[@]}"
expect tune-resumed-other-same 0 '^same$' -- bash -c "cmp '$tmp/trials.first.csv' '$tmp/t/trials.csv' && echo same"
# The same search written in a --space file: the same trials, and it resumes the other's
# directory as its own (what was asked is the same).
cat >"$tmp/space.toml" <<'TOML'
maximize = "goodput_gbps"
constraints = ["totals.lossless_drops<=0"]
[param]
"switch.wred.green_min_threshold" = "5KB..100KB:log"
nic.roce_rp.rate_to_set_on_first_cnp = "0..20000"
TOML
expect tune-space-resumes 0 '^tune: 6 trials \(0 run now\)' -- "$fl" tune "$ex/incast.toml" \
  --set nic.congestion_control=dcqcn --space "$tmp/space.toml" --trials 6 --jobs 2 --quiet --out "$tmp/t"
expect tune-space 0 '^tune: 6 trials \(6 run now\)' -- "$fl" tune "$ex/incast.toml" \
  --set nic.congestion_control=dcqcn --space "$tmp/space.toml" --trials 6 --jobs 2 --quiet --out "$tmp/ts"
expect tune-space-same-trials 0 '^same$' -- bash -c "cmp '$tmp/t/trials.csv' '$tmp/ts/trials.csv' && echo same"
expect tune-space-located 2 "bad-space.toml:5:40: nic.roce_rp.rate_to_set_on_first_cnp: scale 'cube': expected log or int" -- \
  bash -c "sed 's/0..20000/0..20000:cube/' '$tmp/space.toml' >'$tmp/bad-space.toml' &&
    '$fl' tune '$ex/incast.toml' --space '$tmp/bad-space.toml' --out '$tmp/x'"
expect tune-nothing-to-search 2 'a dimension is required: --param KEY=... or --space FILE' -- \
  "$fl" tune "$ex/incast.toml" --maximize goodput_gbps --out "$tmp/x"
# Trials run a generation at a time on the workers, or one at a time (--jobs 1): the same
# trials, best and report, byte for byte.
par=("$fl" tune "$ex/incast.toml" --set nic.congestion_control=dcqcn
  --param switch.wred.green_min_threshold=5KB..400KB:log --param switch.wred.green_max_threshold=20KB..4MB:log
  --param nic.roce_rp.rate_to_set_on_first_cnp=0..20000 --param nic.roce_np.cnp_scope=port,qp
  --maximize goodput_gbps --constraint 'totals.pfc_pause_frames<=400' --trials 40 --quiet)
expect tune-generations 0 '^tune: 40 trials' -- "${par[@]}" --jobs 2 --out "$tmp/g2"
expect tune-one-at-a-time 0 '^tune: 40 trials' -- "${par[@]}" --jobs 1 --out "$tmp/g1"
for f in trials.csv best.toml report.md; do
  expect "tune-generations-same-$f" 0 '' -- cmp "$tmp/g1/$f" "$tmp/g2/$f"
done
# Kmax at or below Kmin (both searched): recorded as invalid with the reason, not run.
expect tune-invalid-recorded 0 ',invalid,0,,.*must be above green_min_threshold' -- cat "$tmp/g2/trials.csv"
# NIC keys that contradict each other: invalid too, not run (no worker prints an error).
expect tune-invalid-nic 0 '^invalid$' -- bash -c "'$fl' tune '$ex/incast.toml' --set nic.flow_end=last_ack_received \
  --param nic.transport=rc,uc --maximize goodput_gbps --trials 2 --quiet --out '$tmp/nic' >'$tmp/nic.txt' 2>&1;
  grep -q 'expected nic.transport = rc' '$tmp/nic/trials.csv' && [ \$(wc -l <'$tmp/nic.txt') = 1 ] &&
  grep ',uc,' '$tmp/nic/trials.csv' | cut -d, -f3"
# A metric with no value in the runs (no flow has finished by 50 us): the trials are not
# scored, each says why, and the search ends as one where no trial met its constraints.
expect tune-unscored 1 'no trial met every constraint' -- "$fl" tune "$ex/incast.toml" --set sim.stop_time=50us \
  --param switch.wred.green_min_threshold=5KB..100KB:log --minimize flows.fct_ns_mean --trials 3 --quiet \
  --out "$tmp/u"
expect tune-unscored-note 0 '^t0000,[0-9.]+KB,ok,0,,,flows.fct_ns_mean: no value in the run of s0$' -- \
  cat "$tmp/u/trials.csv"
expect tune-unscored-plots 0 '^3$' -- bash -c "ls '$tmp/u' | grep -cE '^(objective|tradeoff|sensitivity)\.png$'"
# (gnuplot's warnings on plots with nothing to draw are not printed: resumed, one line.)
expect tune-unscored-quiet 0 '^1$' -- bash -c "'$fl' tune '$ex/incast.toml' --set sim.stop_time=50us \
  --param switch.wred.green_min_threshold=5KB..100KB:log --minimize flows.fct_ns_mean --trials 3 --quiet \
  --out '$tmp/u' 2>&1 | wc -l"
# Given twice, the last --trials counts (the example scripts set defaults before "$@").
expect tune-last-trials-counts 0 '^tune: 3 trials' -- "$fl" tune "$ex/incast.toml" \
  --param switch.wred.green_min_threshold=5KB..100KB:log --maximize goodput_gbps --trials 2 --trials 3 --quiet \
  --out "$tmp/last"
# Another search in the same directory is refused; so are bad dimensions and objectives.
expect tune-other-search 2 'holds a different tuning' -- "${tune[@]}" --seed 2
expect tune-no-objective 2 'an objective is required' -- \
  "$fl" tune "$ex/incast.toml" --param switch.buffer=1MiB..4MiB --out "$tmp/x"
expect tune-bad-range 2 "^fabriclab: error: --param switch.buffer: '4MiB..1MiB': the low end must be below the high end$" -- \
  "$fl" tune "$ex/incast.toml" --param switch.buffer=4MiB..1MiB --maximize goodput_gbps --out "$tmp/x"
expect tune-unknown-metric 2 "^fabriclab: error: --maximize: no metric 'goodput' in a run's summary.json \(numbers such as: .*goodput_gbps" -- \
  "$fl" tune "$ex/incast.toml" --param switch.buffer=1MiB..4MiB --maximize goodput --trials 2 --out "$tmp/y"
# No trial meets an impossible constraint: exit 1, no best.toml.
expect tune-infeasible 1 'no trial met every constraint' -- \
  "$fl" tune "$ex/incast.toml" --param switch.buffer=1MiB..4MiB --maximize goodput_gbps \
  --constraint goodput_gbps\>=1000 --trials 2 --quiet --out "$tmp/z"
expect tune-infeasible-no-best 0 '^absent$' -- bash -c "[ -e '$tmp/z/best.toml' ] && echo present || echo absent"
finish
