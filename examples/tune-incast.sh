#!/bin/bash
# Tunes the switch's ECN marking and the NICs' DCQCN reaction for the incast example
# (examples/incast.toml with DCQCN on: 16 senders bursting 1 MB each at line rate into one
# 100G port): the most goodput with not one PFC pause. The shipped presets lean on PFC
# there (nvidia: 455 pause frames); the search finds settings where ECN does the job
# alone -- a first CNP that sets each sender near its fair share, CNPs per QP, a small
# initial alpha so later cuts are gentle. Nine dimensions (examples/tune-incast-space.toml),
# 1000 trials of two seeds (1736 runs of a few ms -- settings with Kmax at or below Kmin
# are not run -- about 4 s on two cores);
# results/tune-incast/report.md compares the tuned settings, rerun on fresh seeds, with
# the scenario as given and every DCQCN preset.
#
#   examples/tune-incast.sh [extra fabriclab tune options, e.g. --seed 2 --out DIR]
#
# (FABRICLAB=path runs another build; tests/cli/tune_incast_test.sh checks this search.)
set -euo pipefail
examples=$(cd "$(dirname "$0")" && pwd)
# The defaults come first: an option given again after them (--trials, --seeds, --out) counts.
"${FABRICLAB:-$examples/../build/release/fabriclab}" tune "$examples/incast.toml" --set nic.congestion_control=dcqcn \
  --space "$examples/tune-incast-space.toml" --trials 1000 --seeds 2 --out results/tune-incast "$@"
