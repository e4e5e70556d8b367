// The one thing the executor needs from a transport: one rank's network interface, with
// counters, a registered window, deferred (triggered) operations, and plain operations
// for the software path. The planner and the executor know nothing of libfabric; the
// libfabric backend (backends/libfabric) implements this for any provider with
// FI_TRIGGER, and another transport (a CXI NIC, a simulator) can implement it too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "offload/collectives.h"
#include "offload/schedule.h"

namespace fabriclab::exec {

struct NicInfo {
  std::string provider;               // e.g. "sockets"
  std::string fabric;                 // e.g. "127.0.0.1/32"
  std::int64_t counters = 0;          // counters the provider advertises
  std::int64_t max_atomic_bytes = 0;  // largest single atomic for the datatype
  // Transfers to one peer that may be in flight at once from one burst (0: no limit);
  // plan_triggered paces longer bursts (see plan.h).
  int max_in_flight = 0;
};

enum class DataOp : std::uint8_t { put, atomic };

// A data movement: [src, +bytes) of this rank's window to [dst, +bytes) of `peer`'s,
// through the peer's registration `key` (whose bound counter, if any, counts the arrival).
struct Transfer {
  DataOp op = DataOp::put;
  offload::Rank peer = 0;
  int key = 0;
  std::int64_t src = 0, dst = 0, bytes = 0;
};

// A deferred operation: fires when counter `trigger` reaches `threshold`. A transfer
// adds 1 to `completion` (-1: none) when it completes; a counter add (is_counter_add)
// adds `add` to `target` instead.
struct TriggeredOp {
  bool is_counter_add = false;
  Transfer transfer;
  int target = -1;
  std::int64_t add = 0;
  int trigger = 0;
  std::int64_t threshold = 0;
  int completion = -1;
};

// What the software path hears back: a transfer it posted completed (its data is at the
// target), or a peer's notification arrived. `tag` is the caller's.
struct NicEvent {
  enum Kind : std::uint8_t { completed, notified } kind = completed;
  std::uint64_t tag = 0;
};

class Nic {
 public:
  virtual ~Nic() = default;
  virtual const NicInfo& info() const = 0;

  // Allocates `counters` counters and a zeroed window of `window_bytes`, registered once
  // per entry of `key_counter`: remote writes through key k increment counter
  // key_counter[k] (-1: no counter). Call once, before address().
  virtual void setup(std::int64_t window_bytes, int counters, std::span<const int> key_counter) = 0;
  // This rank's address and registrations, to be given to every peer's connect().
  virtual std::vector<std::byte> address() const = 0;
  // Learns every rank's address (peers[self] is this one's) and makes ready to be
  // reached. Then, once every rank has connected, wire_up() establishes every pair's
  // connection and returns when this rank can talk to all others.
  virtual void connect(const std::vector<std::vector<std::byte>>& peers, offload::Rank self) = 0;
  virtual void wire_up() = 0;
  virtual std::span<std::byte> window() = 0;

  // Triggered path. The NIC keeps each operation until clear_fired(), which the caller
  // may call only when every queued operation has fired and completed.
  virtual void queue(const TriggeredOp& op) = 0;
  virtual void clear_fired() = 0;
  virtual std::uint64_t read_counter(int c) = 0;
  // Operations that completed in error into counter c (they count towards triggers too).
  virtual std::uint64_t read_counter_errors(int c) = 0;
  virtual void set_counter(int c, std::uint64_t value) = 0;
  // Called while the host waits: lets a transport whose triggers run in software retry
  // triggered operations it deferred (see the libfabric backend). A NIC needs nothing.
  virtual void progress() = 0;

  // Software path: a plain transfer that reports `completed` with `tag` once its data is
  // visible at the target; a notification to `peer` that it reports as `notified`.
  // expect_notifications(n) makes room for n more notifications to arrive.
  virtual void post(const Transfer& t, std::uint64_t tag) = 0;
  virtual void notify(offload::Rank peer, std::uint64_t tag) = 0;
  virtual void expect_notifications(std::int64_t n) = 0;
  // Returns false when there is nothing new.
  virtual bool poll(NicEvent& e) = 0;
};

// A factory, so that the runner can open the NIC inside each rank's process.
using NicFactory = std::unique_ptr<Nic> (*)(const std::string& provider, offload::Datatype dt);

}  // namespace fabriclab::exec
