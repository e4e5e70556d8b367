// The fabric simulator's scale benchmark (issue: packet-level RoCEv2 simulator):
// permutation traffic of 100 MB flows at 100G with PFC and ECN on, 1 ms simulated, on
//   fat_tree_128     3-tier fat-tree, k = 8 (128 hosts, 80 switches)
//   leaf_spine_1024  32 leaves x 32 hosts, 16 spines, 2 uplinks per leaf-spine pair (1:1)
//   leaf_spine:N     the same leaves and spines for N hosts (N a multiple of 32; past
//                    8 192 hosts, switch.buffer = N x 4 KiB, for the spines' headroom)
//   fat_tree:K       a fat-tree of k = K (K^3 / 4 hosts)
// Set-up (building the network, its routes and the first sends) and the run are timed
// apart, with the RSS after set-up and at the end. Instructions and cache misses per
// packet-hop come from bench/instructions_per_hop.sh (cachegrind: this machine's VM has no
// hardware counters).
// Prints wall time, events, packet-hops (one packet crossing one link) per second, the
// most packets alive at once, bytes per packet (a packet and its pool slot; and the
// process's peak RSS over the peak packets, a bound on everything a packet in flight
// costs), the process's peak RSS, and the heap allocations made over the second half of
// the simulated time (operator new is counted in this program), to set against the
// packet-hops: the steady state should allocate nothing per packet.
// Run one case per process so that the peak RSS is that case's:
//   fabric_scale fat_tree_128|leaf_spine_1024|leaf_spine:N|fat_tree:K [STOP [PARTITIONS [THREADS]]] [KEY=VALUE...]
// (KEY=VALUE: any scenario setting, e.g. nic.congestion_control=dctcp)
// STOP defaults to 1ms; PARTITIONS (default 1) > 1 is a partitioned run (sim.partitions)
// on THREADS threads (default one per partition).
#include <fmt/format.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "counting_new.h"
#include "fabric/packet.h"
#include "scenario/fabric/fabric_scenario.h"

using namespace fabriclab;

namespace {
void run_case(const std::string& which, const std::vector<std::string>& set, const std::string& partitions,
              const std::string& threads);
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fabric_scale fat_tree_128|leaf_spine_1024|leaf_spine:N|fat_tree:K [STOP [PARTITIONS "
                         "[THREADS]]] [KEY=VALUE...]\n");
    return 2;
  }
  const std::string which = argv[1];
  // KEY=VALUE arguments anywhere after the case are settings (nic.congestion_control=dctcp);
  // the others are STOP, PARTITIONS, THREADS in that order.
  std::vector<std::string> positional, extra;
  for (int i = 2; i < argc; ++i) (std::strchr(argv[i], '=') ? extra : positional).emplace_back(argv[i]);
  const std::string stop = !positional.empty() ? positional[0] : "1ms";
  std::vector<std::string> set = {"traffic.pattern=permutation", "traffic.bytes=100MB", "sim.stop_time=" + stop,
                                  "switch.pfc.enabled=true", "switch.wred.ecn=ecn_all"};
  const std::string partitions = positional.size() > 1 ? positional[1] : "";
  const std::string threads = positional.size() > 2 ? positional[2] : "";
  if (!partitions.empty()) set.push_back("sim.partitions=" + partitions);
  if (!threads.empty()) set.push_back("sim.threads=" + threads);
  const auto colon = which.find(':');
  const std::string kind = which.substr(0, colon);
  long size = 0;
  if (colon != std::string::npos) {
    char* end = nullptr;
    size = std::strtol(which.c_str() + colon + 1, &end, 10);
    if (*end != '\0' || size <= 0) size = 0;
  }
  if (which == "fat_tree_128" || (kind == "fat_tree" && size > 0)) {
    set.insert(set.end(), {"topology.kind=fat_tree", "topology.k=" + std::to_string(size > 0 ? size : 8)});
  } else if (which == "leaf_spine_1024" || (kind == "leaf_spine" && size > 0 && size % 32 == 0)) {
    set.insert(set.end(), {"topology.kind=leaf_spine", "topology.leaves=" + std::to_string(size > 0 ? size / 32 : 32),
                           "topology.hosts_per_leaf=32", "topology.spines=16", "topology.uplinks=2"});
    // A spine has N / 16 ports: past 8 192 hosts their PFC headroom outgrows 32 MiB, so
    // the buffer grows with them (4 KiB per host: 64 KiB per spine port).
    if (size > 8192) set.push_back("switch.buffer=" + std::to_string(size * 4) + "KiB");
  } else {
    std::fprintf(stderr,
                 "unknown case '%s' (fat_tree_128, leaf_spine_1024, leaf_spine:N with N a multiple of 32, "
                 "fat_tree:K)\n",
                 which.c_str());
    return 2;
  }
  try {
    set.insert(set.end(), extra.begin(), extra.end());
    run_case(which, set, partitions, threads);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fabric_scale %s: %s\n", which.c_str(), e.what());
    return 2;
  }
  return 0;
}

namespace {

void run_case(const std::string& which, const std::vector<std::string>& set, const std::string& partitions,
              const std::string& threads) {
  const auto cfg = scenario::fabric_parameters().resolve_text("", "bench", set);
  // Allocations between the first slice at or after half the simulated time and the
  // last slice (the network's end-of-run audit and the outputs are not the run).
  const Time half = Time::from_ps(cfg.value.sim.stop_time.ps() / 2);
  struct Sample {
    Time at = Time::max();
    std::uint64_t allocations = 0, bytes = 0;
  };
  Sample first, last;
  double setup_rss = 0;  // MiB: the network built and prepared, nothing run yet
  scenario::FabricRunOptions opt;
  opt.on_prepared = [&] {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    setup_rss = static_cast<double>(ru.ru_maxrss) / 1024.0;
  };
  opt.on_slice = [&](Time now) {
    if (now < half) return;
    last = {now, allocations.load(std::memory_order_relaxed), allocated_bytes.load(std::memory_order_relaxed)};
    if (first.at == Time::max()) first = last;
  };
  const auto o = scenario::run_fabric(cfg, opt);
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double hops = static_cast<double>(o.totals.packet_hops);
  const double rss = static_cast<double>(ru.ru_maxrss) * 1024.0;
  fmt::print("{:<16} {}sim {} set-up {:.2f} s (RSS {:.0f} MiB)  run {:.2f} s  events {}  packet-hops {}  "
             "{:.2f} M hops/s  peak packets {}  {} B/packet ({:.0f} B with everything)  peak RSS {:.0f} MiB  {}\n",
             which,
             partitions.empty()
                 ? ""
                 : fmt::format("partitions {} threads {}  ", partitions, threads.empty() ? partitions : threads),
             to_string(o.totals.end), o.setup_seconds, setup_rss, o.wall_seconds, o.totals.events, o.totals.packet_hops,
             hops / o.wall_seconds / 1e6, o.totals.peak_packets, sizeof(fabric::Packet) + sizeof(void*),
             rss / static_cast<double>(o.totals.peak_packets), rss / (1024.0 * 1024.0),
             first.at < last.at
                 ? fmt::format("allocations from {:.0f} to {:.0f} us: {} ({:.1f} KiB)",
                               static_cast<double>(first.at.ps()) / 1e6, static_cast<double>(last.at.ps()) / 1e6,
                               last.allocations - first.allocations,
                               static_cast<double>(last.bytes - first.bytes) / 1024.0)
                 : std::string("allocations: too short a run to sample"));
}

}  // namespace
