#include "scenario/fabric/collectives.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "core/error.h"
#include "core/random.h"
#include "core/stats.h"
#include "offload/schedule_io.h"
#include "scenario/report/files.h"

namespace fabriclab::scenario {

const params::Table<CollectiveSpec>& collective_table() {
  static const auto table = [] {
    using C = CollectiveSpec;
    params::Table<C> t;
    t.text("name", &C::name, "its name in collectives.csv (\"\" = c<entry number>)")
        .text("collective", &C::collective, offload::collectives_help())
        .text("algorithm", &C::algorithm, "the planner's algorithm (`fabriclab counters --table` lists them)")
        .text("schedule", &C::schedule,
              "a counter-assigned schedule file (`fabriclab counters --json`, or a library's) run instead of "
              "collective/algorithm")
        .bytes("bytes", &C::bytes, "the collective's size (as `fabriclab counters --bytes`)", "0B", "1024GiB")
        .nest("", &C::shape, offload::build_options_table())
        .text("ranks", &C::ranks,
              "its ranks' hosts: \"all\", a count N (placed by `placement`), a range \"A-B\" or a list \"a,b,c\" "
              "(rank i on the i-th host)")
        .choice("placement", &C::placement, kPlacementNames, "how a count of ranks is placed on the hosts")
        .choice("strategy", &C::strategy, offload::kStrategyNames, offload::strategy_help(offload::StrategyUse::build))
        .choice("policy", &C::policy, nicmodel::kPolicyNames,
                "when its counters are short: wait (stall), run in software (fallback), or as advised")
        .time("start", &C::start, "issue time of its first iteration", "0ps", "1000s")
        .integer("iterations", &C::iterations, "instances of it (a stream)", 1, 1'000'000)
        .integer("in_flight", &C::in_flight,
                 "instances at most running at once: instance i is issued once instance i - in_flight has completed", 1,
                 1'000'000)
        .time("mean_gap", &C::mean_gap,
              "mean of the exponential gaps between instances' issue times from `start` (0ps: each as soon as "
              "in_flight allows)",
              "0ps", "1000s");
    return t;
  }();
  return table;
}

const params::Table<CollectivesConfig>& collectives_config_table() {
  static const auto table = [] {
    params::Table<CollectivesConfig> t;
    t.integer("priority", &CollectivesConfig::priority, "802.1p class of the collectives' messages", 0, 7);
    return t;
  }();
  return table;
}

namespace {

std::uint32_t leaves_of(const fabric::TopologySpec& t, const std::string& what) {
  switch (t.kind) {
    case fabric::TopologyKind::leaf_spine: return t.leaves;
    case fabric::TopologyKind::fat_tree: return t.k * t.k / 2;
    default: throw InputError(fmt::format("{}: placement one_per_leaf needs a leaf_spine or fat_tree topology", what));
  }
}

}  // namespace

std::vector<std::int32_t> place_ranks(const std::string& ranks, Placement placement, const fabric::TopologySpec& topo,
                                      std::uint32_t hosts, std::uint64_t seed, std::size_t entry,
                                      const std::string& what) {
  const auto bad = [&](const std::string& why) {
    return InputError(fmt::format("{}: ranks '{}': {}", what, ranks, why));
  };
  const auto host = [&](const std::string& text) {
    const auto v = params::parse_integer(text);
    if (!v || *v < 0 || *v >= hosts) throw bad(fmt::format("'{}' is not a host (0..{})", text, hosts - 1));
    return static_cast<std::int32_t>(*v);
  };
  std::vector<std::int32_t> out;
  if (ranks.find(',') != std::string::npos) {  // a list
    for (const std::string& item : params::split_list(ranks, ',')) out.push_back(host(item));
  } else if (const auto dash = ranks.find('-'); dash != std::string::npos && dash > 0) {  // a range
    const std::int32_t a = host(ranks.substr(0, dash)), b = host(ranks.substr(dash + 1));
    if (b < a) throw bad("a range A-B needs A <= B");
    for (std::int32_t h = a; h <= b; ++h) out.push_back(h);
  } else {  // all, or a count placed by the policy
    std::uint32_t n = hosts;
    if (ranks != "all") {
      const auto v = params::parse_integer(ranks);
      if (!v || *v < 2 || *v > hosts) throw bad(fmt::format("expected \"all\", a count 2..{}, A-B or a list", hosts));
      n = static_cast<std::uint32_t>(*v);
    }
    std::vector<std::int32_t> order(hosts);
    std::iota(order.begin(), order.end(), 0);
    if (placement == Placement::random) {
      RandomStream rng(seed, "collectives/placement/" + std::to_string(entry));
      for (std::uint32_t i = hosts - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);  // Fisher-Yates
    } else if (placement == Placement::one_per_leaf) {
      const std::uint32_t leaves = leaves_of(topo, what), per = hosts / leaves;
      for (std::uint32_t i = 0; i < hosts; ++i) order[i] = static_cast<std::int32_t>((i % leaves) * per + i / leaves);
    }
    out.assign(order.begin(), order.begin() + n);
  }
  if (out.size() < 2) throw bad("a collective needs at least two ranks");
  if (std::set<std::int32_t>(out.begin(), out.end()).size() != out.size()) throw bad("a host is named twice");
  return out;
}

double busbw_factor(const std::string& collective, std::int32_t n) {
  const double d = n;
  if (collective == "allreduce") return 2.0 * (d - 1) / d;
  if (collective == "allgather" || collective == "reduce_scatter" || collective == "alltoall") return (d - 1) / d;
  if (collective == "barrier") return 0;
  return 1;  // bcast, reduce
}

std::int64_t nccl_size(const std::string& collective, std::int64_t bytes, std::int32_t n) {
  return collective == "allgather" || collective == "alltoall" ? bytes * n : bytes;
}

double algbw_GBps(const CollectiveRow& r) {
  // bytes per ns = GB/s
  return static_cast<double>(nccl_size(r.collective, r.bytes, r.ranks)) * 1000.0 /
         static_cast<double>(r.result.job.completion().ps());
}

namespace {

// The collective's schedule, counter-assigned.
std::shared_ptr<const offload::Schedule> schedule_of(const CollectiveSpec& c, std::int32_t ranks,
                                                     const std::string& what) {
  try {
    if (!c.schedule.empty()) {
      auto s = std::make_shared<const offload::Schedule>(offload::read_schedule_json(c.schedule));
      if (s->ranks() != ranks)
        throw InputError(
            fmt::format("{} has {} ranks, but {} hosts are given (ranks = ...)", c.schedule, s->ranks(), ranks));
      return s;
    }
    offload::BuildOptions b = c.shape;
    b.ranks = ranks;
    b.bytes = c.bytes.count();
    return std::make_shared<const offload::Schedule>(
        offload::assign_counters(offload::build_schedule(c.collective, c.algorithm, b), c.strategy));
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", what, e.what()));
  }
}

}  // namespace

ScenarioCollectives::ScenarioCollectives(const std::vector<CollectiveSpec>& specs, const CollectivesConfig& cfg,
                                         const nicmodel::NicParams& nic, const fabric::TopologySpec& topo,
                                         std::uint64_t seed, fabric::Network& net,
                                         const std::function<std::string(std::size_t)>& origin) {
  engine_ = std::make_unique<nicengine::Engine>(net, nic, nicmodel::Policy::stall, cfg.priority);
  const auto hosts = static_cast<std::uint32_t>(net.host_count());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const CollectiveSpec& c = specs[i];
    const std::string what = fmt::format("{}: collective.{}", origin(i), i);
    const std::string name = c.name.empty() ? fmt::format("c{}", i) : c.name;
    const std::vector<std::int32_t> on = place_ranks(c.ranks, c.placement, topo, hosts, seed, i, what);
    const auto s = schedule_of(c, static_cast<std::int32_t>(on.size()), what);
    const auto prepared = nicmodel::prepare(s);
    std::int64_t max_counters = 0;
    for (const auto& need : offload::needs_per_rank(*s)) max_counters = std::max(max_counters, need.counters);
    RandomStream gaps(seed, "collectives/arrivals/" + std::to_string(i));
    Time issue = c.start;
    const std::size_t first = rows_.size();
    for (std::uint32_t it = 0; it < c.iterations; ++it) {
      if (it > 0 && c.mean_gap > Time()) {
        const double next = static_cast<double>(issue.ps()) -
                            std::log(1.0 - gaps.uniform()) * static_cast<double>(c.mean_gap.ps());
        if (next > 1e18)  // about 11.6 days: past any simulated stop time the loader takes
          throw InputError(fmt::format("{}: iterations x mean_gap reach past a million seconds", what));
        issue = Time::from_ps(static_cast<std::int64_t>(next));
      }
      nicmodel::Job job{.name = c.iterations > 1 ? fmt::format("{}#{}", name, it) : name,
                        .schedule = s,
                        .prepared = prepared,
                        .nic_of_rank = on,
                        .issue = issue,
                        .after = it < c.in_flight ? -1 : static_cast<std::int32_t>(first + it - c.in_flight),
                        .policy = c.policy};
      try {
        engine_->add(std::move(job));
      } catch (const InputError& e) {
        rethrow_in(what, e);
      }
      rows_.push_back(
          {name,
           s->collective.empty() ? c.collective : s->collective,
           s->algorithm.empty() ? c.algorithm : s->algorithm,
           s->strategy.empty() ? std::string(params::name_of(offload::kStrategyNames, c.strategy)) : s->strategy,
           it,
           s->ranks(),
           s->bytes,
           max_counters,
           {}});
    }
  }
}

