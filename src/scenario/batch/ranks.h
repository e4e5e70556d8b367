// MPI ranks: fabriclab spreads a sweep's points over the processes an MPI launcher
// started (mpirun, mpiexec, srun), each running points in its own worker processes.
// MPI is initialised only when the environment says a launcher started this process
// (Open MPI's OMPI_COMM_WORLD_SIZE, PMIx's PMIX_RANK, PMI's PMI_RANK; FABRICLAB_MPI=0
// turns it off, =1 forces it), so the same binary runs as before without one.
//
//   int main(int argc, char** argv) {
//     MpiSession mpi(argc, argv);  // MPI_Init when launched by mpirun, else nothing
//     ...
//   }
//   run_across_ranks(order, jobs, task, done);  // every rank calls it
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "fabric/exchange.h"

namespace fabriclab::scenario {

// True when an MPI launcher started this process (see above).
bool launched_by_mpi();

// MPI for the life of main(): initialised in the constructor when launched_by_mpi(),
// finalised in the destructor. One per process.
class MpiSession {
 public:
  MpiSession(int& argc, char**& argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
};

// This process's rank and the number of ranks (0 and 1 without MPI).
int mpi_rank();
int mpi_size();
// The host this rank runs on (for messages).
std::string mpi_host();
// Rank 0's `text` on every rank (every rank calls it; without MPI, `text`).
std::string broadcast_from_root(const std::string& text);

// The exchange of a run split over the ranks (fabric::Network::set_partitions), by
// point-to-point messages between every pair of ranks. A rank that has not sent what
// it should within `timeout_seconds` is named (with its host and the point of the run)
// and the job ends there (MPI_Abort, exit 3): a hung rank never hangs the others; a
// dead one ends the job through the launcher. One per process, for its life.
fabric::Exchange& mpi_exchange(double timeout_seconds);

// Runs tasks order[0], order[1], ... over every rank, each rank running up to `jobs` at
// once in worker processes (Workers' rules: a task's return value is its exit status,
// an escaping InputError exits 2, a signal 128 + its number). Rank 0 hands the
// tasks out in that order, one to each free worker of any rank as it asks (its own
// included), so a rank that finishes early takes the next. Every rank calls it. On rank
// 0, started(task, rank, host) runs as a task is handed out and done(task, status) as it
// ends (in completion order), and the result is every task's status, indexed by task (-1
// for one not in `order`); other ranks return an empty vector. Without MPI (or one rank)
// it runs them here, in that order.
std::vector<int> run_across_ranks(std::size_t n, const std::vector<std::size_t>& order, unsigned jobs,
                                  const std::function<int(std::size_t)>& task,
                                  const std::function<void(std::size_t, int, const std::string&)>& started,
                                  const std::function<void(std::size_t, int)>& done);

}  // namespace fabriclab::scenario
