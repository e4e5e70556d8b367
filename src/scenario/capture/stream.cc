#include "scenario/capture/stream.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "capture/analyzer.h"
#include "core/error.h"
#include "core/units.h"
#include "scenario/capture/analysis.h"
#include "scenario/fabric/fabric_scenario.h"
#include "scenario/report/files.h"
#include "scenario/report/markdown.h"

namespace fabriclab::scenario {

namespace {

namespace fs = std::filesystem;

// The generator and the simulated device: h1 -> sw0 -> h0, UC (nothing comes back), ECN
// off, the reorder box on h1's link; captured as sent (h1), as the device receives it
// (sw0 port 1) and as the device sends it on (h0's port, after a re-sequencer on sw0:0).
std::string stream_scenario(const StreamSpec& s, Bytes per_qp) {
  return fmt::format(R"([sim]
seed = {}

[topology]
kind = "single_switch"
hosts = 2
host_rate = "{}"
link_delay = "1us"

[switch.wred]
ecn = "ecn_none"

[nic]
transport = "uc"
mtu = "{}"

[traffic]
pattern = "incast"
bytes = "{}B"
qps_per_flow = {}
priority = {}

[impair]
link = "h1:0"

[output]
pcap = "h1:0,sw0:1,h0:0"
pcap_fcs = {}
pcap_psn_offset = {}
)",
                     s.seed, s.rate, s.mtu, per_qp.count() * s.qps, s.qps, s.priority, s.fcs ? "true" : "false",
                     s.first_psn);
}

// The stream's QPs start at a known PSN: a first packet held or lost is reordered or
// missing, not "before the start".
capture::Analyzer analyse(const fs::path& file, std::uint32_t first_psn) {
  capture::AnalyzeOptions o;
  o.first_psn = first_psn;
  capture::Analyzer a(o);
  capture::read_capture(file.string(), a);
  return a;
}

std::uint32_t max_extent(const capture::Analyzer& a) {
  std::uint32_t m = 0;
  for (const auto& q : a.qps()) m = std::max(m, q.reorder.metrics().max_extent);
  return m;
}

void move_file(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec) throw InputError(fmt::format("{}: cannot write it: {}", to.string(), ec.message()));
}

std::string qp_table(const capture::Analyzer& a) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& q : a.qps()) {
    if (q.data_packets == 0) continue;
    const auto& m = q.reorder.metrics();
    rows.push_back({std::to_string(q.qp), std::to_string(q.data_packets), std::to_string(q.payload_bytes),
                    std::to_string(q.psn_gaps), std::to_string(q.reorder.missing()), std::to_string(m.duplicates),
                    std::to_string(m.reordered), std::to_string(m.max_extent), ns_text(m.max_late)});
  }
  return markdown_table({"QP", "data packets", "payload bytes", "PSN gaps", "missing", "duplicates", "reordered",
                         "max extent", "max late (ns)"},
                        rows);
}

}  // namespace

