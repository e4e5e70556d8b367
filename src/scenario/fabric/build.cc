// Building a fabric run's network from its FabricScenario: the topology, the flows, static
// routes, link elements, and the split into parts.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <sstream>

#include "core/error.h"
#include "fabric/topology.h"
#include "scenario/fabric/fabric_scenario.h"
#include "scenario/fabric/lookup.h"
#include "workload/traffic.h"

namespace fabriclab::scenario {

using fabric::Network;

namespace {

// The flows of traffic.*, a flows file read relative to the scenario file.
void add_flows(const FabricSetup& setup, Network& net) {
  const FabricScenario& s = setup.value;
  const Config& cfg = setup.config;
  if (s.traffic.pattern == workload::Pattern::load) {
    if (s.loads.empty())
      throw InputError(fmt::format("{}: traffic.pattern = \"load\" needs at least one [[load]] entry",
                                   cfg.origin("traffic.pattern")));
    std::vector<workload::LoadGenerator::Resolved> loads;
    for (std::size_t i = 0; i < s.loads.size(); ++i) {
      workload::LoadGenerator::Resolved r{.spec = s.loads[i], .cdf = {}, .matrix = {}};
      const auto key = [&](const char* k) { return fmt::format("load.{}.{}", i, k); };
      if (r.spec.kind == workload::LoadKind::poisson) {
        if (r.spec.cdf.empty())
          throw InputError(fmt::format("{}: load.{}: a poisson load needs load.{}.cdf, its flow-size distribution",
                                       cfg.entry_origin("load", i), i, i));
        r.cdf = workload::Cdf::read(cfg.path(key("cdf")));
        if (r.spec.pairs == workload::Pairs::matrix) {
          if (r.spec.matrix.empty())
            throw InputError(
                fmt::format("{}: load.{}.pairs = matrix needs load.{}.matrix", cfg.origin(key("pairs")), i, i));
          r.matrix = workload::read_traffic_matrix(cfg.path(key("matrix")),
                                                   static_cast<std::uint32_t>(net.host_count()));
        }
      }
      loads.push_back(std::move(r));
    }
    // Every flow's size fits its QPs' PSNs: checked on the largest each load can make,
    // before the run (its flows are made while it goes).
    for (std::size_t i = 0; i < loads.size(); ++i) {
      const workload::LoadSpec& l = loads[i].spec;
      const bool poisson = l.kind == workload::LoadKind::poisson;
      const auto largest = poisson ? static_cast<std::uint64_t>(loads[i].cdf.points().back().size)
                                   : static_cast<std::uint64_t>(l.bytes.count());
      try {
        net.check_flow_size(std::max<std::uint64_t>(largest, 1), l.qps, "its largest flow",
                            fmt::format("load.{}.qps", i));
      } catch (const InputError& e) {
        throw InputError(fmt::format("{}: load.{} ({}): {}", cfg.entry_origin("load", i), i,
                                     poisson ? "its sizes from " + cfg.text(fmt::format("load.{}.cdf", i))
                                             : "load." + std::to_string(i) + ".bytes",
                                     e.what()));
      }
    }
    std::vector<BitRate> rates;
    for (std::uint32_t h = 0; h < net.host_count(); ++h) rates.push_back(net.host(h).port(0).rate());
    auto gen = std::make_unique<workload::LoadGenerator>(std::move(loads), std::move(rates), s.sim.seed,
                                                         [&](std::size_t i) { return cfg.entry_origin("load", i); });
    // The network adds the flows about kFlowsPerStep at a time (every 1 us at least, 1 ms
    // at most; whole nanoseconds), from the loads alone: the same instants however the
    // run is split.
    constexpr double kFlowsPerStep = 1024;
    const double per_second = gen->flows_per_second();
    const double step_ns = per_second > 0 ? std::clamp(std::floor(kFlowsPerStep / per_second * 1e9), 1e3, 1e6) : 1e6;
    net.feed_flows(std::move(gen), Time::from_ps(static_cast<std::int64_t>(step_ns) * 1000));
    return;
  }
  if (!s.loads.empty())
    throw InputError(fmt::format("{}: [[load]] entries need traffic.pattern = \"load\" (it is \"{}\")",
                                 cfg.entry_origin("load", 0), cfg.text("traffic.pattern")));
  workload::TrafficSpec tr = s.traffic;
  tr.flows_file = cfg.path("traffic.flows_file");
  for (const auto& f : workload::make_flows(tr, static_cast<std::uint32_t>(net.host_count()), s.sim.seed))
    net.add_flow(f);
}

// routing.static: "s1 h9 2|3; s2 h0 1".
void add_static_routes(const FabricSetup& setup, Network& net) {
  const FabricScenario& s = setup.value;
  const Config& cfg = setup.config;
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
      fabric::Node& at = find_node(cfg, net, "routing.static", sw_name);
      fabric::Node& host = find_node(cfg, net, "routing.static", host_name);
      if (host.id() >= net.host_count() || at.id() < net.host_count())
        throw InputError(where + ": expected a switch, then a host");
      std::vector<std::uint16_t> ports;
      for (const std::string& one : split_list(port_text, '|')) {
        const auto v = parse_integer(one);
        if (!v || *v < 0 || static_cast<std::size_t>(*v) >= at.port_count())
          throw InputError(
              fmt::format("{}: port '{}': {} has ports 0..{}", where, one, at.name(), at.port_count() - 1));
        ports.push_back(static_cast<std::uint16_t>(*v));
      }
      net.set_static_route(static_cast<std::uint32_t>(at.id() - net.host_count()), host.id(), std::move(ports));
    }
    if (semi == std::string::npos) break;
    pos = semi + 1;
  }
}

