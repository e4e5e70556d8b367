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
// host's poll, the software path's posting -- is the NIC model's. Each NIC's events run
// on its host's simulator (a partitioned run: its part's); what acts on the whole model
// -- issues, offload decisions, completions seen by the host -- runs as the network's
// coordinator, between windows, so a run gives the same collectives however it is split.
// Over several processes (MPI ranks), each holds a copy of the model and runs its parts'
// NICs; the copies share their parts' progress with each window and after each step
// (fabric::Coordinator), and a message's tag names its collective and operation, so the
// process that receives it needs nothing from the one that sent it.
// An operation that fires before a dependence has completed stops the run with
// nicmodel::UnsafeSchedule naming it; every counter must end at its per-iteration value.
//
//   fabric::Network net(nic, sw, seed);   // hosts, switches, links
//   nicengine::Engine e(net, nic_params, nicmodel::Policy::stall, /*priority=*/3);
//   e.add({.name = "ar", .schedule = s, .nic_of_rank = {0, 1, 2, 3}, .issue = us(1)});
//   net.run(ms(10));
//   std::vector<nicengine::CollectiveResult> r = e.results();
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
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

class Engine final : private nicmodel::Transport, private fabric::MessageEvents, private fabric::Coordinator {
 public:
  // Every host of `net` is a NIC of the model; collective traffic goes on `priority`.
  // The network must not have run yet, and must outlive the engine. `tag_bits`: the
  // messages' tags are 32 bits on the wire (fewer: tests, to see them wrap).
  Engine(fabric::Network& net, nicmodel::NicParams nic, nicmodel::Policy policy, std::uint8_t priority,
         std::uint32_t tag_bits = 32);

  // Before the run: a collective whose ranks sit on hosts job.nic_of_rank (host indices).
  // Opens the connections its data operations need; InputError for what cannot run (a
  // get, which the fabric does not model; see OffloadModel::add for the rest).
  void add(nicmodel::Job job);

  // Issue a held collective (Job::held) at `at`: before the run, from on_seen_complete,
  // or (an undivided run) from an event at or before `at`.
  void issue_at(std::uint32_t job, Time at) {
    model_.issue_at(job, at);
    if (begun_ && !in_step_) net_.coordinator_moved();
  }
  // Called when a collective's host has seen it complete, at `at` (set before the run;
  // it runs while no part of the network does).
  void on_seen_complete(std::function<void(std::uint32_t job, Time at)> f) { on_seen_complete_ = std::move(f); }
  // Before the run: keep every operation's times (OffloadModel::op_times).
  void trace_ops() { model_.trace_ops(); }
  // After the run: one per collective, in the order added.
  std::vector<CollectiveResult> results() const;
  const nicmodel::OffloadModel& model() const { return model_; }
  std::size_t connections() const { return net_.connection_count(); }

 private:
  void send(std::uint32_t job, offload::OpId op, std::int32_t from_nic, std::int32_t to_nic,
            std::int64_t bytes) override;
  void part_done(std::uint32_t job, std::uint32_t part) override;
  void seen_complete(std::uint32_t job, Time at) override;
  std::function<void(std::uint32_t, Time)> on_seen_complete_;
  void message_arrived(std::uint32_t tag) override;
  void message_completed(std::uint32_t tag) override;
  void message_retransmitted(std::uint32_t tag) override;
  void begin() override;
  Time next_step(bool idle) override { return model_.next_step(idle); }
  void step(Time at) override {
    in_step_ = true;
    model_.step(at);
    in_step_ = false;
  }
  void share(ByteWriter& out) const override { model_.write_parts(out); }
  void take_shared(ByteReader& in) override { model_.read_parts(in); }
  void share_results(ByteWriter& out) const override;
  void take_results(ByteReader& in) override;
  bool begun_ = false, in_step_ = false;
  std::uint32_t connection(std::uint32_t src, std::uint32_t dst) const;

  fabric::Network& net_;
  std::uint8_t priority_;
  nicmodel::OffloadModel model_;
  // Connections by source host: (destination host, connection), sorted.
  std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> conns_;
  std::vector<std::uint32_t> part_of_host_;  // once begun
  std::vector<std::uint32_t> host_of_part_;  // a host of each part (whose context holds its work)
  // A message's tag: job j's operation `op` (the model's id) is first_tag_[j] + op modulo
  // 2^tag_bits (the last entry: the end of the last job's). The jobs live at once
  // (started, not yet drained: messages of no other are anywhere) lie within 2^tag_bits
  // tags from the first of them, live_low_, which tells a tag's job. Both change in
  // steps only.
  std::uint64_t tag_span_;  // 2^tag_bits
  std::vector<std::uint64_t> first_tag_{0};
  std::set<std::uint32_t> live_;
  std::uint64_t live_low_ = 0;
  void started(std::uint32_t job) override;
  void drained(std::uint32_t job) override;
  std::pair<std::uint32_t, offload::OpId> of_tag(std::uint32_t tag) const;
  struct Traffic {
    std::uint64_t messages = 0, bytes = 0, retransmitted = 0;
  };
  std::vector<std::vector<Traffic>> traffic_;  // per part, per job
  std::size_t jobs_ = 0;
};

}  // namespace fabriclab::nicengine
