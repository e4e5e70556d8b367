#include "scenario/offload_scenario.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "core/error.h"
#include "core/random.h"
#include "nicmodel/model.h"
#include "offload/assignment.h"
#include "offload/collectives.h"

namespace fabriclab::scenario {

namespace {

ParamRegistry make_registry() {
  ParamRegistry r;
  using K = ParamKind;
  r.declare("sim.seed", K::integer, "1", "seed of the Poisson arrivals", "0", "");
  r.declare("nic.counters", K::integer, "128", "hardware counters per NIC", "1", "1000000");
  r.declare("nic.slots", K::integer, "4096", "triggered-operation slots per NIC", "1", "100000000");
  r.declare("nic.cache_entries", K::integer, "64", "counter cache entries per NIC (LRU)", "1", "1000000");
  r.declare("nic.cache_miss", K::time, "100ns", "added to an operation for each counter it touches that is not cached", "0ps", "1s");
  r.declare("nic.op_time", K::time, "50ns", "NIC time per operation (a fired triggered op, an arrival, a counter add)", "0ps", "1s");
  r.declare("network.latency", K::time, "1us", "message latency", "0ps", "1s");
  r.declare("network.bandwidth", K::rate, "100Gbps", "message bandwidth (time = latency + bytes / bandwidth)", "1Mbps", "");
  r.declare("host.op_time", K::time, "1us", "software path: host time to post one operation", "0ps", "1s");
  r.declare("host.poll", K::time, "1us", "the host checks its collectives' completion this often", "1ps", "1s");
  r.declare("offload.policy", K::choice, "stall", "when counters are short: wait, run in software now, or follow the advice",
    "", "", {"stall", "fallback", "advise"});
  r.declare("offload.strategy", K::choice, "optimized", "counter assignment", "", "", {"naive", "optimized"});
  r.declare("workload.ranks", K::integer, "64", "ranks of every generated collective (rank r on NIC r)", "2", "4096");
  r.declare("workload.collectives", K::text, "allreduce:ring,allreduce:recursive_doubling,bcast:binomial",
    "generated collectives cycle through these COLLECTIVE:ALGORITHM");
  r.declare("workload.bytes", K::bytes, "64KiB", "bytes per generated collective", "1B", "");
  r.declare("workload.count", K::integer, "16", "generated collectives", "1", "100000");
  r.declare("workload.arrival", K::choice, "in_flight", "generated issue times: k in flight, or Poisson", "", "",
    {"in_flight", "poisson", "file"});
  r.declare("workload.in_flight", K::integer, "4", "in_flight: collectives outstanding at once", "1", "100000");
  r.declare("workload.mean_gap", K::time, "10us", "poisson: mean time between issues", "1ps", "1s");
  r.declare("workload.file", K::text, "", "file: CSV name,collective,algorithm,ranks,bytes,issue (relative to the scenario)");
  return r;
}

std::string ns_text(Time t) { return fmt::format("{}.{:03}", t.ps() / 1000, t.ps() % 1000); }

struct Spec {
  std::string name, collective, algorithm;
  int ranks = 0;
  std::int64_t bytes = 0;
  Time issue;
  std::int32_t after = -1;
};

std::vector<Spec> read_workload_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open the workload file");
  std::vector<Spec> out;
  std::string line;
  int no = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const std::string where = fmt::format("{}:{}", path, no);
    if (!header) {
      if (line != "name,collective,algorithm,ranks,bytes,issue")
        throw InputError(where + ": expected the header 'name,collective,algorithm,ranks,bytes,issue'");
      header = true;
      continue;
    }
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    if (f.size() != 6) throw InputError(fmt::format("{}: expected 6 columns, got {}", where, f.size()));
    Spec s;
    s.name = f[0];
    s.collective = f[1];
    s.algorithm = f[2];
    try {
      std::size_t used = 0;
      s.ranks = std::stoi(f[3], &used);
      if (used != f[3].size() || s.ranks < 2) throw InputError("");
    } catch (const std::exception&) {
      throw InputError(fmt::format("{}: column ranks: expected an integer >= 2, got '{}'", where, f[3]));
    }
    try {
      s.bytes = parse_bytes(f[4]).count();
      s.issue = parse_time(f[5]);
    } catch (const InputError& e) {
      throw InputError(where + ": " + e.what());
    }
    out.push_back(s);
  }
  if (out.empty()) throw InputError(path + ": no collectives");
  return out;
}

