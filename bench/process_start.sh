#!/usr/bin/env bash
# Wall time of whole fabriclab processes, start to exit: `--version`, and `run` of the
# built-in defaults (an empty scenario: a few thousand packet-hops), median and slowest of
# RUNS each. What it guards: commands other than `exec` must not pay for libfabric (its
# providers once cost 0.2 s before main); the target is 50 ms for the tiny run.
#   bench/process_start.sh [RUNS]      (default 20)
set -euo pipefail
runs=${1:-20}
bin=$(dirname "$0")/../build/release/fabriclab
[ -x "$bin" ] || { echo "build the release preset first (make build)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/empty.toml"
python3 - "$bin" "$tmp" "$runs" <<'PY'
import statistics, subprocess, sys, time
binary, tmp, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
cases = [
    ("fabriclab --version", [binary, "--version"]),
    ("fabriclab run (empty scenario)", [binary, "run", f"{tmp}/empty.toml", "--out", f"{tmp}/out", "--quiet"]),
]
for name, args in cases:
    walls = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        walls.append(time.perf_counter() - start)
        if done.returncode != 0:
            sys.exit(f"process_start.sh: {' '.join(args)} exited {done.returncode}: {done.stderr.decode()}")
    print(f"{name}: median {statistics.median(walls) * 1e3:.1f} ms, slowest {max(walls) * 1e3:.1f} ms ({runs} runs)")
PY