namespace {

// A collective over every one of `gpus` hosts, assigned, for the training pattern.
std::shared_ptr<const offload::Schedule> training_schedule(const char* collective, const std::string& algorithm,
                                                           std::int64_t bytes, std::int32_t gpus, const char* key) {
  offload::BuildOptions b;
  b.ranks = gpus;
  b.bytes = bytes;
  try {
    return std::make_shared<const offload::Schedule>(
        offload::assign_counters(offload::build_schedule(collective, algorithm, b), offload::Strategy::optimized));
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", key, e.what()));
  }
}

std::int64_t max_counters_of(const offload::Schedule& s) {
  std::int64_t m = 0;
  for (const auto& need : offload::needs_per_rank(s)) m = std::max(m, need.counters);
  return m;
}

}  // namespace

void ScenarioCollectives::add_training(const workload::TrafficSpec& t, const nicmodel::NicParams& nic,
                                       fabric::Network& net) {
  const auto gpus = static_cast<std::int32_t>(net.host_count());
  const std::uint32_t buckets = t.buckets;
  if (t.bytes.count() % (std::int64_t{8} * buckets) != 0)
    throw InputError(fmt::format("traffic.training.buckets = {}: traffic.bytes = {} does not split into {} buckets of "
                                 "whole 8-byte elements",
                                 buckets, to_string(t.bytes), buckets));
  const std::int64_t bucket_bytes = t.bytes.count() / buckets;
  const auto ar = training_schedule("allreduce", t.training_algorithm, bucket_bytes, gpus,
                                    "traffic.training.algorithm");
  const bool a2a = t.alltoall_bytes.count() > 0;
  const auto aa = a2a ? training_schedule("alltoall", t.alltoall_algorithm, t.alltoall_bytes.count(), gpus,
                                          "traffic.training.alltoall_algorithm")
                      : nullptr;
  const nicmodel::Policy policy = params::parse_enum(nicmodel::kPolicyNames, t.training_policy, "training.policy");
  const auto ar_prepared = nicmodel::prepare(ar);
  const auto aa_prepared = a2a ? nicmodel::prepare(aa) : nullptr;
  std::vector<std::int32_t> all(static_cast<std::size_t>(gpus));
  std::iota(all.begin(), all.end(), 0);
  training_ = {&net,
               static_cast<std::uint32_t>(rows_.size()),
               t.iterations,
               static_cast<std::uint32_t>(gpus),
               buckets + (a2a ? 1u : 0u),
               buckets,
               t.distribution_bytes.count() > 0,
               t.compute,
               std::vector<std::uint32_t>(t.iterations, 0),
               std::vector<std::uint32_t>(t.iterations, 0)};
  const auto add = [&](nicmodel::Job job, const std::string& algorithm) {
    try {
      engine_->add(std::move(job));
    } catch (const InputError& e) {
      rethrow_in(fmt::format("traffic.training ({}, nic.counters {})", algorithm, nic.counters), e);
    }
  };
  for (std::uint32_t it = 0; it < t.iterations; ++it) {
    training_.left[it] = training_.distribution ? training_.gpus : 0;
    for (std::uint32_t b = 0; b < buckets; ++b) {
      const std::string name = buckets == 1 ? "allreduce" : fmt::format("allreduce.{}", b);
      add({.name = fmt::format("{}#{}", name, it),
           .schedule = ar,
           .prepared = ar_prepared,
           .nic_of_rank = all,
           .issue = {},
           .policy = policy,
           .held = true},
          t.training_algorithm);
      rows_.push_back(
          {name, "allreduce", t.training_algorithm, "optimized", it, gpus, bucket_bytes, max_counters_of(*ar), {}});
    }
    if (!a2a) continue;
    add({.name = fmt::format("alltoall#{}", it),  // issued once every bucket is done
         .schedule = aa,
         .prepared = aa_prepared,
         .nic_of_rank = all,
         .issue = {},
         .policy = policy,
         .held = true},
        t.alltoall_algorithm);
    rows_.push_back({"alltoall",
                     "alltoall",
                     t.alltoall_algorithm,
                     "optimized",
                     it,
                     gpus,
                     t.alltoall_bytes.count(),
                     max_counters_of(*aa),
                     {}});
  }
  if (training_.distribution) net.set_flow_observer(this);
  engine_->on_seen_complete([this](std::uint32_t job, Time at) { training_done(job, at); });
  if (!training_.distribution) issue_buckets(0, t.start + t.compute);
}

