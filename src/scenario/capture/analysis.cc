#include "scenario/capture/analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <nlohmann/json.hpp>
#include <numeric>

#include "scenario/report/files.h"
#include "scenario/report/gnuplot.h"
#include "scenario/report/markdown.h"

namespace fabriclab::scenario {

namespace {

namespace fs = std::filesystem;
using capture::Analyzer;
using capture::QpStats;

constexpr std::uint32_t kReorderN[] = {1, 2, 4, 8, 16, 32, 64};
constexpr const char* kNakNames[] = {"naks_psn_sequence", "naks_invalid_request", "naks_remote_access",
                                     "naks_remote_operational", "naks_other"};
constexpr std::size_t kPlottedQps = 8;

// A cell that may hold a comma or a quote (a file name), quoted as RFC 4180 says.
std::string csv_cell(const std::string& v) {
  if (v.find_first_of(",\"\n") == std::string::npos) return v;
  std::string q = "\"";
  for (char ch : v) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

double ns_number(Time t) { return static_cast<double>(t.ps()) / 1e3; }
double share(std::uint64_t a, std::uint64_t b) { return b ? static_cast<double>(a) / static_cast<double>(b) : 0.0; }
std::string maybe_ns(const capture::Intervals& i, Time v) { return i.count ? ns_text(v) : ""; }

std::string qp_label(const Analyzer& a, const QpStats& q) {
  const std::string label = fmt::format("{} > {} qp {}", to_string(q.src), to_string(q.dst), q.qp);
  return a.captures().size() > 1 ? fmt::format("#{} {}", q.capture, label) : label;
}

// The QPs that moved the most payload, for plots and the report, most first (ties: first seen).
std::vector<std::size_t> busiest(const Analyzer& a, std::size_t n) {
  std::vector<std::size_t> order(a.qps().size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return a.qps()[x].payload_bytes > a.qps()[y].payload_bytes; });
  order.resize(std::min(n, order.size()));
  while (!order.empty() && a.qps()[order.back()].payload_bytes == 0) order.pop_back();
  return order;
}

std::string captures_csv(const Analyzer& a) {
  std::string s =
      "capture,file,frames,bytes,roce,roce_v1,erspan,pfc,other,truncated,malformed,short_captured,unknown_opcode,"
      "icrc_ok,icrc_bad,icrc_unchecked,ipv4_checksum_bad,fcs_ok,fcs_bad,timestamps_backwards,start_epoch_ns,duration_"
      "ns,bin_ns,"
      "link_speed_bps\n";
  for (std::size_t i = 0; i < a.captures().size(); ++i) {
    const auto& c = a.captures()[i];
    s += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", i, csv_cell(c.name),
                     c.frames, c.bytes, c.roce, c.roce_v1, c.erspan, c.pfc, c.other, c.truncated, c.malformed,
                     c.short_captured, c.unknown_opcode, c.icrc_ok, c.icrc_bad, c.icrc_unchecked, c.ipv4_checksum_bad,
                     c.fcs_ok, c.fcs_bad, c.timestamps_backwards, c.start_epoch_ns, ns_text(c.duration()),
                     ns_text(c.bin), c.link_speed ? std::to_string(c.link_speed->bps()) : "");
  }
  return s;
}

std::string qps_csv(const Analyzer& a) {
  std::string s =
      "capture,src,dst,qp,first_ns,last_ns,packets,data_packets,payload_bytes,throughput_gbps,acks,rnr_naks";
  for (const char* n : kNakNames) s += fmt::format(",{}", n);
  s += ",read_requests,atomics,unknown_opcode,cnps,cnp_interval_min_ns,cnp_interval_mean_ns,cnp_interval_max_ns,"
       "ect,ce,ce_share,psn_gaps,missing_psns,abandoned_psns,before_start,duplicates,reordered,reordered_ratio,"
       "max_extent,max_late_ns";
  for (std::uint32_t n : kReorderN) s += fmt::format(",reordering_{}", n);
  s += ",read_responses,icrc_bad,becn_acks\n";
  for (const QpStats& q : a.qps()) {
    const auto& m = q.reorder.metrics();
    s += fmt::format("{},{},{},{},{},{},{},{},{},{:.6f},{},{}", q.capture, to_string(q.src), to_string(q.dst), q.qp,
                     ns_text(q.first), ns_text(q.last), q.packets, q.data_packets, q.payload_bytes, q.throughput_gbps(),
                     q.acks, q.rnr_naks);
    for (std::uint64_t n : q.naks) s += fmt::format(",{}", n);
    s += fmt::format(",{},{},{},{},{},{},{},{},{},{:.6f},{},{},{},{},{},{},{:.6f},{},{}", q.read_requests, q.atomics,
                     q.unknown_opcode, q.cnps, maybe_ns(q.cnp, q.cnp.min), maybe_ns(q.cnp, q.cnp.mean()),
                     maybe_ns(q.cnp, q.cnp.max), q.ect, q.ce, share(q.ce, q.data_packets), q.psn_gaps,
                     q.reorder.missing(), q.reorder.abandoned(), q.before_start, m.duplicates, m.reordered, m.ratio(),
                     m.max_extent, ns_text(m.max_late));
    for (std::uint32_t n : kReorderN) s += fmt::format(",{:.6f}", m.n_reordering(n));
    s += fmt::format(",{},{},{}\n", q.read_responses, q.icrc_bad, q.becn_acks);
  }
  return s;
}

std::string throughput_csv(const Analyzer& a) {
  std::string s = "capture,src,dst,qp,t_ns,gbps\n";
  for (const QpStats& q : a.qps()) {
    const Time bin = a.captures()[q.capture].bin;
    for (std::size_t k = 0; k < q.bin_bytes.size(); ++k)
      s += fmt::format("{},{},{},{},{},{:.6f}\n", q.capture, to_string(q.src), to_string(q.dst), q.qp,
                       ns_text(bin * static_cast<std::int64_t>(k)),
                       static_cast<double>(q.bin_bytes[k]) * 8.0 / static_cast<double>(bin.ps()) * 1e3);
  }
  return s;
}

std::string reorder_density_csv(const Analyzer& a) {
  std::string s = "capture,src,dst,qp,kind,value,packets\n";
  for (const QpStats& q : a.qps()) {
    const auto& m = q.reorder.metrics();
    const std::string key = fmt::format("{},{},{},{}", q.capture, to_string(q.src), to_string(q.dst), q.qp);
    for (std::size_t e = 1; e < m.extent_count.size(); ++e)
      if (m.extent_count[e]) s += fmt::format("{},extent,{},{}\n", key, e, m.extent_count[e]);
    for (const auto& [d, k] : m.displacement) s += fmt::format("{},displacement,{},{}\n", key, d, k);
    for (std::size_t o = 0; o < m.occupancy.size(); ++o)
      if (m.occupancy[o]) s += fmt::format("{},occupancy,{},{}\n", key, o, m.occupancy[o]);
  }
  return s;
}

std::string cnp_ports_csv(const Analyzer& a) {
  std::string s = "capture,address,cnps,interval_min_ns,interval_mean_ns,interval_max_ns\n";
  for (const auto& p : a.cnp_ports())
    s += fmt::format("{},{},{},{},{},{}\n", p.capture, to_string(p.address), p.cnps,
                     maybe_ns(p.intervals, p.intervals.min), maybe_ns(p.intervals, p.intervals.mean()),
                     maybe_ns(p.intervals, p.intervals.max));
  return s;
}

std::string cnp_intervals_csv(const Analyzer& a) {
  std::string s = "capture,interval_us,cnp_intervals\n";
  for (std::size_t i = 0; i < a.captures().size(); ++i) {
    const auto& h = a.captures()[i].cnp_interval_us;
    for (std::size_t k = 0; k < h.size(); ++k)
      if (h[k]) s += fmt::format("{},{},{}\n", i, k, h[k]);
  }
  return s;
}

std::string pfc_csv(const Analyzer& a) {
  std::string s = "capture,mac,priority,xoff,xon,quanta,pauses,paused_ns,paused_share\n";
  for (const auto& p : a.pfc()) {
    const Time span = a.captures()[p.capture].duration();
    const bool timed = a.captures()[p.capture].link_speed.has_value();
    s += fmt::format("{},{},{},{},{},{},{},{},{}\n", p.capture, capture::mac_text(p.mac), p.priority, p.xoff, p.xon,
                     p.quanta, timed ? std::to_string(p.pauses) : "", timed ? ns_text(p.paused) : "",
                     timed && span.ps() > 0
                         ? fmt::format("{:.6f}", static_cast<double>(p.paused.ps()) / static_cast<double>(span.ps()))
                         : "");
  }
  return s;
}

std::string pause_timeline_csv(const Analyzer& a) {
  std::string s = "capture,mac,priority,start_ns,end_ns\n";
  for (const auto& i : a.pause_timeline()) {
    const auto& p = a.pfc()[i.pfc];
    s += fmt::format("{},{},{},{},{}\n", p.capture, capture::mac_text(p.mac), p.priority, ns_text(i.start),
                     ns_text(i.end));
  }
  return s;
}

nlohmann::ordered_json intervals_json(const capture::Intervals& i) {
  if (!i.count) return nullptr;
  return {
      {"count", i.count}, {"min_ns", ns_number(i.min)}, {"mean_ns", ns_number(i.mean())}, {"max_ns", ns_number(i.max)}};
}

std::string analysis_json(const Analyzer& a) {
  nlohmann::ordered_json j;
  const auto& o = a.options();
  j["options"] = {{"link_speed", o.link_speed ? nlohmann::ordered_json(to_string(*o.link_speed)) : nullptr},
                  {"bin", o.bin.ps() ? nlohmann::ordered_json(ns_text(o.bin) + "ns") : nlohmann::ordered_json("auto")},
                  {"reorder_window", o.reorder_window}};
  j["captures"] = nlohmann::ordered_json::array();
  for (const auto& c : a.captures())
    j["captures"].push_back({{"file", c.name},
                             {"frames", c.frames},
                             {"bytes", c.bytes},
                             {"start_epoch_ns", c.start_epoch_ns},
                             {"duration_ns", ns_number(c.duration())},
                             {"roce", c.roce},
                             {"roce_v1", c.roce_v1},
                             {"erspan", c.erspan},
                             {"pfc", c.pfc},
                             {"other", c.other},
                             {"truncated", c.truncated},
                             {"malformed", c.malformed},
                             {"short_captured", c.short_captured},
                             {"unknown_opcode", c.unknown_opcode},
                             {"icrc", {{"ok", c.icrc_ok}, {"bad", c.icrc_bad}, {"unchecked", c.icrc_unchecked}}},
                             {"ipv4_checksum_bad", c.ipv4_checksum_bad},
                             {"fcs", {{"ok", c.fcs_ok}, {"bad", c.fcs_bad}}},
                             {"timestamps_backwards", c.timestamps_backwards},
                             {"bin_ns", ns_number(c.bin)},
                             {"link_speed_bps", c.link_speed ? nlohmann::ordered_json(c.link_speed->bps()) : nullptr}});
  j["qps"] = nlohmann::ordered_json::array();
  for (const QpStats& q : a.qps()) {
    const auto& m = q.reorder.metrics();
    nlohmann::ordered_json naks;
    for (std::size_t k = 0; k < 5; ++k) naks[std::string(kNakNames[k]).substr(5)] = q.naks[k];
    j["qps"].push_back({{"capture", q.capture},
                        {"src", to_string(q.src)},
                        {"dst", to_string(q.dst)},
                        {"qp", q.qp},
                        {"packets", q.packets},
                        {"data_packets", q.data_packets},
                        {"read_responses", q.read_responses},
                        {"icrc_bad", q.icrc_bad},
                        {"payload_bytes", q.payload_bytes},
                        {"throughput_gbps", q.throughput_gbps()},
                        {"acks", q.acks},
                        {"rnr_naks", q.rnr_naks},
                        {"naks", naks},
                        {"cnps", q.cnps},
                        {"becn_acks", q.becn_acks},
                        {"cnp_intervals", intervals_json(q.cnp)},
                        {"ce_share", share(q.ce, q.data_packets)},
                        {"psn",
                         {{"gaps", q.psn_gaps},
                          {"missing", q.reorder.missing()},
                          {"abandoned", q.reorder.abandoned()},
                          {"before_start", q.before_start},
                          {"duplicates", m.duplicates},
                          {"reordered", m.reordered},
                          {"reordered_ratio", m.ratio()},
                          {"max_extent", m.max_extent},
                          {"max_late_ns", ns_number(m.max_late)}}}});
  }
  j["cnp_ports"] = nlohmann::ordered_json::array();
  for (const auto& p : a.cnp_ports())
    j["cnp_ports"].push_back({{"capture", p.capture},
                              {"address", to_string(p.address)},
                              {"cnps", p.cnps},
                              {"intervals", intervals_json(p.intervals)}});
  j["pfc"] = nlohmann::ordered_json::array();
  for (const auto& p : a.pfc()) {
    nlohmann::ordered_json e = {{"capture", p.capture},   {"mac", capture::mac_text(p.mac)},
                                {"priority", p.priority}, {"xoff", p.xoff},
                                {"xon", p.xon},           {"quanta", p.quanta}};
    if (a.captures()[p.capture].link_speed) {
      e["pauses"] = p.pauses;
      e["paused_ns"] = ns_number(p.paused);
    }
    j["pfc"].push_back(e);
  }
  j["pause_intervals_not_in_timeline"] = a.pause_intervals_dropped();
  return j.dump(2) + "\n";
}

// The plots; returns the report's lines for those drawn.
std::string draw_plots(const Analyzer& a, const fs::path& dir) {
  std::string lines;
  const auto top = busiest(a, kPlottedQps);
  if (!top.empty()) {
    std::string dat, plot;
    double x_max = 0;  // us: the end of the last bin plotted (a one-bin plot has a range too)
    for (std::size_t n = 0; n < top.size(); ++n) {
      const QpStats& q = a.qps()[top[n]];
      const Time bin = a.captures()[q.capture].bin;
      x_max = std::max(x_max, static_cast<double>((bin * static_cast<std::int64_t>(q.bin_bytes.size())).ps()) / 1e6);
      dat += fmt::format("# {}\n", qp_label(a, q));
      for (std::size_t k = 0; k < q.bin_bytes.size(); ++k)
        dat += fmt::format("{:.3f} {:.6f}\n", static_cast<double>((bin * static_cast<std::int64_t>(k)).ps()) / 1e6,
                           static_cast<double>(q.bin_bytes[k]) * 8.0 / static_cast<double>(bin.ps()) * 1e3);
      dat += "\n\n";
      plot += fmt::format("{}'throughput.dat' index {} using 1:2 with steps lw 2 title '{}'", n ? ", " : "", n,
                          qp_label(a, q));
    }
    write_file(dir / "throughput.dat", dat);
    draw_plot(dir, "throughput",
              fmt::format("set title 'Payload throughput per QP (the busiest)'\nset xlabel 'time (us)'\nset ylabel "
                          "'Gb/s'\nset xrange [0:{:.3f}]\nset yrange [0:*]\nset grid\nset key outside below\nplot ",
                          x_max) +
                  plot);
    lines += "![throughput](throughput.png)\n\n";
  }
  if (!a.pause_timeline().empty()) {
    std::string dat, ytics;
    for (const auto& i : a.pause_timeline())
      dat += fmt::format("{:.3f} {} {:.3f}\n", static_cast<double>(i.start.ps()) / 1e6, i.pfc,
                         static_cast<double>((i.end - i.start).ps()) / 1e6);
    for (std::size_t k = 0; k < a.pfc().size(); ++k)
      ytics += fmt::format("{}'{} p{}' {}", k ? ", " : "", capture::mac_text(a.pfc()[k].mac), a.pfc()[k].priority, k);
    write_file(dir / "pause_timeline.dat", dat);
    draw_plot(dir, "pause_timeline",
              fmt::format("set title 'PFC: paused intervals per sender and priority'\nset xlabel 'time (us)'\n"
                          "set ytics ({})\nset yrange [-1:{}]\nset grid x\nset key off\n"
                          "plot 'pause_timeline.dat' using 1:2:3:(0) with vectors nohead lw 6",
                          ytics, a.pfc().size()));
    lines += "![pause timeline](pause_timeline.png)\n\n";
  }
  std::vector<std::uint64_t> cnp(a.captures().empty() ? 0 : a.captures()[0].cnp_interval_us.size(), 0);
  std::vector<std::uint64_t> extent;
  for (const auto& c : a.captures()) {
    for (std::size_t k = 0; k < c.cnp_interval_us.size(); ++k) cnp[k] += c.cnp_interval_us[k];
    if (extent.size() < c.extent_count.size()) extent.resize(c.extent_count.size(), 0);
    for (std::size_t k = 0; k < c.extent_count.size(); ++k) extent[k] += c.extent_count[k];
  }
  const auto histogram = [&](const std::vector<std::uint64_t>& h, const std::string& stem, const std::string& what,
                             const std::string& xlabel) {
    std::string dat;
    std::size_t lo = h.size(), hi = 0;  // the bars' span, with a bar's room either side
    for (std::size_t k = 0; k < h.size(); ++k) {
      if (!h[k]) continue;
      dat += fmt::format("{} {}\n", k, h[k]);
      lo = std::min(lo, k);
      hi = k;
    }
    if (dat.empty()) return;
    write_file(dir / (stem + ".dat"), dat);
    draw_plot(dir, stem,
              fmt::format("set title '{}'\nset xlabel '{}'\nset ylabel 'count'\nset yrange [0:*]\nset style fill solid "
                          "0.6\nset boxwidth 0.8 relative\nset xrange [{}:{}]\nset grid y\nset key off\n"
                          "plot '{}.dat' using 1:2 with boxes",
                          what, xlabel, static_cast<double>(lo) - 1, hi + 1, stem));
    lines += fmt::format("![{}]({}.png)\n\n", what, stem);
  };
  histogram(cnp, "cnp_intervals", "CNP intervals per QP", "interval (us, 1 us bins; 1000: 1 ms and more)");
  histogram(extent, "reorder_histogram", "Reordered packets by extent (RFC 4737)", "extent (packets)");
  return lines;
}

std::string report_md(const Analyzer& a, const std::string& plots) {
  const auto& o = a.options();
  std::string md = "# Capture analysis\n\n";
  md += fmt::format("Link speed for pause times: {}. Throughput bins: {}. Reorder window: {} packets per QP.\n\n",
                    o.link_speed ? to_string(*o.link_speed)
                                 : "not given (a pcapng capture's own if_speed; PFC counted in quanta only without it)",
                    o.bin.ps() ? ns_text(o.bin) + " ns" : "automatic", o.reorder_window);
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < a.captures().size(); ++i) {
    const auto& c = a.captures()[i];
    rows.push_back({std::to_string(i), c.name, std::to_string(c.frames), std::to_string(c.roce), std::to_string(c.pfc),
                    std::to_string(c.other), fmt::format("{} / {}", c.truncated, c.malformed),
                    std::to_string(c.unknown_opcode),
                    fmt::format("{} / {} / {}", c.icrc_ok, c.icrc_bad, c.icrc_unchecked),
                    fmt::format("{:.3f}", static_cast<double>(c.duration().ps()) / 1e6)});
  }
  md += "## Captures\n\n" +
        markdown_table({"#", "file", "frames", "RoCE", "PFC", "other", "truncated / malformed", "unknown opcode",
                        "ICRC ok / bad / unchecked", "span (us)"},
                       rows) +
        "\n";
  rows.clear();
  // NAKs and CNPs travel against the data, to the sender's QP, whose number the data
  // packets do not carry: they are matched by the address pair, reversed.
  std::map<std::tuple<std::size_t, capture::Address, capture::Address>, std::pair<std::uint64_t, std::uint64_t>> back;
  for (const QpStats& q : a.qps()) {
    auto& [naks, cnps] = back[{q.capture, q.dst, q.src}];
    naks = std::accumulate(std::begin(q.naks), std::end(q.naks), naks);
    cnps += q.cnps;
  }
  for (std::size_t i : busiest(a, 20)) {
    const QpStats& q = a.qps()[i];
    const auto& m = q.reorder.metrics();
    const auto [naks, cnps] = back[{q.capture, q.src, q.dst}];
    rows.push_back({qp_label(a, q), std::to_string(q.data_packets), std::to_string(q.payload_bytes),
                    fmt::format("{:.3f}", q.throughput_gbps()), std::to_string(naks), std::to_string(cnps),
                    fmt::format("{:.4f}", share(q.ce, q.data_packets)),
                    fmt::format("{} / {} / {}", q.psn_gaps, q.reorder.missing(), m.duplicates),
                    std::to_string(m.reordered), fmt::format("{:.6f}", m.ratio()), std::to_string(m.max_extent)});
  }
  md +=
      fmt::format("## QPs moving data (the {} busiest of {}; every QP in qps.csv)\n\nNAKs and CNPs back: those to the "
                  "sender of the same capture (the address pair reversed; a sender's QPs to one receiver share "
                  "them).\n\n",
                  rows.size(), a.qps().size());
  md += rows.empty()
            ? "No data packets.\n\n"
            : markdown_table({"QP", "data packets", "payload bytes", "Gb/s", "NAKs back", "CNPs back", "CE share",
                              "PSN gaps / missing / duplicates", "reordered", "reordered share", "max extent"},
                             rows) +
                  "\n";
  rows.clear();
  for (const auto& p : a.cnp_ports())
    rows.push_back({to_string(p.address), std::to_string(p.cnps), p.intervals.count ? ns_text(p.intervals.min) : "",
                    p.intervals.count ? ns_text(p.intervals.mean()) : "",
                    p.intervals.count ? ns_text(p.intervals.max) : ""});
  md += "## CNPs per sending port\n\n";
  md += rows.empty() ? "No CNPs.\n\n"
                     : markdown_table({"sent to", "CNPs", "min interval (ns)", "mean (ns)", "max (ns)"}, rows) + "\n";
  rows.clear();
  for (const auto& p : a.pfc()) {
    const bool timed = a.captures()[p.capture].link_speed.has_value();
    rows.push_back({capture::mac_text(p.mac), std::to_string(p.priority), std::to_string(p.xoff), std::to_string(p.xon),
                    std::to_string(p.quanta), timed ? std::to_string(p.pauses) : "", timed ? ns_text(p.paused) : ""});
  }
  md += "## PFC per sender and priority\n\n";
  md += rows.empty()
            ? "No PFC frames.\n\n"
            : markdown_table({"sender MAC", "priority", "XOFF", "XON", "quanta", "pauses", "paused (ns)"}, rows) + "\n";
  if (!plots.empty()) md += "## Plots\n\n" + plots;
  return md;
}

}  // namespace

