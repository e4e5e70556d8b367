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
// checks) and routing.cc; the run -- one loop of lock-step windows over parts, undivided
// or split, over threads or processes, with the observers that read the network at
// instants of their own (the PFC deadlock check, snapshots; observers.cc) -- is the
// Network's Run (run.h).
#pragma once

#include <array>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/pool.h"
#include "core/simulator.h"
#include "fabric/context.h"
#include "fabric/deadlock.h"
#include "fabric/exchange.h"
#include "fabric/feed.h"
#include "fabric/flows.h"
#include "fabric/host.h"
#include "fabric/port.h"
#include "fabric/reorder_box.h"
#include "fabric/resequencer.h"
#include "fabric/run.h"
#include "fabric/run_observer.h"
#include "fabric/switch.h"

namespace fabriclab::fabric {

// Throws InputError when a frame of nic.mtu payload bytes in format `w` would not fit
// the 16 bits a packet keeps its size in (Network::set_wire_format checks it).
void check_wire_format(const NicConfig& nic, const WireFormat& w);

class Network final : private FlowEvents {
 public:
  // Ports a node may have: their numbers are 16-bit, the top two values reserved.
  static constexpr std::size_t kMaxPorts = 0xfffe;

  Network(NicConfig nic, SwitchConfig sw, std::uint64_t seed);
  // The frame format every node counts (default: RoCEv2 over tagged Ethernet; with the INT
  // header's bytes when the policy reads INT). Before the first node is added
  // (std::logic_error after); InputError for a frame that cannot hold the largest payload.
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
  const Host& host(std::uint32_t h) const { return *hosts_.at(h); }
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
  // InputError, naming `what` and where more QPs are asked for, unless a flow of `bytes`
  // over `qps` QPs fits the QPs' 24-bit PSNs (add_flow checks it; feed_flows' callers
  // check their largest flow up front).
  void check_flow_size(std::uint64_t bytes, std::uint32_t qps, const std::string& what,
                       const std::string& qps_key = "traffic.qps_per_flow, or the flow list's qps column") const;
  // Flows that `source` makes while the run goes, instead of all before it (a load): the
  // network adds each shortly before it starts, after the flows of add_flow, and frees the
  // QPs of those that have finished for later ones (FlowFeed, feed.h: when, and what that
  // changes). Flows in start order, without `after`, each passing add_flow's checks
  // (else the run fails when it is added). Once, before run().
  void feed_flows(std::unique_ptr<FlowSource> source, Time step);
  const FlowFeed* feed() const { return feed_.get(); }
  // The configuration every host's NIC shares.
  const NicConfig& nic_config() const { return nic_; }
  // The unloaded RTT the congestion control's windows use (nic.base_rtt, or when 0 and
  // the policy reads ACKs the longest path's, base_rtt_of_longest_path; else 0); known
  // once the run is prepared.
  Time base_rtt() const { return base_rtt_; }
  // UET's timeout (host.h: uet_rto(), with the switches' trimming); known as base_rtt().
  Time uet_rto() const { return fabric::uet_rto(nic_.uet, base_rtt_, sw_.trim_threshold.count() > 0); }
  // From the first host to the host farthest from it (the fabrics built here are
  // symmetric, so that is the longest path): over the fewest hops, each link's delay
  // twice, a data frame of nic.mtu out and an ACK frame back serialized at each link's
  // rate (the larger sum where paths of equal hops differ).
  Time base_rtt_of_longest_path() const;
  // Flow `f`'s ideal completion time: what it takes alone on the idle network, as its FCT
  // counts (nic.flow_end). Its frames (every QP's, sized as the NIC sends them: a message's
  // first with its RETH, payloads padded, the INT bytes when the policy reads INT, each
  // with the gap) leave back to back and cross a path of links i (delay d_i, rate r_i)
  // store-and-forward; the last byte arrives after
  //   max over links k of [ sum_{i<k} (d_i + w_1/r_i) + W/r_k + d_k + sum_{i>k} (d_i + w_n/r_i) ]
  // (w_1 the first frame, W/r_k every frame's serialization, each rounded as the wire
  // format rounds a frame, w_n the last: the frames queue at the slowest link, k), least
  // over the routed equal-cost paths (static routes included; the first kMaxIdealPaths);
  // plus, when nic.flow_end = last_ack_received, an ACK frame's way back. Every frame on
  // one path: a flow of several QPs, or sprayed, can beat it where the paths are slower
  // than the host link (its frames then share several). Time::max() when no path reaches
  // the destination or the time does not fit a Time. Once prepared.
  // `cache`: the routed paths between two switches, walked once for every flow between
  // their hosts (without static routes, paths depend on the switches alone); one per
  // thread.
  static constexpr std::size_t kMaxIdealPaths = 4096;
  class IdealCache {
    friend class Network;
    // By (first switch, last switch): the distinct paths between them, each as its links'
    // (rate in bit/s, delay in ps).
    std::unordered_map<std::uint64_t, std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>>> paths_;
  };
  Time ideal_fct(const FlowSpec& f, IdealCache* cache = nullptr) const;
  // Flow `id`'s UDP source port (its first QP's; 0 for a flow of no QP). Once prepared.
  std::uint16_t source_port(std::uint32_t id) const { return source_ports_.at(id); }
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
  // Connection `c`'s hosts and the payload of its messages completed (RC: acknowledged),
  // once the run has finished (over several processes: on rank 0).
  struct ConnectionBytes {
    std::uint32_t src, dst;
    std::uint64_t completed;
  };
  ConnectionBytes connection_bytes(std::uint32_t c) const;
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
    FabricContext& c = run_.ctx_of(node, ctx_);
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
  Simulator& sim_of(std::uint32_t node) { return run_.ctx_of(node, ctx_).sim; }

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
  void set_partitions(std::uint32_t partitions, std::uint32_t threads) { run_.set_partitions(partitions, threads); }
  // The same over the processes `exchange` joins (every one builds the same network and
  // calls run()): process r runs parts [r * partitions / size, (r + 1) * partitions /
  // size) with `threads` threads (at most the smallest block). The outcome is the same
  // on every process (totals, ledger, deadlock); rank 0 alone holds what the outputs
  // read of the nodes and flows (holds_results()). A failure in any process ends the run
  // in every one with a RankFailure naming it. A coordinator keeps a copy on every
  // process (Coordinator: share, take_shared, share_results, take_results).
  void set_partitions(std::uint32_t partitions, std::uint32_t threads, Exchange& exchange) {
    run_.set_partitions(partitions, threads, exchange);
  }
  // Once finished over several processes: every rank's RankStats, by rank (else empty).
  const std::vector<RankStats>& rank_stats() const { return run_.rank_stats(); }
  std::uint32_t partitions() const { return run_.partitions(); }
  void set_partitioner(Partitioner p) { run_.set_partitioner(p); }
  // The part node `id` runs in, and the window (after run() has prepared the network).
  std::uint32_t partition_of(std::uint32_t node) const { return run_.partition_of(node); }
  // This process runs part `part`, or node `node`'s events (always, but over several
  // processes; once prepared).
  bool runs_part(std::uint32_t part) const { return run_.runs_part(part); }
  bool runs_here(std::uint32_t node) const { return run_.runs_here(node); }
  Time window() const { return run_.window(); }

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
  bool holds_results() const { return run_.holds_results(); }
  PortCounters port_counters_at_end(std::uint32_t node, std::size_t port) const;
  HostCounters host_counters(std::uint32_t h) const;
  WatchdogCounts watchdog_counts(std::uint32_t sw, std::size_t port) const;
  std::size_t packets_alive() const;
  // What run() does first, once: routes, parts, the flows' first sends. Called before,
  // the set-up is timed apart from the run (observers and snapshots are set before it).
  void prepare();