void ScenarioCollectives::issue_buckets(std::uint32_t it, Time at) {
  for (std::uint32_t b = 0; b < training_.buckets; ++b) engine_->issue_at(training_.first + it * training_.per + b, at);
}

// A distribution flow of the training pattern finished: the last of its iteration issues
// that iteration's allreduce.
void ScenarioCollectives::flow_finished(std::uint32_t flow) {
  const std::uint32_t it = flow / training_.gpus;
  if (it >= training_.iterations || --training_.left[it] > 0) return;
  issue_buckets(it, training_.net->sim().now() + training_.compute);
}

// A job of the training is done: once every bucket of an iteration is, its all-to-all
// starts; once every job is, the next iteration's distribution starts (or, without one,
// its allreduce after the compute time).
void ScenarioCollectives::training_done(std::uint32_t job, Time now) {
  if (job < training_.first) return;
  const std::uint32_t it = (job - training_.first) / training_.per;
  if (it >= training_.iterations) return;
  const std::uint32_t done = ++training_.done[it];
  if (done == training_.buckets && training_.per > training_.buckets) {
    engine_->issue_at(training_.first + it * training_.per + training_.buckets, now);
    return;
  }
  if (done < training_.per || it + 1 >= training_.iterations) return;
  if (!training_.distribution) {
    issue_buckets(it + 1, now + training_.compute);
    return;
  }
  for (std::uint32_t i = 0; i < training_.gpus; ++i) training_.net->start_flow((it + 1) * training_.gpus + i, now);
}

