#include "workload/load.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>

#include "core/csv.h"
#include "core/error.h"
#include "core/input.h"
#include "workload/traffic.h"

namespace fabriclab::workload {

namespace {

constexpr std::uint64_t kCdfBytes = std::uint64_t{1} << 20;  // a CDF of a million bytes is not one
constexpr double kMaxSize = 9007199254740992.0;              // 2^53 bytes: exact in a double

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// A finite number, the whole of `text`.
bool parse_number(std::string_view text, double& out) {
  if (text.empty()) return false;
  if (text.front() == '+') text.remove_prefix(1);
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && p == text.data() + text.size() && std::isfinite(out);
}

}  // namespace

Cdf Cdf::parse(std::string_view text, const std::string& name) {
  Cdf c;
  std::size_t last_line = 0;  // of the last point
  std::size_t line_no = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    const std::string where = fmt::format("{}:{}", name, line_no);
    // Two fields, split at spaces, tabs or one comma.
    std::vector<std::string_view> fields;
    std::size_t i = 0;
    while (i < line.size() && fields.size() <= 2) {
      std::size_t j = i;
      while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != ',') ++j;
      if (j > i) fields.push_back(line.substr(i, j - i));
      i = j;
      bool comma = false;
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || (line[i] == ',' && !comma)))
        comma |= line[i++] == ',';
      if (comma && i == line.size()) fields.push_back({});  // "100," : a missing field
    }
    if (fields.size() != 2)
      throw InputError(
          fmt::format("{}: expected two numbers, a size in bytes and a cumulative probability, got '{}'", where, line));
    Point pt;
    if (!parse_number(fields[0], pt.size) || pt.size < 0 || pt.size > kMaxSize)
      throw InputError(fmt::format("{}: size '{}': expected a number of bytes, from 0 to 2^53", where, fields[0]));
    if (!parse_number(fields[1], pt.p) || pt.p < 0)
      throw InputError(
          fmt::format("{}: probability '{}': expected a number from 0 to 1 (or a percentage)", where, fields[1]));
    if (!c.points_.empty()) {
      const Point& last = c.points_.back();
      if (pt.size < last.size)
        throw InputError(fmt::format("{}: size {} is below the line before's ({}): sizes must not decrease", where,
                                     fields[0], last.size));
      if (pt.p < last.p)
        throw InputError(fmt::format("{}: probability {} is below the line before's ({}): a cumulative "
                                     "probability must not decrease",
                                     where, fields[1], last.p));
    }
    c.points_.push_back(pt);
    last_line = line_no;
  }
  if (c.points_.empty()) throw InputError(name + ": no points (expected lines 'SIZE PROBABILITY')");
  const double top = c.points_.back().p;
  if (top != 1.0 && top != 100.0)
    throw InputError(fmt::format("{}:{}: the last probability is {}: a CDF ends at 1 (or at 100, in percent)", name,
                                 last_line, top));
  for (Point& pt : c.points_) pt.p /= top;  // (none above top: they never decrease; top / top is 1)
  if (c.points_.back().size < 1)
    throw InputError(fmt::format("{}:{}: the largest size is {}: flows carry at least one byte", name, last_line,
                                 c.points_.back().size));
  if (c.mean() < 1)
    throw InputError(fmt::format("{}: the mean size is {:g} bytes: every flow carries one byte at least, so a load "
                                 "drawn from it would offer more than asked",
                                 name, c.mean()));
  return c;
}

Cdf Cdf::read(const std::string& path) { return parse(read_input(path, "size distribution", kCdfBytes), path); }

double Cdf::mean() const {
  // A point mass at the first size, then each stretch uniform between its ends.
  double m = points_.front().size * points_.front().p;
  for (std::size_t k = 1; k < points_.size(); ++k)
    m += (points_[k - 1].size + points_[k].size) / 2 * (points_[k].p - points_[k - 1].p);
  return m;
}

std::uint64_t Cdf::size_at(double u) const {
  double x = points_.front().size;
  if (u >= points_.front().p) {
    // The first stretch whose top is above u (an empty stretch, b.p == a.p, never is).
    const auto b = std::upper_bound(points_.begin(), points_.end(), u,
                                    [](double v, const Point& pt) { return v < pt.p; });
    if (b == points_.end()) {
      x = points_.back().size;
    } else {
      const Point& a = *(b - 1);
      x = a.size + (b->size - a.size) * (u - a.p) / (b->p - a.p);
    }
  }
  const auto n = static_cast<std::uint64_t>(std::max(x, 0.0));
  return std::max<std::uint64_t>(n, 1);
}

