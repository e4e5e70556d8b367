// A fabric scenario: the parameters of `fabriclab run` (declared once, with units,
// defaults, ranges and help), the network and flows they describe, the run, and its
// outputs in a directory:
//   summary.json  resolved configuration, totals (flows, FCT percentiles, drops, pauses,
//                 marks, the conservation ledger), simulated end time, events, packet-hops,
//                 the trajectory fingerprint, and the wall time (the only field that varies
//                 between identical runs)
//   flows.csv     flow_id,src,dst,bytes,start_ns,finish_ns,fct_ns,goodput_gbps,retransmitted_packets,
//                 finish_at,ideal_fct_ns,slowdown (scenario/fabric/slowdown.h)
//                 and the congestion control with every DCQCN value used
//   ports.csv     node,port,tx_bytes,tx_packets,drops,ecn_marks,pfc_pause_sent,pfc_pause_received,
//                 pfc_resume_sent,pfc_resume_received,paused_ns,max_queue_bytes,rerouted,trimmed
//   ports_window.csv, flows_window.csv  with output.window: the counts over that span
//                 (scenario/observers/window_counts.h), and their block in summary.json
//   collectives.csv  with [[collective]] entries: one row per collective instance
//                 (scenario/fabric/collectives.h), and their block in summary.json
//   slowdown.csv  with traffic.pattern = "load" or output.slowdown: FCT slowdown per
//                 flow-size bucket, and slowdown.png (scenario/fabric/slowdown.h)
//   traffic_matrix.csv  with output.traffic_matrix: src,dst,bytes placed per pair of hosts
//   fct.txt, pfc.txt  with output.ns3: the HPCC ns-3 RDMA model's outputs (scenario/fabric/ns3.h)
//   ops.csv       with output.ops (`run --trace-ops`): every operation's ready, fired and
//                 completed times
//
//   FabricSetup s = fabric_parameters().resolve("examples/incast.toml", {"traffic.bytes=2MB"});
//   FabricOutcome o = run_fabric(s, {.scenario = "examples/incast.toml", .out_dir = "out"});
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "fabric/network.h"
#include "fabric/params.h"
#include "nicmodel/params.h"
#include "scenario/fabric/collectives.h"
#include "scenario/fabric/slowdown.h"
#include "workload/load.h"
#include "workload/params.h"
#include "scenario/parameters.h"