std::vector<CollectiveRow> ScenarioCollectives::rows() const {
  std::vector<CollectiveRow> out = rows_;
  const auto results = engine_->results();
  for (std::size_t j = 0; j < out.size(); ++j) out[j].result = results[j];
  return out;
}

CollectiveNics ScenarioCollectives::nics() const {
  CollectiveNics n;
  const nicmodel::OffloadModel& m = engine_->model();
  for (std::size_t h = 0; h < m.nics(); ++h) {
    const auto k = static_cast<std::int32_t>(h);
    n.peak_counters_on_a_nic = std::max(n.peak_counters_on_a_nic, m.pool(k).peak_counters_in_use());
    n.cache_hits += m.cache(k).hits();
    n.cache_misses += m.cache(k).misses();
  }
  return n;
}

std::string ScenarioCollectives::ops_csv() const {
  std::string csv = "name,iteration,op,rank,kind,ready_ns,fired_ns,completed_ns\n";
  const auto ns = [](Time t) { return t == Time::max() ? std::string() : ns_text(t); };
  for (std::size_t j = 0; j < rows_.size(); ++j)
    for (const auto& o : engine_->model().op_times(static_cast<std::uint32_t>(j)))
      csv += fmt::format("{},{},{},{},{},{},{},{}\n", rows_[j].name, rows_[j].iteration, o.op, o.rank,
                         offload::to_string(o.kind), ns(o.ready), ns(o.fired), ns(o.completed));
  return csv;
}

