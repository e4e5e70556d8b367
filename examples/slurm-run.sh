#!/bin/bash
# One large run split over a Slurm allocation: a 16 384-host leaf-spine, 8 parts on 4
# nodes (one MPI rank per node, two parts each, run by two threads). Every rank builds
# the network and runs its parts; the frames crossing ranks travel as MPI messages at the
# end of every window (the link delay), and rank 0 writes results/leaf-spine-16k/ -- the
# same flows.csv, ports.csv and summary.json as the run on one machine. A rank that
# hangs is named after --rank-timeout seconds and ends the job; a rank that dies ends it
# through the launcher; neither leaves a summary.json.
#
#   sbatch examples/slurm-run.sh
#
#SBATCH --job-name=fabriclab-run
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=2
#SBATCH --mem=4G
#SBATCH --time=00:30:00
#SBATCH --output=fabriclab-run-%j.log
set -euo pipefail
cd "${SLURM_SUBMIT_DIR:-.}"
srun --mpi=pmix build/release/fabriclab run examples/leaf-spine.toml \
  --set topology.leaves=256 --set topology.hosts_per_leaf=64 --set topology.spines=64 \
  --set traffic.bytes=100MB --set traffic.qps_per_flow=1 --set sim.stop_time=1ms \
  --set sim.partitions=8 --set sim.threads="${SLURM_CPUS_PER_TASK:-2}" \
  --rank-timeout 600 --quiet --out results/leaf-spine-16k
