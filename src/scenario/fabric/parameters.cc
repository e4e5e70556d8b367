// The keys of `fabriclab run`: the models' tables (fabric/params.h, workload/params.h)
// nested under their prefixes, and the run's own, bound to FabricScenario.
#include "scenario/fabric/fabric_scenario.h"
#include "scenario/fabric/slowdown.h"

namespace fabriclab::scenario {

namespace {

const params::Table<FabricScenario>& scenario_table() {
  static const auto table = [] {
    using S = FabricScenario;
    params::Table<S::Sim> sim;
    sim.integer("seed", &S::Sim::seed, "seed of every random stream (ECMP seeds excepted)")
        .time("stop_time", &S::Sim::stop_time,
              "simulated time limit; the run ends earlier when every flow is delivered", "1ns")
        .integer("partitions", &S::Sim::partitions,
                 "split the network into this many parts run in lock-step windows of the smallest link delay "
                 "between them (1 = undivided, or one part per rank under mpirun); the outputs are the undivided "
                 "run's",
                 1, 64)
        .choice("partitioner", &S::Sim::partitioner, fabric::kPartitionerNames,
                "how nodes go to parts: levels (hosts in blocks, switches with their nearer neighbours: pods, leaf "
                "groups) or metis (METIS's graph partition: balanced ports, few cut links, any topology)")
        .integer("threads", &S::Sim::threads, "threads that run the parts (0 = one per part)", 0, 64);
    params::Table<S::DeadlockCheck> deadlock;
    deadlock
        .time("deadlock_check", &S::DeadlockCheck::every, "look for PFC deadlocks this often (0ps = never)", "0ps",
              "1s")
        .time("deadlock_time", &S::DeadlockCheck::after, "a deadlock is a cycle of queues paused this long", "1ns",
              "10s");
    params::Table<S::Impair> impair;
    impair
        .text("link", &S::Impair::link, "reorder box on the link leaving this port, NODE:PORT (\"s1:8\"); \"\" = none")
        .text("rules", &S::Impair::rules,
              "rules: \"drop F/P[/N]; hold F/P[/N] K; delay F/P[/N] T; dup F/P; corrupt F/P\"")
        .nest("", &S::Impair::box, fabric::impairment_table());
    params::Table<S::Reseq> reseq;
    reseq.text("link", &S::Reseq::link, "re-sequencer on the link leaving this port, NODE:PORT (\"s2:0\"); \"\" = none")
        .nest("", &S::Reseq::config, fabric::resequencer_table());
    params::Table<S::Output> output;
    output
        .text("pcap", &S::Output::pcap,
              "ports to capture, comma-separated: NODE:PORT, NODE:A-B, NODE:* or NODE (all its ports); NODE may be a "
              "pattern (\"sw0:0,h1,leaf*:4-7\"; port numbers: docs/fabric.md); written to OUT/NODE-pPORT.pcap")
        .flag("pcap_fcs", &S::Output::pcap_fcs,
              "end every captured frame with its FCS (CRC-32), as a tester exports frames for replay")
        .integer("pcap_psn_offset", &S::Output::pcap_psn_offset,
                 "added to every BTH PSN the pcap files show (mod 2^24), as if every QP started there: a stream "
                 "across the PSN wrap (the simulation itself counts from 0)",
                 0, 16777215)
        .text("reorder_metrics", &S::Output::reorder_metrics,
              "ports whose egress order is measured (RFC 4737/5236) into reorder.csv, comma-separated, as output.pcap")
        .time("timeseries_interval", &S::Output::timeseries_interval,
              "sample queues and QP rates this often into queues.csv and qps.csv (0ps = off)", "0ps", "1s")
        .text("timeseries_ports", &S::Output::timeseries_ports,
              "ports to sample, comma-separated, as output.pcap: a switch port's queue and pause, a host port's "
              "pause (\"\" = every switch port)")
        .text("window", &S::Output::window,
              "also count ports and flows over this span of the run, \"FROM..TO\" (\"150ms..300ms\"): "
              "ports_window.csv, flows_window.csv, summary.json window (\"\" = off)")
        .flag(
            "slowdown", &S::Output::slowdown,
            "write slowdown.csv and slowdown.png: FCT over the ideal FCT per flow-size bucket (on with traffic.pattern "
            "= \"load\")")
        .custom(
            {"slowdown_buckets",
             params::Kind::text,
             "slowdown.csv's buckets by their upper edges, \"10KB,100KB,1MB\" (\"\" = twenty of equal count by size, "
             "as the HPCC paper's figures)",
             "",
             "",
             {}},
            [](S::Output& o, const params::Value& v) { o.slowdown_buckets = parse_slowdown_buckets(v.text); },
            [](const S::Output& o) { return slowdown_buckets_text(o.slowdown_buckets); })
        .bytes("short_flow", &S::Output::short_flow, "flows up to this size are short: summary.json's slowdown.short",
               "1B")
        .flag("traffic_matrix", &S::Output::traffic_matrix,
              "write traffic_matrix.csv: src,dst,bytes, the payload the flows placed and the collectives' messages "
              "completed per pair of hosts (what load.N.matrix reads)")
        .flag("ns3", &S::Output::ns3,
              "also write fct.txt and pfc.txt in the HPCC ns-3 RDMA model's formats (its scripts read them; not over "
              "MPI ranks)")
        .flag("ops", &S::Output::ops,
              "write ops.csv: each collective operation's ready, fired and completed times (`run --trace-ops`)");
    params::Table<S> t;
    t.nest("sim", &S::sim, sim)
        .nest("topology", &S::topology, fabric::topology_table())
        .nest("nic", &S::nic, fabric::nic_table())
        .nest("switch", &S::sw, fabric::switch_table())
        .nest("switch.pfc", &S::deadlock, deadlock)
        .nest("wire", &S::wire, fabric::wire_table())
        .nest("traffic", &S::traffic, workload::traffic_table())
        .text("routing.static", &S::static_routes,
              "static routes replacing the shortest paths: \"SWITCH HOST PORT[|PORT...]; ...\" (\"s1 h9 2|3\")")
        .nest("impair", &S::impair, impair)
        .nest("reseq", &S::reseq, reseq)
        .nest("output", &S::output, output)
        .nest("", &S::offload, nicmodel::nic_resources_table())
        .nest("collectives", &S::collective_traffic, collectives_config_table());
    return t;
  }();
  return table;
}

}  // namespace

const Parameters<FabricScenario>& fabric_parameters() {
  static const Parameters<FabricScenario> p = [] {
    const FabricScenario defaults;  // named: GCC 12 misreads a temporary's strings as uninitialized
    Parameters<FabricScenario> q(scenario_table(), defaults);
    q.list("collective", &FabricScenario::collectives, collective_table());
    q.list("load", &FabricScenario::loads, workload::load_table());
    return q;
  }();
  return p;
}

}  // namespace fabriclab::scenario