const params::Table<LoadSpec>& load_table() {
  static const auto table = [] {
    using L = LoadSpec;
    params::Table<L> t;
    t.choice("kind", &L::kind, kLoadKindNames,
             "poisson (flows of sizes from a CDF at Poisson arrivals) or incast (bursts of fan_in senders to one "
             "receiver)")
        .text("cdf", &L::cdf,
              "poisson: the flow-size distribution, a file of 'SIZE PROBABILITY' lines (relative to the scenario; "
              "shipped: examples/cdf/)")
        .real("load", &L::load, "poisson: the fraction of every host link offered (0.3 = 30 %)", "0", "1")
        .choice("pairs", &L::pairs, kPairsNames,
                "poisson: destinations: uniform (any other host), within / between (the sender's group / another "
                "group), matrix (weights of load.N.matrix)")
        .integer("groups", &L::groups, "within, between: hosts split by index into this many equal groups", 2, 65536)
        .text("matrix", &L::matrix, "matrix: a traffic matrix, CSV src,dst,bytes (relative to the scenario)")
        .time("start", &L::start, "the load's first arrivals", "0ps", "1000s")
        .time("duration", &L::duration, "arrivals from start for this long", "1ns", "1000s")
        .time("every", &L::every, "incast: a burst this often (the first at start)", "1ns", "1000s")
        .integer("fan_in", &L::fan_in, "incast: senders per burst, picked at random", 1, 65535)
        .bytes("bytes", &L::bytes, "incast: bytes each sender sends", "1B")
        .integer("receiver", &L::receiver, "incast: the receiving host (-1: one at random per burst)", -1, 65535)
        .integer("priority", &L::priority, "priority (802.1p) of the load's flows", 0, 7)
        .integer("qps", &L::qps, "QPs per flow; its bytes are split among them", 1, 65536);
    return t;
  }();
  return table;
}

TrafficMatrix read_traffic_matrix(const std::string& path, std::uint32_t hosts) {
  InputStream in(path, "traffic matrix", kTableBytes);
  csv::Reader reader(in, path, {.comments = true, .trim = true});
  reader.expect_header({"src", "dst", "bytes"});
  std::map<std::pair<std::uint32_t, std::uint32_t>, double> sum;
  for (csv::Row row; reader.next(row);) {
    const std::string where = reader.where(row);
    const std::uint32_t s = parse_host(row.fields[0], where, "src", hosts),
                        d = parse_host(row.fields[1], where, "dst", hosts);
    double b = 0;
    if (!parse_number(row.fields[2], b) || b < 0 || b > 1e18)
      throw InputError(
          fmt::format("{}: column bytes: expected a number from 0 to 1e18, got '{}'", where, row.fields[2]));
    if (s == d && b > 0) throw InputError(where + ": src and dst are the same host");
    if (b > 0) sum[{s, d}] += b;
  }
  TrafficMatrix m;
  for (const auto& [k, b] : sum) m.entries.push_back({k.first, k.second, b});
  if (m.entries.empty()) throw InputError(path + ": no pair carries bytes");
  return m;
}

// One sending host of one load: its stream, its next arrival, how it picks destinations.
struct LoadGenerator::Source {
  RandomStream rng{0, ""};
  double per_ps = 0;  // arrivals per ps
  Time next = Time::max();
  // matrix: the destinations and their cumulative weights, ascending
  std::vector<std::uint32_t> dsts;
  std::vector<double> cumulative;
};

