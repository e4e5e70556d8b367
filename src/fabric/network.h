// A network: hosts (each a RoCEv2 NIC with one port) and switches joined by full-duplex
// links, the flows they carry, and the run. The Network owns the simulator, the packet
// pool and every component; it computes shortest-path routes (every equal-cost next hop,
// for ECMP and spraying), starts the flows, runs, and at the end checks that every data
// byte sent was delivered, dropped or is still in flight, and that no packet leaked.
//
//   Network net(nic, sw, seed);
//   auto a = net.add_host(), b = net.add_host();
//   net.connect(net.host(a), net.host(b), Gbps(100), us(1));
//   net.add_flow({.src = a, .dst = b, .bytes = 4096});
//   RunTotals t = net.run(ms(1));
//
// The model is network.cc (nodes, links, flows, connections, the set-up and the end's
// checks) and routing.cc. The run is one loop (run.cc) of lock-step windows over parts,
// each part with its own simulator, packet pool and ledger; an undivided run is one
// part, on the network's own. A split run (set_partitions; partition.cc puts the nodes
// into parts) makes its windows as long as the smallest delay of a link between parts
// (conservative synchronization: a frame sent in one window cannot arrive before the
// next). Frames crossing a cut are handed over at the window's end; every event carries
// a tie key drawn by the node acting (core/simulator.h), so a split run executes the
// undivided run's events, in the same order within each part, whatever the threads: the
// same outputs and fingerprint. The parts may also be spread over processes (MPI ranks,
// through an Exchange): each runs a block of them and the exchange carries the frames,
// the windows' decisions, the deadlock checks and, at the end, what the outputs read, to
// rank 0. What reads the network at instants of its own during the run (the PFC deadlock
// check, snapshots) plugs into the loop as a RunObserver (observers.cc).
#pragma once

#include <array>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/pool.h"
#include "core/simulator.h"
#include "fabric/context.h"
#include "fabric/deadlock.h"
#include "fabric/exchange.h"
#include "fabric/flows.h"
#include "fabric/host.h"
#include "fabric/port.h"
#include "fabric/reorder_box.h"
#include "fabric/resequencer.h"
#include "fabric/run_observer.h"
#include "fabric/switch.h"

namespace fabriclab::fabric {

// A PFC deadlock: a cycle of egress queues, each paused by the next switch for longer
// than the persistence time, each holding packets whose ingress group is what pauses
// the queue before it in the cycle.

// How a partitioned run's nodes are put into parts: `levels` (hosts by index in contiguous
// blocks, each switch with most of its neighbours nearer the hosts: a fat-tree by pods, a
// leaf-spine by leaf groups with half the spines) or `metis` (METIS's k-way partition of
// the graph, each node weighted by its ports, links between two nodes by their number:
// balanced load and few cut links on any topology).
enum class Partitioner : std::uint8_t { levels, metis };
inline constexpr params::EnumNames<Partitioner, 2> kPartitionerNames{
    {{Partitioner::levels, "levels"}, {Partitioner::metis, "metis"}}};

struct RunTotals {
  Time end;  // simulated time when the run stopped
  std::uint64_t events = 0;
  std::uint64_t packet_hops = 0;  // packets (any kind) that crossed one link
  std::uint64_t flows_finished = 0;
  std::uint64_t in_flight_data_packets = 0, in_flight_data_bytes = 0;  // at the end
  std::uint64_t peak_packets = 0;  // most packets alive at once (partitioned: the sum of the
                                   // parts' peaks; frames being handed over are in neither)
  bool all_finished = false;
  bool deadlock = false;  // the run stopped on a PFC deadlock (see Network::deadlock())
};

// A run over several processes, as this process saw it: its windows, the frames its
// parts sent into other processes' parts, and the wall time it spent in the windows'
// exchanges (waiting for the slowest process, then moving the bytes).
struct RankStats {
  std::uint64_t windows = 0, frames_out = 0, bytes_out = 0;
  double exchange_seconds = 0;
};

// Throws InputError when a frame of nic.mtu payload bytes in format `w` would not fit
// the 16 bits a packet keeps its size in (Network::set_wire_format checks it).
void check_wire_format(const NicConfig& nic, const WireFormat& w);

class Network final : private FlowEvents {
 public:
  // Ports a node may have: their numbers are 16-bit, the top two values reserved.
  static constexpr std::size_t kMaxPorts = 0xfffe;

  Network(NicConfig nic, SwitchConfig sw, std::uint64_t seed);
  // The frame format every node counts (default: RoCEv2 over tagged Ethernet). Before the
  // first node is added (std::logic_error after); InputError for a frame that cannot
  // hold the largest payload.
  void set_wire_format(const WireFormat& w);
  const WireFormat& wire_format() const { return ctx_.wire; }
  ~Network();