// The reorder box (impair.*) and the re-sequencer (reseq.*), each on one link.
void add_link_elements(const FabricSetup& setup, Network& net) {
  const FabricScenario& s = setup.value;
  const Config& cfg = setup.config;
  if (const std::string& link = s.impair.link; !link.empty()) {
    fabric::ImpairmentConfig ic = s.impair.box;
    try {
      ic.rules = fabric::parse_impairment_rules(s.impair.rules);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: impair.rules: {}", cfg.origin("impair.rules"), e.what()));
    }
    // (A load's flows are made during the run: a rule naming one it never makes did
    // nothing, which the run says.)
    for (const fabric::ImpairmentRule& r : ic.rules)
      if (!net.feed() && r.flow >= net.flows().size())
        throw InputError(fmt::format("{}: impair.rules: '{}': there is no flow {} (the run has {} flow{}{})",
                                     cfg.origin("impair.rules"), r.text, r.flow, net.flows().size(),
                                     net.flows().size() == 1 ? "" : "s",
                                     net.flows().empty() ? "" : fmt::format(", 0..{}", net.flows().size() - 1)));
    net.add_impairment(find_port(cfg, net, "impair.link", link), std::move(ic));
  } else {
    for (const char* key : {"impair.rules", "impair.drop_probability", "impair.corrupt_probability",
                            "impair.duplicate_probability", "impair.reorder_probability"})
      if (cfg.origin(key) != "default")
        throw InputError(
            fmt::format("{}: {} needs impair.link (the port whose link is impaired)", cfg.origin(key), key));
  }
  if (const std::string& at = s.reseq.link; !at.empty()) {
    fabric::Port& port = find_port(cfg, net, "reseq.link", at);
    if (port.impairment())
      throw InputError(fmt::format("{}: reseq.link: {} already carries the reorder box (impair.link)",
                                   cfg.origin("reseq.link"), at));
    net.add_resequencer(port, s.reseq.config);
  }
}

