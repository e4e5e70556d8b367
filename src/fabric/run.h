// The run of a Network, apart from the model it runs: one loop (run.cc) of lock-step
// windows over parts, each part with its own simulator, packet pool and ledger; an
// undivided run is one part, on the network's own. A split run (set_partitions;
// partition.cc puts the nodes into parts) makes its windows as long as the smallest delay
// of a link between parts (conservative synchronization: a frame sent in one window
// cannot arrive before the next). Frames crossing a cut are handed over at the window's
// end; every event carries a tie key drawn by the node acting (core/simulator.h), so a
// split run executes the undivided run's events, in the same order within each part,
// whatever the threads: the same outputs and fingerprint. The parts may also be spread
// over processes (MPI ranks, through an Exchange): each runs a block of them and the
// exchange carries the frames, the windows' decisions, the deadlock checks and, at the
// end, what the outputs read, to rank 0. What reads the network at instants of its own
// (the PFC deadlock check, snapshots) plugs into the loop as a RunObserver.
//
// A Network owns its Run and is its only user: Network's set_partitions, partition_of,
// runs_here, rank_stats ... are this class's, and Network::run prepares the model, runs
// the windows here and reads the end. The Run reads the model (nodes, flows, the
// coordinator, the held work) through the Network it belongs to.
#pragma once

#include <array>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "core/params.h"
#include "core/pool.h"
#include "core/simulator.h"
#include "fabric/context.h"
#include "fabric/counters.h"
#include "fabric/exchange.h"
#include "fabric/host.h"
#include "fabric/port.h"
#include "fabric/run_observer.h"
#include "fabric/switch.h"

namespace fabriclab::fabric {

class Network;

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

class Run {
 public:
  explicit Run(Network& net) : net_(net) {}
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  // See Network::set_partitions and set_partitioner (before the run is prepared).
  void set_partitions(std::uint32_t partitions, std::uint32_t threads);
  void set_partitions(std::uint32_t partitions, std::uint32_t threads, Exchange& exchange);
  void set_partitioner(Partitioner p);

  std::uint32_t partitions() const { return n_parts_; }
  bool split() const { return n_parts_ > 1; }
  // The part node `id` runs in, and the window (once prepared).
  std::uint32_t partition_of(std::uint32_t node) const { return n_parts_ > 1 ? part_of_.at(node) : 0; }
  Time window() const { return window_; }
  // This process runs part `part`, or node `node`'s events (always, but over several
  // processes; once prepared).
  bool runs_part(std::uint32_t part) const { return !exchange_ || (part >= first_part_ && part < end_part_); }
  bool runs_here(std::uint32_t node) const { return !exchange_ || runs_part(part_of_[node]); }
  // Over several processes, rank 0 alone holds what the outputs read.
  bool holds_results() const { return !exchange_ || exchange_->rank() == 0; }
  const std::vector<RankStats>& rank_stats() const { return all_rank_stats_; }
  // What node `node`'s events run on: its part's context, or the network's (`own`) when
  // the run is not split.
  FabricContext& ctx_of(std::uint32_t node, FabricContext& own) {
    return n_parts_ > 1 ? parts_[part_of_.at(node)]->ctx : own;
  }

 private:
  friend class Network;

  // The parts, once the nodes are tied (Network::prepare): split, each node bound to its
  // part's context and each link between parts cut; else the one part on the network's
  // own. And the tail: the longest link delay.
  void prepare_parts();
  // Once the flows are set up: each part counts the flows that finish in it.
  void share_flows();
  void partition();
  void partition_by_levels();
  void partition_by_metis();
  // The windows until the run ends (stop, the work done, a deadlock, a failure), every
  // failure rethrown in every process.
  void run_windows(Time stop, Time slice, const std::function<void(Time)>& progress);
  void hand_over(std::uint32_t to, int window);  // the frames crossing into part `to`
  // Over several processes: this one's parts' published `seen` and the frames they sent
  // into other processes' parts, out; theirs, in (into the parts' places here).
  void exchange_window(int window);
  // Runs the coordinator's step at `at` (an undivided run, or thread 0 of a partitioned
  // one while no part runs) and returns its next instant; `idle_after`: whether the
  // network was idle after it.
  Time coordinate(Time at, bool* idle_after = nullptr);
  // No event pending, no frame crossing between parts (over several processes: here).
  bool idle() const;
  // Over several processes, after a step: whether every process is idle (`idle`, this
  // one's on entry), whether any step failed, and what each step changed in its parts.
  void agree_after_step(bool& idle, bool& failed);
  // Over several processes, at the end: the totals every rank agrees on, and what rank 0
  // needs for the outputs; a failure in any rank, thrown in every one.
  void agree_on_totals(RunTotals& t, bool& pending, Time& last_now, bool& work_done);
  // Over several processes: the parts rank `rank` runs, [first, end).
  std::pair<std::uint32_t, std::uint32_t> parts_of_rank(int rank) const;
  void gather_results();
  void rethrow_any_failure();
  // Events run and the fingerprint over every part (see Network::events, fingerprint).
  std::uint64_t events() const;
  std::uint64_t fingerprint() const;
  // At the end (Network::finish), over this process's parts: the frames still crossing
  // put on their links, whether events remain (or a deadlock ended the run), the last
  // part's clock, the peak of packets, the parts' ledgers added into the network's.
  void end_windows(RunTotals& t, bool& pending, Time& last_now);
  // Every part here released the work it held.
  bool work_done() const;
  // When the run ended: as an undivided run's, where the last window did if events
  // remain, else at the last event (`undivided`: the network's own clock).
  Time end_at(Time undivided, bool pending, Time last_now);

  Network& net_;
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
  std::vector<std::unique_ptr<Part>> parts_;
  std::vector<std::uint32_t> part_of_;  // per node
  Time window_ = Time::max();
  // A run that ends by finishing its work goes on for the longest link delay after the
  // last piece was done (the tail), so that its end does not depend on how it was split:
  // a part cannot stop at another's last delivery, but every window is shorter than this.
  Time tail_;
  Time last_release_;                // the last step that released whole-network work
  Time ran_until_;                   // partitioned: the last window's end
  bool running_ = false;             // partitioned: the threads are running
  std::uint64_t window_events_ = 0;  // partitioned: events as of the last window's end
  bool coordinator_failed_ = false;  // over several processes: a step failed in one (all know)
  // The observers (RunObserver), set by Network::prepare: the deadlock check first, then
  // the snapshots (a check that ends the run at an instant leaves its snapshot unread).
  std::vector<RunObserver*> observers_;
};

}  // namespace fabriclab::fabric