StreamResult write_stream(const StreamSpec& spec, const fs::path& dir) {
  if (spec.qps == 0 || spec.qps > 65536)
    throw InputError(fmt::format("stream: --qps {} is outside 1..65536", spec.qps));
  Bytes per_qp;
  try {
    per_qp = parse_bytes(spec.bytes);
  } catch (const InputError& e) {
    throw InputError(fmt::format("stream: --bytes: {}", e.what()));
  }
  if (per_qp.count() <= 0) throw InputError("stream: --bytes must be above 0");
  // The generator's own shape and captures (fixed), and the keys its options set: a --set
  // of them would leave stream.md describing files made otherwise.
  static constexpr std::pair<const char*, const char*> kOwn[] = {{"topology.kind", "fixed"},
                                                                 {"topology.hosts", "fixed"},
                                                                 {"traffic.pattern", "fixed"},
                                                                 {"output.pcap", "fixed"},
                                                                 {"nic.transport", "fixed (UC)"},
                                                                 {"output.pcap_fcs", "--fcs"},
                                                                 {"output.pcap_psn_offset", "--first-psn"},
                                                                 {"sim.seed", "--seed"},
                                                                 {"traffic.bytes", "--bytes"},
                                                                 {"traffic.qps_per_flow", "--qps"},
                                                                 {"nic.mtu", "--mtu"},
                                                                 {"topology.host_rate", "--rate"},
                                                                 {"traffic.priority", "--priority"}};
  for (const std::string& set : spec.sets)
    for (const auto& [key, how] : kOwn)
      if (set.starts_with(std::string(key) + "="))
        throw InputError(std::string(how).starts_with("--")
                             ? fmt::format("stream: --set {}: {} is the stream's {} option", set, key, how)
                             : fmt::format("stream: --set {}: {} is {} by the stream (h1 -> sw0 -> h0, captured at "
                                           "h1, sw0:1 and h0)",
                                           set, key, how));
  const FabricSetup setup = fabric_parameters().resolve_text(stream_scenario(spec, per_qp), "fabriclab stream",
                                                             spec.sets);
  prepare_outputs(dir, "stream.md");
  const fs::path run = dir / "run";
  run_fabric(setup, {.scenario = "fabriclab stream", .out_dir = run.string(), .progress = spec.progress});
  move_file(run / "sw0-p1.pcap", dir / "stream.pcap");
  move_file(run / "h1-p0.pcap", dir / "stream-in-order.pcap");
  move_file(run / "h0-p0.pcap", dir / "device-output.pcap");

  const capture::Analyzer stream = analyse(dir / "stream.pcap", spec.first_psn);
  write_analysis(stream, dir / "expected");
  const capture::Analyzer device = analyse(dir / "device-output.pcap", spec.first_psn);
  const capture::Analyzer sent = analyse(dir / "stream-in-order.pcap", spec.first_psn);
  StreamResult r{stream.captures()[0].frames, device.captures()[0].frames, max_extent(stream), max_extent(device)};

  const auto& c = setup.config;
  std::string md = "# A RoCEv2 test stream\n\n";
  md += fmt::format(
      "{} QP(s) of {} each from 10.0.0.2 to 10.0.0.1, UC RDMA WRITEs of {} payload per packet at {} on priority {}, "
      "the first PSN {}, frames {} their FCS; the reorder box: rules `{}`, reorder probability {} by {} packet(s), "
      "drop {}, duplicate {}, corrupt {} (seed {}).\n\n",
      spec.qps, spec.bytes, c.shown("nic.mtu"), c.shown("topology.host_rate"), spec.priority, spec.first_psn,
      spec.fcs ? "with" : "without", c.shown("impair.rules"), c.shown("impair.reorder_probability"),
      c.shown("impair.reorder_packets"), c.shown("impair.drop_probability"), c.shown("impair.duplicate_probability"),
      c.shown("impair.corrupt_probability"), spec.seed);
  md += fmt::format("| file | frames | what |\n|---|---|---|\n"
                    "| stream.pcap | {} | the stream as a device receives it (the box's rules applied) |\n"
                    "| stream-in-order.pcap | {} | as sent |\n"
                    "| device-output.pcap | {} | what the simulated device sent on (re-sequencer: {}) |\n\n",
                    r.frames, sent.captures()[0].frames, r.device_frames,
                    c.text("reseq.link").empty()
                        ? "none"
                        : fmt::format("{} packets, {} timeout", c.shown("reseq.buffer"), c.shown("reseq.timeout")));
  md += "## What a capture of the stream shows\n\n`fabriclab analyze` of stream.pcap (all of it in expected/):\n\n" +
        qp_table(stream) + "\n";
  md += "## What the simulated device sent on\n\n" + qp_table(device) + "\n";
  md += fmt::format(
      "A device has re-assembled the stream when the analysis of its output shows nothing reordered: the stream's "
      "largest reorder extent is {} packets here{}.\n\n",
      r.max_extent,
      r.device_max_extent == 0 && r.max_extent > 0 ? ", and the simulated device absorbed it"
      : r.max_extent > 0
          ? fmt::format(", and the simulated device gave up (its output: extent {})", r.device_max_extent)
          : "");
  md += "## The loop with a real device\n\n"
        "```\n"
        "tcpreplay -i IF_TO_DEVICE stream.pcap          # at its timestamps (line rate); --topspeed for as fast as "
        "possible\n"
        "tcpdump -i IF_FROM_DEVICE -w out.pcap          # the device's output, beside it\n"
        "fabriclab analyze out.pcap --out analysis      # compare analysis/qps.csv with expected/qps.csv\n"
        "```\n\n"
        "Streams with a growing extent (`--set impair.rules=\"hold 0/100 K\"` for K = 1, 2, 4, ...) find the "
        "extent at which the device's re-assembly gives up: the first whose output still shows reordering, NAKs or "
        "missing PSNs.\n";
  write_file(dir / "stream.md", md);
  return r;
}

}  // namespace fabriclab::scenario