// sim.partitions: refused with what would act across parts within a window.
// Over several processes (`ranks`), sim.partitions parts (at least one per rank; 1 =
// one per rank), sim.threads threads in each (0 = one per part it runs).
void split_into_parts(const FabricSetup& setup, Network& net, fabric::Exchange* ranks) {
  const FabricScenario& s = setup.value;
  const Config& cfg = setup.config;
  const std::uint32_t n_ranks = ranks ? static_cast<std::uint32_t>(ranks->size()) : 1;
  if (n_ranks > 1 && s.sim.partitions > 1 && s.sim.partitions < n_ranks)
    throw InputError(fmt::format("{}: sim.partitions = {}: fewer parts than the {} MPI ranks of this run (1 = one "
                                 "part per rank)",
                                 cfg.origin("sim.partitions"), s.sim.partitions, n_ranks));
  if (const std::uint32_t parts = n_ranks > 1 && s.sim.partitions == 1 ? n_ranks : s.sim.partitions; parts > 1) {
    // How the run is split, for the messages.
    const std::string split = n_ranks > 1 && s.sim.partitions == 1
                                  ? fmt::format("on {} MPI ranks (one part each)", n_ranks)
                                  : fmt::format("with sim.partitions = {} (set at {})", parts,
                                                cfg.origin("sim.partitions"));
    const std::string instead = n_ranks > 1 ? "run it without mpirun" : "use sim.partitions = 1";
    // What would act across parts within a window: refused here, by its key.
    const auto refuse = [&](const std::string& key) {
      throw InputError(fmt::format("{}: {} is not supported {}; {}", cfg.origin(key), key, split, instead));
    };
    for (const char* key : {"impair.link", "reseq.link", "output.pcap", "output.reorder_metrics"})
      if (!cfg.text(key).empty()) refuse(key);
    if (s.output.timeseries_interval > Time()) refuse("output.timeseries_interval");
    // pfc.txt reads every port's records, which rank 0 does not hold of the others' ports.
    if (n_ranks > 1 && s.output.ns3) refuse("output.ns3");
    // The messages below start with where the split was asked for.
    const std::string head = n_ranks > 1 && s.sim.partitions == 1
                                 ? fmt::format("a run on {} MPI ranks", n_ranks)
                                 : fmt::format("{}: sim.partitions = {}", cfg.origin("sim.partitions"), parts);
    // Its distribution flows start when an iteration's collectives are seen complete, and
    // the next allreduce when they finish, with no delay a window could hold.
    if (workload::training_on_engine(s.traffic) && s.traffic.distribution_bytes.count() > 0)
      throw InputError(fmt::format("{}: traffic.training.distribution_bytes = {} is not supported {}: its flows "
                                   "start when collectives complete, and the next allreduce when they are placed; "
                                   "set it to 0B or {}",
                                   cfg.origin("traffic.training.distribution_bytes"),
                                   cfg.shown("traffic.training.distribution_bytes"), split, instead));
    for (std::uint32_t id = 0; id < net.flows().size(); ++id)
      if (!net.flows()[id].spec.after.empty())
        throw InputError(fmt::format("{}: flow {} starts when others finish (traffic.pattern = {}), which a "
                                     "partitioned run does not support",
                                     head, id, params::name_of(workload::kPatternNames, s.traffic.pattern)));
    if (net.host_count() < parts)
      throw InputError(fmt::format("{} needs a host per part at least; the topology has {}", head, net.host_count()));
    // Parts meet every link delay (the window): a link without one would never let them part.
    if (s.topology.kind != fabric::TopologyKind::ns3 &&  // (its file's links: the run checks those it cuts)
        (s.topology.host_link.delay <= Time() || s.topology.fabric_link.delay <= Time()))
      throw InputError(fmt::format("{} needs a delay on every link (topology.link_delay = {}, set at {})", head,
                                   cfg.shown("topology.link_delay"), cfg.origin("topology.link_delay")));
    net.set_partitioner(s.sim.partitioner);
    if (n_ranks > 1) {
      // Threads per rank: the blocks of parts differ by one at most.
      const std::uint32_t each = parts / n_ranks, threads = s.sim.threads == 0 ? each : s.sim.threads;
      if (threads > each)
        throw InputError(fmt::format("{}: sim.threads = {}: at most one thread per part a rank runs ({} parts on {} "
                                     "MPI ranks: {} each at least)",
                                     cfg.origin("sim.threads"), threads, parts, n_ranks, each));
      net.set_partitions(parts, threads, *ranks);
      return;
    }
    const std::uint32_t threads = s.sim.threads == 0 ? parts : s.sim.threads;
    if (threads > parts)
      throw InputError(fmt::format("{}: sim.threads = {}: at most one thread per part (sim.partitions = {})",
                                   cfg.origin("sim.threads"), threads, parts));
    net.set_partitions(parts, threads);
  }
}

}  // namespace

void check_across_keys(const FabricSetup& setup) {
  const FabricScenario& s = setup.value;
  const Config& cfg = setup.config;
  fabric::check_nic_config(s.nic);
  fabric::check_wire_format(s.nic, s.wire);
  fabric::check_switch_config(s.sw);
  if (s.sw.wred.kmax <= s.sw.wred.kmin)
    throw InputError(fmt::format("{}: switch.wred.green_max_threshold ({}) must be above green_min_threshold ({})",
                                 cfg.origin("switch.wred.green_max_threshold"),
                                 cfg.shown("switch.wred.green_max_threshold"),
                                 cfg.shown("switch.wred.green_min_threshold")));
}

std::unique_ptr<Network> build_network(const FabricSetup& setup, fabric::Exchange* ranks) {
  const FabricScenario& s = setup.value;
  const Config& cfg = setup.config;  // where each value was set, for messages
  check_across_keys(setup);
  auto net = std::make_unique<Network>(s.nic, s.sw, s.sim.seed);
  net->set_wire_format(s.wire);
  fabric::TopologySpec topo = s.topology;
  topo.file = cfg.path("topology.file");  // relative to the scenario
  fabric::build_topology(*net, topo);
  // A buffer too small for its reserves and headroom, before the flows (which can take
  // seconds and gigabytes at scale) are built; located at the key the message names.
  try {
    net->check_buffers();
  } catch (const InputError& e) {
    const std::string what = e.what();
    for (const char* key : {"switch.buffer", "nic.rx_buffer"})
      if (what.find(key) != std::string::npos && cfg.origin(key) != "default")
        throw InputError(cfg.origin(key) + ": " + what);
    throw;
  }
  if (s.sw.pfc.enabled && s.deadlock.every > Time())
    net->detect_deadlocks(s.deadlock.every, s.deadlock.after,
                          s.sw.watchdog && s.sw.wd_action != fabric::WatchdogAction::alert);
  add_flows(setup, *net);
  add_static_routes(setup, *net);
  add_link_elements(setup, *net);
  if (s.output.ns3)  // pfc.txt: every PFC frame every port receives
    for (fabric::Node* n : net->nodes())
      for (std::size_t p = 0; p < n->port_count(); ++p) n->port(p).record_pfc();
  split_into_parts(setup, *net, ranks);
  return net;
}

}  // namespace fabriclab::scenario
