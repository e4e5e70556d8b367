// The processes of a partitioned run spread over several (MPI ranks): each runs a block
// of the parts and the Exchange carries between them what crosses: after every window,
// the frames sent into another process's parts and what every part published for the
// decision to go on; at deadlock checks, the paused queues; at the end, the totals and
// the counters the outputs read. The fabric layer names only this interface; the MPI
// implementation lives with the launcher's other code (scenario/batch/ranks.h).
//
//   ByRank out, in;
//   out.clear(exchange.size());
//   ByteWriter w(out.data);
//   for (int r = 0; r < exchange.size(); ++r) { w.put(x_for(r)); out.next_rank(); }
//   exchange.all_to_all(out, in, "where");  // every rank calls it, in the same order
//   ByteReader(in.of(1)).get<X>();          // what rank 1 sent this one
//
// Bytes are copied as they are in memory: every rank runs the same binary on the same
// kind of machine.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "core/bytes.h"

namespace fabriclab::fabric {

// Bytes grouped by rank: rank r's are data[at[r], at[r + 1]).
struct ByRank {
  std::vector<std::byte> data;
  std::vector<std::size_t> at;  // size() + 1 entries once complete

  // Empties it for `ranks` ranks, keeping the capacity (reused every window).
  void clear(int ranks) {
    data.clear();
    at.assign(1, 0);
    at.reserve(static_cast<std::size_t>(ranks) + 1);
  }
  // The next rank's bytes start here: call once per rank, in rank order, then close().
  void next_rank() { at.push_back(data.size()); }
  std::span<const std::byte> of(int r) const {
    const auto i = static_cast<std::size_t>(r);
    return {data.data() + at[i], at[i + 1] - at[i]};
  }
};

class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank calls it at the same point: sends out.of(r) to every other rank r and
  // fills `in` with what each rank sent this one (in.of(rank()) empty). `when` names the
  // point for an error (a rank that never answers is named, with it).
  virtual void all_to_all(const ByRank& out, ByRank& in, const char* when) = 0;
  // Ends every process at once, saying `why` (from a state the processes cannot agree
  // their way out of).
  [[noreturn]] virtual void abort(const std::string& why) = 0;
  // Every rank's `mine`, by rank (this rank's included).
  void all_gather(std::span<const std::byte> mine, ByRank& all, const char* when) {
    ByRank out;
    out.clear(size());
    for (int r = 0; r < size(); ++r) {
      if (r != rank()) out.data.insert(out.data.end(), mine.begin(), mine.end());
      out.next_rank();
    }
    all_to_all(out, all, when);
    // Put this rank's own bytes in its place.
    ByRank full;
    full.clear(size());
    for (int r = 0; r < size(); ++r) {
      const auto part = r == rank() ? mine : all.of(r);
      full.data.insert(full.data.end(), part.begin(), part.end());
      full.next_rank();
    }
    all = std::move(full);
  }
};

}  // namespace fabriclab::fabric