namespace fabriclab::scenario {

// Everything a fabric scenario sets, as the run uses it. Each field's key is declared
// once: the models' in fabric/params.h and workload/params.h, nested here under their
// prefixes ("nic.", "switch.", "topology.", "traffic."), the run's own in
// fabric_scenario.cc.
struct FabricScenario {
  struct Sim {
    std::uint64_t seed = 1;
    Time stop_time = Time::from_ps(1'000'000'000'000);  // 1 s
    std::uint32_t partitions = 1;
    std::uint32_t threads = 0;  // 0: one per part
    fabric::Partitioner partitioner = fabric::Partitioner::levels;
  } sim;
  fabric::TopologySpec topology;
  fabric::NicConfig nic;
  fabric::SwitchConfig sw;
  fabric::WireFormat wire;
  struct DeadlockCheck {
    Time every = Time::from_ps(100'000'000);  // 100 us; 0 = never
    Time after = Time::from_ps(500'000'000);  // a cycle paused this long
  } deadlock;
  workload::TrafficSpec traffic;
  std::string static_routes;  // "SWITCH HOST PORT[|PORT...]; ..."
  struct Impair {
    std::string link;   // NODE:PORT, "" = none
    std::string rules;  // fabric::parse_impairment_rules
    fabric::ImpairmentConfig box;
  } impair;
  struct Reseq {
    std::string link;
    fabric::ResequencerConfig config;
  } reseq;
  struct Output {
    std::string pcap, reorder_metrics, timeseries_ports;
    std::string window;                   // "FROM..TO": ports_window.csv, flows_window.csv
    Time timeseries_interval;             // 0 = no time series
    bool ops = false;                     // ops.csv: every collective operation's times
    bool pcap_fcs = false;                // captured frames end with their FCS
    std::uint32_t pcap_psn_offset = 0;    // added to the PSNs written (mod 2^24)
    bool slowdown = false;                // slowdown.csv and its plot (always with traffic.pattern = "load")
    std::vector<Bytes> slowdown_buckets;  // upper edges, ascending; none = twenty of equal count
    Bytes short_flow = Bytes::from_count(100'000);
    bool traffic_matrix = false;  // traffic_matrix.csv
    bool ns3 = false;             // fct.txt and pfc.txt in the HPCC ns-3 model's formats (ns3.h)
  } output;
  // traffic.pattern = "load": the loads overlaid ([[load]] entries, workload/load.h).
  std::vector<workload::LoadSpec> loads;
  // Offloaded collectives ([[collective]] entries) and what their NICs have: the timed
  // model's NIC and host keys ("nic.counters", "host.poll", ...), the fabric timing the
  // messages.
  std::vector<CollectiveSpec> collectives;
  CollectivesConfig collective_traffic;
  nicmodel::NicParams offload;
};
using FabricSetup = Resolved<FabricScenario>;

// Every key of `fabriclab run`, bound to FabricScenario.
const Parameters<FabricScenario>& fabric_parameters();

// The DCQCN values a run used, for summary.json: both ends, in sysfs names and units.
nlohmann::ordered_json dcqcn_echo(const fabric::DcqcnParams& rp, const fabric::CnpParams& np);

// The rules across keys that need no network built (WRED's Kmax above its Kmin, the
// NIC's keys among themselves, a frame of the MTU in the wire format): throws
// InputError naming the keys. build_network checks them first; `tune` uses them to tell
// settings that cannot load from runs that fail. (Rules that need the topology, such as
// reserves and headroom within the buffer, are found by the run.)
void check_across_keys(const FabricSetup& setup);

// Whether the run writes slowdown.csv and its plot: traffic.pattern = "load" or
// output.slowdown.
bool writes_slowdown_table(const FabricScenario& s);

// The network, its topology and its flows, ready to run.
// `ranks`: the run is split over the processes it joins (MPI ranks; see
// fabric::Network::set_partitions), into sim.partitions parts or one per rank.
std::unique_ptr<fabric::Network> build_network(const FabricSetup& setup, fabric::Exchange* ranks = nullptr);

struct FabricRunOptions {
  std::string scenario;   // the file, for the summary
  std::string out_dir;    // "" = write nothing
  bool progress = false;  // progress on stderr (core/progress.h)
  // Called every 100 us of simulated time, with the time reached (partitioned: at the
  // end of the first window past each 100 us since the last call, while no part runs,
  // so the calls drift by a window each: 101 us, 201 us, ...): a benchmark samples its
  // counters there.
  std::function<void(Time)> on_slice = {};
  // Called once the network is built and prepared, before the run's first event (a
  // benchmark reads the set-up's memory there).
  std::function<void()> on_prepared = {};
  // Split the run over the processes this joins (every one calls run_fabric alike);
  // rank 0 alone writes the outputs and holds the outcome's per-node counts.
  fabric::Exchange* ranks = nullptr;
};

struct FabricOutcome {
  fabric::RunTotals totals;
  std::uint64_t fingerprint = 0;
  std::uint64_t flows = 0;
  // Over the flows that finished (the mean rounded to the ps; nearest ranks); none when
  // none finished.
  struct Completions {
    Time mean, p50, p99, max;
  };
  std::optional<Completions> fct;
  // FCT slowdown over the flows counted (scenario/fabric/slowdown.h): all, and the short
  // ones (none without an output directory: nothing reads the ideal FCTs).
  std::optional<SlowdownStats> slowdown, short_slowdown;
  std::uint64_t retransmitted = 0;  // packets, all flows
  std::uint64_t drops = 0, lossless_drops = 0, ecn_marks = 0, pfc_frames = 0;
  std::uint64_t pfc_resumes = 0;  // of pfc_frames, the resumes (XON)
  std::uint64_t watchdog_storms = 0, watchdog_drops = 0;
  std::uint64_t cnps_sent = 0, cnps_received = 0;
  std::optional<fabric::DeadlockReport> deadlock;
  // impair.rules that never acted, and why ("'drop 0/99': flow 0 sent no PSN 99 through
  // the box"): also printed as warnings and listed in summary.json.
  std::vector<std::string> unmatched_rules;
  std::vector<CollectiveRow> collectives;  // one per collective instance, in scenario order
  CollectiveNics collective_nics;
  double setup_seconds = 0;  // wall: the network, observers, output directory and the run's preparation
  double wall_seconds = 0;   // wall: the run itself
  std::vector<fabric::RankStats> rank_stats;  // a run over processes: each rank's exchanges
};

FabricOutcome run_fabric(const FabricSetup& setup, const FabricRunOptions& opt);

}  // namespace fabriclab::scenario