 private:
  friend class Run;       // reads the model it runs
  friend class FlowFeed;  // adds flows and frees their QPs between windows

  RunTotals finish();
  void flow_finished(std::uint32_t flow) override;
  std::uint32_t push_flow(const FlowSpec& f);  // add_flow's checks, then the row
  // Flow `id`'s QPs at both ends, its start scheduled (Time::max() when it waits for
  // others); `fed` during the run: counted as work of the part it finishes in, and
  // started only where its sender runs.
  void make_qps(std::uint32_t id, bool fed = false);
  // A fed flow's QPs: whether every one has finished at the sender (or the receiver),
  // read where that host runs; freed at both ends.
  bool sent_all(std::uint32_t id) const;
  bool received_all(std::uint32_t id) const;
  void free_qps(std::uint32_t id);
  void claim_link(const Port& port) const;  // InputError if the link already has an element
  void build_routes();
  // The frames a path carries for ideal_fct: the first's and the last's wire bytes, and
  // every frame as (wire bytes, how many).
  struct PathFrames {
    Bytes first, last;
    std::vector<std::pair<Bytes, std::uint64_t>> all;
  };
  // ideal_fct's least time over the routed paths from host `from` to host `to`.
  Time least_path_time(std::uint32_t from, std::uint32_t to, const PathFrames& frames, IdealCache* cache) const;
  // The time of `frames` over links of (rate in bit/s, delay in ps), in order.
  Time path_time(const std::vector<std::pair<std::int64_t, std::int64_t>>& links, const PathFrames& frames) const;
  Time base_rtt_ = Time();
  // The host whose event finishes flow `f` (nic.flow_end): its receiver or its sender.
  std::uint32_t finishing_host(const FlowSpec& f) const { return nic_.flow_end == FlowEnd::acked ? f.src : f.dst; }
  WatchdogCounts own_watchdog(std::uint32_t node, std::size_t port) const;  // switch `node`'s, read here
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
  std::vector<std::uint16_t> source_ports_;                                     // per flow: its first QP's
  std::unique_ptr<FlowFeed> feed_;
  std::unique_ptr<CoordinatorPair> coordinators_;  // the coordinator and the feed, when both
  Run run_{*this};                                 // before the nodes: they release into its parts' pools
  std::vector<std::unique_ptr<Host>> hosts_;
  std::vector<std::unique_ptr<Switch>> switches_;
  std::vector<Node*> nodes_;
  std::vector<std::unique_ptr<ReorderBox>> boxes_;
  std::vector<std::unique_ptr<Resequencer>> reseqs_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<std::uint16_t>> static_routes_;
  // Per host: its edge switch, as an index of the switches' tables by edge switch (one
  // past the last edge switch: none; build_routes). Every switch reads it.
  std::vector<std::uint32_t> edge_of_host_;
  bool prepared_ = false, ran_ = false;
  struct Conn {
    std::uint32_t src, dst, messages_hint;
    std::uint8_t priority;
    std::uint32_t send_qp = 0;
    std::uint64_t gathered = ~std::uint64_t{0};  // over ranks: the sender's count, on rank 0
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

  // What reads the run at instants of its own (RunObserver; Run::observers_ lists them).
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
};

}  // namespace fabriclab::fabric
