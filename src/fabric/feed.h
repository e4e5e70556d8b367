// Flows made while the run goes (Network::feed_flows): the coordinator that adds a
// source's flows shortly before they start and gives the QPs of finished ones back, so
// that a long load holds its running flows' QPs, not every flow's.
//
// Instants. The flows starting before `step` are added when the network is prepared;
// then, at k x step - 1 ps for each k such that a flow starts in [k x step, (k + 1) x
// step), every such flow, in the source's order. The instants depend on the flows alone,
// so they are the same however the run is split; and every start event is scheduled
// before its instant comes, outside any event, as when every flow was added before the
// run (the simulator's own tie keys, in flow order): the run is the one it would be with
// every flow added up front, but for what freed QPs change (below).
//
// Freeing. At each instant (its step) the feed looks, among the flows whose QPs are still
// held, for those whose sending QPs have finished (on the sender's host) and those whose
// receiving QPs have (on the receiver's; Host::send_qp_finished, recv_qp_finished); then
// (after_step: nothing has run since) it frees the QPs of every flow both ends of which
// have, and adds the new flows. Over several processes, each looks at the hosts it runs
// and tells the others what it found (share, take_shared, between the two): every copy
// frees the same QPs at the same instant, so QP numbers agree everywhere. A freed
// QP's number goes to the next QP its host makes; a packet that arrives for the old QP
// after that is discarded (HostCounters::late_discarded), as in the HPCC ns-3 model,
// whose finished flows' QPs are deleted at both ends (qp_finish, DeleteRxQp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "fabric/flows.h"

namespace fabriclab::fabric {

class Network;

class FlowFeed final : public Coordinator {
 public:
  FlowFeed(Network& net, std::unique_ptr<FlowSource> source, Time step);
  // From Network::prepare, before the QPs are made: the flows starting before the first
  // instant; holds the run open (Network::hold) while the source has more.
  void add_first();
  // Flows added so far.
  std::uint64_t flows_added() const;

  void begin() override {}
  Time next_step(bool idle) override;
  void step(Time at) override;        // looks for finished flows
  bool after_step(Time at) override;  // frees those and adds the next flows
  void share(ByteWriter& out) const override;
  void take_shared(ByteReader& in) override;

 private:
  bool pull();                             // the source's next flow into next_; false when there is none
  void add(Time before, bool during_run);  // every flow starting before `before`
  void free_finished();                    // the flows both ends have finished
  void look_for_finished();                // what the ends this process runs have finished

  Network& net_;
  std::unique_ptr<FlowSource> source_;
  Time step_;
  FlowSpec next_;
  bool has_next_ = false, held_ = false;
  std::uint32_t first_ = 0;  // the first fed flow's id
  // Flows whose QPs are held, in id order; per flow fed (from first_), what has finished (1: its
  // sending QPs, 2: its receiving QPs). What this process found at the last instant
  // (flow id x 2 + end), told to the others until they have heard it.
  std::vector<std::uint32_t> live_;
  std::vector<std::uint8_t> done_;
  std::vector<std::uint32_t> found_;
  bool told_ = false;
};

// Two coordinators as one (the NIC engine's collectives and a flow feed): each steps at
// its own instants; what they share goes one after the other.
class CoordinatorPair final : public Coordinator {
 public:
  CoordinatorPair(Coordinator& a, Coordinator& b) : a_(a), b_(b) {}
  void begin() override {
    a_.begin();
    b_.begin();
  }
  Time next_step(bool idle) override {
    due_a_ = a_.next_step(idle);
    due_b_ = b_.next_step(idle);
    return std::min(due_a_, due_b_);
  }
  void step(Time at) override {
    stepped_a_ = due_a_ == at;
    stepped_b_ = due_b_ == at;
    if (stepped_a_) a_.step(at);
    if (stepped_b_) b_.step(at);
  }
  bool after_step(Time at) override {
    const bool a = stepped_a_ && a_.after_step(at);
    const bool b = stepped_b_ && b_.after_step(at);
    return a || b;
  }
  void share(ByteWriter& out) const override {
    a_.share(out);
    b_.share(out);
  }
  void take_shared(ByteReader& in) override {
    a_.take_shared(in);
    b_.take_shared(in);
  }
  void share_results(ByteWriter& out) const override {
    a_.share_results(out);
    b_.share_results(out);
  }
  void take_results(ByteReader& in) override {
    a_.take_results(in);
    b_.take_results(in);
  }

 private:
  Coordinator &a_, &b_;
  Time due_a_ = Time::max(), due_b_ = Time::max();
  bool stepped_a_ = false, stepped_b_ = false;
};

}  // namespace fabriclab::fabric