LoadGenerator::LoadGenerator(std::vector<Resolved> loads, std::vector<BitRate> host_rates, std::uint64_t seed,
                             const std::function<std::string(std::size_t)>& where)
    : loads_(std::move(loads)), rates_(std::move(host_rates)) {
  const auto hosts = static_cast<std::uint32_t>(rates_.size());
  if (hosts < 2) throw InputError("traffic.pattern = \"load\" needs at least two hosts");
  sources_.resize(loads_.size());
  double expected = 0;  // flows, all loads
  for (std::uint32_t i = 0; i < loads_.size(); ++i) {
    const LoadSpec& l = loads_[i].spec;
    const std::string key = (where ? where(i) + ": " : std::string()) + fmt::format("load.{}", i);
    const double duration_ps = static_cast<double>(l.duration.ps());
    if (l.kind == LoadKind::incast) {
      expected += std::ceil(duration_ps / static_cast<double>(l.every.ps())) * l.fan_in;
      if (l.fan_in > hosts - 1)
        throw InputError(fmt::format("{}.fan_in = {}: only {} other hosts", key, l.fan_in, hosts - 1));
      if (l.receiver >= static_cast<std::int64_t>(hosts))
        throw InputError(fmt::format("{}.receiver = {}: not a host (0..{})", key, l.receiver, hosts - 1));
      sources_[i].resize(1);
      sources_[i][0].rng = RandomStream(seed, fmt::format("traffic/load/{}", i));
      queue_.push({l.start, i, 0});
      continue;
    }
    const double mean = loads_[i].cdf.mean();
    if (l.pairs == Pairs::within || l.pairs == Pairs::between) {
      if (hosts % l.groups != 0)
        throw InputError(
            fmt::format("{}.groups = {}: the {} hosts do not split into equal groups", key, l.groups, hosts));
      if (l.pairs == Pairs::within && hosts / l.groups < 2)
        throw InputError(
            fmt::format("{}.pairs = within: groups of {} host(s) have no one to send to", key, hosts / l.groups));
    }
    // matrix: every host's share, scaled so that the busiest host link (out or in, as a
    // fraction of its rate) is offered `load`.
    std::vector<double> row(hosts, 0), col(hosts, 0);
    double scale = 0;  // bits per second per byte of weight
    if (l.pairs == Pairs::matrix) {
      for (const auto& e : loads_[i].matrix.entries) {
        if (e.src >= hosts || e.dst >= hosts)
          throw InputError(
              fmt::format("{}.matrix: host {} is not in the topology ({} hosts)", key, std::max(e.src, e.dst), hosts));
        row[e.src] += e.bytes;
        col[e.dst] += e.bytes;
      }
      double busiest = 0;
      for (std::uint32_t h = 0; h < hosts; ++h)
        busiest = std::max(busiest, std::max(row[h], col[h]) / static_cast<double>(rates_[h].bps()));
      scale = l.load / busiest;
    }
    sources_[i].resize(hosts);
    for (std::uint32_t h = 0; h < hosts; ++h) {
      Source& s = sources_[i][h];
      s.rng = RandomStream(seed, fmt::format("traffic/load/{}/{}", i, h));
      const double bps = l.pairs == Pairs::matrix ? scale * row[h] : l.load * static_cast<double>(rates_[h].bps());
      s.per_ps = bps / (8 * mean) / 1e12;
      expected += s.per_ps * duration_ps;
      if (l.pairs == Pairs::matrix) {
        double c = 0;
        for (const auto& e : loads_[i].matrix.entries)
          if (e.src == h) {
            c += e.bytes;
            s.dsts.push_back(e.dst);
            s.cumulative.push_back(c);
          }
      }
      s.next = l.start;  // the first arrival: one gap after start
      advance(i, h);
    }
  }
  // Every flow keeps a row of the flow table for the outputs (its QPs only while it
  // runs): a load of hundreds of millions is a mistake (a duration in seconds where
  // milliseconds were meant), refused before it is made.
  expected_ = expected;
  if (expected > kMaxLoadFlows)
    throw InputError(
        fmt::format("{}the [[load]] entries would make about {:.3g} flows, more than a run holds ({:.3g}): "
                    "shorten their duration or lower their load",
                    where && !loads_.empty() ? where(0) + ": " : "", expected, kMaxLoadFlows));
}

LoadGenerator::~LoadGenerator() = default;

double LoadGenerator::flows_per_second() const {
  double rate = 0;
  for (std::size_t i = 0; i < loads_.size(); ++i) {
    const LoadSpec& l = loads_[i].spec;
    if (l.kind == LoadKind::incast) rate += l.fan_in / (static_cast<double>(l.every.ps()) / 1e12);
    else
      for (const Source& s : sources_[i]) rate += s.per_ps * 1e12;
  }
  return rate;
}