  // Hosts are numbered 0, 1, ... in the order added (their index in flows); add every
  // host before any switch so that node ids and host ids agree.
  std::uint32_t add_host(std::string name = "");
  std::uint32_t add_switch(std::string name);
  void connect(Node& a, Node& b, BitRate rate, Time delay);

  std::size_t host_count() const { return hosts_.size(); }
  std::size_t switch_count() const { return switches_.size(); }
  Host& host(std::uint32_t h) { return *hosts_.at(h); }
  Switch& switch_at(std::uint32_t s) { return *switches_.at(s); }
  const std::vector<Node*>& nodes() const { return nodes_; }

  // Forwarding at switch `sw` toward host `dst` uses exactly `ports` (local port indices;
  // several = equal cost) instead of the shortest paths. Before run(). A loop is possible:
  // the TTL ends it (ledger().dropped(DropReason::ttl)).
  void set_static_route(std::uint32_t sw, std::uint32_t dst, std::vector<std::uint16_t> ports);

  // A reorder box on the link leaving `port` (owned by the network; before run()).
  ReorderBox& add_impairment(Port& port, ImpairmentConfig cfg);
  const std::vector<std::unique_ptr<ReorderBox>>& impairments() const { return boxes_; }
  // A re-sequencer on the link leaving `port` (one element per link: InputError if the
  // link already has a reorder box or a re-sequencer).
  Resequencer& add_resequencer(Port& port, ResequencerConfig cfg);
  const std::vector<std::unique_ptr<Resequencer>>& resequencers() const { return reseqs_; }

  // Flows may be added until run(); src != dst, bytes >= 1, qps >= 1, `after` naming
  // flows added before this one.
  std::uint32_t add_flow(const FlowSpec& f);
  const FlowTable& flows() const { return flows_; }
  // The configuration every host's NIC shares.
  const NicConfig& nic_config() const { return nic_; }
  // During the run: starts flow `id`, added with start = Time::max() (held), at `at`.
  void start_flow(std::uint32_t id, Time at);
  // Told of every flow that finishes, after the network has started the flows waiting on
  // it (an undivided run; before run()).
  void set_flow_observer(FlowEvents* observer) { flow_observer_ = observer; }

  // A connection from host `src` to host `dst` on `priority`: one QP each way that carries
  // messages posted during the run (post()), reported to `events` (set_message_events);
  // `messages_hint` sizes its message ring. Before run(); an undivided run only.
  std::uint32_t open_connection(std::uint32_t src, std::uint32_t dst, std::uint8_t priority,
                                std::uint32_t messages_hint = 4);
  std::size_t connection_count() const { return conns_.size(); }
  void set_message_events(MessageEvents* events) { message_events_ = events; }
  // During the run: a message of `bytes` on connection `c`, its packets tagged `tag`.
  void post(std::uint32_t c, std::uint64_t bytes, std::uint32_t tag) {
    const Conn& k = conns_[c];
    hosts_[k.src]->post(k.send_qp, bytes, tag);
  }
  // Work besides the flows that keeps the run going (collectives on connections); the run
  // ends when flows and held work are all done (or at `stop`). Work of the whole network:
  // hold(n) before run(), release() from the coordinator's step(). Work of one part (a
  // collective's operations on the NICs there): hold_in(node, n) in the coordinator's
  // begin(), release_in(node) from an event of node's part.
  void hold(std::uint64_t n);
  void release();
  std::uint64_t held() const { return held_; }
  void hold_in(std::uint32_t node, std::uint64_t n);
  void release_in(std::uint32_t node) {
    FabricContext& c = ctx_of(node);
    if (c.work_released >= c.work_held) throw std::logic_error("Network::release_in: more released than held");
    ++c.work_released;
    c.last_done = c.sim.now();
    if (--c.flows_left == 0 && c.stop_at_last_flow) c.sim.stop();
  }
  // The coordinator of work that acts across the network (before run(); see Coordinator).
  void set_coordinator(Coordinator* c) { coordinator_ = c; }
  // From an event of an undivided run: the coordinator's next instant may have moved
  // earlier (an event gave it work); the run asks again after this event.
  // std::logic_error in a partitioned run, whose windows cannot go back.
  void coordinator_moved();
  // The simulator that runs node `id`'s events (once prepared: in a partitioned run, its part's).
  Simulator& sim_of(std::uint32_t node) { return ctx_of(node).sim; }

