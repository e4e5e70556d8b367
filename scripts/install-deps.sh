#!/usr/bin/env bash
# Installs, with apt-get and non-interactively, the Debian packages fabriclab needs that
# are not installed yet. Idempotent: when everything is present it changes nothing and
# does not touch the network (apt-get update runs only when something must be installed).
set -euo pipefail

packages=(
  # toolchain
  g++ cmake ninja-build make pkg-config
  # libraries
  libcli11-dev        # command line
  nlohmann-json3-dev  # schedule files, JSON output
  libfmt-dev          # formatting
  libz3-dev           # exact counter assignment (SMT)
  libtomlplusplus-dev # scenario files (TOML)
  libfabric-dev       # fabriclab exec: triggered operations (sockets provider)
  libfabric-bin       # fi_info, to see the providers installed
  libdeflate-dev      # CRC-32 (ECMP hashing, RoCEv2 ICRC): libdeflate_crc32, carry-less multiply where the CPU has it
  libpcap-dev         # fabriclab run: pcap files of chosen ports
  libmetis-dev        # a split run's parts for any topology (sim.partitioner = "metis")
  libopenmpi-dev      # sweeps and split runs across machines (mpirun fabriclab sweep|run ...)
  openmpi-bin         # mpirun
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  python3             # tests/docs_test.py: every command shown in README.md and docs/ runs and matches
  tshark              # the pcap test dissects the simulator's RoCEv2 and PFC frames
  wireshark-common    # editcap: captures cut and converted to pcapng in the analyze test
  tcpreplay           # the analyze test replays a `fabriclab stream` file on the loopback and captures it
  time                # GNU time: each process's peak RSS in bench/ranks_scale.sh
  clang-format        # the format test and `make format` (.clang-format)
  libnlopt-dev        # NLopt: the derivative-free search of `fabriclab tune` (ISRES)
  # fuzzing (`make fuzz`, scripts/fuzz.sh): clang++ and its libFuzzer runtime
  clang libclang-rt-14-dev
  # plots of experiments (fabriclab offload, fabriclab experiment)
  gnuplot-nox
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
