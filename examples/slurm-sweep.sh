#!/bin/bash
# A sweep over a Slurm allocation: one MPI rank per node, each running points in two
# worker processes (--jobs; set it to the cores a node gives a rank). Rank 0 hands the
# points out, the biggest first, and writes results/sweep-slurm/sweep.csv -- the same
# table as `fabriclab sweep` on one machine. The output directory must be on a file
# system every node sees. Submitted again after a failure or a time limit, the same
# script skips the points already done and names those that were running.
#
#   sbatch examples/slurm-sweep.sh
#
#SBATCH --job-name=fabriclab-sweep
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=2
#SBATCH --time=01:00:00
#SBATCH --output=fabriclab-sweep-%j.log
set -euo pipefail
cd "${SLURM_SUBMIT_DIR:-.}"
# srun starts the ranks (with Slurm's PMIx: --mpi=pmix); `mpirun` works as well inside
# the allocation.
srun --mpi=pmix build/release/fabriclab sweep examples/incast.toml \
  --vary switch.buffer=1MiB,2MiB,4MiB,8MiB,16MiB \
  --vary nic.congestion_control=none,dcqcn \
  --vary nic.roce_np.min_time_between_cnps=0,4,50 \
  --jobs "${SLURM_CPUS_PER_TASK:-2}" --out results/sweep-slurm