  // Checks what the nodes' buffers must hold (a switch's reserves and PFC headroom, a
  // NIC's PFC headroom), as run() does, but before the flows are built: InputError
  // naming the node and the key. Once the topology is complete.
  void check_buffers();

  // The state at an instant `at`, read when every event before it has run and none at or
  // after it: every port's counters up to `at` (node by node, each node's ports in order;
  // max_queue_bytes is the most a switch port held since the snapshot before, or the
  // start) and every flow's payload placed.
  struct Snapshot {
    Time at;
    bool taken = false;  // the run reached `at` (one that ended before it: not taken)
    std::vector<PortCounters> ports = {};
    std::vector<std::uint64_t> delivered = {};  // by flow
  };
  // Takes a Snapshot at each of `instants` (ascending, after 0) within the run. Read-only:
  // the run is the same with or without them, undivided or split (partitioned, a window
  // ends at each instant, as at a deadlock check; over several processes, each reads its
  // own nodes and rank 0 gathers the rest with the outputs). Before run().
  void snapshot_at(std::vector<Time> instants);
  // Once the run has finished (over several processes: whole on rank 0, holds_results()).
  const std::vector<Snapshot>& snapshots() const { return snapshots_; }
  // With snapshots: the same reading at the run's end (max_queue_bytes since the last
  // snapshot within the run).
  const Snapshot& snapshot_at_end() const { return end_snapshot_; }

  // Runs until every flow has finished and nothing is left to do, or until `stop`.
  // Checks conservation and leaks (std::logic_error on a violation).
  RunTotals run(Time stop);
  // Runs in slices, calling progress(now) at their ends (for a progress line).
  RunTotals run(Time stop, Time slice, const std::function<void(Time)>& progress);

  // Split the run into `partitions` parts run by `threads` threads (1 <= threads <=
  // partitions; before run()). Hosts go to parts by index (contiguous blocks), a switch
  // to the part most of its neighbours nearer the hosts are in, ties spread by index (a
  // fat-tree splits by pods, a leaf-spine by leaves with half the spines). Every link
  // between parts needs a delay (the window); a deadlock check, a snapshot or a progress
  // report due inside a window runs at its end, while no part runs; flows with `after`, link
  // elements and port taps are refused (they would act across parts within a window).
  void set_partitions(std::uint32_t partitions, std::uint32_t threads);
  // The same over the processes `exchange` joins (every one builds the same network and
  // calls run()): process r runs parts [r * partitions / size, (r + 1) * partitions /
  // size) with `threads` threads (at most the smallest block). The outcome is the same
  // on every process (totals, ledger, deadlock); rank 0 alone holds what the outputs
  // read of the nodes and flows (holds_results()). A failure in any process ends the run
  // in every one with a RankFailure naming it. A coordinator keeps a copy on every
  // process (Coordinator: share, take_shared, share_results, take_results).
  void set_partitions(std::uint32_t partitions, std::uint32_t threads, Exchange& exchange);
  // Once finished over several processes: every rank's RankStats, by rank (else empty).
  const std::vector<RankStats>& rank_stats() const { return all_rank_stats_; }
  std::uint32_t partitions() const { return n_parts_; }
  void set_partitioner(Partitioner p);
  // The part node `id` runs in, and the window (after run() has prepared the network).
  std::uint32_t partition_of(std::uint32_t node) const { return n_parts_ > 1 ? part_of_.at(node) : 0; }
  // This process runs part `part`, or node `node`'s events (always, but over several
  // processes; once prepared).
  bool runs_part(std::uint32_t part) const { return !exchange_ || (part >= first_part_ && part < end_part_); }
  bool runs_here(std::uint32_t node) const { return !exchange_ || runs_part(part_of_[node]); }
  Time window() const { return window_; }

  // Look for PFC deadlocks every `interval` (0 = never): a cycle of queues paused for at
  // least `persist`. The first one found is kept; unless `keep_running` (a watchdog may
  // break it), the run stops there.
  void detect_deadlocks(Time interval, Time persist, bool keep_running = false);
  const std::optional<DeadlockReport>& deadlock() const { return deadlock_; }