std::string collectives_csv(const std::vector<CollectiveRow>& rows) {
  std::string csv =
      "name,iteration,collective,algorithm,strategy,ranks,bytes,issue_ns,start_ns,done_ns,stall_ns,completion_ns,"
      "path,counters_max_per_nic,algbw_GBps,busbw_GBps,messages,retransmitted_packets\n";
  for (const CollectiveRow& r : rows) {
    const nicmodel::JobResult& j = r.result.job;
    // Blank: what did not happen before the run ended (not issued, not started, not done).
    std::string issue, start, done, stall, completion, algbw, busbw, path;
    if (j.issued) issue = ns_text(j.issue);
    if (j.started) {
      start = ns_text(j.start);
      stall = ns_text(j.stall());
      path = j.offloaded ? "offloaded" : "software";
    }
    if (r.result.done()) {
      done = ns_text(j.done);
      completion = ns_text(j.completion());
      const double a = algbw_GBps(r);
      algbw = fmt::format("{:.4f}", a);
      busbw = fmt::format("{:.4f}", a * busbw_factor(r.collective, r.ranks));
    }
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.name, r.iteration, r.collective,
                       r.algorithm, r.strategy, r.ranks, r.bytes, issue, start, done, stall, completion, path,
                       j.offloaded ? r.max_counters_per_nic : 0, algbw, busbw, r.result.messages,
                       r.result.retransmitted);
  }
  return csv;
}

nlohmann::ordered_json collectives_summary(const std::vector<CollectiveRow>& rows, const CollectiveNics& nics) {
  std::vector<std::int64_t> completions;
  std::vector<double> busbws;  // of the collectives done that move data (not barriers)
  std::uint64_t offloaded = 0, software = 0, retransmitted = 0, messages = 0;
  std::int64_t max_counters = 0;
  Time stall;
  for (const CollectiveRow& r : rows) {
    messages += r.result.messages;
    retransmitted += r.result.retransmitted;
    if (!r.result.done()) continue;
    completions.push_back(r.result.job.completion().ps());
    if (const double f = busbw_factor(r.collective, r.ranks); f > 0 && r.bytes > 0) busbws.push_back(algbw_GBps(r) * f);
    stall = stall + r.result.job.stall();
    if (r.result.job.offloaded) {
      ++offloaded;
      max_counters = std::max(max_counters, r.max_counters_per_nic);
    } else {
      ++software;
    }
  }
  nlohmann::ordered_json j;
  j["count"] = rows.size();
  j["done"] = completions.size();
  j["offloaded"] = offloaded;
  j["software"] = software;
  const auto percentile = [&](double q) -> nlohmann::ordered_json {
    if (completions.empty()) return nullptr;  // none done: no completion to rank
    return ns_text(Time::from_ps(nearest_rank(completions, q)));
  };
  j["completion_p50_ns"] = percentile(0.50);
  j["completion_p99_ns"] = percentile(0.99);
  j["completion_max_ns"] = percentile(1.0);
  // NCCL's bus bandwidth (collectives.csv's busbw_GBps, GB/s as nccl-tests): the slowest
  // and the mean, for tune's objectives; null when no collective that moves data is done.
  j["busbw_GBps_min"] = nullptr;
  j["busbw_GBps_mean"] = nullptr;
  if (!busbws.empty()) {
    j["busbw_GBps_min"] = *std::min_element(busbws.begin(), busbws.end());
    j["busbw_GBps_mean"] = std::accumulate(busbws.begin(), busbws.end(), 0.0) / static_cast<double>(busbws.size());
  }
  j["stall_total_ns"] = ns_text(stall);
  j["counters_max_per_nic"] = max_counters;
  j["peak_counters_on_a_nic"] = nics.peak_counters_on_a_nic;
  const std::uint64_t touches = nics.cache_hits + nics.cache_misses;
  j["counter_cache_misses"] = nics.cache_misses;
  j["counter_cache_hit_rate"] = touches == 0 ? 0.0
                                             : static_cast<double>(nics.cache_hits) / static_cast<double>(touches);
  j["messages"] = messages;
  j["retransmitted_packets"] = retransmitted;
  return j;
}

}  // namespace fabriclab::scenario
