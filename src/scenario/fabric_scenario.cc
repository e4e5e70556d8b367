#include "scenario/fabric_scenario.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.h"
#include "core/progress.h"
#include "core/stats.h"
#include "fabric/topology.h"
#include "scenario/observers/pcap_writer.h"
#include "scenario/observers/reorder_recorder.h"
#include "scenario/observers/timeseries.h"
#include "scenario/report/files.h"
#include "workload/traffic.h"

namespace fabriclab::scenario {

using fabric::Network;

namespace {

const params::Table<FabricScenario>& scenario_table() {
  static const auto table = [] {
    using S = FabricScenario;
    params::Table<S::Sim> sim;
    sim.integer("seed", &S::Sim::seed, "seed of every random stream (ECMP seeds excepted)")
        .time("stop_time", &S::Sim::stop_time, "simulated time limit; the run ends earlier when every flow is delivered",
              "1ns")
        .integer("partitions", &S::Sim::partitions,
                 "split the network into this many parts run in lock-step windows of the smallest link delay "
                 "between them (1 = undivided; a partitioned run has its own fingerprint, whatever sim.threads)",
                 1, 64)
        .integer("threads", &S::Sim::threads, "threads that run the parts (0 = one per part)", 0, 64);
    params::Table<S::DeadlockCheck> deadlock;
    deadlock.time("deadlock_check", &S::DeadlockCheck::every, "look for PFC deadlocks this often (0ps = never)", "0ps", "1s")
        .time("deadlock_time", &S::DeadlockCheck::after, "a deadlock is a cycle of queues paused this long", "1ns", "10s");
    params::Table<S::Impair> impair;
    impair.text("link", &S::Impair::link, "reorder box on the link leaving this port, NODE:PORT (\"s1:8\"); \"\" = none")
        .text("rules", &S::Impair::rules,
              "rules: \"drop F/P[/N]; hold F/P[/N] K; delay F/P[/N] T; dup F/P; corrupt F/P\"")
        .nest("", &S::Impair::box, fabric::impairment_table());
    params::Table<S::Reseq> reseq;
    reseq.text("link", &S::Reseq::link, "re-sequencer on the link leaving this port, NODE:PORT (\"s2:0\"); \"\" = none")
        .nest("", &S::Reseq::config, fabric::resequencer_table());
    params::Table<S::Output> output;
    output.text("pcap", &S::Output::pcap,
                "ports to capture, comma-separated: NODE:PORT or NODE for all its ports (\"sw0:0,h1\"); "
                "written to OUT/NODE-pPORT.pcap")
        .text("reorder_metrics", &S::Output::reorder_metrics,
              "ports whose egress order is measured (RFC 4737/5236) into reorder.csv, NODE:PORT, comma-separated")
        .time("timeseries_interval", &S::Output::timeseries_interval,
              "sample queues and QP rates this often into queues.csv and qps.csv (0ps = off)", "0ps", "1s")
        .text("timeseries_ports", &S::Output::timeseries_ports,
              "switch ports to sample, NODE:PORT or NODE, comma-separated (\"\" = every switch port)");
    params::Table<S> t;
    t.nest("sim", &S::sim, sim)
        .nest("topology", &S::topology, fabric::topology_table())
        .nest("nic", &S::nic, fabric::nic_table())
        .nest("switch", &S::sw, fabric::switch_table())
        .nest("switch.pfc", &S::deadlock, deadlock)
        .nest("traffic", &S::traffic, workload::traffic_table())
        .text("routing.static", &S::static_routes,
              "static routes replacing the shortest paths: \"SWITCH HOST PORT[|PORT...]; ...\" (\"s1 h9 2|3\")")
        .nest("impair", &S::impair, impair)
        .nest("reseq", &S::reseq, reseq)
        .nest("output", &S::output, output);
    return t;
  }();
  return table;
}

fabric::Node& find_node(const Config& cfg, Network& net, const std::string& key, const std::string& name) {
  for (fabric::Node* n : net.nodes())
    if (n->name() == name) return *n;
  throw InputError(fmt::format("{}: {}: no node '{}' (hosts are h0..h{}{})", cfg.origin(key), key, name,
                               net.host_count() - 1,
                               net.switch_count() ? ", switches " + net.switch_at(0).name() + ".." : ""));
}

// "NODE:PORT" in parameter `key`.
fabric::Port& find_port(const Config& cfg, Network& net, const std::string& key, const std::string& item) {
  const auto colon = item.find(':');
  fabric::Node& node = find_node(cfg, net, key, item.substr(0, colon));
  const auto port = colon == std::string::npos ? std::nullopt : parse_integer(item.substr(colon + 1));
  if (!port || *port < 0 || static_cast<std::size_t>(*port) >= node.port_count())
    throw InputError(fmt::format("{}: {}: '{}': expected NODE:PORT, {} has ports 0..{}", cfg.origin(key), key, item,
                                 node.name(), node.port_count() - 1));
  return node.port(static_cast<std::size_t>(*port));
}


}  // namespace


nlohmann::ordered_json dcqcn_echo(const fabric::DcqcnParams& rp, const fabric::CnpParams& np) {
  nlohmann::ordered_json j;
  j["preset"] = rp.preset;
  j["roce_rp"] = {{"rate_reduce_monitor_period", rp.rate_reduce_monitor_period},
                  {"initial_alpha_value", rp.initial_alpha_value},
                  {"rate_to_set_on_first_cnp", rp.rate_to_set_on_first_cnp},
                  {"rpg_gd", rp.rpg_gd},
                  {"rpg_min_dec_fac", rp.rpg_min_dec_fac},
                  {"rpg_min_rate", rp.rpg_min_rate},
                  {"dce_tcp_rtt", rp.dce_tcp_rtt},
                  {"dce_tcp_g", rp.dce_tcp_g},
                  {"rpg_time_reset", rp.rpg_time_reset},
                  {"rpg_byte_reset", rp.rpg_byte_reset},
                  {"rpg_threshold", rp.rpg_threshold},
                  {"rpg_ai_rate", rp.rpg_ai_rate},
                  {"rpg_hai_rate", rp.rpg_hai_rate},
                  {"rpg_max_rate", rp.rpg_max_rate},
                  {"clamp_tgt_rate", rp.clamp_tgt_rate ? 1 : 0},
                  {"clamp_tgt_rate_after_time_inc", rp.clamp_tgt_rate_after_time_inc ? 1 : 0}};
  j["roce_np"] = {{"enable", np.enabled},
                  {"min_time_between_cnps", np.min_time_between_cnps},
                  {"cnp_scope", np.per_qp ? "qp" : "port"},
                  {"cnp_802p_prio", np.cnp_802p_prio},
                  {"cnp_dscp", np.cnp_dscp}};
  j["readings"] = {{"dce_tcp_g", "weight of the old alpha out of 1024: alpha = (g*alpha + (1024-g)*cnp_seen)/1024"},
                   {"rpg_byte_reset", "64-byte units of frames sent per byte-counter stage (32767 = 2 MiB)"},
                   {"units", "times in us, rates in Mb/s, alpha values out of 1024 (sysfs units)"}};
  return j;
}


const Parameters<FabricScenario>& fabric_parameters() {
  static const Parameters<FabricScenario> p(scenario_table());
  return p;
}

std::unique_ptr<Network> build_network(const FabricSetup& setup) {
  const FabricScenario& s = setup.value;
  const Config& cfg = setup.config;  // where each value was set, for messages
  if (s.sw.wred.kmax <= s.sw.wred.kmin)
    throw InputError(fmt::format("{}: switch.wred.green_max_threshold ({}) must be above green_min_threshold ({})",
                                 cfg.origin("switch.wred.green_max_threshold"),
                                 cfg.shown("switch.wred.green_max_threshold"),
                                 cfg.shown("switch.wred.green_min_threshold")));
  auto net = std::make_unique<Network>(s.nic, s.sw, s.sim.seed);
  fabric::build_topology(*net, s.topology);
  if (s.sw.pfc.enabled && s.deadlock.every > Time())
    net->detect_deadlocks(s.deadlock.every, s.deadlock.after,
                          s.sw.watchdog && s.sw.wd_action != fabric::WatchdogAction::alert);

  workload::TrafficSpec tr = s.traffic;
  if (!tr.flows_file.empty()) {
    // Relative to the scenario file, like an include.
    const std::string& origin = cfg.origin("traffic.flows_file");
    const auto colon = origin.find(':');
    if (origin != "default" && origin != "--set" && colon != std::string::npos &&
        std::filesystem::path(tr.flows_file).is_relative())
      tr.flows_file = (std::filesystem::path(origin.substr(0, colon)).parent_path() / tr.flows_file).string();
  }
  for (const auto& f : workload::make_flows(tr, static_cast<std::uint32_t>(net->host_count()), s.sim.seed))
    net->add_flow(f);

  // routing.static: "s1 h9 2|3; s2 h0 1"
  {
    const std::string& text = s.static_routes;
    std::size_t pos = 0;
    while (!text.empty() && pos <= text.size()) {
      const auto semi = text.find(';', pos);
      std::string item = text.substr(pos, semi == std::string::npos ? std::string::npos : semi - pos);
      std::istringstream words(item);
      std::string sw_name, host_name, port_text, extra;
      words >> sw_name >> host_name >> port_text >> extra;
      if (!sw_name.empty()) {
        const std::string where = fmt::format("{}: routing.static: '{}'", cfg.origin("routing.static"), item);
        if (port_text.empty() || !extra.empty()) throw InputError(where + ": expected SWITCH HOST PORT[|PORT...]");
        fabric::Node& at = find_node(cfg, *net, "routing.static", sw_name);
        fabric::Node& host = find_node(cfg, *net, "routing.static", host_name);
        if (host.id() >= net->host_count() || at.id() < net->host_count())
          throw InputError(where + ": expected a switch, then a host");
        std::vector<std::uint16_t> ports;
        for (const std::string& one : split_list(port_text, '|')) {
          const auto v = parse_integer(one);
          if (!v || *v < 0 || static_cast<std::size_t>(*v) >= at.port_count())
            throw InputError(fmt::format("{}: port '{}': {} has ports 0..{}", where, one, at.name(), at.port_count() - 1));
          ports.push_back(static_cast<std::uint16_t>(*v));
        }
        net->set_static_route(static_cast<std::uint32_t>(at.id() - net->host_count()), host.id(), std::move(ports));
      }
      if (semi == std::string::npos) break;
      pos = semi + 1;
    }
  }

  if (const std::string& link = s.impair.link; !link.empty()) {
    fabric::ImpairmentConfig ic = s.impair.box;
    try {
      ic.rules = fabric::parse_impairment_rules(s.impair.rules);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: impair.rules: {}", cfg.origin("impair.rules"), e.what()));
    }
    net->add_impairment(find_port(cfg, *net, "impair.link", link), std::move(ic));
  } else {
    for (const char* key : {"impair.rules", "impair.drop_probability", "impair.corrupt_probability",
                             "impair.duplicate_probability", "impair.reorder_probability"})
      if (cfg.origin(key) != "default")
        throw InputError(fmt::format("{}: {} needs impair.link (the port whose link is impaired)", cfg.origin(key), key));
  }
  if (const std::string& at = s.reseq.link; !at.empty()) {
    fabric::Port& port = find_port(cfg, *net, "reseq.link", at);
    if (port.impairment())
      throw InputError(fmt::format("{}: reseq.link: {} already carries the reorder box (impair.link)",
                                   cfg.origin("reseq.link"), at));
    net->add_resequencer(port, s.reseq.config);
  }
  if (const std::uint32_t parts = s.sim.partitions; parts > 1) {
    // What would act across parts within a window: refused here, by its key.
    const auto refuse = [&](const std::string& key) {
      throw InputError(fmt::format("{}: {} is not supported with sim.partitions = {} (set at {}); "
                                   "use sim.partitions = 1",
                                   cfg.origin(key), key, parts, cfg.origin("sim.partitions")));
    };
    for (const char* key : {"impair.link", "reseq.link", "output.pcap", "output.reorder_metrics"})
      if (!cfg.text(key).empty()) refuse(key);
    if (s.output.timeseries_interval > Time()) refuse("output.timeseries_interval");
    for (std::uint32_t id = 0; id < net->flows().size(); ++id)
      if (!net->flows()[id].spec.after.empty())
        throw InputError(fmt::format("{}: sim.partitions = {}: flow {} starts when others finish (traffic.pattern "
                                     "= {}), which a partitioned run does not support",
                                     cfg.origin("sim.partitions"), parts, id,
                                     params::name_of(workload::kPatternNames, s.traffic.pattern)));
    const std::uint32_t threads = s.sim.threads == 0 ? parts : s.sim.threads;
    if (threads > parts)
      throw InputError(fmt::format("{}: sim.threads = {}: at most one thread per part (sim.partitions = {})",
                                   cfg.origin("sim.threads"), threads, parts));
    net->set_partitions(parts, threads);
  }
  return net;
}

namespace {

// The ports a list parameter names: NODE:PORT, or NODE for all its ports, comma-separated.
std::vector<std::pair<fabric::Node*, std::size_t>> port_list(const Config& cfg, Network& net, const std::string& key) {
  const std::string& list = cfg.text(key);
  std::vector<std::pair<fabric::Node*, std::size_t>> chosen;
  if (list.empty()) return chosen;
  for (const std::string& item : split_list(list)) {
    if (item.find(':') == std::string::npos) {
      fabric::Node& node = find_node(cfg, net, key, item);
      for (std::size_t i = 0; i < node.port_count(); ++i) chosen.emplace_back(&node, i);
    } else {
      fabric::Port& p = find_port(cfg, net, key, item);
      chosen.emplace_back(&p.owner(), p.index());
    }
  }
  // In node order (hosts, then switches), each port once: outputs list them the same way every run.
  const auto order = [](const auto& a, const auto& b) {
    return std::pair(a.first->id(), a.second) < std::pair(b.first->id(), b.second);
  };
  std::sort(chosen.begin(), chosen.end(), order);
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  return chosen;
}

// One writer per port named in output.pcap.
std::vector<std::unique_ptr<PcapWriter>> open_captures(const Config& cfg, Network& net,
                                                       const std::filesystem::path& dir) {
  std::vector<std::unique_ptr<PcapWriter>> out;
  for (const auto& [node, port] : port_list(cfg, net, "output.pcap")) {
    out.push_back(std::make_unique<PcapWriter>(
        (dir / fmt::format("{}-p{}.pcap", node->name(), port)).string(), net.sim()));
    node->port(port).set_tap(out.back().get());
  }
  return out;
}

}  // namespace

FabricOutcome run_fabric(const FabricSetup& setup, const FabricRunOptions& opt) {
  const FabricScenario& s = setup.value;
  const Config& cfg = setup.config;
  auto net = build_network(setup);
  if (!opt.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(opt.out_dir, ec);
    if (ec) throw InputError(fmt::format("{}: cannot create the output directory: {}", opt.out_dir, ec.message()));
  }
  std::vector<std::unique_ptr<PcapWriter>> captures;
  std::unique_ptr<TimeSeries> series;
  std::unique_ptr<ReorderRecorder> reorder;
  if (!opt.out_dir.empty()) {
    captures = open_captures(cfg, *net, opt.out_dir);
    if (const auto watched = port_list(cfg, *net, "output.reorder_metrics"); !watched.empty()) {
      reorder = std::make_unique<ReorderRecorder>(net->sim());
      for (const auto& [node, port] : watched) reorder->watch(node->port(port));
    }
    if (s.output.timeseries_interval > Time()) {
      std::vector<std::pair<fabric::Switch*, std::size_t>> ports;
      for (const auto& [node, port] : port_list(cfg, *net, "output.timeseries_ports")) {
        if (node->id() < net->host_count())
          throw InputError(fmt::format("{}: output.timeseries_ports: {} is a host; queues are sampled at switches",
                                       cfg.origin("output.timeseries_ports"), node->name()));
        ports.push_back({&net->switch_at(static_cast<std::uint32_t>(node->id() - net->host_count())), port});
      }
      series = std::make_unique<TimeSeries>(*net, s.output.timeseries_interval, opt.out_dir,
                                            std::move(ports));
    }
  }
  const Time stop = s.sim.stop_time;
  const auto t0 = std::chrono::steady_clock::now();
  Progress::Options po = Progress::on_stderr("run " + opt.scenario, static_cast<double>(stop.ps()), "", !opt.progress);
  po.upper_bound = true;  // the run ends when every flow is delivered, usually well before
  po.show = [&](double ps) {
    return fmt::format("simulated {} of at most {}, {} events", to_string(Time::from_ps(static_cast<std::int64_t>(ps))),
                       to_string(stop), net->events());
  };
  Progress progress(std::move(po));
  FabricOutcome o;
  o.totals = net->run(stop, us(100), [&](Time now) {
    if (opt.on_slice) opt.on_slice(now);
    progress.update(static_cast<double>(now.ps()));
  });
  progress.finish();
  o.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  o.fingerprint = net->fingerprint();
  o.lossless_drops = net->ledger().lossless_drops;
  o.flows = net->flows().size();
  o.deadlock = net->deadlock();
  for (std::uint32_t i = 0; i < net->switch_count(); ++i)
    for (std::size_t p = 0; p < net->switch_at(i).port_count(); ++p) {
      o.watchdog_storms += net->switch_at(i).storms(p);
      o.watchdog_drops += net->switch_at(i).watchdog_drops(p);
    }
  for (std::uint32_t h = 0; h < net->host_count(); ++h) {
    o.cnps_sent += net->host(h).cnps_sent();
    o.cnps_received += net->host(h).cnps_received();
  }

  // flows.csv, and the FCT distribution
  std::string flows = "flow_id,src,dst,bytes,start_ns,finish_ns,fct_ns,goodput_gbps,retransmitted_packets\n";
  std::vector<std::int64_t> fcts;
  for (std::size_t i = 0; i < net->flows().size(); ++i) {
    const auto& f = net->flows()[i];
    o.retransmitted += f.retransmitted;
    std::string fin, fct, gbps;
    if (f.finished()) {
      const Time d = f.finish - f.started;
      fcts.push_back(d.ps());
      fin = ns_text(f.finish);
      fct = ns_text(d);
      // bits per ns = Gb/s
      gbps = fmt::format("{:.3f}", static_cast<double>(f.spec.bytes) * 8.0 * 1000.0 / static_cast<double>(d.ps()));
    }
    flows += fmt::format("{},{},{},{},{},{},{},{},{}\n", i, net->host(f.spec.src).name(), net->host(f.spec.dst).name(),
                         f.spec.bytes, f.started == Time::max() ? "" : ns_text(f.started), fin, fct, gbps,
                         f.retransmitted);
  }
  o.fct_p50 = Time::from_ps(nearest_rank(fcts, 0.50));
  o.fct_p99 = Time::from_ps(nearest_rank(fcts, 0.99));
  o.fct_max = Time::from_ps(nearest_rank(fcts, 1.0));

  // ports.csv
  const Time end = o.totals.end;
  const auto& fields = fabric::port_counter_fields();
  std::string ports = "node,port";
  for (const auto& f : fields) ports += fmt::format(",{}", f.name);
  ports += "\n";
  fabric::PortCounters all;
  for (const fabric::Node* n : net->nodes()) {
    for (std::size_t i = 0; i < n->port_count(); ++i) {
      const fabric::PortCounters c = Network::port_counters(*n, i, end);
      all += c;
      ports += fmt::format("{},{}", n->name(), i);
      for (const auto& f : fields)
        ports += f.time ? fmt::format(",{}", ns_text(Time::from_ps(f.value(c)))) : fmt::format(",{}", f.value(c));
      ports += "\n";
    }
  }
  o.drops = all.drops;
  o.ecn_marks = all.ecn_marks;
  o.pfc_frames = all.pfc_pause_sent;
  const Time paused_total = all.paused;
  // Two counts of every drop: the ports' (each at its place) and the ledger's (by reason).
  std::uint64_t by_reasons = 0;
  for (std::uint64_t d : net->ledger().drops) by_reasons += d;
  if (by_reasons != all.drops)
    throw std::logic_error(fmt::format("drop accounting disagrees: the ports counted {}, the ledger {} by reason",
                                       all.drops, by_reasons));
  if (opt.out_dir.empty()) return o;
  const std::filesystem::path dir(opt.out_dir);
  write_file(dir / "flows.csv", flows);
  write_file(dir / "ports.csv", ports);

  // summary.json
  const auto& l = net->ledger();
  nlohmann::ordered_json j;
  j["scenario"] = opt.scenario;
  j["config"] = cfg.echo();
  j["network"] = {{"hosts", net->host_count()}, {"switches", net->switch_count()}};
  const auto n_flows = net->flows().size();
  j["flows"] = {{"count", n_flows},
                {"finished", o.totals.flows_finished},
                {"fct_ns_p50", ns_text(o.fct_p50)},
                {"fct_ns_p99", ns_text(o.fct_p99)},
                {"fct_ns_max", ns_text(o.fct_max)},
                {"retransmitted_packets", o.retransmitted}};
  j["totals"] = {{"data_packets_sent", l.data_packets_sent},
                 {"data_bytes_sent", l.data_bytes_sent},
                 {"data_bytes_arrived", l.data_bytes_arrived},
                 {"data_bytes_dropped", l.data_bytes_dropped},
                 {"data_bytes_duplicated", l.data_bytes_duplicated},
                 {"data_bytes_in_flight_at_end", o.totals.in_flight_data_bytes},
                 {"control_packets_sent", l.control_packets_sent},
                 {"drops", o.drops},
                 {"lossless_drops", l.lossless_drops},
                 {"ttl_drops", l.dropped(fabric::DropReason::ttl)},
                 {"ecn_marks", o.ecn_marks},
                 {"pfc_pause_frames", o.pfc_frames},
                 {"paused_ns_all_ports", ns_text(paused_total)}};
  for (const auto& r : fabric::kDropReasonNames)
    j["totals"]["drops_by_reason"][std::string(r.name)] = l.dropped(r.value);
  {
    nlohmann::ordered_json cc;
    cc["policy"] = s.nic.congestion_control;
    cc["cnps_sent"] = o.cnps_sent;
    cc["cnps_received"] = o.cnps_received;
    cc["dcqcn"] = dcqcn_echo(s.nic.dcqcn, s.nic.cnp);
    j["congestion_control"] = std::move(cc);
  }
  j["pfc_watchdog"] = {{"storms", o.watchdog_storms}, {"drops", o.watchdog_drops}};
  {
    std::uint64_t naks = 0, timeouts = 0, oos = 0, dups = 0, rx_drops = 0, misdelivered = 0, reordered = 0;
    for (std::uint32_t h = 0; h < net->host_count(); ++h) {
      const fabric::Host& x = net->host(h);
      naks += x.naks_sent();
      timeouts += x.timeouts();
      oos += x.out_of_sequence_drops();
      dups += x.duplicates();
      rx_drops += x.rx_buffer_drops();
      misdelivered += x.misdelivered();
      reordered += x.reordered_accepted();
    }
    std::uint64_t give_ups = 0;
    for (std::uint32_t h = 0; h < net->host_count(); ++h) give_ups += net->host(h).reorder_give_ups();
    j["transport"] = {{"naks_sent", naks},
                      {"reorder_give_ups", give_ups},
                      {"timeouts", timeouts},
                      {"out_of_sequence_drops", oos},
                      {"duplicates_received", dups},
                      {"reordered_accepted", reordered},
                      {"rx_buffer_drops", rx_drops},
                      {"misdelivered", misdelivered}};
  }
  if (o.deadlock) {
    j["pfc_deadlock"] = {{"detected_at_ns", ns_text(o.deadlock->detected_at)}, {"cycle", o.deadlock->cycle}};
  } else {
    j["pfc_deadlock"] = nullptr;
  }
  if (!net->resequencers().empty()) {
    const auto& r = *net->resequencers().front();
    j["resequencer"] = {{"link", fmt::format("{}:{}", r.sender().owner().name(), r.sender().index())},
                        {"held", r.held_total()},
                        {"give_ups_full", r.give_ups_full()},
                        {"give_ups_timeout", r.give_ups_timeout()},
                        {"max_occupancy", r.max_occupancy()}};
  }
  if (reorder) {
    reorder->write(dir);
    std::uint64_t received = 0, reordered = 0;
    std::uint32_t max_extent = 0;
    for (const auto& r : reorder->results()) {
      received += r.m.received;
      reordered += r.m.reordered;
      max_extent = std::max(max_extent, r.m.max_extent);
    }
    j["reorder"] = {{"measured_at", s.output.reorder_metrics},
                    {"received", received},
                    {"reordered", reordered},
                    {"max_extent", max_extent},
                    {"definitions", "RFC 4737/5236, per destination QP in reorder.csv; extent = arrival index minus "
                                    "that of the earliest earlier packet with a larger PSN"}};
  }
  if (!net->impairments().empty()) {
    const auto& b = *net->impairments().front();
    j["impairment"] = {{"link", fmt::format("{}:{}", b.sender().owner().name(), b.sender().index())},
                       {"dropped", b.dropped()},
                       {"corrupted", b.corrupted()},
                       {"duplicated", b.duplicated()},
                       {"held", b.held()}};
  }
  j["run"] = {{"simulated_end_ns", ns_text(end)},
              {"events", o.totals.events},
              {"packet_hops", o.totals.packet_hops},
              {"peak_packets_alive", o.totals.peak_packets},
              {"fingerprint", fmt::format("{:016x}", o.fingerprint)},
              {"wall_seconds", o.wall_seconds}};
  write_file(dir / "summary.json", j.dump(2) + "\n");
  return o;
}

}  // namespace fabriclab::scenario
