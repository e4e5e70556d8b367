// Processes stood in for by threads, for tests of runs over several processes without
// mpirun: each "rank" runs its own copy of the network, and all_to_all meets the others
// at a barrier, as MPI ranks meet in MpiExchange (which mpi_test.sh runs under mpirun).
#pragma once

#include <barrier>
#include <stdexcept>
#include <string>
#include <vector>

#include "fabric/exchange.h"

namespace fabriclab::fabric {

class Loopback {
 public:
  explicit Loopback(int ranks)
      : n_(ranks), slots_(static_cast<std::size_t>(ranks) * static_cast<std::size_t>(ranks)), sync_(ranks) {}
  class Rank final : public Exchange {
   public:
    Rank(Loopback& all, int rank) : all_(all), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return all_.n_; }
    void all_to_all(const ByRank& out, ByRank& in, const char* /*when*/) override {
      for (int r = 0; r < all_.n_; ++r)
        if (r != rank_) all_.slot(rank_, r).assign(out.of(r).begin(), out.of(r).end());
      all_.sync_.arrive_and_wait();
      in.clear(all_.n_);
      for (int r = 0; r < all_.n_; ++r) {
        if (r != rank_) in.data.insert(in.data.end(), all_.slot(r, rank_).begin(), all_.slot(r, rank_).end());
        in.next_rank();
      }
      all_.sync_.arrive_and_wait();  // every rank has read before the next call writes
    }
    [[noreturn]] void abort(const std::string& why) override { throw std::logic_error(why); }

   private:
    Loopback& all_;
    int rank_;
  };

 private:
  std::vector<std::byte>& slot(int from, int to) { return slots_[static_cast<std::size_t>(from * n_ + to)]; }
  int n_;
  std::vector<std::vector<std::byte>> slots_;  // [from][to]
  std::barrier<> sync_;
};

}  // namespace fabriclab::fabric
