#include "scenario/experiments/experiment.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace fabriclab::scenario::experiments {

std::string f1(double x) { return fmt::format("{:.1f}", x); }
std::string f2(double x) { return fmt::format("{:.2f}", x); }
std::string pct(double x) { return fmt::format("{:.0f} %", 100.0 * x); }
double us_of_ns(double ns) { return ns / 1000.0; }

// Gb/s of `bytes` over `ns`.
double gbps(double bytes, double ns) { return ns > 0 ? bytes * 8.0 / ns : 0.0; }

FlowSpan flow_span(const CsvTable& flows) {
  FlowSpan s{1e300, 0, 0};
  for (std::size_t f = 0; f < flows.rows(); ++f) {
    s.first_ns = std::min(s.first_ns, flows.number(f, "start_ns", 1e300));
    s.last_ns = std::max(s.last_ns, flows.number(f, "finish_ns", 0));
    s.bytes += flows.number(f, "bytes");
  }
  return s;
}

FlowStats flow_stats(const Ran& run) {
  const auto& s = run.summary;
  FlowStats f;
  f.flows = s.at("flows").at("count").get<double>();
  f.finished = s.at("flows").at("finished").get<double>();
  f.p50 = metric(s, "flows", "fct_ns_p50") / 1000;
  f.p99 = metric(s, "flows", "fct_ns_p99") / 1000;
  f.max = metric(s, "flows", "fct_ns_max") / 1000;
  const FlowSpan span = flow_span(run.flows);
  const bool done = f.finished == f.flows && span.ns() > 0;
  f.makespan = done ? span.ns() / 1000 : std::nan("");
  f.goodput = done ? gbps(span.bytes, span.ns()) : std::nan("");
  return f;
}

std::uint32_t host_index(const std::string& name) {
  if (name.size() < 2 || name[0] != 'h') throw std::logic_error("not a host name: " + name);
  return static_cast<std::uint32_t>(std::stoul(name.substr(1)));
}

double metric(const nlohmann::json& summary, const char* section, const char* key) {
  const auto& v = summary.at(section).at(key);
  if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();  // none in the run (no flow finished)
  return v.is_string() ? std::stod(v.get<std::string>()) : v.get<double>();
}

// A clustered bar chart of `dat` (first column: labels; then one column per series).
std::string histogram(const std::string& title, const std::string& ylabel, const std::string& dat,
                      const std::vector<std::string>& series, std::size_t rows, const std::string& extra) {
  std::string cols;
  for (std::size_t i = 0; i < series.size(); ++i)
    cols += fmt::format("{}'{}' using {}{} title '{}'", i ? ", " : "", dat, i + 2, i ? "" : ":xtic(1)", series[i]);
  return fmt::format("set title '{}'\nset ylabel '{}'\nset style data histogram\n"
                     "set style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
                     "set xrange [-0.6:{:.1f}]\nset yrange [0:*]\nset grid ytics\nset key top right\n{}plot {}",
                     title, ylabel, static_cast<double>(rows) - 0.4, extra, cols);
}

std::string plot_line(const std::string& img, const std::string& caption) {
  return fmt::format("![{}]({})\n\n", caption, img);
}

}  // namespace fabriclab::scenario::experiments