  // The simulator of an undivided run (partitioned: not the one that runs).
  Simulator& sim() { return sim_; }
  // Events run and the trajectory's fingerprint (partitioned: over every part; inside
  // `progress`, the events as of the window's end).
  std::uint64_t events() const;
  std::uint64_t fingerprint() const;
  // The conservation ledger (partitioned: the parts' sum, once the run has finished).
  const Ledger& ledger() const { return ledger_; }
  // What port `port` of `node` counted, with what its node counted for it, up to `end`.
  static PortCounters port_counters(const Node& node, std::size_t port, Time end);
  // What the outputs read once the run has finished: every node's, read from the nodes
  // or, on rank 0 of a run over several processes, gathered from the ranks that ran
  // them. False on the other ranks, which hold only their own.
  bool holds_results() const { return !exchange_ || exchange_->rank() == 0; }
  PortCounters port_counters_at_end(std::uint32_t node, std::size_t port) const;
  HostCounters host_counters(std::uint32_t h) const;
  WatchdogCounts watchdog_counts(std::uint32_t sw, std::size_t port) const;
  std::size_t packets_alive() const;
  // What run() does first, once: routes, parts, the flows' first sends. Called before,
  // the set-up is timed apart from the run (observers and snapshots are set before it).
  void prepare();

 private:
  RunTotals finish();
  FabricContext& ctx_of(std::uint32_t node) { return n_parts_ > 1 ? parts_[part_of_.at(node)]->ctx : ctx_; }
  // Runs the coordinator's step at `at` (an undivided run, or thread 0 of a partitioned
  // one while no part runs) and returns its next instant; `idle_after`: whether the
  // network was idle after it.
  Time coordinate(Time at, bool* idle_after = nullptr);
  // No event pending, no frame crossing between parts (over several processes: here).
  bool idle() const;
  // Over several processes, after a step: whether every process is idle (`idle`, this
  // one's on entry), whether any step failed, and what each step changed in its parts.
  void agree_after_step(bool& idle, bool& failed);
  void flow_finished(std::uint32_t flow) override;
  void claim_link(const Port& port) const;  // InputError if the link already has an element
  void build_routes();
  void partition();
  void partition_by_levels();
  void partition_by_metis();
  void hand_over(std::uint32_t to, int window);  // the frames crossing into part `to`
  // Over several processes: this one's parts' published `seen` and the frames they sent
  // into other processes' parts, out; theirs, in (into the parts' places here).
  void exchange_window(int window);
  // Over several processes, at the end: the totals every rank agrees on, and what rank 0
  // needs for the outputs; a failure in any rank, thrown in every one.
  void agree_on_totals(RunTotals& t, bool& pending, Time& last_now, bool& work_done);
  // Over several processes: the parts rank `rank` runs, [first, end).
  std::pair<std::uint32_t, std::uint32_t> parts_of_rank(int rank) const;
  // The host whose event finishes flow `f` (nic.flow_end): its receiver or its sender.
  std::uint32_t finishing_host(const FlowSpec& f) const { return nic_.flow_end == FlowEnd::acked ? f.src : f.dst; }
  void gather_results();
  WatchdogCounts own_watchdog(std::uint32_t node, std::size_t port) const;  // switch `node`'s, read here
  void rethrow_any_failure();
  void release_switch_queues();  // every packet queued in a switch, back to its pool

