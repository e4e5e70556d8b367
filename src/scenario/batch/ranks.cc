#include "scenario/batch/ranks.h"

#include <mpi.h>
#include <signal.h>
#include <sys/prctl.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "scenario/batch/workers.h"

namespace fabriclab::scenario {

namespace {

bool g_mpi = false;  // MPI initialised by this process's MpiSession

// Messages between a worker rank and rank 0.
enum Tag : int {
  kAsk = 1,     // worker -> 0: a worker process of mine is free (no payload)
  kTask = 2,    // 0 -> worker: the task to run (int64), or -1: none left
  kResult = 3,  // worker -> 0: (task, status) as two int64
  kParts = 4,   // a split run's exchange (MpiExchange)
};

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string("MPI: ") + what + " failed");
}

// The ranks' exchange for a split run: every pair of ranks trades one message per call,
// so that a rank that never sends is known by name.
class MpiExchange final : public fabric::Exchange {
 public:
  explicit MpiExchange(double timeout) : timeout_(timeout) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    inbox_.resize(static_cast<std::size_t>(size_));
  }
  void set_timeout(double seconds) { timeout_ = seconds; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void all_to_all(const fabric::ByRank& out, fabric::ByRank& in, const char* when) override {
    sends_.clear();
    send_to_.clear();
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      const auto bytes = out.of(r);
      if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
        abort(fmt::format("{} bytes for rank {} at {}: more than one MPI message holds", bytes.size(), r, when));
      sends_.emplace_back();
      send_to_.push_back(r);
      check(MPI_Isend(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, r, kParts, MPI_COMM_WORLD,
                      &sends_.back()),
            "MPI_Isend");
    }
    // Every other rank's message, as it comes; a rank silent past the timeout is named.
    waiting_.clear();
    for (int r = 0; r < size_; ++r)
      if (r != rank_) waiting_.push_back(r);
    const auto start = std::chrono::steady_clock::now();
    for (unsigned idle = 0; !waiting_.empty();) {
      bool got = false;
      for (std::size_t i = 0; i < waiting_.size();) {
        int flag = 0;
        MPI_Status st;
        check(MPI_Iprobe(waiting_[i], kParts, MPI_COMM_WORLD, &flag, &st), "MPI_Iprobe");
        if (!flag) {
          ++i;
          continue;
        }
        int count = 0;
        MPI_Get_count(&st, MPI_BYTE, &count);
        auto& box = inbox_[static_cast<std::size_t>(waiting_[i])];
        box.resize(static_cast<std::size_t>(count));
        check(MPI_Recv(box.data(), count, MPI_BYTE, waiting_[i], kParts, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
              "MPI_Recv");
        waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(i));
        got = true;
      }
      idle = got ? 0 : idle + 1;
      if (idle > 0) pause(idle, start, when);
    }
    // Then every other rank has taken this one's message (or its turn ends in a timeout).
    for (unsigned idle = 0;;) {
      waiting_.clear();
      for (std::size_t i = 0; i < sends_.size(); ++i) {
        int done = 0;
        check(MPI_Test(&sends_[i], &done, MPI_STATUS_IGNORE), "MPI_Test");
        if (!done) waiting_.push_back(send_to_[i]);
      }
      if (waiting_.empty()) break;
      pause(++idle, start, when);
    }
    in.clear(size_);
    for (int r = 0; r < size_; ++r) {
      if (r != rank_) {
        const auto& box = inbox_[static_cast<std::size_t>(r)];
        in.data.insert(in.data.end(), box.begin(), box.end());
      }
      in.next_rank();
    }
  }

  [[noreturn]] void abort(const std::string& why) override {
    std::cerr << fmt::format("fabriclab: error: rank {} ({}): {}\n", rank_, mpi_host(), why) << std::flush;
    MPI_Abort(MPI_COMM_WORLD, 3);
    std::_Exit(3);  // (MPI_Abort does not return)
  }

 private:
  // Nothing came: spin a little, then yield the core (ranks may share cores), then sleep;
  // past the timeout, name the ranks still silent and end the job.
  void pause(unsigned idle, std::chrono::steady_clock::time_point start, const char* when) {
    if (idle < 64) return;
    if (idle < 4096) {
      std::this_thread::yield();
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    if (idle % 256 != 0) return;
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waited < timeout_) return;
    std::string silent;
    for (int r : waiting_) silent += (silent.empty() ? "" : ", ") + std::to_string(r);
    abort(fmt::format("at {}, {} {} answered nothing for {:.0f} s (--rank-timeout): hung or dead; ending the run", when,
                      waiting_.size() > 1 ? "ranks" : "rank", silent, waited));
  }

  int rank_ = 0, size_ = 1;
  double timeout_;
  std::vector<std::vector<std::byte>> inbox_;
  std::vector<MPI_Request> sends_;
  std::vector<int> send_to_;  // the rank of each send
  // The ranks still to send this one their message, then those still to take its own.
  std::vector<int> waiting_;
};

}  // namespace

