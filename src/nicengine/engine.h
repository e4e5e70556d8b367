// Offloaded collectives on the packet-level fabric: every host's NIC gets the timed NIC
// model's resources (counter pool, triggered-op slots, counter cache, per-operation time;
// src/nicmodel/) and runs counter-assigned schedules, and their data operations travel
// as RDMA WRITE messages through the simulated fabric -- MTU packets on an RC (or UC)
// connection per pair of hosts, subject to PFC, ECN, DCQCN, ECMP or spraying and
// go-back-N like any other traffic.
//
// A put's message arrives when its last byte is placed at the target (the target's NIC
// then processes the arrival, which counts on the target's counter); the initiator's
// completion counter counts at the ACK covering the message's last packet (RC semantics;
// UC: when it has left). Everything else -- when an operation fires, NIC processing and
// cache misses, all-or-nothing offload with the stall / fallback / advise policies, the
// host's poll, the software path's posting -- is the NIC model's, run on the network's
// simulator. An operation that fires before a dependence has completed stops the run
// with nicmodel::UnsafeSchedule naming it; every counter must end at its per-iteration
// value.
//
//   fabric::Network net(nic, sw, seed);   // hosts, switches, links
//   nicengine::Engine e(net, nic_params, nicmodel::Policy::stall, /*priority=*/3);
//   e.add({.name = "ar", .schedule = s, .nic_of_rank = {0, 1, 2, 3}, .issue = us(1)});
//   net.run(ms(10));
//   std::vector<nicengine::CollectiveResult> r = e.results();
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "fabric/network.h"
#include "nicmodel/model.h"

namespace fabriclab::nicengine {

struct CollectiveResult {
  nicmodel::JobResult job;          // issue, start, done (Time() if not done), path, counters
  std::uint64_t messages = 0;       // messages it sent over the fabric
  std::uint64_t bytes = 0;          // their payload bytes
  std::uint64_t retransmitted = 0;  // packets of those messages sent again
  bool done() const { return job.done != Time(); }
};

class Engine final : private nicmodel::Transport, private fabric::MessageEvents {
 public:
  // Every host of `net` is a NIC of the model; collective traffic goes on `priority`.
  // The network must not have run yet, and must outlive the engine.
  Engine(fabric::Network& net, nicmodel::NicParams nic, nicmodel::Policy policy, std::uint8_t priority);

  // Before the run: a collective whose ranks sit on hosts job.nic_of_rank (host indices).
  // Opens the connections its data operations need; InputError for what cannot run (a
  // get, which the fabric does not model; see OffloadModel::add for the rest).
  void add(nicmodel::Job job);

  // During the run: issue a held collective (Job::held) at `at`.
  void issue_at(std::uint32_t job, Time at) { model_.issue_at(job, at); }
  // Called when a collective's host has seen it complete (set before the run).
  void on_seen_complete(std::function<void(std::uint32_t job)> f) { on_seen_complete_ = std::move(f); }
  // Before the run: keep every operation's times (OffloadModel::op_times).
  void trace_ops() { model_.trace_ops(); }
  // After the run: one per collective, in the order added.
  std::vector<CollectiveResult> results() const;
  const nicmodel::OffloadModel& model() const { return model_; }
  std::size_t connections() const { return net_.connection_count(); }

 private:
  void send(std::uint32_t job, offload::OpId op, std::int32_t from_nic, std::int32_t to_nic,
            std::int64_t bytes) override;
  void finished(std::uint32_t job) override;
  void seen_complete(std::uint32_t job) override {
    if (on_seen_complete_) on_seen_complete_(job);
  }
  std::function<void(std::uint32_t)> on_seen_complete_;
  void message_arrived(std::uint32_t tag) override;
  void message_completed(std::uint32_t tag) override;
  void message_retransmitted(std::uint32_t tag) override;
  std::uint32_t connection(std::uint32_t src, std::uint32_t dst) const;
  void settle(std::uint32_t tag);

  fabric::Network& net_;
  std::uint8_t priority_;
  nicmodel::OffloadModel model_;
  // Connections by source host: (destination host, connection), sorted.
  std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> conns_;
  // Messages in flight, by tag; a tag is reused once its message has both arrived and
  // completed (free_ holds the reusable ones).
  struct InFlight {
    std::uint32_t job = 0;
    offload::OpId op = 0;
    std::uint8_t reports_left = 0;
  };
  std::vector<InFlight> in_flight_;
  std::vector<std::uint32_t> free_;
  struct Traffic {
    std::uint64_t messages = 0, bytes = 0, retransmitted = 0;
  };
  std::vector<Traffic> traffic_;  // per job
};

}  // namespace fabriclab::nicengine
