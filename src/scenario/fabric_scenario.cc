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
#include "fabric/topology.h"
#include "scenario/pcap_writer.h"
#include "scenario/reorder_recorder.h"
#include "scenario/results.h"
#include "scenario/timeseries.h"
#include "workload/traffic.h"

namespace fabriclab::scenario {

using fabric::Network;

namespace {

ParamRegistry make_registry() {
  ParamRegistry r;
  using K = ParamKind;
  r.declare("sim.seed", K::integer, "1", "seed of every random stream (ECMP seeds excepted)", "0", "");
  r.declare("sim.stop_time", K::time, "1s", "simulated time limit; the run ends earlier when every flow is delivered", "1ns", "");
  r.declare("sim.partitions", K::integer, "1",
            "split the network into this many parts run in lock-step windows of the smallest link delay "
            "between them (1 = undivided; a partitioned run has its own fingerprint, whatever sim.threads)", "1", "64");
  r.declare("sim.threads", K::integer, "0", "threads that run the parts (0 = one per part)", "0", "64");

  r.declare("topology.kind", K::choice, "single_switch", "network shape", "", "",
    {"back_to_back", "single_switch", "two_switches", "leaf_spine", "fat_tree", "ring"});
  r.declare("topology.hosts", K::integer, "17", "single_switch: hosts on the switch", "2", "65536");
  r.declare("topology.s1_hosts", K::integer, "8", "two_switches: hosts on s1", "1", "65536");
  r.declare("topology.s2_hosts", K::integer, "8", "two_switches: hosts on s2", "1", "65536");
  r.declare("topology.inter_switch_links", K::integer, "1", "two_switches: parallel s1-s2 links", "1", "64");
  r.declare("topology.leaves", K::integer, "4", "leaf_spine: leaf switches", "1", "4096");
  r.declare("topology.spines", K::integer, "2", "leaf_spine: spine switches", "1", "1024");
  r.declare("topology.hosts_per_leaf", K::integer, "4", "leaf_spine: hosts under each leaf", "1", "1024");
  r.declare("topology.uplinks", K::integer, "1", "leaf_spine: parallel links from each leaf to each spine", "1", "64");
  r.declare("topology.ring_switches", K::integer, "4", "ring: switches in the ring", "3", "4096");
  r.declare("topology.hosts_per_switch", K::integer, "1", "ring: hosts on each switch", "1", "1024");
  r.declare("topology.k", K::integer, "4", "fat_tree: switch radix k (even; k^3/4 hosts)", "2", "64");
  r.declare("topology.host_rate", K::rate, "100Gbps", "rate of host links", "1Mbps", "");
  r.declare("topology.fabric_rate", K::rate, "100Gbps", "rate of switch-to-switch links", "1Mbps", "");
  r.declare("topology.link_delay", K::time, "1us", "propagation delay of every link", "0ps", "1s");

  r.declare("nic.mtu", K::bytes, "4096B", "RDMA payload per packet", "256B", "9000B");
  r.declare("nic.transport", K::choice, "rc", "reliable (go-back-N) or unreliable connection", "", "", {"rc", "uc"});
  r.declare("nic.ecn_capable", K::boolean, "true", "send data ECT(0) so that switches may mark it");
  r.declare("nic.ack_every", K::integer, "8", "RC: one coalesced ACK per this many in-order packets", "1", "65536");
  r.declare("nic.rto", K::time, "1ms", "RC: retransmission timeout without progress", "1us", "10s");
  r.declare("nic.reorder_timeout", K::time, "0ps",
            "RC with a reorder window: NAK a gap that has not filled this long (0ps = only beyond the window)", "0ps", "1s");
  r.declare("nic.reorder_window", K::integer, "0", "RC: packets accepted beyond the expected PSN (0 = go-back-N)", "0", "65536");
  r.declare("nic.rx_rate", K::rate, "0bps", "host drain rate of the NIC's receive buffer (0bps = takes packets as they come)");
  r.declare("nic.rx_buffer", K::bytes, "256KiB", "NIC receive buffer; past it minus PFC headroom the NIC pauses", "1KiB", "");
  r.declare("nic.congestion_control", K::choice, "none", "rate control of every QP (none = line rate)", "", "",
            {"none", "dcqcn"});
  // DCQCN: sysfs names and units (ecn/roce_rp/*, ecn/roce_np/*); a key left unset takes
  // the preset's value (declared default: nvidia's; the help gives the paper's).
  r.declare("nic.roce_rp.preset", K::choice, "nvidia", "DCQCN values for every unset roce_rp/roce_np key", "", "",
            {"nvidia", "paper"});
  const auto rp = [&](const char* key, const char* nvidia, const char* help, const char* min, const char* max) {
    r.declare(std::string("nic.roce_rp.") + key, K::integer, nvidia, help, min, max);
  };
  rp("rate_reduce_monitor_period", "4", "us between rate cuts of a QP that saw a CNP (0 = cut at each CNP; paper 0)", "0", "1000000");
  rp("initial_alpha_value", "1023", "alpha (/1024) set by the first CNP at full rate (paper 1023)", "0", "1023");
  rp("rate_to_set_on_first_cnp", "0", "Mb/s set by the first CNP at full rate (0 = keep; paper 0)", "0", "10000000");
  rp("rpg_gd", "11", "cut = Rc alpha_raw / 2^rpg_gd (11: Rc alpha/2; paper 11)", "1", "20");
  rp("rpg_min_dec_fac", "50", "a cut keeps at least this percent of Rc (paper 50)", "0", "100");
  rp("rpg_min_rate", "1", "Mb/s floor of Rc (paper 1)", "1", "10000000");
  rp("dce_tcp_rtt", "1", "us between alpha updates (paper K = 55)", "1", "1000000");
  rp("dce_tcp_g", "1019", "weight of the old alpha, out of 1024 (paper 1020: g = 1/256)", "0", "1024");
  rp("rpg_time_reset", "300", "us of the rate-increase timer (paper T_inc = 55)", "1", "10000000");
  rp("rpg_byte_reset", "32767", "64-byte units sent per byte-counter increase, 0 = off (paper B = 10 MiB: 163840)", "0", "67108864");
  rp("rpg_threshold", "1", "F: increase stages before additive increase (paper 5)", "0", "1000");
  rp("rpg_ai_rate", "5", "Mb/s of additive increase (paper R_AI = 40)", "0", "10000000");
  rp("rpg_hai_rate", "50", "Mb/s of hyper increase (paper R_HAI = 200)", "0", "10000000");
  rp("rpg_max_rate", "0", "Mb/s ceiling (0 = line rate; paper 0)", "0", "10000000");
  rp("clamp_tgt_rate", "0", "1: every cut sets Rt = Rc first (paper 1)", "0", "1");
  rp("clamp_tgt_rate_after_time_inc", "1", "1: a cut sets Rt = Rc if the timer raised the rate since the last (paper 1)", "0", "1");
  r.declare("nic.roce_np.enable", K::boolean, "true", "answer CE-marked packets with CNPs");
  r.declare("nic.roce_np.min_time_between_cnps", K::integer, "4", "us between CNPs (paper 50)", "0", "1000000");
  r.declare("nic.roce_np.cnp_scope", K::choice, "port", "one CNP interval per port (ConnectX) or per QP (paper)", "", "",
            {"port", "qp"});
  r.declare("nic.roce_np.cnp_802p_prio", K::integer, "6", "802.1p priority of CNPs", "0", "7");
  r.declare("nic.roce_np.cnp_dscp", K::integer, "48", "DSCP of CNPs", "0", "63");

  r.declare("switch.buffer", K::bytes, "32MiB", "shared buffer of each switch", "1KiB", "");
  r.declare("switch.mmu.reserve", K::bytes, "0B", "reserved bytes per ingress port and priority group", "0B", "");
  r.declare("switch.mmu.threshold", K::choice, "dynamic", "shared-pool limit per priority group", "", "", {"static", "dynamic"});
  r.declare("switch.mmu.static_th", K::bytes, "512KiB", "static limit per priority group", "0B", "");
  r.declare("switch.mmu.dynamic_th", K::integer, "0", "dynamic limit: 2^n x free shared buffer", "-7", "7");
  r.declare("switch.pfc.enabled", K::boolean, "true", "PFC on the lossless priorities");
  r.declare("switch.pfc.lossless", K::text, "3", "lossless priorities, comma-separated (\"3\", \"3,4\")");
  r.declare("switch.pfc.headroom", K::choice, "auto", "headroom per lossless group: the SONiC formula or a given size", "", "",
    {"auto", "given"});
  r.declare("switch.pfc.headroom_size", K::bytes, "64KiB", "headroom when switch.pfc.headroom = \"given\"", "0B", "");
  r.declare("switch.pfc.mac_phy_delay", K::bytes, "1536B", "formula term: MAC/PHY delay in bytes", "0B", "");
  r.declare("switch.pfc.peer_response", K::bytes, "3840B", "formula term: bytes the peer sends before it reacts", "0B", "");
  r.declare("switch.pfc.xon_offset", K::bytes, "8KiB", "resume when a group is this far below its limit", "0B", "");
  r.declare("switch.pfc.pause_quanta", K::integer, "65535", "pause time per frame in 512-bit quanta (refreshed at half)", "1", "65535");
  r.declare("switch.pfc.deadlock_check", K::time, "100us", "look for PFC deadlocks this often (0ps = never)", "0ps", "1s");
  r.declare("switch.pfc.deadlock_time", K::time, "500us", "a deadlock is a cycle of queues paused this long", "1ns", "10s");
  r.declare("switch.pfc_wd.enabled", K::boolean, "false", "SONiC PFC watchdog on the lossless queues");
  r.declare("switch.pfc_wd.action", K::choice, "drop", "in a storm: drop the queue, forward despite pauses, or alert",
    "", "", {"drop", "forward", "alert"});
  r.declare("switch.pfc_wd.detection_time", K::time, "200ms", "paused this long with packets queued: a storm", "1ns", "10s");
  r.declare("switch.pfc_wd.restoration_time", K::time, "200ms", "no pause for this long: the storm is over", "1ns", "10s");
  r.declare("switch.pfc_wd.poll_interval", K::time, "100ms", "how often the watchdog looks", "1ns", "10s");
  r.declare("switch.scheduler", K::choice, "strict", "egress scheduling among priorities", "", "", {"strict", "dwrr"});
  r.declare("switch.dwrr.weights", K::text, "1,1,1,1,1,1,1,1", "DWRR weights of priorities 0..7");
  r.declare("switch.dwrr.strict", K::text, "6,7", "DWRR: priorities served strictly before the others");
  r.declare("switch.wred.ecn", K::choice, "ecn_all", "ECN marking on (SONiC ecn_all) or off", "", "", {"ecn_all", "ecn_none"});
  r.declare("switch.wred.green_min_threshold", K::bytes, "5KB", "Kmin: no marking at or below", "0B", "");
  r.declare("switch.wred.green_max_threshold", K::bytes, "200KB", "Kmax: marking always above", "1B", "");
  r.declare("switch.wred.green_drop_probability", K::real, "1", "Pmax in percent, reached at Kmax", "0", "100");
  r.declare("switch.wred.mark_at", K::choice, "dequeue", "where the queue is measured", "", "", {"dequeue", "enqueue"});
  r.declare("switch.lb", K::choice, "ecmp", "choice among equal-cost next hops", "", "", {"ecmp", "spray_rr", "spray_random"});
  r.declare("switch.ecmp.hash", K::choice, "crc32", "ECMP hash function", "", "", {"crc32", "crc16", "xor"});
  r.declare("switch.ecmp.fields", K::text, "src_ip,dst_ip,src_port,dst_port,protocol", "5-tuple fields the ECMP hash reads");
  r.declare("switch.ecmp.seed", K::integer, "0", "ECMP hash seed", "0", "4294967295");
  r.declare("switch.ecmp.seed_per_switch", K::boolean, "true", "mix the switch index into the seed (false: every tier hashes alike)");

  r.declare("traffic.pattern", K::choice, "incast", "the flows", "", "", {"incast", "permutation", "all_to_all", "flows", "training"});
  r.declare("traffic.bytes", K::bytes, "1MB", "bytes per flow (patterns)", "1B", "");
  r.declare("traffic.start", K::time, "0ps", "start of every flow (patterns)", "0ps", "");
  r.declare("traffic.priority", K::integer, "3", "priority (802.1p) of every flow (patterns)", "0", "7");
  r.declare("traffic.qps_per_flow", K::integer, "1", "QPs per flow; the bytes are split among them", "1", "65536");
  r.declare("traffic.training.iterations", K::integer, "2", "training: data-parallel iterations", "1", "1000");
  r.declare("traffic.training.distribution_bytes", K::bytes, "8MB",
            "training: bytes each GPU receives before computing (0B = no distribution phase)", "0B", "");
  r.declare("traffic.training.compute", K::time, "0ps", "training: compute time between a GPU's data and its allreduce", "0ps", "1s");
  r.declare("traffic.incast.receiver", K::integer, "0", "incast: the receiving host", "0", "");
  r.declare("traffic.incast.senders", K::integer, "0", "incast: senders (0 = every other host)", "0", "");
  r.declare("routing.static", K::text, "",
    "static routes replacing the shortest paths: \"SWITCH HOST PORT[|PORT...]; ...\" (\"s1 h9 2|3\")");
  r.declare("impair.link", K::text, "", "reorder box on the link leaving this port, NODE:PORT (\"s1:8\"); \"\" = none");
  r.declare("impair.rules", K::text, "", "rules: \"drop F/P[/N]; hold F/P[/N] K; delay F/P[/N] T; dup F/P; corrupt F/P\"");
  r.declare("impair.drop_probability", K::real, "0", "each data packet lost with this probability", "0", "1");
  r.declare("impair.corrupt_probability", K::real, "0", "each data packet corrupted (discarded by the receiver)", "0", "1");
  r.declare("impair.duplicate_probability", K::real, "0", "each data packet duplicated", "0", "1");
  r.declare("impair.reorder_probability", K::real, "0", "each data packet held back (reordered)", "0", "1");
  r.declare("impair.reorder_packets", K::integer, "1", "a reordered packet lets this many later ones by", "1", "1000000");
  r.declare("impair.reorder_delay", K::time, "0ps", "if positive: a reordered packet is held this long instead", "0ps", "1s");
  r.declare("reseq.link", K::text, "", "re-sequencer on the link leaving this port, NODE:PORT (\"s2:0\"); \"\" = none");
  r.declare("reseq.buffer", K::integer, "64", "re-sequencer: packets it can hold (all QPs)", "1", "1048576");
  r.declare("reseq.timeout", K::time, "100us", "re-sequencer: the longest a packet waits for the gap before it", "1ns", "1s");
  r.declare("output.reorder_metrics", K::text, "",
            "ports whose egress order is measured (RFC 4737/5236) into reorder.csv, NODE:PORT, comma-separated");
  r.declare("impair.max_hold", K::time, "100us", "a held packet leaves after this long at the latest", "1ns", "1s");
  r.declare("output.timeseries_interval", K::time, "0ps", "sample queues and QP rates this often into queues.csv and qps.csv (0ps = off)", "0ps", "1s");
  r.declare("output.timeseries_ports", K::text, "", "switch ports to sample, NODE:PORT or NODE, comma-separated (\"\" = every switch port)");
  r.declare("output.pcap", K::text, "",
    "ports to capture, comma-separated: NODE:PORT or NODE for all its ports (\"sw0:0,h1\"); "
    "written to OUT/NODE-pPORT.pcap");
  r.declare("traffic.flows_file", K::text, "", "flows: CSV file src,dst,bytes,start,priority,qps (relative to the scenario)");
  return r;
}

std::vector<int> priority_list(const Config& cfg, const std::string& key, std::size_t want = 0) {
  std::vector<int> out;
  for (const std::string& item : split_list(cfg.text(key))) {
    const auto v = parse_integer(item);
    if (!v || *v < 0 || (want == 0 && *v > 7) || *v > 1'000'000)
      throw InputError(fmt::format("{}: {}: '{}' is not {}", cfg.origin(key), key, item,
                                   want == 0 ? "a priority 0..7" : "a non-negative integer"));
    out.push_back(static_cast<int>(*v));
  }
  if (want != 0 && out.size() != want)
    throw InputError(fmt::format("{}: {}: expected {} comma-separated values, got {}", cfg.origin(key), key, want,
                                 out.size()));
  return out;
}

std::uint8_t mask_of(const std::vector<int>& prios) {
  std::uint8_t m = 0;
  for (int p : prios) m = static_cast<std::uint8_t>(m | (1u << p));
  return m;
}

std::uint32_t u32(const Config& cfg, const std::string& key) { return static_cast<std::uint32_t>(cfg.integer(key)); }

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

void dcqcn_settings(const Config& cfg, fabric::DcqcnParams& rp, fabric::CnpParams& np) {
  rp = fabric::DcqcnParams::preset_named(cfg.text("nic.roce_rp.preset"));
  const bool paper = rp.preset == "paper";
  const auto set = [&](const char* key, std::uint32_t& field) {
    const std::string k = std::string("nic.roce_rp.") + key;
    if (cfg.origin(k) != "default") field = u32(cfg, k);
  };
  const auto set_flag = [&](const char* key, bool& field) {
    const std::string k = std::string("nic.roce_rp.") + key;
    if (cfg.origin(k) != "default") field = cfg.integer(k) != 0;
  };
  set("rate_reduce_monitor_period", rp.rate_reduce_monitor_period);
  set("initial_alpha_value", rp.initial_alpha_value);
  set("rate_to_set_on_first_cnp", rp.rate_to_set_on_first_cnp);
  set("rpg_gd", rp.rpg_gd);
  set("rpg_min_dec_fac", rp.rpg_min_dec_fac);
  set("rpg_min_rate", rp.rpg_min_rate);
  set("dce_tcp_rtt", rp.dce_tcp_rtt);
  set("dce_tcp_g", rp.dce_tcp_g);
  set("rpg_time_reset", rp.rpg_time_reset);
  set("rpg_byte_reset", rp.rpg_byte_reset);
  set("rpg_threshold", rp.rpg_threshold);
  set("rpg_ai_rate", rp.rpg_ai_rate);
  set("rpg_hai_rate", rp.rpg_hai_rate);
  set("rpg_max_rate", rp.rpg_max_rate);
  set_flag("clamp_tgt_rate", rp.clamp_tgt_rate);
  set_flag("clamp_tgt_rate_after_time_inc", rp.clamp_tgt_rate_after_time_inc);
  np.enabled = cfg.boolean("nic.roce_np.enable");
  const auto np_key = [&](const char* key) { return std::string("nic.roce_np.") + key; };
  np.min_time_between_cnps = cfg.origin(np_key("min_time_between_cnps")) != "default"
                                 ? u32(cfg, np_key("min_time_between_cnps"))
                                 : (paper ? 50u : 4u);
  np.per_qp = cfg.origin(np_key("cnp_scope")) != "default" ? cfg.text(np_key("cnp_scope")) == "qp" : paper;
  np.cnp_802p_prio = static_cast<std::uint8_t>(cfg.integer(np_key("cnp_802p_prio")));
  np.cnp_dscp = static_cast<std::uint8_t>(cfg.integer(np_key("cnp_dscp")));
}

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

const ParamRegistry& fabric_parameters() {
  static const ParamRegistry r = make_registry();
  return r;
}

std::unique_ptr<Network> build_network(const Config& cfg) {
  fabric::NicConfig nic;
  nic.mtu = static_cast<std::uint32_t>(cfg.bytes("nic.mtu").count());
  nic.transport = cfg.text("nic.transport") == "uc" ? fabric::Transport::uc : fabric::Transport::rc;
  nic.ecn_capable = cfg.boolean("nic.ecn_capable");
  nic.ack_every = u32(cfg, "nic.ack_every");
  nic.rto = cfg.time("nic.rto");
  nic.reorder_window = u32(cfg, "nic.reorder_window");
  nic.reorder_timeout = cfg.time("nic.reorder_timeout");
  nic.congestion_control = cfg.text("nic.congestion_control");
  dcqcn_settings(cfg, nic.dcqcn, nic.cnp);
  nic.rx_rate = cfg.rate("nic.rx_rate");
  nic.rx_buffer = cfg.bytes("nic.rx_buffer");

  fabric::SwitchConfig sw;
  sw.buffer = cfg.bytes("switch.buffer");
  sw.reserve = cfg.bytes("switch.mmu.reserve");
  sw.threshold_mode = cfg.text("switch.mmu.threshold") == "static" ? fabric::ThresholdMode::static_th
                                                                   : fabric::ThresholdMode::dynamic_th;
  sw.static_th = cfg.bytes("switch.mmu.static_th");
  sw.dynamic_th = static_cast<int>(cfg.integer("switch.mmu.dynamic_th"));
  sw.pfc = cfg.boolean("switch.pfc.enabled");
  sw.lossless = mask_of(priority_list(cfg, "switch.pfc.lossless"));
  sw.headroom_auto = cfg.text("switch.pfc.headroom") == "auto";
  sw.headroom = cfg.bytes("switch.pfc.headroom_size");
  sw.mac_phy_delay = cfg.bytes("switch.pfc.mac_phy_delay");
  sw.peer_response = cfg.bytes("switch.pfc.peer_response");
  sw.xon_offset = cfg.bytes("switch.pfc.xon_offset");
  sw.pause_quanta = static_cast<std::uint16_t>(cfg.integer("switch.pfc.pause_quanta"));
  sw.watchdog = cfg.boolean("switch.pfc_wd.enabled");
  const std::string& wd = cfg.text("switch.pfc_wd.action");
  sw.wd_action = wd == "drop" ? fabric::WatchdogAction::drop
                 : wd == "forward" ? fabric::WatchdogAction::forward
                                   : fabric::WatchdogAction::alert;
  sw.wd_detection = cfg.time("switch.pfc_wd.detection_time");
  sw.wd_restoration = cfg.time("switch.pfc_wd.restoration_time");
  sw.wd_poll = cfg.time("switch.pfc_wd.poll_interval");
  sw.scheduler = cfg.text("switch.scheduler") == "dwrr" ? fabric::Scheduler::dwrr : fabric::Scheduler::strict;
  const auto weights = priority_list(cfg, "switch.dwrr.weights", 8);
  for (std::size_t i = 0; i < 8; ++i) {
    if (weights[i] < 1 || weights[i] > 1000)
      throw InputError(fmt::format("{}: switch.dwrr.weights: weight {} of priority {} is not in 1..1000",
                                   cfg.origin("switch.dwrr.weights"), weights[i], i));
    sw.weights[i] = static_cast<std::uint32_t>(weights[i]);
  }
  sw.strict_classes = mask_of(priority_list(cfg, "switch.dwrr.strict"));
  sw.ecn = cfg.text("switch.wred.ecn") == "ecn_all";
  sw.mark_at_enqueue = cfg.text("switch.wred.mark_at") == "enqueue";
  sw.wred.kmin = cfg.bytes("switch.wred.green_min_threshold").count();
  sw.wred.kmax = cfg.bytes("switch.wred.green_max_threshold").count();
  sw.wred.pmax = cfg.real("switch.wred.green_drop_probability") / 100.0;
  if (sw.wred.kmax <= sw.wred.kmin)
    throw InputError(fmt::format("{}: switch.wred.green_max_threshold ({}) must be above green_min_threshold ({})",
                                 cfg.origin("switch.wred.green_max_threshold"),
                                 cfg.shown("switch.wred.green_max_threshold"),
                                 cfg.shown("switch.wred.green_min_threshold")));
  const std::string& lb = cfg.text("switch.lb");
  sw.load_balance = lb == "ecmp"       ? fabric::LoadBalance::ecmp
                    : lb == "spray_rr" ? fabric::LoadBalance::spray_round_robin
                                       : fabric::LoadBalance::spray_random;
  sw.hash = fabric::parse_hash_function(cfg.text("switch.ecmp.hash"));
  try {
    sw.hash_fields = fabric::parse_hash_fields(cfg.text("switch.ecmp.fields"));
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: switch.ecmp.fields: {}", cfg.origin("switch.ecmp.fields"), e.what()));
  }
  sw.seed = static_cast<std::uint32_t>(cfg.integer("switch.ecmp.seed"));
  sw.seed_per_switch = cfg.boolean("switch.ecmp.seed_per_switch");

  fabric::TopologySpec t;
  t.kind = fabric::parse_topology_kind(cfg.text("topology.kind"));
  t.hosts = u32(cfg, "topology.hosts");
  t.s1_hosts = u32(cfg, "topology.s1_hosts");
  t.s2_hosts = u32(cfg, "topology.s2_hosts");
  t.inter_switch_links = u32(cfg, "topology.inter_switch_links");
  t.leaves = u32(cfg, "topology.leaves");
  t.spines = u32(cfg, "topology.spines");
  t.hosts_per_leaf = u32(cfg, "topology.hosts_per_leaf");
  t.uplinks = u32(cfg, "topology.uplinks");
  t.k = u32(cfg, "topology.k");
  t.ring_switches = u32(cfg, "topology.ring_switches");
  t.hosts_per_switch = u32(cfg, "topology.hosts_per_switch");
  t.host_link = {cfg.rate("topology.host_rate"), cfg.time("topology.link_delay")};
  t.fabric_link = {cfg.rate("topology.fabric_rate"), cfg.time("topology.link_delay")};

  const auto seed = static_cast<std::uint64_t>(cfg.integer("sim.seed"));
  auto net = std::make_unique<Network>(nic, sw, seed);
  fabric::build_topology(*net, t);
  if (sw.pfc && cfg.time("switch.pfc.deadlock_check") > Time())
    net->detect_deadlocks(cfg.time("switch.pfc.deadlock_check"), cfg.time("switch.pfc.deadlock_time"),
                          sw.watchdog && sw.wd_action != fabric::WatchdogAction::alert);

  workload::TrafficSpec tr;
  tr.pattern = workload::parse_pattern(cfg.text("traffic.pattern"));
  tr.bytes = cfg.bytes("traffic.bytes");
  tr.start = cfg.time("traffic.start");
  tr.priority = static_cast<std::uint8_t>(cfg.integer("traffic.priority"));
  tr.qps_per_flow = u32(cfg, "traffic.qps_per_flow");
  tr.incast_receiver = u32(cfg, "traffic.incast.receiver");
  tr.incast_senders = u32(cfg, "traffic.incast.senders");
  tr.flows_file = cfg.text("traffic.flows_file");
  tr.iterations = u32(cfg, "traffic.training.iterations");
  tr.distribution_bytes = cfg.bytes("traffic.training.distribution_bytes");
  tr.compute = cfg.time("traffic.training.compute");
  if (!tr.flows_file.empty()) {
    // Relative to the scenario file, like an include.
    const std::string& origin = cfg.origin("traffic.flows_file");
    const auto colon = origin.find(':');
    if (origin != "default" && origin != "--set" && colon != std::string::npos &&
        std::filesystem::path(tr.flows_file).is_relative())
      tr.flows_file = (std::filesystem::path(origin.substr(0, colon)).parent_path() / tr.flows_file).string();
  }
  for (const auto& f : workload::make_flows(tr, static_cast<std::uint32_t>(net->host_count()), seed))
    net->add_flow(f);

  // routing.static: "s1 h9 2|3; s2 h0 1"
  {
    const std::string& text = cfg.text("routing.static");
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

  const std::string& link = cfg.text("impair.link");
  if (!link.empty()) {
    fabric::ImpairmentConfig ic;
    try {
      ic.rules = fabric::parse_impairment_rules(cfg.text("impair.rules"));
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: impair.rules: {}", cfg.origin("impair.rules"), e.what()));
    }
    ic.drop = cfg.real("impair.drop_probability");
    ic.corrupt = cfg.real("impair.corrupt_probability");
    ic.duplicate = cfg.real("impair.duplicate_probability");
    ic.reorder = cfg.real("impair.reorder_probability");
    ic.reorder_packets = u32(cfg, "impair.reorder_packets");
    ic.reorder_delay = cfg.time("impair.reorder_delay");
    ic.max_hold = cfg.time("impair.max_hold");
    net->add_impairment(find_port(cfg, *net, "impair.link", link), std::move(ic));
  } else {
    for (const char* key : {"impair.rules", "impair.drop_probability", "impair.corrupt_probability",
                             "impair.duplicate_probability", "impair.reorder_probability"})
      if (cfg.origin(key) != "default")
        throw InputError(fmt::format("{}: {} needs impair.link (the port whose link is impaired)", cfg.origin(key), key));
  }
  if (const std::string& at = cfg.text("reseq.link"); !at.empty()) {
    fabric::Port& port = find_port(cfg, *net, "reseq.link", at);
    if (port.impairment())
      throw InputError(fmt::format("{}: reseq.link: {} already carries the reorder box (impair.link)",
                                   cfg.origin("reseq.link"), at));
    net->add_resequencer(port, {.buffer = u32(cfg, "reseq.buffer"), .timeout = cfg.time("reseq.timeout")});
  }
  if (const std::uint32_t parts = u32(cfg, "sim.partitions"); parts > 1) {
    // What would act across parts within a window: refused here, by its key.
    const auto refuse = [&](const std::string& key) {
      throw InputError(fmt::format("{}: {} is not supported with sim.partitions = {} (set at {}); "
                                   "use sim.partitions = 1",
                                   cfg.origin(key), key, parts, cfg.origin("sim.partitions")));
    };
    for (const char* key : {"impair.link", "reseq.link", "output.pcap", "output.reorder_metrics"})
      if (!cfg.text(key).empty()) refuse(key);
    if (cfg.time("output.timeseries_interval") > Time()) refuse("output.timeseries_interval");
    for (std::uint32_t id = 0; id < net->flows().size(); ++id)
      if (!net->flows()[id].spec.after.empty())
        throw InputError(fmt::format("{}: sim.partitions = {}: flow {} starts when others finish (traffic.pattern "
                                     "= {}), which a partitioned run does not support",
                                     cfg.origin("sim.partitions"), parts, id, cfg.text("traffic.pattern")));
    const std::uint32_t threads = u32(cfg, "sim.threads") == 0 ? parts : u32(cfg, "sim.threads");
    if (threads > parts)
      throw InputError(fmt::format("{}: sim.threads = {}: at most one thread per part (sim.partitions = {})",
                                   cfg.origin("sim.threads"), threads, parts));
    net->set_partitions(parts, threads);
  }
  return net;
}

namespace {

std::int64_t percentile(std::vector<std::int64_t> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  // Nearest rank.
  auto rank = static_cast<std::size_t>(q * static_cast<double>(v.size()) + 0.999999999);
  rank = std::clamp<std::size_t>(rank, 1, v.size());
  return v[rank - 1];
}

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

FabricOutcome run_fabric(const Config& cfg, const FabricRunOptions& opt) {
  auto net = build_network(cfg);
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
    if (cfg.time("output.timeseries_interval") > Time()) {
      std::vector<std::pair<fabric::Switch*, std::size_t>> ports;
      for (const auto& [node, port] : port_list(cfg, *net, "output.timeseries_ports")) {
        auto* sw = dynamic_cast<fabric::Switch*>(node);
        if (!sw)
          throw InputError(fmt::format("{}: output.timeseries_ports: {} is a host; queues are sampled at switches",
                                       cfg.origin("output.timeseries_ports"), node->name()));
        ports.push_back({sw, port});
      }
      series = std::make_unique<TimeSeries>(*net, cfg.time("output.timeseries_interval"), opt.out_dir,
                                            std::move(ports));
    }
  }
  const Time stop = cfg.time("sim.stop_time");
  const auto t0 = std::chrono::steady_clock::now();
  auto last = t0;
  FabricOutcome o;
  o.totals = net->run(stop, us(100), [&](Time now) {
    if (opt.on_slice) opt.on_slice(now);
    if (!opt.progress) return;
    const auto wall = std::chrono::steady_clock::now();
    if (wall - last < std::chrono::seconds(1)) return;
    last = wall;
    std::fprintf(stderr, "\r  simulated %s of %s, %llu events, %.0f s  ", to_string(now).c_str(),
                 to_string(stop).c_str(), static_cast<unsigned long long>(net->events()),
                 std::chrono::duration<double>(wall - t0).count());
  });
  if (opt.progress && last != t0) std::fprintf(stderr, "\r%*s\r", 70, "");
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
  o.fct_p50 = Time::from_ps(percentile(fcts, 0.50));
  o.fct_p99 = Time::from_ps(percentile(fcts, 0.99));
  o.fct_max = Time::from_ps(percentile(fcts, 1.0));

  // ports.csv
  const Time end = o.totals.end;
  std::string ports =
      "node,port,tx_bytes,tx_packets,drops,ecn_marks,pfc_pause_sent,pfc_pause_received,paused_ns,max_queue_bytes\n";
  Time paused_total;
  for (fabric::Node* n : net->nodes()) {
    auto* sw = dynamic_cast<fabric::Switch*>(n);
    auto* host = dynamic_cast<fabric::Host*>(n);
    for (std::size_t i = 0; i < n->port_count(); ++i) {
      const fabric::Port& p = n->port(i);
      const std::uint64_t d = p.link_drops() + p.rx_errors() + (sw ? sw->drops(i) : 0) +
                              (host ? host->rx_buffer_drops() + host->misdelivered() : 0);
      const std::uint64_t m = sw ? sw->ecn_marks(i) : 0;
      const std::int64_t q = sw ? sw->max_queue_bytes(i) : 0;
      o.drops += d;
      o.ecn_marks += m;
      o.pfc_frames += p.pfc_sent();
      paused_total += p.paused_time(end);
      ports += fmt::format("{},{},{},{},{},{},{},{},{},{}\n", n->name(), i, p.tx_bytes(), p.tx_packets(), d, m,
                           p.pfc_sent(), p.pfc_received(), ns_text(p.paused_time(end)), q);
    }
  }
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
                 {"ttl_drops", l.ttl_drops},
                 {"ecn_marks", o.ecn_marks},
                 {"pfc_pause_frames", o.pfc_frames},
                 {"paused_ns_all_ports", ns_text(paused_total)}};
  {
    fabric::DcqcnParams rp;
    fabric::CnpParams np;
    dcqcn_settings(cfg, rp, np);
    nlohmann::ordered_json cc;
    cc["policy"] = cfg.text("nic.congestion_control");
    cc["cnps_sent"] = o.cnps_sent;
    cc["cnps_received"] = o.cnps_received;
    cc["dcqcn"] = dcqcn_echo(rp, np);
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
    j["reorder"] = {{"measured_at", cfg.text("output.reorder_metrics")},
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