fabric::Exchange& mpi_exchange(double timeout_seconds) {
  if (!g_mpi) throw std::logic_error("mpi_exchange without MPI");
  static MpiExchange exchange(timeout_seconds);
  exchange.set_timeout(timeout_seconds);
  return exchange;
}

bool launched_by_mpi() {
  if (const char* force = std::getenv("FABRICLAB_MPI")) return std::string(force) == "1";
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(var)) return true;
  return false;
}

MpiSession::MpiSession(int& argc, char**& argv) {
  if (!launched_by_mpi()) return;
  // A rank dies with its launcher: a job killed as a whole leaves no rank (and so, see
  // Workers, no point) running on.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  int provided = 0;
  // One thread calls MPI (the partitioned runs' threads live in worker processes).
  check(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  g_mpi = true;
}

MpiSession::~MpiSession() {
  if (g_mpi) MPI_Finalize();
  g_mpi = false;
}

int mpi_rank() {
  int r = 0;
  if (g_mpi) MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int mpi_size() {
  int s = 1;
  if (g_mpi) MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

std::string mpi_host() {
  if (!g_mpi) return "localhost";
  char name[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  MPI_Get_processor_name(name, &len);
  return std::string(name, static_cast<std::size_t>(len));
}

std::string broadcast_from_root(const std::string& text) {
  if (!g_mpi) return text;
  std::int64_t n = static_cast<std::int64_t>(text.size());
  check(MPI_Bcast(&n, 1, MPI_INT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast");
  std::string out = mpi_rank() == 0 ? text : std::string(static_cast<std::size_t>(n), '\0');
  if (n > 0) check(MPI_Bcast(out.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
  return out;
}

std::vector<int> run_across_ranks(std::size_t n, const std::vector<std::size_t>& order, unsigned jobs,
                                  const std::function<int(std::size_t)>& task,
                                  const std::function<void(std::size_t, int, const std::string&)>& started,
                                  const std::function<void(std::size_t, int)>& done) {
  if (jobs == 0) jobs = 1;
  const int size = mpi_size();
  Workers local(task);
  if (size == 1) {
    std::vector<int> status(n, -1);
    const std::string host = mpi_host();
    std::size_t next = 0;
    while (next < order.size() || local.running() > 0) {
      while (next < order.size() && local.running() < jobs && local.start(order[next])) {
        if (started) started(order[next], 0, host);
        ++next;
      }
      if (const auto r = local.reap(/*block=*/true)) {
        status[r->first] = r->second;
        if (done) done(r->first, r->second);
      }
    }
    return status;
  }

  // Every rank's host, for rank 0's `started` reports (a collective call: every rank).
  std::vector<std::string> hosts(static_cast<std::size_t>(size));
  {
    std::string mine = mpi_host();
    mine.resize(MPI_MAX_PROCESSOR_NAME, '\0');
    std::vector<char> all(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME, '\0');
    check(MPI_Gather(mine.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
                     MPI_COMM_WORLD),
          "MPI_Gather");
    for (int r = 0; r < size; ++r)
      hosts[static_cast<std::size_t>(r)] = std::string(all.data() + r * MPI_MAX_PROCESSOR_NAME,
                                                       strnlen(all.data() + r * MPI_MAX_PROCESSOR_NAME,
                                                               MPI_MAX_PROCESSOR_NAME));
  }

  if (mpi_rank() != 0) {
    // A worker rank: ask for a task whenever a worker process is free, report each end.
    bool more = true;
    while (more || local.running() > 0) {
      while (more && local.running() < jobs) {
        check(MPI_Send(nullptr, 0, MPI_INT64_T, 0, kAsk, MPI_COMM_WORLD), "MPI_Send");
        std::int64_t t = -1;
        check(MPI_Recv(&t, 1, MPI_INT64_T, 0, kTask, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        if (t < 0) {
          more = false;
          break;
        }
        while (!local.start(static_cast<std::size_t>(t))) {
          // Out of processes: finish one first, and report it.
          if (const auto r = local.reap(/*block=*/true)) {
            const std::int64_t result[2] = {static_cast<std::int64_t>(r->first), r->second};
            check(MPI_Send(result, 2, MPI_INT64_T, 0, kResult, MPI_COMM_WORLD), "MPI_Send");
          }
        }
      }
      if (const auto r = local.reap(/*block=*/true)) {
        const std::int64_t result[2] = {static_cast<std::int64_t>(r->first), r->second};
        check(MPI_Send(result, 2, MPI_INT64_T, 0, kResult, MPI_COMM_WORLD), "MPI_Send");
      }
    }
    return {};
  }

  // Rank 0: hands out the tasks in order, to its own workers and to every rank that asks,
  // until every task has ended and every other rank has been told that none is left.
  std::vector<int> status(n, -1);
  std::size_t next = 0, ended = 0;
  int told = 0;  // ranks told that no task is left
  const auto end = [&](std::size_t t, int s) {
    status[t] = s;
    ++ended;
    if (done) done(t, s);
  };
  while (ended < order.size() || told < size - 1) {
    bool busy = false;
    while (next < order.size() && local.running() < jobs && local.start(order[next])) {
      if (started) started(order[next], 0, hosts[0]);
      ++next;
      busy = true;
    }
    int flag = 0;
    MPI_Status st;
    check(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st), "MPI_Iprobe");
    if (flag) {
      busy = true;
      if (st.MPI_TAG == kAsk) {
        check(MPI_Recv(nullptr, 0, MPI_INT64_T, st.MPI_SOURCE, kAsk, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        std::int64_t t = -1;
        if (next < order.size()) {
          t = static_cast<std::int64_t>(order[next++]);
          if (started)
            started(static_cast<std::size_t>(t), st.MPI_SOURCE, hosts[static_cast<std::size_t>(st.MPI_SOURCE)]);
        } else {
          ++told;
        }
        check(MPI_Send(&t, 1, MPI_INT64_T, st.MPI_SOURCE, kTask, MPI_COMM_WORLD), "MPI_Send");
      } else if (st.MPI_TAG == kResult) {
        std::int64_t result[2];
        check(MPI_Recv(result, 2, MPI_INT64_T, st.MPI_SOURCE, kResult, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        if (result[0] < 0 || static_cast<std::size_t>(result[0]) >= n)
          throw std::runtime_error("MPI: rank " + std::to_string(st.MPI_SOURCE) + " reported an unknown task");
        end(static_cast<std::size_t>(result[0]), static_cast<int>(result[1]));
      } else {
        throw std::runtime_error("MPI: unexpected message tag " + std::to_string(st.MPI_TAG));
      }
    }
    if (const auto r = local.reap(/*block=*/false)) {
      busy = true;
      end(r->first, r->second);
    }
    if (!busy) std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  return status;
}

}  // namespace fabriclab::scenario
