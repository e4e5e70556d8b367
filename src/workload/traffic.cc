#include "workload/traffic.h"

#include <fmt/format.h>

#include <charconv>
#include <string_view>
#include <fstream>
#include <numeric>

#include "core/csv.h"
#include "core/error.h"
#include "core/input.h"
#include "core/random.h"

namespace fabriclab::workload {

Pattern parse_pattern(const std::string& name) { return params::parse_enum(kPatternNames, name, "traffic pattern"); }

std::vector<fabric::FlowSpec> training_flows(const TrafficSpec& t, std::uint32_t n);

std::vector<fabric::FlowSpec> make_flows(const TrafficSpec& t, std::uint32_t hosts, std::uint64_t seed) {
  std::vector<fabric::FlowSpec> out;
  if (t.pattern == Pattern::none) return out;
  auto flow = [&](std::uint32_t s, std::uint32_t d) {
    out.push_back({.src = s,
                   .dst = d,
                   .bytes = static_cast<std::uint64_t>(t.bytes.count()),
                   .start = t.start,
                   .priority = t.priority,
                   .qps = t.qps_per_flow});
  };
  if (t.pattern != Pattern::flows && t.bytes.count() <= 0) throw InputError("traffic.bytes must be positive");
  if (hosts < 2) throw InputError("traffic needs at least two hosts");
  switch (t.pattern) {
    case Pattern::incast: {
      if (t.incast_receiver >= hosts)
        throw InputError("traffic.incast.receiver " + std::to_string(t.incast_receiver) + " is not a host (0.." +
                         std::to_string(hosts - 1) + ")");
      const std::uint32_t senders = t.incast_senders == 0 ? hosts - 1 : t.incast_senders;
      if (senders > hosts - 1)
        throw InputError("traffic.incast.senders " + std::to_string(senders) + ": only " + std::to_string(hosts - 1) +
                         " other hosts");
      for (std::uint32_t h = 0, n = 0; n < senders; ++h)
        if (h != t.incast_receiver) {
          flow(h, t.incast_receiver);
          ++n;
        }
      break;
    }
    case Pattern::permutation: {
      std::vector<std::uint32_t> to(hosts);
      std::iota(to.begin(), to.end(), 0u);
      RandomStream rng(seed, "traffic/permutation");
      for (std::uint32_t i = hosts - 1; i > 0; --i) std::swap(to[i], to[rng.below(i)]);  // Sattolo
      for (std::uint32_t h = 0; h < hosts; ++h) flow(h, to[h]);
      break;
    }
    case Pattern::all_to_all:
      for (std::uint32_t s = 0; s < hosts; ++s)
        for (std::uint32_t d = 0; d < hosts; ++d)
          if (s != d) flow(s, d);
      break;
    case Pattern::flows:
      if (t.flows_file.empty()) throw InputError("traffic.pattern = \"flows\" needs traffic.flows_file");
      return read_flows_csv(t.flows_file, hosts);
    case Pattern::training: return training_flows(t, hosts);
    case Pattern::none: break;
    case Pattern::load:
      throw InputError("traffic.pattern = \"load\": its flows come from the [[load]] entries (workload/load.h)");
  }
  return out;
}

TrainingLayout training_layout(const TrafficSpec& t, std::uint32_t hosts) {
  TrainingLayout l;
  l.gpus = hosts;
  l.iterations = t.iterations;
  l.distribution = t.distribution_bytes.count() > 0;
  return l;
}

bool training_on_engine(const TrafficSpec& t) {
  return t.pattern == Pattern::training && t.training_algorithm != "flows";
}

std::vector<fabric::FlowSpec> training_flows(const TrafficSpec& t, std::uint32_t n) {
  if (n < 2) throw InputError("traffic.pattern = \"training\" needs at least two hosts (GPUs)");
  if (t.iterations == 0) throw InputError("traffic.training.iterations must be at least 1");
  if (t.alltoall_bytes.count() > 0 && !training_on_engine(t))
    throw InputError("traffic.training.alltoall_bytes needs traffic.training.algorithm set to a planner algorithm "
                     "(the all-to-all runs offloaded, after the allreduce)");
  if (training_on_engine(t)) {  // the distribution only: the allreduce is a collective
    std::vector<fabric::FlowSpec> out;
    if (t.distribution_bytes.count() <= 0) return out;
    for (std::uint32_t it = 0; it < t.iterations; ++it)
      for (std::uint32_t i = 0; i < n; ++i)
        out.push_back({.src = (i + n / 2) % n,
                       .dst = i,
                       .bytes = static_cast<std::uint64_t>(t.distribution_bytes.count()),
                       .start = it == 0 ? t.start : Time::max(),  // started when the allreduce before is done
                       .priority = t.priority,
                       .qps = t.qps_per_flow});
    return out;
  }
  const auto bytes = static_cast<std::uint64_t>(t.bytes.count());
  if (bytes < n)
    throw InputError("traffic.bytes " + to_string(t.bytes) + ": an allreduce over " + std::to_string(n) +
                     " GPUs needs at least one byte per GPU");
  const std::uint64_t chunk = (bytes + n - 1) / n;
  const TrainingLayout l = training_layout(t, n);
  std::vector<fabric::FlowSpec> out;
  out.reserve(static_cast<std::size_t>(l.per_iteration()) * l.iterations);
  const auto base = [&](std::uint32_t s, std::uint32_t d, std::uint64_t b) {
    return fabric::FlowSpec{
        .src = s, .dst = d, .bytes = b, .start = t.start, .priority = t.priority, .qps = t.qps_per_flow};
  };
  for (std::uint32_t it = 0; it < l.iterations; ++it) {
    if (l.distribution)
      for (std::uint32_t i = 0; i < n; ++i) {
        fabric::FlowSpec f = base((i + n / 2) % n, i,  // n >= 2: never i itself
                                  static_cast<std::uint64_t>(t.distribution_bytes.count()));
        if (it > 0) f.after = {l.step(it - 1, l.steps() - 1, (i + n - 1) % n)};
        out.push_back(std::move(f));
      }
    for (std::uint32_t k = 0; k < l.steps(); ++k)
      for (std::uint32_t i = 0; i < n; ++i) {
        fabric::FlowSpec f = base(i, (i + 1) % n, chunk);
        if (k > 0) {
          f.after = {l.step(it, k - 1, (i + n - 1) % n), l.step(it, k - 1, i)};
        } else {
          if (l.distribution) f.after = {l.dist(it, i)};
          else if (it > 0) f.after = {l.step(it - 1, l.steps() - 1, (i + n - 1) % n)};
          if (it > 0) f.after.push_back(l.step(it - 1, l.steps() - 1, i));  // and its own last send
          f.after_delay = t.compute;
        }
        out.push_back(std::move(f));
      }
  }
  return out;
}

std::uint32_t parse_host(const std::string& v, const std::string& where, const char* column, std::uint32_t hosts) {
  std::string_view d = v;
  if (!d.empty() && d.front() == 'h') d.remove_prefix(1);
  std::uint64_t x = 0;
  const auto [p, ec] = std::from_chars(d.data(), d.data() + d.size(), x);
  if (d.empty() || ec != std::errc() || p != d.data() + d.size() || x >= hosts)
    throw InputError(fmt::format("{}: column {}: expected a host 0..{} (or h0..h{}), got '{}'", where, column,
                                 hosts - 1, hosts - 1, v));
  return static_cast<std::uint32_t>(x);
}

namespace {
std::uint64_t parse_uint(const std::string& v, const std::string& where, const char* column, std::uint64_t max) {
  std::uint64_t x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || p != v.data() + v.size() || v.empty() || x > max)
    throw InputError(where + ": column " + column + ": expected an integer 0.." + std::to_string(max) + ", got '" + v +
                     "'");
  return x;
}

// One row of a flows file (its six fields, and the dport when the file has that column).
fabric::FlowSpec flow_of(const std::vector<std::string>& f, const std::string& where, std::uint32_t hosts) {
  fabric::FlowSpec s;
  s.src = parse_host(f[0], where, "src", hosts);
  s.dst = parse_host(f[1], where, "dst", hosts);
  try {
    const Bytes b = parse_bytes(f[2]);
    if (b.count() <= 0) throw InputError("must be positive");
    s.bytes = static_cast<std::uint64_t>(b.count());
    s.start = parse_time(f[3]);
  } catch (const InputError& e) {
    throw InputError(where + ": " + e.what());
  }
  s.priority = static_cast<std::uint8_t>(parse_uint(f[4], where, "priority", 7));
  s.qps = static_cast<std::uint32_t>(parse_uint(f[5], where, "qps", 1u << 16));
  if (s.qps == 0) throw InputError(where + ": column qps: at least 1");
  if (f.size() > 6) s.dport = static_cast<std::uint16_t>(parse_uint(f[6], where, "dport", 65535));
  if (s.src == s.dst) throw InputError(where + ": src and dst are the same host");
  return s;
}
}  // namespace

std::vector<fabric::FlowSpec> read_flows_csv(const std::string& path, std::uint32_t hosts) {
  InputStream in(path, "flows file", kTableBytes);
  csv::Reader reader(in, path, {.comments = true, .trim = true});
  reader.expect_header({"src", "dst", "bytes", "start", "priority", "qps"}, {"dport"});
  std::vector<fabric::FlowSpec> out;
  for (csv::Row row; reader.next(row);) out.push_back(flow_of(row.fields, reader.where(row), hosts));
  if (out.empty()) throw InputError(path + ": no flows");
  return out;
}

}  // namespace fabriclab::workload