double LoadGenerator::arrival_rate(std::size_t i, std::uint32_t h) const {
  if (loads_[i].spec.kind != LoadKind::poisson) return 0;
  return sources_[i][h].per_ps * 1e12;
}

void LoadGenerator::advance(std::uint32_t load, std::uint32_t host) {
  Source& s = sources_[load][host];
  const LoadSpec& l = loads_[load].spec;
  if (s.per_ps <= 0) return;
  const double gap = -std::log1p(-s.rng.uniform()) / s.per_ps;  // exponential, in ps
  const double at = static_cast<double>(s.next.ps()) + std::round(gap);
  const double end = static_cast<double>(l.start.ps()) + static_cast<double>(l.duration.ps());
  if (at >= end) return;  // the load has ended for this host
  s.next = Time::from_ps(static_cast<std::int64_t>(at));
  queue_.push({s.next, load, host});
}

void LoadGenerator::burst(std::uint32_t load, Time at) {
  const LoadSpec& l = loads_[load].spec;
  Source& s = sources_[load][0];
  const auto hosts = static_cast<std::uint32_t>(rates_.size());
  const std::uint32_t receiver = l.receiver >= 0 ? static_cast<std::uint32_t>(l.receiver)
                                                 : static_cast<std::uint32_t>(s.rng.below(hosts));
  // fan_in distinct senders among the others: a partial Fisher-Yates shuffle.
  std::vector<std::uint32_t> others;
  others.reserve(hosts - 1);
  for (std::uint32_t h = 0; h < hosts; ++h)
    if (h != receiver) others.push_back(h);
  for (std::uint32_t k = 0; k < l.fan_in; ++k) std::swap(others[k], others[k + s.rng.below(others.size() - k)]);
  std::sort(others.begin(), others.begin() + l.fan_in);
  ready_.clear();
  ready_next_ = 0;
  for (std::uint32_t k = 0; k < l.fan_in; ++k)
    ready_.push_back({.src = others[k],
                      .dst = receiver,
                      .bytes = static_cast<std::uint64_t>(l.bytes.count()),
                      .start = at,
                      .priority = l.priority,
                      .qps = l.qps});
  const Time next = at + l.every;
  if (next < l.start + l.duration) queue_.push({next, load, 0});
}

bool LoadGenerator::next(fabric::FlowSpec& out) {
  while (ready_next_ >= ready_.size()) {
    if (queue_.empty()) return false;
    const Pending p = queue_.top();
    queue_.pop();
    const LoadSpec& l = loads_[p.load].spec;
    if (l.kind == LoadKind::incast) {
      burst(p.load, p.at);
      continue;
    }
    Source& s = sources_[p.load][p.host];
    const auto hosts = static_cast<std::uint32_t>(rates_.size());
    std::uint32_t dst = 0;
    switch (l.pairs) {
      case Pairs::uniform: {
        dst = static_cast<std::uint32_t>(s.rng.below(hosts - 1));
        if (dst >= p.host) ++dst;
        break;
      }
      case Pairs::within: {
        const std::uint32_t size = hosts / l.groups, first = p.host / size * size;
        dst = first + static_cast<std::uint32_t>(s.rng.below(size - 1));
        if (dst >= p.host) ++dst;
        break;
      }
      case Pairs::between: {
        const std::uint32_t size = hosts / l.groups, first = p.host / size * size;
        dst = static_cast<std::uint32_t>(s.rng.below(hosts - size));
        if (dst >= first) dst += size;
        break;
      }
      case Pairs::matrix: {
        const double u = s.rng.uniform() * s.cumulative.back();
        const auto at = std::upper_bound(s.cumulative.begin(), s.cumulative.end(), u);
        dst = s.dsts[std::min<std::size_t>(static_cast<std::size_t>(at - s.cumulative.begin()), s.dsts.size() - 1)];
        break;
      }
    }
    const std::uint64_t size = loads_[p.load].cdf.size_at(s.rng.uniform());
    ready_.assign(1, {.src = p.host, .dst = dst, .bytes = size, .start = p.at, .priority = l.priority, .qps = l.qps});
    ready_next_ = 0;
    advance(p.load, p.host);
  }
  out = ready_[ready_next_++];
  return true;
}

}  // namespace fabriclab::workload