  Simulator sim_;
  Pool<Packet> packets_{"Packet", 4096};
  Ledger ledger_;
  FabricContext ctx_{sim_, packets_, ledger_};
  NicConfig nic_;
  SwitchConfig sw_;
  std::uint64_t seed_;
  FlowTable flows_;
  std::vector<std::vector<std::uint32_t>> dependents_;  // per flow: the flows waiting on it
  std::vector<std::uint32_t> waiting_;                  // per flow: dependences not yet finished
  std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> send_qps_;  // per flow: (host, QPN)
  // A part of a partitioned run: what its nodes share, the frames it sends each other
  // part (by destination), and, per window parity, what it published at the window's
  // end for every thread's decision to go on (a thread may run the next window while a
  // slower one still reads the last).
  struct Seen {
    std::uint64_t flows_left = 0, pending = 0, events = 0, sent = 0;
    Time last_done;
    bool failed = false;
  };
  struct Part {
    // A split run's part has its own simulator, pool and ledger; the one part of an
    // undivided run runs on the network's.
    struct Own {
      Simulator sim;
      Pool<Packet> packets{"Packet", 4096};
      Ledger ledger;
      FabricContext ctx{sim, packets, ledger};
    };
    std::unique_ptr<Own> own;
    FabricContext& ctx;
    Simulator& sim;
    std::vector<Outbox> out;
    std::exception_ptr error;
    std::array<Seen, 2> seen;
    Part() : own(std::make_unique<Own>()), ctx(own->ctx), sim(own->sim) {}
    explicit Part(FabricContext& network) : ctx(network), sim(network.sim) {}
  };
  std::uint32_t n_parts_ = 1, n_threads_ = 1;
  Partitioner partitioner_ = Partitioner::levels;
  Exchange* exchange_ = nullptr;                 // several processes
  std::uint32_t first_part_ = 0, end_part_ = 0;  // the parts this process runs
  ByRank mail_out_, mail_in_;
  RankStats rank_stats_;
  std::vector<RankStats> all_rank_stats_;
  // Over several processes, once finished: the run's events and fingerprint, and on rank
  // 0 every node's counters (ports by port_base_[node] + port).
  std::uint64_t total_events_ = 0, total_fingerprint_ = 0;
  bool agreed_ = false;  // (agree_on_totals has run: the totals above are the run's)
  Time end_;
  std::vector<std::size_t> port_base_;
  std::vector<PortCounters> gathered_ports_;
  std::vector<HostCounters> gathered_hosts_;
  std::vector<WatchdogCounts> gathered_watchdog_;  // by port_base_ of the switch
  std::vector<std::unique_ptr<Part>> parts_;       // before the nodes: they release into its pools
  std::vector<std::uint32_t> part_of_;             // per node
  Time window_ = Time::max();
  // A run that ends by finishing its work goes on for the longest link delay after the
  // last piece was done (the tail), so that its end does not depend on how it was split:
  // a part cannot stop at another's last delivery, but every window is shorter than this.
  Time tail_;
  Time last_release_;                // the last step that released whole-network work
  Time ran_until_;                   // partitioned: the last window's end
  bool running_ = false;             // partitioned: the threads are running
  std::uint64_t window_events_ = 0;  // partitioned: events as of the last window's end
  std::vector<std::unique_ptr<Host>> hosts_;
  std::vector<std::unique_ptr<Switch>> switches_;
  std::vector<Node*> nodes_;
  std::vector<std::unique_ptr<ReorderBox>> boxes_;
  std::vector<std::unique_ptr<Resequencer>> reseqs_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<std::uint16_t>> static_routes_;
  // Per host: its edge switch, as an index of the switches' tables by edge switch (one
  // past the last edge switch: none; build_routes). Every switch reads it.
  std::vector<std::uint32_t> edge_of_host_;
  bool coordinator_failed_ = false;  // over several processes: a step failed in one (all know)
  bool prepared_ = false, ran_ = false;
  struct Conn {
    std::uint32_t src, dst, messages_hint;
    std::uint8_t priority;
    std::uint32_t send_qp = 0;
  };
  std::vector<Conn> conns_;
  MessageEvents* message_events_ = nullptr;
  FlowEvents* flow_observer_ = nullptr;
  Coordinator* coordinator_ = nullptr;
  bool coordinator_moved_ = false;
  std::uint64_t held_ = 0, released_ = 0, held_in_ = 0;

  // Deadlock checks are made between windows at
  // multiples of the interval, once every event before the check's instant has run.
  bool looks_for_deadlocks() const { return deadlock_interval_ > Time() && !switches_.empty(); }
  bool stopped_by_deadlock() const { return deadlock_ && !deadlock_keep_running_; }
  // Reads `s` now (this process's nodes and the flows that end at them).
  void take_snapshot(Snapshot& s);
  std::vector<Snapshot> snapshots_;
  Snapshot end_snapshot_;
  std::uint64_t work() const { return flows_.size() + held_ + held_in_; }
  void look_for_deadlock(Time now);
  Time deadlock_interval_, deadlock_persist_;
  bool deadlock_keep_running_ = false;
  std::optional<DeadlockReport> deadlock_;

  // The run's observers (RunObserver), set by prepare(): the deadlock check first, then
  // the snapshots (a check that ends the run at an instant leaves its snapshot unread).
  struct DeadlockCheck final : RunObserver {
    explicit DeadlockCheck(Network& n) : net(n) {}
    Kind kind() const override { return Kind::check; }
    Time instant(std::size_t k) const override { return net.deadlock_interval_ * static_cast<std::int64_t>(k + 1); }
    void read(std::size_t /*k*/, Time at) override { net.look_for_deadlock(at); }
    Network& net;
  };
  struct SnapshotReader final : RunObserver {
    explicit SnapshotReader(Network& n) : net(n) {}
    Kind kind() const override { return Kind::reading; }
    Time instant(std::size_t k) const override {
      return k < net.snapshots_.size() ? net.snapshots_[k].at : Time::max();
    }
    void read(std::size_t k, Time /*at*/) override { net.take_snapshot(net.snapshots_[k]); }
    Network& net;
  };
  DeadlockCheck deadlock_check_{*this};
  SnapshotReader snapshot_reader_{*this};
  std::vector<RunObserver*> observers_;
};

}  // namespace fabriclab::fabric
