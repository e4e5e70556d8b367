#include "scenario/fabric/slowdown.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "core/stats.h"
#include "scenario/fabric/fabric_scenario.h"
#include "scenario/parameters.h"
#include "scenario/report/files.h"
#include "scenario/report/gnuplot.h"

namespace fabriclab::scenario {

namespace {

SlowdownStats stats_of(const std::vector<double>& v) {
  SlowdownStats s;
  s.count = v.size();
  if (v.empty()) return s;
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  std::vector<double> sorted = v;  // sorted once for the three ranks and the max
  std::sort(sorted.begin(), sorted.end());
  s.p50 = nearest_rank_sorted(sorted, 0.50);
  s.p95 = nearest_rank_sorted(sorted, 0.95);
  s.p99 = nearest_rank_sorted(sorted, 0.99);
  s.max = sorted.back();
  return s;
}

nlohmann::ordered_json json_of(const std::optional<SlowdownStats>& s) {
  if (!s) return nullptr;
  return {{"count", s->count}, {"mean", s->mean}, {"p50", s->p50}, {"p95", s->p95}, {"p99", s->p99}, {"max", s->max}};
}

}  // namespace

std::vector<Bytes> parse_slowdown_buckets(const std::string& text) {
  std::vector<Bytes> edges;
  for (const std::string& item : split_list(text, ',')) {
    if (item.empty()) continue;
    Bytes b;
    try {
      b = parse_bytes(item);
    } catch (const InputError& e) {
      throw InputError(fmt::format("'{}': {}", item, e.what()));
    }
    if (b.count() <= 0 || (!edges.empty() && b <= edges.back()))
      throw InputError(fmt::format("'{}': edges must be positive sizes in ascending order (\"10KB,100KB,1MB\")", item));
    edges.push_back(b);
  }
  return edges;
}

std::string slowdown_buckets_text(const std::vector<Bytes>& edges) {
  std::string s;
  for (const Bytes b : edges) s += (s.empty() ? "" : ",") + to_string(b);
  return s;
}

bool writes_slowdown_table(const FabricScenario& s) {
  return s.output.slowdown || s.traffic.pattern == workload::Pattern::load;
}

Slowdowns slowdowns(const fabric::Network& net, Time warmup, const std::vector<Bytes>& edges, Bytes short_max) {
  Slowdowns r;
  r.warmup = warmup;
  r.short_max = short_max;
  const fabric::FlowTable& flows = net.flows();
  r.ideal.resize(flows.size());
  r.slowdown.assign(flows.size(), -1);
  std::vector<std::uint32_t> counted;  // flows in the statistics
  fabric::Network::IdealCache paths;
  for (std::uint32_t i = 0; i < flows.size(); ++i) {
    const fabric::FlowState& f = flows[i];
    r.ideal[i] = net.ideal_fct(f.spec, &paths);
    if (!f.finished() || r.ideal[i] == Time::max() || r.ideal[i] <= Time()) continue;
    r.slowdown[i] = static_cast<double>((f.finish - f.started).ps()) / static_cast<double>(r.ideal[i].ps());
    if (f.started >= warmup) counted.push_back(i);
  }
  if (counted.empty()) return r;
  const auto values = [&](auto&& keep) {
    std::vector<double> v;
    for (const std::uint32_t i : counted)
      if (keep(i)) v.push_back(r.slowdown[i]);
    return v;
  };
  r.all = stats_of(values([](std::uint32_t) { return true; }));
  const auto short_ones = values(
      [&](std::uint32_t i) { return flows[i].spec.bytes <= static_cast<std::uint64_t>(short_max.count()); });
  if (!short_ones.empty()) r.short_flows = stats_of(short_ones);
  if (!edges.empty()) {
    for (std::size_t b = 0; b <= edges.size(); ++b) {
      const std::uint64_t lo = b == 0 ? 0 : static_cast<std::uint64_t>(edges[b - 1].count());
      const std::uint64_t hi = b == edges.size() ? std::numeric_limits<std::uint64_t>::max()
                                                 : static_cast<std::uint64_t>(edges[b].count());
      std::vector<double> v;
      std::uint64_t largest = 0;
      for (const std::uint32_t i : counted)
        if (const std::uint64_t size = flows[i].spec.bytes; size > lo && size <= hi) {
          v.push_back(r.slowdown[i]);
          largest = std::max(largest, size);
        }
      if (v.empty()) continue;
      r.buckets.push_back({lo + 1, b == edges.size() ? largest : hi, stats_of(v)});
    }
    return r;
  }
  // Twenty buckets of equal count by size (fewer when there are fewer flows).
  std::vector<std::uint32_t> by_size = counted;
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return flows[a].spec.bytes < flows[b].spec.bytes; });
  constexpr std::size_t kBuckets = 20;
  const std::size_t n = by_size.size();
  for (std::size_t k = 0; k < kBuckets; ++k) {
    const std::size_t lo = k * n / kBuckets, hi = (k + 1) * n / kBuckets;
    if (hi == lo) continue;
    std::vector<double> v;
    for (std::size_t j = lo; j < hi; ++j) v.push_back(r.slowdown[by_size[j]]);
    r.buckets.push_back({flows[by_size[lo]].spec.bytes, flows[by_size[hi - 1]].spec.bytes, stats_of(v)});
  }
  return r;
}

std::string slowdown_csv(const Slowdowns& s) {
  std::string out = "bucket,min_bytes,max_bytes,count,mean,p50,p95,p99,max\n";
  for (std::size_t b = 0; b < s.buckets.size(); ++b) {
    const auto& k = s.buckets[b];
    out += fmt::format("{},{},{},{},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f}\n", b, k.min_bytes, k.max_bytes, k.stats.count,
                       k.stats.mean, k.stats.p50, k.stats.p95, k.stats.p99, k.stats.max);
  }
  return out;
}

void slowdown_plot(const std::filesystem::path& dir, const Slowdowns& s) {
  if (s.buckets.empty()) return;
  std::string dat = "# max_bytes p50 p99\n";
  for (const auto& k : s.buckets) dat += fmt::format("{} {:.4f} {:.4f}\n", k.max_bytes, k.stats.p50, k.stats.p99);
  write_file(dir / "slowdown.dat", dat);
  draw_plot(dir, "slowdown",
            "set title 'FCT slowdown by flow size (FCT / ideal FCT)'\nset xlabel 'flow size (bytes, largest of the "
            "bucket)'\nset ylabel 'slowdown'\nset logscale x 10\nset logscale y 10\nset yrange [1:*]\nset grid\nset "
            "key top left\nplot 'slowdown.dat' using 1:2 with linespoints lw 2 title 'p50', 'slowdown.dat' using 1:3 "
            "with linespoints lw 2 title 'p99'\n");
}

nlohmann::ordered_json slowdown_summary(const Slowdowns& s) {
  nlohmann::ordered_json j;
  j["warmup_ns"] = ns_text(s.warmup);
  j["all"] = json_of(s.all);
  j["short_max_bytes"] = s.short_max.count();
  j["short"] = json_of(s.short_flows);
  j["ideal"] = "the flow alone on the idle network: min over routed paths of sum(delay + first frame / rate) + the "
               "other frames / the slowest rate (+ an ACK back when finish_at = last_ack_received)";
  return j;
}

}  // namespace fabriclab::scenario
