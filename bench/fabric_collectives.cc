// Offloaded collectives on the packet-level fabric at scale: a ring allreduce on every
// host of a leaf-spine (1:1, 100G links of 1 us, PFC and ECN on), run by the NIC engine:
//   fabric_collectives [HOSTS [BYTES [PARTITIONS]]]   defaults: 1024 hosts (32 leaves x 32),
//                                                     64MiB, undivided (one thread per part)
// HOSTS is 32 x leaves (16 spines, 2 uplinks per pair). Prints the set-up (schedule built,
// counters assigned, connections opened) and run wall times, operations, packet-hops per
// second, the peak RSS, the collective's busbw, and the heap allocations over the second
// half of the collective's simulated time (operator new is counted here): the engine
// should allocate nothing per packet or operation once its connections are warm.
#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "counting_new.h"
#include "scenario/fabric/fabric_scenario.h"

using namespace fabriclab;

int main(int argc, char** argv) {
  const int hosts = argc > 1 ? std::atoi(argv[1]) : 1024;
  const std::string bytes = argc > 2 ? argv[2] : "64MiB";
  const int parts = argc > 3 ? std::atoi(argv[3]) : 1;
  if (hosts < 64 || hosts % 32 != 0 || parts < 1 || parts > 64) {
    std::fprintf(stderr, "usage: fabric_collectives [HOSTS (a multiple of 32, >= 64) [BYTES [PARTITIONS (1..64)]]]\n");
    return 2;
  }
  const std::string toml = fmt::format(R"(
[topology]
kind = "leaf_spine"
leaves = {}
hosts_per_leaf = 32
spines = 16
uplinks = 2
link_delay = "1us"
[switch.pfc]
enabled = true
[switch.wred]
ecn = "ecn_all"
[traffic]
pattern = "none"
[[collective]]
name = "ring"
collective = "allreduce"
algorithm = "ring"
bytes = "{}"
)",
                                       hosts / 32, bytes);
  const auto cfg = scenario::fabric_parameters().resolve_text(toml, "bench",
                                                              {"sim.stop_time=10s", "nic.counters=1000000",
                                                               "nic.slots=100000000",  // every counter the ring holds
                                                               fmt::format("sim.partitions={}", parts)});
  // The run's half-way point is unknown in advance: sample every slice, keep the counts
  // at the slices nearest a quarter and three quarters of the end.
  std::vector<std::pair<Time, std::uint64_t>> samples;
  scenario::FabricRunOptions opt;
  opt.on_slice = [&](Time now) { samples.emplace_back(now, allocations.load(std::memory_order_relaxed)); };
  const auto t0 = std::chrono::steady_clock::now();
  const auto o = scenario::run_fabric(cfg, opt);
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const auto& r = o.collectives.at(0);
  const double busbw = static_cast<double>(r.bytes) * 8.0 / static_cast<double>(r.result.job.completion().ps()) * 1e3 *
                       scenario::busbw_factor("allreduce", r.ranks);
  std::string allocs = "allocations: too short a run to sample";
  if (samples.size() >= 4) {
    const auto& a = samples[samples.size() / 4];
    const auto& b = samples[samples.size() * 3 / 4];
    allocs = fmt::format("allocations from {:.0f} to {:.0f} us: {}", static_cast<double>(a.first.ps()) / 1e6,
                         static_cast<double>(b.first.ps()) / 1e6, b.second - a.second);
  }
  fmt::print(
      "ring allreduce {} on {} hosts, {} part(s): set-up {:.2f} s, run {:.2f} s wall, {} simulated; {} messages, "
      "{} packet-hops ({:.2f} M hops/s), {} events; busbw {:.2f} Gb/s; peak RSS {:.0f} MiB; {}\n",
      bytes, hosts, parts, total - o.wall_seconds, o.wall_seconds, to_string(r.result.job.completion()),
      r.result.messages, o.totals.packet_hops, static_cast<double>(o.totals.packet_hops) / o.wall_seconds / 1e6,
      o.totals.events, busbw, static_cast<double>(ru.ru_maxrss) / 1024.0, allocs);
  return r.result.done() ? 0 : 1;
}