std::int64_t nearest_rank(std::vector<std::int64_t> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<std::size_t>(k, 1, v.size()) - 1];
}

}  // namespace

const ParamRegistry& offload_parameters() {
  static const ParamRegistry r = make_registry();
  return r;
}

OffloadOutcome run_offload(const Config& cfg, const std::string& scenario, const std::string& out_dir) {
  const auto t0 = std::chrono::steady_clock::now();
  nicmodel::NicParams p;
  p.counters = cfg.integer("nic.counters");
  p.slots = cfg.integer("nic.slots");
  p.cache_entries = static_cast<std::int32_t>(cfg.integer("nic.cache_entries"));
  p.cache_miss = cfg.time("nic.cache_miss");
  p.op_time = cfg.time("nic.op_time");
  p.latency = cfg.time("network.latency");
  p.bandwidth = cfg.rate("network.bandwidth");
  p.host_op_time = cfg.time("host.op_time");
  p.host_poll = cfg.time("host.poll");
  const std::string& pol = cfg.text("offload.policy");
  const auto policy = pol == "stall" ? nicmodel::Policy::stall
                      : pol == "fallback" ? nicmodel::Policy::fallback
                                          : nicmodel::Policy::advise;
  const auto strategy = offload::parse_strategy(cfg.text("offload.strategy"));

  // The workload.
  std::vector<Spec> specs;
  const std::string& arrival = cfg.text("workload.arrival");
  if (arrival == "file") {
    std::string path = cfg.text("workload.file");
    if (path.empty()) throw InputError(fmt::format("{}: workload.arrival = \"file\" needs workload.file", cfg.origin("workload.arrival")));
    const std::string& origin = cfg.origin("workload.file");
    const auto colon = origin.find(':');
    if (origin != "--set" && colon != std::string::npos && std::filesystem::path(path).is_relative())
      path = (std::filesystem::path(origin.substr(0, colon)).parent_path() / path).string();
    specs = read_workload_file(path);
  } else {
    std::vector<std::pair<std::string, std::string>> kinds;
    std::stringstream ss(cfg.text("workload.collectives"));
    for (std::string item; std::getline(ss, item, ',');) {
      const auto colon = item.find(':');
      if (colon == std::string::npos)
        throw InputError(fmt::format("{}: workload.collectives: '{}': expected COLLECTIVE:ALGORITHM",
                                     cfg.origin("workload.collectives"), item));
      kinds.emplace_back(item.substr(0, colon), item.substr(colon + 1));
    }
    if (kinds.empty()) throw InputError("workload.collectives is empty");
    const auto n = cfg.integer("workload.count");
    const auto k = cfg.integer("workload.in_flight");
    RandomStream rng(static_cast<std::uint64_t>(cfg.integer("sim.seed")), "offload/arrivals");
    Time t;
    for (std::int64_t i = 0; i < n; ++i) {
      Spec s;
      const auto& [c, a] = kinds[static_cast<std::size_t>(i) % kinds.size()];
      s.name = fmt::format("{}-{}", c, i);
      s.collective = c;
      s.algorithm = a;
      s.ranks = static_cast<int>(cfg.integer("workload.ranks"));
      s.bytes = cfg.bytes("workload.bytes").count();
      if (arrival == "poisson") {
        s.issue = t;
        const double gap = -std::log(1.0 - rng.uniform()) * static_cast<double>(cfg.time("workload.mean_gap").ps());
        t += Time::from_ps(static_cast<std::int64_t>(gap));
      } else if (i >= k) {
        s.after = static_cast<std::int32_t>(i - k);
      }
      specs.push_back(s);
    }
  }

  // Schedules, built and assigned once per distinct shape.
  std::map<std::tuple<std::string, std::string, int, std::int64_t>, std::shared_ptr<const offload::Schedule>> built;
  int nics = 0;
  for (const Spec& s : specs) nics = std::max(nics, s.ranks);
  nicmodel::OffloadModel model(p, nics, policy);
  for (const Spec& s : specs) {
    auto key = std::make_tuple(s.collective, s.algorithm, s.ranks, s.bytes);
    auto it = built.find(key);
    if (it == built.end()) {
      offload::BuildOptions b;
      b.ranks = s.ranks;
      b.bytes = s.bytes;
      auto sched = std::make_shared<const offload::Schedule>(
          offload::assign_counters(offload::build_schedule(s.collective, s.algorithm, b), strategy));
      it = built.emplace(key, std::move(sched)).first;
    }
    std::vector<std::int32_t> nic_of_rank(static_cast<std::size_t>(s.ranks));
    for (int r = 0; r < s.ranks; ++r) nic_of_rank[static_cast<std::size_t>(r)] = r;
    model.add({.name = s.name, .schedule = it->second, .nic_of_rank = std::move(nic_of_rank), .issue = s.issue,
               .after = s.after});
  }
  const auto results = model.run();

  OffloadOutcome o;
  o.collectives = results.size();
  std::vector<std::int64_t> completions;
  std::string csv =
      "name,collective,algorithm,ranks,bytes,issue_ns,start_ns,done_ns,stall_ns,completion_ns,path,counters_max_per_nic\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    const Spec& s = specs[i];
    (r.offloaded ? o.offloaded : o.software)++;
    o.total_stall += r.stall();
    completions.push_back(r.completion().ps());
    const std::int64_t cmax =
        r.counters_per_nic.empty() ? 0 : *std::max_element(r.counters_per_nic.begin(), r.counters_per_nic.end());
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}\n", s.name, s.collective, s.algorithm, s.ranks, s.bytes,
                       ns_text(r.issue), ns_text(r.start), ns_text(r.done), ns_text(r.stall()),
                       ns_text(r.completion()), r.offloaded ? "offload" : "software", cmax);
  }
  o.makespan = model.makespan();
  o.completion_p50 = Time::from_ps(nearest_rank(completions, 0.5));
  o.completion_p99 = Time::from_ps(nearest_rank(completions, 0.99));
  o.completion_max = Time::from_ps(nearest_rank(completions, 1.0));
  std::uint64_t hits = 0, misses = 0;
  double mean_counters = 0;
  for (int n = 0; n < nics; ++n) {
    o.peak_counters_on_a_nic = std::max(o.peak_counters_on_a_nic, model.pool(n).peak_counters_in_use());
    hits += model.cache(n).hits();
    misses += model.cache(n).misses();
    mean_counters += model.pool(n).mean_counters_in_use(o.makespan);
  }
  o.cache_hit_rate = hits + misses ? static_cast<double>(hits) / static_cast<double>(hits + misses) : 0.0;
  o.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (out_dir.empty()) return o;

  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw InputError(fmt::format("{}: cannot create the output directory: {}", out_dir, ec.message()));
  const std::filesystem::path dir(out_dir);
  auto write = [&](const char* name, const std::string& text) {
    std::ofstream f(dir / name, std::ios::binary);
    f << text;
    if (!f) throw InputError(fmt::format("{}: cannot write", (dir / name).string()));
  };
  write("collectives.csv", csv);
  std::string usage = "time_ns,counters_in_use,max_counters_on_a_nic,slots_in_use\n";
  for (const auto& u : model.usage())
    usage += fmt::format("{},{},{},{}\n", ns_text(u.time), u.counters, u.max_counters_on_a_nic, u.slots);
  write("usage.csv", usage);
  nlohmann::ordered_json j;
  j["scenario"] = scenario;
  j["config"] = cfg.echo();
  j["collectives"] = {{"count", o.collectives}, {"offloaded", o.offloaded}, {"software", o.software}};
  j["completion_ns"] = {{"p50", ns_text(o.completion_p50)}, {"p99", ns_text(o.completion_p99)},
                        {"max", ns_text(o.completion_max)}};
  j["stall_ns_total"] = ns_text(o.total_stall);
  j["makespan_ns"] = ns_text(o.makespan);
  j["counters"] = {{"peak_on_a_nic", o.peak_counters_on_a_nic},
                   {"mean_in_use_per_nic", nics ? mean_counters / nics : 0.0}};
  j["cache"] = {{"hits", hits}, {"misses", misses}, {"hit_rate", o.cache_hit_rate}};
  j["wall_seconds"] = o.wall_seconds;
  write("summary.json", j.dump(2) + "\n");
  return o;
}

}  // namespace fabriclab::scenario
