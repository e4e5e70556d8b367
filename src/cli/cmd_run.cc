// fabriclab run SCENARIO.toml [--out DIR] [--seed N] [--set key=value ...]: one
// packet-level simulation of a RoCEv2 fabric, its outputs written to DIR.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "core/error.h"
#include "scenario/batch/ranks.h"
#include "scenario/fabric/fabric_scenario.h"

namespace fabriclab::cli {

namespace {

struct RunArgs {
  std::string scenario;
  std::string out;
  std::int64_t seed = -1;
  std::vector<std::string> sets;
  bool parameters = false;
  bool quiet = false;
  bool trace_ops = false;
  double rank_timeout = 300;
};

int run_run(const RunArgs& a) {
  if (a.parameters) {
    print_parameters(scenario::fabric_parameters().registry(), scenario::fabric_parameters().lists());
    return 0;
  }
  if (a.scenario.empty()) throw InputError("run: a scenario file is required (or --parameters)");
  std::vector<std::string> overrides = a.sets;
  if (a.seed >= 0) overrides.push_back(fmt::format("sim.seed={}", a.seed));
  if (a.trace_ops) overrides.push_back("output.ops=true");
  const scenario::FabricSetup cfg = scenario::fabric_parameters().resolve(a.scenario, overrides);
  const std::string out = out_or_default(a.out, std::filesystem::path(a.scenario).stem().string());
  if (!(a.rank_timeout > 0) || a.rank_timeout > 86400)
    throw InputError(fmt::format("run: --rank-timeout {} is outside (0, 86400] seconds", a.rank_timeout));
  // Under mpirun with several ranks, the run is split over them; rank 0 says what happened.
  fabric::Exchange* ranks = scenario::mpi_size() > 1 ? &scenario::mpi_exchange(a.rank_timeout) : nullptr;
  const auto o = scenario::run_fabric(cfg,
                                      {.scenario = a.scenario, .out_dir = out, .progress = !a.quiet, .ranks = ranks});
  // The other ranks of a split run leave the report, and the exit code, to rank 0: a rank
  // that exits non-zero first has the launcher end the job, rank 0 with it, mid-report.
  if (ranks && ranks->rank() != 0) return 0;
  const auto& t = o.totals;
  auto us = [](Time x) { return fmt::format("{:.3f} us", static_cast<double>(x.ps()) / 1e6); };
  fmt::print("{}: {} of {} flows delivered, {} simulated\n", a.scenario, t.flows_finished, o.flows, us(t.end));
  if (o.fct)
    fmt::print("  FCT p50 {}, p99 {}, max {}; {} packets retransmitted\n", us(o.fct->p50), us(o.fct->p99),
               us(o.fct->max), o.retransmitted);
  else fmt::print("  no flow finished; {} packets retransmitted\n", o.retransmitted);
  if (scenario::writes_slowdown_table(cfg.value) && o.slowdown)
    fmt::print("  FCT slowdown p50 {:.3f}, p99 {:.3f} over {} flows; short flows (<= {}) p99 {}\n", o.slowdown->p50,
               o.slowdown->p99, o.slowdown->count, to_string(cfg.value.output.short_flow),
               o.short_slowdown ? fmt::format("{:.3f}", o.short_slowdown->p99) : std::string("-"));
  fmt::print("  {} drops ({} on lossless priorities), {} ECN marks, {} CNPs, {} PFC frames\n", o.drops,
             o.lossless_drops, o.ecn_marks, o.cnps_sent, o.pfc_frames);
  fmt::print("  {} events, {} packet-hops in {:.2f} s wall ({:.1f} M packet-hops/s) after {:.2f} s of set-up\n",
             t.events, t.packet_hops, o.wall_seconds,
             o.wall_seconds > 0 ? static_cast<double>(t.packet_hops) / o.wall_seconds / 1e6 : 0.0, o.setup_seconds);
  if (!o.collectives.empty()) {
    std::size_t done = 0, offloaded = 0;
    Time longest;
    for (const auto& c : o.collectives) {
      if (!c.result.done()) continue;
      ++done;
      offloaded += c.result.job.offloaded;
      longest = std::max(longest, c.result.job.completion());
    }
    fmt::print("  {} of {} collectives done ({} offloaded, {} in software), longest {}\n", done, o.collectives.size(),
               offloaded, done - offloaded, us(longest));
  }
  fmt::print("  outputs: {}/summary.json, flows.csv, ports.csv{}{}{}{}{}{}\n", out,
             o.collectives.empty() ? "" : ", collectives.csv",
             o.collectives.empty() || !cfg.value.output.ops ? "" : ", ops.csv",
             cfg.value.output.window.empty() ? "" : ", ports_window.csv, flows_window.csv",
             !scenario::writes_slowdown_table(cfg.value) ? ""
             : o.slowdown                                ? ", slowdown.csv, slowdown.png"
                                                         : ", slowdown.csv",
             cfg.value.output.traffic_matrix ? ", traffic_matrix.csv" : "",
             cfg.value.output.ns3 ? ", fct.txt, pfc.txt" : "");
  if (!o.rank_stats.empty()) {
    // Each rank's windows, the frames it sent to other ranks, and its time in the windows'
    // exchanges (mostly waiting for the slowest rank).
    std::uint64_t frames = 0, bytes = 0;
    double longest = 0;
    for (const auto& r : o.rank_stats) {
      frames += r.frames_out;
      bytes += r.bytes_out;
      longest = std::max(longest, r.exchange_seconds);
    }
    const double windows = static_cast<double>(std::max<std::uint64_t>(o.rank_stats[0].windows, 1));
    fmt::print("  on {} MPI ranks: {} windows, {:.1f} frames ({:.1f} KB) between ranks per window, at most {:.2f} s "
               "of a rank in the windows' exchanges\n",
               o.rank_stats.size(), o.rank_stats[0].windows, static_cast<double>(frames) / windows,
               static_cast<double>(bytes) / windows / 1e3, longest);
  }
  if (o.watchdog_storms > 0)
    fmt::print("  PFC watchdog: {} storms, {} packets dropped\n", o.watchdog_storms, o.watchdog_drops);
  int rc = 0;
  // Collectives left undone when the run ran out of events before its stop time: their
  // operations wait for what can no longer come.
  if (!o.deadlock && t.end < cfg.value.sim.stop_time)
    for (const auto& c : o.collectives)
      if (!c.result.done()) {
        std::cerr << fmt::format(
            "fabriclab: error: collective '{}' (iteration {}) never completed: the run ran out of events at {} "
            "with its operations waiting (a counter that never reaches an operation's threshold, or a message "
            "lost on a UC connection)\n",
            c.name, c.iteration, us(t.end));
        rc = 1;
      }
  if (o.deadlock) {
    std::string cycle;
    for (const auto& q : o.deadlock->cycle) cycle += (cycle.empty() ? "" : " -> ") + q;
    std::cerr << fmt::format("fabriclab: error: PFC deadlock at {}: a cycle of paused queues, each waiting on the "
                             "next: {} -> (back to the first)\n",
                             us(o.deadlock->detected_at), cycle);
    rc = 1;
  }
  if (o.lossless_drops > 0) {
    std::cerr << fmt::format("fabriclab: error: {} packets were dropped on a lossless priority: {} (see ports.csv)\n",
                             o.lossless_drops,
                             o.watchdog_storms > 0 && cfg.value.sw.wd_action == fabric::WatchdogAction::forward
                                 ? "the PFC watchdog's forward action sent despite pauses, and the next hop had no room"
                                 : "the PFC headroom or thresholds cannot hold what is in flight");
    rc = 1;
  }
  return rc;
}

}  // namespace

Command add_run_command(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* sub = app.add_subcommand(
      "run", "Simulate a RoCEv2 fabric packet by packet from a scenario file (TOML): topology, NICs, switch buffers, "
             "PFC, ECN, ECMP, traffic and offloaded collectives; writes summary.json, flows.csv, ports.csv (and "
             "collectives.csv). Exit 1 on a drop on a lossless priority, a PFC deadlock or a collective that can never "
             "complete");
  sub->add_option("scenario", a->scenario, "scenario file (TOML)");
  add_parameters_flag(*sub, a->parameters);
  add_quiet_flag(*sub, a->quiet);
  sub->add_flag("--trace-ops", a->trace_ops,
                "with [[collective]] entries: write ops.csv, every operation's ready, fired and completed times");
  add_out_option(*sub, a->out);
  add_seed_option(*sub, a->seed);
  add_set_option(*sub, a->sets);
  sub->add_option("--rank-timeout", a->rank_timeout,
                  "under mpirun: seconds a rank waits for another at a window's end before it ends the run naming "
                  "it (default 300)");
  return {sub, [a] { return run_run(*a); }};
}

}  // namespace fabriclab::cli
