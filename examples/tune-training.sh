#!/bin/bash
# Tunes the switches' ECN marking and the NICs' DCQCN reaction for the training example
# (examples/training.toml: 64 GPUs on a 4:1 leaf-spine, elephants across the spines, then
# an offloaded ring allreduce in four buckets): the shortest run of its two iterations
# with not one PFC pause -- the
# article's advice, ECN doing the job wherever it can. (PFC alone is faster here and
# pauses tens of thousands of times; the distribution phase is where the settings
# matter: docs/experiments.md.) Six dimensions, 60 trials of two seeds each (120 runs of
# about 3 s, two at a time: about seven minutes on two cores), the dimensions
# and the objective in examples/tune-training-space.toml;
# results/tune-training/report.md compares the tuned settings, rerun on fresh seeds, with
# the shipped settings and the nvidia and paper presets.
#
#   examples/tune-training.sh [extra fabriclab tune options, e.g. --trials 200 --jobs 8]
set -euo pipefail
examples=$(cd "$(dirname "$0")" && pwd)
# The defaults come first: an option given again after them (--trials, --seeds, --out) counts.
"${FABRICLAB:-$examples/../build/release/fabriclab}" tune "$examples/training.toml" \
  --space "$examples/tune-training-space.toml" --trials 60 --seeds 2 --out results/tune-training "$@"
