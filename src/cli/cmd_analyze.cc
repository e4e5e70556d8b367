// fabriclab analyze CAPTURE... --out DIR [--link-speed RATE] [--bin TIME]: the RoCE
// metrics of pcap / pcapng captures (capture/analyzer.h), written as CSV, JSON, plots and
// report.md (scenario/capture/analysis.h).
#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <numeric>

#include "capture/analyzer.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/units.h"
#include "scenario/capture/analysis.h"

namespace fabriclab::cli {

namespace {

struct AnalyzeArgs {
  std::vector<std::string> captures;
  std::string out;
  std::string link_speed, bin;
  std::uint64_t reorder_window = 65536;
  std::int64_t first_psn = -1;
  bool quiet = false;
};

int run_analyze(const AnalyzeArgs& a) {
  capture::AnalyzeOptions o;
  if (!a.link_speed.empty()) {
    o.link_speed = parse_bit_rate(a.link_speed);
    if (o.link_speed->bps() < capture::kMinLinkSpeedBps)
      throw InputError(fmt::format("analyze: --link-speed must be {} or more",
                                   to_string(BitRate::from_bps(capture::kMinLinkSpeedBps))));
  }
  if (!a.bin.empty()) {
    o.bin = parse_time(a.bin);
    if (o.bin.ps() <= 0) throw InputError("analyze: --bin must be above 0");
  }
  o.reorder_window = a.reorder_window;
  if (a.first_psn >= 0) o.first_psn = static_cast<std::uint32_t>(a.first_psn);
  capture::Analyzer analyzer(o);
  // Progress over the captures' bytes (a pipe counts as it is read: its size is unknown).
  std::vector<std::uint64_t> sizes;
  for (const std::string& c : a.captures) {
    std::error_code ec;
    const auto n = c == "-" ? 0 : std::filesystem::file_size(c, ec);
    sizes.push_back(ec ? 0 : n);
  }
  const double total = static_cast<double>(std::accumulate(sizes.begin(), sizes.end(), std::uint64_t{0}));
  Progress::Options po = Progress::on_stderr("analyze", total, "", a.quiet);
  po.show = [](double done) { return fmt::format("{:.1f} MB read", done / 1e6); };
  Progress progress(std::move(po));
  std::uint64_t before = 0;
  for (std::size_t i = 0; i < a.captures.size(); ++i) {
    capture::read_capture(a.captures[i], analyzer, [&](std::uint64_t read) {
      progress.update(static_cast<double>(before + read), a.captures[i]);
    });
    before += sizes[i];
  }
  progress.finish();
  scenario::write_analysis(analyzer, a.out);
  fmt::print("{}outputs in {}/ (report.md)\n", scenario::analysis_digest(analyzer), a.out);
  return 0;
}

}  // namespace

Command add_analyze_command(CLI::App& app) {
  auto args = std::make_shared<AnalyzeArgs>();
  auto* c = app.add_subcommand(
      "analyze",
      "Analyse RoCEv2/RoCEv1 captures (pcap or pcapng, Ethernet, VLAN, IPv4/IPv6, ERSPAN): per-QP throughput, PSN "
      "gaps, reordering, NAKs, CNPs, ECN marks; PFC pauses per sender and priority; CSV, JSON, plots, report.md");
  c->add_option("captures", args->captures,
                "capture files (each analysed as its own capture point; - is standard input)")
      ->required();
  add_out_option(*c, args->out);
  c->add_option("--link-speed", args->link_speed,
                "the captured link's speed (e.g. 100Gbps): turns PFC quanta into pause times and a timeline");
  c->add_option("--bin", args->bin, "throughput bin (e.g. 10us); default: automatic, at most 256 bins");
  c->add_option("--reorder-window", args->reorder_window,
                "packets a QP's ideal re-sequencer holds before a missing PSN is given up as lost")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 32));
  c->add_option("--first-psn", args->first_psn,
                "every QP's first PSN, when known (a test stream's): PSNs count from it rather than from the first "
                "one captured")
      ->check(CLI::Range(0, 16777215));
  add_quiet_flag(*c, args->quiet);
  return {c, [args]() {
            const std::string first = args->captures.front() == "-" ? "stdin" : args->captures.front();
            args->out = out_or_default(args->out, std::filesystem::path(first).stem().string() + "-analysis");
            return run_analyze(*args);
          }};
}

}  // namespace fabriclab::cli
