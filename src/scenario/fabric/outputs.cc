#include "scenario/fabric/outputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <stdexcept>
#include <vector>

#include "core/stats.h"
#include "scenario/observers/ports_table.h"
#include "scenario/report/files.h"

namespace fabriclab::scenario {

using fabric::Network;

void flows_csv(Network& net, FabricOutcome& o, const Slowdowns& slow, FileWriter* out) {
  // finish_at: the end point of finish_ns and fct_ns (nic.flow_end), on every row.
  std::string flows =
      "flow_id,src,dst,bytes,start_ns,finish_ns,fct_ns,goodput_gbps,retransmitted_packets,finish_at,ideal_fct_ns,"
      "slowdown\n";
  const std::string_view finish_at = name_of(fabric::kFlowEndNames, net.nic_config().flow_end);
  std::vector<std::int64_t> fcts;
  for (std::size_t i = 0; i < net.flows().size(); ++i) {
    const auto& f = net.flows()[i];
    o.retransmitted += f.retransmitted;
    if (f.finished()) fcts.push_back((f.finish - f.started).ps());
    if (!out) continue;  // (the totals only)
    std::string fin, fct, gbps;
    if (f.finished()) {
      const Time d = f.finish - f.started;
      fin = ns_text(f.finish);
      fct = ns_text(d);
      // bits per ns = Gb/s
      gbps = fmt::format("{:.3f}", static_cast<double>(f.spec.bytes) * 8.0 * 1000.0 / static_cast<double>(d.ps()));
    }
    const std::string ideal = slow.ideal[i] == Time::max() ? "" : ns_text(slow.ideal[i]);
    const std::string slowdown = slow.slowdown[i] < 0 ? "" : fmt::format("{:.4f}", slow.slowdown[i]);
    fmt::format_to(std::back_inserter(flows), "{},{},{},{},{},{},{},{},{},{},{},{}\n", i, net.host(f.spec.src).name(),
                   net.host(f.spec.dst).name(), f.spec.bytes, f.started == Time::max() ? "" : ns_text(f.started), fin,
                   fct, gbps, f.retransmitted, finish_at, ideal, slowdown);
    if (flows.size() >= (1 << 20)) {  // (a row per flow: never the whole table in memory)
      out->write(flows);
      flows.clear();
    }
  }
  if (out) out->write(flows);
  if (!fcts.empty()) {
    long double sum = 0;  // a 64-bit mantissa: the sum of the ps is exact up to 2^64 ps (213 days)
    for (const std::int64_t f : fcts) sum += static_cast<long double>(f);
    o.fct = FabricOutcome::Completions{Time::from_ps(std::llroundl(sum / static_cast<long double>(fcts.size()))),
                                       Time::from_ps(nearest_rank(fcts, 0.50)), Time::from_ps(nearest_rank(fcts, 0.99)),
                                       Time::from_ps(nearest_rank(fcts, 1.0))};
  }
}

std::string traffic_matrix_csv(const Network& net) {
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> bytes;
  for (const auto& f : net.flows())
    if (f.delivered > 0) bytes[{f.spec.src, f.spec.dst}] += f.delivered;
  for (std::uint32_t c = 0; c < net.connection_count(); ++c)  // the collectives' messages
    if (const fabric::Network::ConnectionBytes k = net.connection_bytes(c); k.completed > 0)
      bytes[{k.src, k.dst}] += k.completed;
  std::string out = "src,dst,bytes\n";
  for (const auto& [pair, b] : bytes)
    out += fmt::format("{},{},{}\n", net.host(pair.first).name(), net.host(pair.second).name(), b);
  return out;
}

std::string ports_csv(const Network& net, fabric::PortCounters& all) {
  std::vector<fabric::PortCounters> per_port;
  for (const fabric::Node* n : net.nodes())
    for (std::size_t i = 0; i < n->port_count(); ++i) {
      per_port.push_back(net.port_counters_at_end(n->id(), i));
      all += per_port.back();
    }
  std::string ports = ports_table(net, per_port);
  // Two counts of every drop: the ports' (each at its place) and the ledger's (by reason).
  std::uint64_t by_reasons = 0;
  for (std::uint64_t d : net.ledger().drops) by_reasons += d;
  if (by_reasons != all.drops)
    throw std::logic_error(
        fmt::format("drop accounting disagrees: the ports counted {}, the ledger {} by reason", all.drops, by_reasons));
  return ports;
}

namespace {
// A DCQCN rate in Mb/s, the unit of its key: an integer when whole ("5"), else exact ("2.5").
nlohmann::ordered_json mbps(BitRate r) {
  if (r.bps() % 1'000'000 == 0) return r.bps() / 1'000'000;
  return static_cast<double>(r.bps()) / 1e6;
}
}  // namespace

nlohmann::ordered_json dcqcn_echo(const fabric::DcqcnParams& rp, const fabric::CnpParams& np) {
  nlohmann::ordered_json j;
  j["preset"] = rp.preset;
  j["roce_rp"] = {{"rate_reduce_monitor_period", rp.rate_reduce_monitor_period},
                  {"initial_alpha_value", rp.initial_alpha_value},
                  {"rate_to_set_on_first_cnp", mbps(rp.rate_to_set_on_first_cnp)},
                  {"rpg_gd", rp.rpg_gd},
                  {"rpg_min_dec_fac", rp.rpg_min_dec_fac},
                  {"rpg_min_rate", mbps(rp.rpg_min_rate)},
                  {"dce_tcp_rtt", rp.dce_tcp_rtt},
                  {"dce_tcp_g", rp.dce_tcp_g},
                  {"rpg_time_reset", rp.rpg_time_reset},
                  {"rpg_byte_reset", rp.rpg_byte_reset},
                  {"rpg_threshold", rp.rpg_threshold},
                  {"rpg_ai_rate", mbps(rp.rpg_ai_rate)},
                  {"rpg_hai_rate", mbps(rp.rpg_hai_rate)},
                  {"rpg_max_rate", mbps(rp.rpg_max_rate)},
                  {"clamp_tgt_rate", rp.clamp_tgt_rate ? 1 : 0},
                  {"clamp_tgt_rate_after_time_inc", rp.clamp_tgt_rate_after_time_inc ? 1 : 0},
                  {"stage_compare", name_of(fabric::kStageCompareNames, rp.stage_compare)},
                  {"increase_stages", name_of(fabric::kIncreaseStagesNames, rp.increase_stages)},
                  {"hyper_increase", name_of(fabric::kHyperIncreaseNames, rp.hyper_increase)},
                  {"alpha_after_recovery", name_of(fabric::kAlphaAfterRecoveryNames, rp.alpha_after_recovery)},
                  {"cut_grid", name_of(fabric::kCutGridNames, rp.cut_grid)},
                  {"cut_alpha", name_of(fabric::kCutAlphaNames, rp.cut_alpha)}};
  j["roce_np"] = {{"enable", np.enabled},
                  {"min_time_between_cnps", np.min_time_between_cnps},
                  {"cnp_scope", np.per_qp ? "qp" : "port"},
                  {"cnp_form", name_of(fabric::kCnpFormNames, np.form)},
                  {"cnp_pacing", name_of(fabric::kCnpPacingNames, np.pacing)},
                  {"cnp_802p_prio", np.cnp_802p_prio},
                  {"cnp_dscp", np.cnp_dscp}};
  j["readings"] = {{"dce_tcp_g", "weight of the old alpha out of 1024: alpha = (g*alpha + (1024-g)*cnp_seen)/1024"},
                   {"rpg_byte_reset", "64-byte units of frames sent per byte-counter stage (32767 = 2 MiB)"},
                   {"units", "times in us, rates in Mb/s, alpha values out of 1024 (sysfs units)"}};
  return j;
}

namespace {

// The hosts' transport counters, added up.
nlohmann::ordered_json transport_json(const Network& net) {
  std::uint64_t naks = 0, timeouts = 0, oos = 0, dups = 0, rx_drops = 0, misdelivered = 0, reordered = 0, give_ups = 0,
                trimmed = 0, bitmap_drops = 0, cap_stalls = 0, reassembly_peak = 0, late = 0;
  for (std::uint32_t h = 0; h < net.host_count(); ++h) {
    const fabric::HostCounters x = net.host_counters(h);
    naks += x.naks_sent;
    timeouts += x.timeouts;
    oos += x.out_of_sequence_drops;
    dups += x.duplicates;
    rx_drops += x.rx_buffer_drops;
    misdelivered += x.misdelivered;
    late += x.late_discarded;
    reordered += x.reordered_accepted;
    give_ups += x.reorder_give_ups;
    trimmed += x.trimmed_received;
    bitmap_drops += x.bitmap_drops;
    cap_stalls += x.cap_stalls;
    reassembly_peak = std::max(reassembly_peak, x.reassembly_peak);
  }
  // clang-format off
  return {{"naks_sent", naks},
          {"reorder_give_ups", give_ups},
          {"timeouts", timeouts},
          {"out_of_sequence_drops", oos},
          {"duplicates_received", dups},
          {"reordered_accepted", reordered},
          {"rx_buffer_drops", rx_drops},
          {"misdelivered", misdelivered},
          {"late_discarded", late},
          {"trimmed_received", trimmed},
          {"irn_bitmap_drops", bitmap_drops},
          {"irn_cap_stalls", cap_stalls},
          {"reassembly_peak_packets", reassembly_peak}};
  // clang-format on
}

// What the elements on links did: the re-sequencer, the reorder box, the reorder metrics.
void link_elements_json(Network& net, const FabricScenario& s, const ReorderRecorder* reorder,
                        nlohmann::ordered_json& j) {
  if (!net.resequencers().empty()) {
    const auto& r = *net.resequencers().front();
    j["resequencer"] = {{"link", fmt::format("{}:{}", r.sender().owner().name(), r.sender().index())},
                        {"held", r.held_total()},
                        {"give_ups_full", r.give_ups_full()},
                        {"give_ups_timeout", r.give_ups_timeout()},
                        {"max_occupancy", r.max_occupancy()}};
  }
  if (reorder) {
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
  if (!net.impairments().empty()) {
    const auto& b = *net.impairments().front();
    j["impairment"] = {{"link", fmt::format("{}:{}", b.sender().owner().name(), b.sender().index())},
                       {"dropped", b.dropped()},
                       {"corrupted", b.corrupted()},
                       {"duplicated", b.duplicated()},
                       {"held", b.held()},
                       {"unmatched_rules", b.unmatched_rules()}};
  }
}

}  // namespace

nlohmann::ordered_json summary_json(const FabricSetup& setup, const std::string& scenario, Network& net,
                                    const FabricOutcome& o, const fabric::PortCounters& all,
                                    const ReorderRecorder* reorder, const Slowdowns& slow) {
  const FabricScenario& s = setup.value;
  const auto& l = net.ledger();
  nlohmann::ordered_json j;
  j["scenario"] = scenario;
  j["config"] = setup.config.echo();
  const fabric::WireFormat& w = net.wire_format();
  j["network"] = {{"hosts", net.host_count()},
                  {"switches", net.switch_count()},
                  {"wire",
                   {{"header_bytes", w.header_bytes},
                    {"min_frame_bytes", w.min_frame_bytes},
                    {"gap_bytes", w.gap_bytes},
                    {"pfc_frame_bytes", w.pfc_frame_bytes},
                    {"serialization", name_of(fabric::kWireRoundingNames, w.rounding)}}}};
  // Completion times of the flows that finished; none finished: null, not a time of 0.
  const auto fct = [&](Time FabricOutcome::Completions::*t) -> nlohmann::ordered_json {
    if (!o.fct) return nullptr;
    return ns_text((*o.fct).*t);
  };
  // clang-format off
  j["flows"] = {{"count", net.flows().size()},
                {"finished", o.totals.flows_finished},
                {"finish_at", name_of(fabric::kFlowEndNames, net.nic_config().flow_end)},
                {"fct_ns_mean", fct(&FabricOutcome::Completions::mean)},
                {"fct_ns_p50", fct(&FabricOutcome::Completions::p50)},
                {"fct_ns_p99", fct(&FabricOutcome::Completions::p99)},
                {"fct_ns_max", fct(&FabricOutcome::Completions::max)},
                {"retransmitted_packets", o.retransmitted},
                {"slowdown", slowdown_summary(slow)}};
  // clang-format on
  j["totals"] = {{"data_packets_sent", l.data_packets_sent},
                 {"data_bytes_sent", l.data_bytes_sent},
                 {"data_bytes_arrived", l.data_bytes_arrived},
                 {"data_bytes_dropped", l.data_bytes_dropped},
                 {"data_bytes_duplicated", l.data_bytes_duplicated},
                 {"data_bytes_trimmed", l.data_bytes_trimmed},
                 {"data_bytes_in_flight_at_end", o.totals.in_flight_data_bytes},
                 {"control_packets_sent", l.control_packets_sent},
                 {"drops", o.drops},
                 {"lossless_drops", l.lossless_drops},
                 {"ttl_drops", l.dropped(fabric::DropReason::ttl)},
                 {"ecn_marks", o.ecn_marks},
                 {"pfc_pause_frames", o.pfc_frames},
                 {"pfc_resume_frames", o.pfc_resumes},
                 {"paused_ns_all_ports", ns_text(all.paused)},
                 {"max_switch_queue_bytes", all.max_queue_bytes},
                 {"rerouted", all.rerouted},
                 {"trimmed", all.trimmed}};
  for (const auto& r : fabric::kDropReasonNames)
    j["totals"]["drops_by_reason"][std::string(r.name)] = l.dropped(r.value);
  nlohmann::ordered_json cc;
  cc["policy"] = s.nic.congestion_control;
  cc["cnps_sent"] = o.cnps_sent;
  cc["cnps_received"] = o.cnps_received;
  cc["dcqcn"] = dcqcn_echo(s.nic.dcqcn, s.nic.cnp);
  // The window policies' values as their keys take them, the RTT their windows use and
  // the ACK coalescing that applied.
  const auto echo = [](const auto& table, const auto& values) {
    nlohmann::ordered_json e;
    for (const auto& f : table.fields()) e[f.spec.key] = f.get(values);
    return e;
  };
  if (s.nic.congestion_control == "dctcp") cc["dctcp"] = echo(fabric::dctcp_table(), s.nic.dctcp);
  if (s.nic.congestion_control == "timely") cc["timely"] = echo(fabric::timely_table(), s.nic.timely);
  if (s.nic.congestion_control == "swift") cc["swift"] = echo(fabric::swift_table(), s.nic.swift);
  if (s.nic.congestion_control == "hpcc") cc["hpcc"] = echo(fabric::hpcc_table(), s.nic.hpcc);
  if (s.nic.congestion_control == "nscc") cc["nscc"] = echo(fabric::nscc_table(), s.nic.nscc);
  if (fabric::cc_policy(s.nic.congestion_control).feedback & fabric::kFeedbackFromAcks)
    cc["base_rtt_ns"] = ns_text(net.base_rtt());
  cc["ack_every"] = fabric::ack_every_of(s.nic);
  j["congestion_control"] = std::move(cc);
  j["pfc_watchdog"] = {{"storms", o.watchdog_storms}, {"drops", o.watchdog_drops}};
  j["transport"] = transport_json(net);
  if (s.nic.transport == fabric::Transport::irn) {  // its values as the keys took them, and the cap in effect
    j["transport"]["irn"] = echo(fabric::irn_table(), s.nic.irn);
    j["transport"]["irn"]["bdp_cap_packets"] = net.host_count() > 0 ? net.host(0).outstanding_cap() : 0;
  }
  if (s.nic.transport == fabric::Transport::uet) {  // the same, and the timeout in effect
    j["transport"]["uet"] = echo(fabric::uet_table(), s.nic.uet);
    j["transport"]["uet"]["max_outstanding_packets"] = net.host_count() > 0 ? net.host(0).outstanding_cap() : 0;
    j["transport"]["uet"]["rto_ns"] = ns_text(net.uet_rto());
    std::uint64_t pulls = 0, rts = 0;  // RCCC's
    for (std::uint32_t h = 0; h < net.host_count(); ++h) {
      pulls += net.host_counters(h).pulls_sent;
      rts += net.host_counters(h).rts_sent;
    }
    j["transport"]["uet"]["pulls_sent"] = pulls;
    j["transport"]["uet"]["rts_sent"] = rts;
  }
  if (o.deadlock) {
    j["pfc_deadlock"] = {{"detected_at_ns", ns_text(o.deadlock->detected_at)}, {"cycle", o.deadlock->cycle}};
  } else {
    j["pfc_deadlock"] = nullptr;
  }
  link_elements_json(net, s, reorder, j);
  if (!o.collectives.empty()) j["collectives"] = collectives_summary(o.collectives, o.collective_nics);
  j["run"] = {{"simulated_end_ns", ns_text(o.totals.end)},
              {"events", o.totals.events},
              {"packet_hops", o.totals.packet_hops},
              {"peak_packets_alive", o.totals.peak_packets},
              {"fingerprint", fmt::format("{:016x}", o.fingerprint)},
              {"wall_seconds", o.wall_seconds}};
  return j;
}

}  // namespace fabriclab::scenario