void write_analysis(const capture::Analyzer& a, const fs::path& dir) {
  prepare_outputs(dir, "report.md");
  write_file(dir / "captures.csv", captures_csv(a));
  write_file(dir / "qps.csv", qps_csv(a));
  write_file(dir / "throughput.csv", throughput_csv(a));
  write_file(dir / "reorder_density.csv", reorder_density_csv(a));
  write_file(dir / "cnp_ports.csv", cnp_ports_csv(a));
  write_file(dir / "cnp_intervals.csv", cnp_intervals_csv(a));
  write_file(dir / "pfc.csv", pfc_csv(a));
  write_file(dir / "pause_timeline.csv", pause_timeline_csv(a));
  write_file(dir / "analysis.json", analysis_json(a));
  const std::string plots = draw_plots(a, dir);
  write_file(dir / "report.md", report_md(a, plots));
}

std::string analysis_digest(const capture::Analyzer& a) {
  std::string s;
  for (const auto& c : a.captures()) {
    s += fmt::format("{}: {} frames over {:.3f} us: {} RoCE, {} PFC, {} other", c.name, c.frames,
                     static_cast<double>(c.duration().ps()) / 1e6, c.roce, c.pfc, c.other);
    if (c.truncated || c.malformed) s += fmt::format(", {} truncated, {} malformed", c.truncated, c.malformed);
    if (c.icrc_bad) s += fmt::format(", {} bad ICRC", c.icrc_bad);
    s += "\n";
  }
  std::size_t moving = 0;
  for (const auto& q : a.qps()) moving += q.data_packets > 0;
  s += fmt::format("{} QPs ({} moving data), {} CNP destinations, {} PFC sender/priority pairs\n", a.qps().size(),
                   moving, a.cnp_ports().size(), a.pfc().size());
  return s;
}

}  // namespace fabriclab::scenario
