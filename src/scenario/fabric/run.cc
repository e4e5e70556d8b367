// A fabric run: its network built, observers attached, the run with progress, and its
// outputs written (outputs.h).
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <optional>

#include "core/error.h"
#include "core/progress.h"
#include "scenario/fabric/fabric_scenario.h"
#include "scenario/fabric/lookup.h"
#include "scenario/fabric/ns3.h"
#include "scenario/fabric/outputs.h"
#include "scenario/observers/pcap_writer.h"
#include "scenario/observers/reorder_recorder.h"
#include "scenario/observers/timeseries.h"
#include "scenario/observers/window_counts.h"
#include "scenario/report/files.h"

namespace fabriclab::scenario {

using fabric::Network;

namespace {

// One writer per port named in output.pcap.
std::vector<std::unique_ptr<PcapWriter>> open_captures(const Config& cfg, Network& net,
                                                       const std::filesystem::path& dir, PcapWriter::Options options) {
  std::vector<std::unique_ptr<PcapWriter>> out;
  for (const auto& [node, port] : port_list(cfg, net, "output.pcap")) {
    out.push_back(std::make_unique<PcapWriter>((dir / fmt::format("{}-p{}.pcap", node->name(), port)).string(),
                                               net.sim(), options));
    node->port(port).set_tap(out.back().get());
  }
  return out;
}

// The writers and recorders output.* asks for, attached to the network before its run.
struct Observers {
  std::vector<std::unique_ptr<PcapWriter>> captures;
  std::unique_ptr<TimeSeries> series;
  std::unique_ptr<ReorderRecorder> reorder;
  std::unique_ptr<WindowCounts> window;
};

Observers attach_observers(const FabricSetup& setup, Network& net, const std::string& out_dir) {
  const FabricScenario& s = setup.value;
  const Config& cfg = setup.config;
  Observers obs;
  obs.captures = open_captures(cfg, net, out_dir, {s.output.pcap_fcs, s.output.pcap_psn_offset});
  if (const auto watched = port_list(cfg, net, "output.reorder_metrics"); !watched.empty()) {
    obs.reorder = std::make_unique<ReorderRecorder>(net.sim());
    for (const auto& [node, port] : watched) obs.reorder->watch(node->port(port));
  }
  if (s.output.timeseries_interval > Time())
    obs.series = std::make_unique<TimeSeries>(net, s.output.timeseries_interval, out_dir,
                                              port_list(cfg, net, "output.timeseries_ports"));
  if (!s.output.window.empty()) {
    TimeSpan span;
    try {
      span = parse_time_span(s.output.window);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: output.window = {}", cfg.origin("output.window"), e.what()));
    }
    obs.window = std::make_unique<WindowCounts>(net, span);
  }
  return obs;
}

// The run up to sim.stop_time (or every flow delivered), reporting its progress.
fabric::RunTotals run_with_progress(Network& net, const FabricScenario& s, const FabricRunOptions& opt) {
  const Time stop = s.sim.stop_time;
  const bool root = !opt.ranks || opt.ranks->rank() == 0;  // (one progress line, on rank 0)
  Progress::Options po = Progress::on_stderr("run " + opt.scenario, static_cast<double>(stop.ps()), "",
                                             !opt.progress || !root);
  po.upper_bound = true;  // the run ends when every flow is delivered, usually well before
  po.show = [&](double ps) {
    return fmt::format("simulated {} of at most {}, {} events", to_string(Time::from_ps(static_cast<std::int64_t>(ps))),
                       to_string(stop), net.events());
  };
  Progress progress(std::move(po));
  const fabric::RunTotals totals = net.run(stop, us(100), [&](Time now) {
    if (opt.on_slice) opt.on_slice(now);
    progress.update(static_cast<double>(now.ps()));
  });
  progress.finish();
  return totals;
}

// The outcome's counts beyond the run's totals.
void collect(Network& net, FabricOutcome& o) {
  o.fingerprint = net.fingerprint();
  o.lossless_drops = net.ledger().lossless_drops;
  o.flows = net.flows().size();
  o.deadlock = net.deadlock();
  o.rank_stats = net.rank_stats();
  for (std::uint32_t i = 0; i < net.switch_count(); ++i)
    for (std::size_t p = 0; p < net.switch_at(i).port_count(); ++p) {
      const fabric::WatchdogCounts w = net.watchdog_counts(i, p);
      o.watchdog_storms += w.storms;
      o.watchdog_drops += w.drops;
    }
  for (std::uint32_t h = 0; h < net.host_count(); ++h) {
    const fabric::HostCounters c = net.host_counters(h);
    o.cnps_sent += c.cnps_sent;
    o.cnps_received += c.cnps_received;
  }
}

// Over several ranks, rank 0 alone writes the outputs: every rank learns whether it could
// prepare the directory, so that none starts a run the others left.
void prepare_outputs_once(const std::string& dir, fabric::Exchange* ranks) {
  std::string failed;
  if (!dir.empty() && (!ranks || ranks->rank() == 0)) try {
      prepare_outputs(dir, "summary.json");  // written last
    } catch (const InputError& e) {
      if (!ranks) throw;
      failed = e.what();
    }
  if (!ranks) return;
  std::vector<std::byte> bytes;
  ByteWriter(bytes).put_text(failed);
  fabric::ByRank all;
  ranks->all_gather(bytes, all, "the start of the run (outputs prepared)");
  if (std::string why = ByteReader(all.of(0)).get_text(); !why.empty()) throw InputError(why);
}

}  // namespace

FabricOutcome run_fabric(const FabricSetup& setup, const FabricRunOptions& opt) {
  const auto start = std::chrono::steady_clock::now();
  auto net = build_network(setup, opt.ranks);
  const FabricScenario& s = setup.value;
  std::unique_ptr<ScenarioCollectives> collectives;
  std::vector<CollectiveSpec> specs = s.collectives;
  for (std::size_t i = 0; i < specs.size(); ++i)  // schedule files relative to the scenario
    specs[i].schedule = setup.config.path(fmt::format("collective.{}.schedule", i));
  if (!specs.empty() || workload::training_on_engine(s.traffic))
    collectives = std::make_unique<ScenarioCollectives>(specs, s.collective_traffic, s.offload, s.topology, s.sim.seed,
                                                        *net, [&](std::size_t i) {
                                                          return setup.config.entry_origin("collective", i);
                                                        });
  if (workload::training_on_engine(s.traffic)) collectives->add_training(s.traffic, s.offload, *net);
  if (collectives && s.output.ops) collectives->trace_ops();
  prepare_outputs_once(opt.out_dir, opt.ranks);
  const Observers obs = opt.out_dir.empty() ? Observers{} : attach_observers(setup, *net, opt.out_dir);
  net->prepare();  // (what run() would do first), so that the set-up is timed apart
  const auto t0 = std::chrono::steady_clock::now();
  if (opt.on_prepared) opt.on_prepared();
  FabricOutcome o;
  o.setup_seconds = std::chrono::duration<double>(t0 - start).count();
  o.totals = run_with_progress(*net, setup.value, opt);
  o.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  collect(*net, o);
  // Every capture closed and checked, then all named: a failed one leaves none looking
  // complete; and all before summary.json says the run is.
  for (const auto& c : obs.captures) c->close();
  for (const auto& c : obs.captures) c->publish();
  if (!net->holds_results()) return o;  // another rank of a split run: rank 0 writes
  // A rule that never acted changed nothing: the run says so rather than look impaired.
  if (!net->impairments().empty()) o.unmatched_rules = net->impairments().front()->unmatched_rules();
  for (const std::string& why : o.unmatched_rules)
    fmt::print(stderr, "fabriclab: warning: impair.rules: {}: the rule did nothing\n", why);
  if (collectives) {
    o.collectives = collectives->rows();
    o.collective_nics = collectives->nics();
  }
  // The ideal FCTs feed flows.csv, fct.txt, slowdown.csv and the summary: none without them.
  const Slowdowns slow = opt.out_dir.empty()
                             ? Slowdowns::none(net->flows().size())
                             : slowdowns(*net, s.traffic.warmup, s.output.slowdown_buckets, s.output.short_flow);
  std::optional<FileWriter> flows_file;
  if (!opt.out_dir.empty()) flows_file.emplace(std::filesystem::path(opt.out_dir) / "flows.csv");
  flows_csv(*net, o, slow, flows_file ? &*flows_file : nullptr);
  o.slowdown = slow.all;
  o.short_slowdown = slow.short_flows;
  fabric::PortCounters all;
  const std::string ports = ports_csv(*net, all);
  o.drops = all.drops;
  o.ecn_marks = all.ecn_marks;
  o.pfc_frames = all.pfc_pause_sent;
  o.pfc_resumes = all.pfc_resume_sent;
  if (opt.out_dir.empty()) return o;
  const std::filesystem::path dir(opt.out_dir);
  flows_file->commit();
  write_file(dir / "ports.csv", ports);
  if (collectives) write_file(dir / "collectives.csv", collectives_csv(o.collectives));
  if (collectives && s.output.ops) write_file(dir / "ops.csv", collectives->ops_csv());
  if (s.output.traffic_matrix) write_file(dir / "traffic_matrix.csv", traffic_matrix_csv(*net));
  if (s.output.ns3) {
    write_file(dir / "fct.txt", ns3_fct_txt(*net, slow));
    write_file(dir / "pfc.txt", ns3_pfc_txt(*net));
  }
  if (writes_slowdown_table(s)) {
    write_file(dir / "slowdown.csv", slowdown_csv(slow));
    slowdown_plot(dir, slow);
  }
  if (obs.reorder) obs.reorder->write(dir);
  nlohmann::ordered_json summary = summary_json(setup, opt.scenario, *net, o, all, obs.reorder.get(), slow);
  if (obs.window) {
    const WindowCounts::Result span = obs.window->result(o.totals.end);
    obs.window->write(dir, span);
    summary["window"] = WindowCounts::summary(span);
  }
  write_file(dir / "summary.json", summary.dump(2) + "\n");
  return o;
}

}  // namespace fabriclab::scenario
