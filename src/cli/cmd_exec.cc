// fabriclab exec: build a collective, assign its counters, and run it for real on
// libfabric triggered operations, one process per rank, checking every result.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "backends/libfabric/module.h"
#include "cli/commands.h"
#include "core/error.h"
#include "exec/plan.h"
#include "exec/reference.h"
#include "exec/runner.h"
#include "offload/advice.h"
#include "offload/assignment.h"
#include "offload/collectives.h"
#include "offload/schedule_io.h"
#include "offload/segment.h"
#include "offload/verifier.h"

namespace fabriclab::cli {

using namespace fabriclab::offload;

namespace {

// Each rank is a process with the provider's threads and a TCP connection to every
// peer: beyond this, one machine is the wrong place to run a collective.
constexpr int kMaxExecRanks = 64;
constexpr std::int64_t kMaxWindowBytes = std::int64_t{256} << 20;

struct ExecArgs {
  std::string collective, algorithm;
  int ranks = 0;
  std::string strategy;
  std::int64_t count = 1024;
  ShapeOptions shape;  // root, radix, datatype
  std::int64_t budget = -1;
  std::string fallback = "software";
  std::int64_t iterations = 10;
  double timeout = 10;
  std::string provider = "sockets";
  std::string perturb;
  std::string schedule_path;
};

std::string human_bytes(std::int64_t b) {
  if (b >= (1 << 20) && b % (1 << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= 1024 && b % 1024 == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

// "RANK:DELTA": add DELTA to the threshold of the last triggered operation of RANK's
// program (after pacing: possibly a paced transfer or a pacing counter add).
void perturb(std::vector<exec::RankProgram>& progs, const std::string& spec) {
  const auto colon = spec.find(':');
  int rank = -1;
  std::int64_t delta = 0;
  try {
    if (colon == std::string::npos) throw std::invalid_argument("");
    rank = std::stoi(spec.substr(0, colon));
    delta = std::stoll(spec.substr(colon + 1));
  } catch (const std::exception&) {
    throw InputError(fmt::format("--perturb-threshold '{}': expected RANK:DELTA, e.g. 1:+1", spec));
  }
  if (rank < 0 || rank >= static_cast<int>(progs.size()))
    throw InputError(fmt::format("--perturb-threshold: rank {} is not in 0..{}", rank, progs.size() - 1));
  auto& ops = progs[static_cast<std::size_t>(rank)].ops;
  for (auto it = ops.rbegin(); it != ops.rend(); ++it)
    if (it->trigger >= 0) {
      it->threshold += delta;
      return;
    }
  throw InputError(fmt::format("--perturb-threshold: rank {} has no triggered operation", rank));
}

void check_common(const ExecArgs& a) {
  if (!(a.iterations >= 1 && a.iterations <= 1000000))
    throw InputError(fmt::format("exec: --iterations {} is outside 1..1000000", a.iterations));
  if (!(a.timeout > 0) || a.timeout > 3600)
    throw InputError(fmt::format("exec: --timeout {} is outside (0, 3600] seconds", a.timeout));
  if (a.fallback != "software" && a.fallback != "refuse")
    throw InputError(fmt::format("exec: --fallback '{}': expected software or refuse", a.fallback));
}

void check_ranks(int ranks) {
  if (ranks < 2 || ranks > kMaxExecRanks)
    throw InputError(fmt::format("exec: --ranks {} is outside 2..{}: each rank is a process "
                                 "with its own provider threads and P-1 connections on this "
                                 "one machine",
                                 ranks, kMaxExecRanks));
}

void check_window(const Schedule& s, const std::string& what) {
  if (s.layout.window_bytes > kMaxWindowBytes)
    throw InputError(fmt::format("exec: {} needs a {} window per rank; the limit is {}", what,
                                 human_bytes(s.layout.window_bytes), human_bytes(kMaxWindowBytes)));
}

exec::RunOptions run_options(const ExecArgs& a) {
  exec::RunOptions ro;
  ro.provider = a.provider;
  ro.nic = backends::load_libfabric_backend();
  ro.iterations = a.iterations;
  ro.timeout_seconds = a.timeout;
  return ro;
}

int execute(const ExecArgs& a, const Schedule& assigned, const Schedule& dag, const exec::NicInfo& nic,
            exec::RunOptions ro, const std::string& title);

// A schedule file written by `fabriclab counters --json` (or by hand, with a layout):
// verified, then run as it is.
int run_file(const ExecArgs& a) {
  if (!a.collective.empty() || !a.algorithm.empty() || a.ranks != 0)
    throw InputError("exec: give either --schedule FILE or --collective/--algorithm/--ranks");
  const Schedule s = read_schedule_json(a.schedule_path);
  check_ranks(s.ranks());
  if (s.layout.empty())
    throw InputError(fmt::format("{}: the schedule has no data layout, so its result cannot be "
                                 "checked (fabriclab counters --json writes one)",
                                 a.schedule_path));
  const Datatype dt = parse_datatype(s.datatype);
  const std::int64_t esize = datatype_size(dt);
  if (s.bytes <= 0 || s.bytes % esize != 0)
    throw InputError(fmt::format("{}: 'bytes' is {}; exec needs a positive multiple of the "
                                 "{}-byte {} element",
                                 a.schedule_path, s.bytes, esize, s.datatype));
  check_window(s, a.schedule_path);
  for (Rank r = 0; r < s.ranks(); ++r) {
    const exec::Shape sh = exec::shape(s, r);  // also: a collective with a reference result
    const auto in = s.layout.input_offset[static_cast<std::size_t>(r)];
    const auto out = s.layout.output_offset[static_cast<std::size_t>(r)];
    if (in + sh.input_bytes > s.layout.window_bytes || out + sh.output_bytes > s.layout.window_bytes)
      throw InputError(fmt::format("{}: layout: rank {}'s input ({} bytes at {}) or output ({} "
                                   "bytes at {}) does not fit the {}-byte window",
                                   a.schedule_path, r, sh.input_bytes, in, sh.output_bytes, out,
                                   s.layout.window_bytes));
  }
  validate(s, true);
  for (std::size_t i = 0; i < s.size(); ++i) {
    const Op& o = s.op(static_cast<OpId>(i));
    // The NIC would free a deferred work item nobody waits for while it is still in use.
    if (is_data_op(o.kind) && o.completion == kNoCounter)
      throw InputError(fmt::format("{}: operation {} is a {} whose completion is not counted; "
                                   "exec runs schedules whose transfers all complete into a "
                                   "counter (build them without --uncounted-sends)",
                                   a.schedule_path, i, to_string(o.kind)));
  }
  const VerifyReport vr = verify(s, {.random_runs = 8});
  if (!vr.ok())
    throw InputError(fmt::format("{}: the schedule fails the verifier, so it is not run: {}", a.schedule_path,
                                 vr.violations.empty() ? "" : vr.violations[0].message));
  exec::RunOptions ro = run_options(a);
  const exec::NicInfo nic = exec::probe_nic(ro, dt);
  for (std::size_t i = 0; i < s.size(); ++i) {
    const Op& o = s.op(static_cast<OpId>(i));
    if (o.kind == OpKind::get)
      throw InputError(fmt::format("{}: operation {} is a get, which exec does not run", a.schedule_path, i));
    if (o.kind == OpKind::atomic && o.bytes > nic.max_atomic_bytes)
      throw InputError(fmt::format("{}: operation {} is an atomic of {} bytes; provider '{}' "
                                   "takes at most {} in one atomic",
                                   a.schedule_path, i, o.bytes, nic.provider, nic.max_atomic_bytes));
  }
  return execute(a, s, s, nic, ro,
                 fmt::format("exec {} ({} {} on {} ranks, {} B, {}, strategy {})", a.schedule_path, s.collective,
                             s.algorithm, s.ranks(), s.bytes, s.datatype, s.strategy.empty() ? "given" : s.strategy));
}

int run_exec(const ExecArgs& a) {
  check_common(a);
  if (!a.schedule_path.empty()) return run_file(a);
  if (a.collective.empty() || a.algorithm.empty() || a.ranks == 0)
    throw InputError("exec: give --collective, --algorithm and --ranks (or --schedule FILE)");
  check_ranks(a.ranks);
  const Strategy strategy = parse_strategy(a.strategy, StrategyUse::run, "--strategy");
  if (a.count < 1) throw InputError(fmt::format("exec: --count {} must be at least 1", a.count));
  BuildOptions bo = a.shape.apply();
  const Datatype dt = bo.datatype;
  const std::int64_t esize = datatype_size(dt);
  if (a.count > kMaxWindowBytes / esize)
    throw InputError(fmt::format("exec: --count {} is more than {} of data", a.count, human_bytes(kMaxWindowBytes)));

  bo.ranks = a.ranks;
  bo.bytes = a.count * esize;
  const Schedule dag0 = build_schedule(a.collective, a.algorithm, bo);
  check_window(dag0, fmt::format("{} {} at this size", a.collective, a.algorithm));

  exec::RunOptions ro = run_options(a);
  const exec::NicInfo nic = exec::probe_nic(ro, dt);

  const Schedule dag = split_atomics(dag0, nic.max_atomic_bytes);
  Schedule assigned = assign_counters(dag, strategy);
  VerifyOptions vo;
  vo.random_runs = 8;
  const VerifyReport vr = verify(assigned, vo);
  if (!vr.ok())
    throw std::logic_error(fmt::format("the {} assignment of {} {} failed the verifier: {}", a.strategy, a.collective,
                                       a.algorithm, vr.violations.empty() ? "" : vr.violations[0].message));
  return execute(a, assigned, dag, nic, ro,
                 fmt::format("exec {} {} on {} ranks: {} x {} ({}), strategy {}", a.collective, a.algorithm, a.ranks,
                             a.count, to_string(dt), human_bytes(bo.bytes), a.strategy));
}

// Runs `assigned` on the triggered path when it fits the budget, else `dag` on the
// software path (or refuses), and prints the report.
int execute(const ExecArgs& a, const Schedule& assigned, const Schedule& dag, const exec::NicInfo& nic,
            exec::RunOptions ro, const std::string& title) {
  // The triggered plan, paced as the transport needs: its flow counters are NIC
  // counters too, so the budget is checked against the plan's.
  std::string unpaced_because;
  std::vector<exec::RankProgram> progs = exec::plan_triggered(assigned, nic.max_in_flight, &unpaced_because);
  const auto needed = static_cast<std::int64_t>(exec::max_counters(progs));
  const std::int64_t budget = a.budget >= 0 ? a.budget : nic.counters;

  // The planner's decision (offload, software or refuse) for one collective on idle NICs,
  // rank r on NIC r: nothing else holds counters, so there is nothing to wait for; the
  // provider's triggered-op slots are not limited by fabriclab.
  const NicResources idle{budget, std::numeric_limits<std::int64_t>::max()};
  std::vector<NicResources> need(progs.size()), free(progs.size(), idle);
  for (std::size_t r = 0; r < progs.size(); ++r) need[r].counters = static_cast<std::int64_t>(progs[r].counters.size());
  const Decision decision = decide(need, free, idle, {.wait = false, .software = a.fallback == "software"}).decision;
  const bool fits = decision == Decision::offload;

  fmt::print("{}\n", title);
  fmt::print("provider {} on {}: {} counters advertised, atomics up to {}; budget {} counters "
             "per rank\n",
             nic.provider, nic.fabric, nic.counters, human_bytes(nic.max_atomic_bytes), budget);
  if (decision == Decision::refuse) {
    fmt::print("refused: the plan needs {} counters on its busiest rank and the budget is {} "
               "(--fallback software would run it on the host)\n",
               needed, budget);
    return 1;
  }
  if (fits) {
    ro.path = exec::Path::triggered;
    if (!a.perturb.empty()) perturb(progs, a.perturb);
    std::size_t flows = 0;  // flow counters of the pacing, over all ranks
    for (const auto& rp : progs)
      flows += static_cast<std::size_t>(std::count(rp.counters.begin(), rp.counters.end(), offload::kNoCounter));
    fmt::print("path: triggered operations ({} ops incl. {} relays; {} counters on the busiest "
               "rank{})\n",
               assigned.size(), assigned.relay_count(), needed,
               flows > 0 ? fmt::format("; {} bursts paced {} transfers at a time through flow counters", flows,
                                       nic.max_in_flight)
                         : "");
    if (!unpaced_because.empty())
      fmt::print("note: bursts are not paced: {}; provider {} may stall on long bursts (docs/exec.md)\n",
                 unpaced_because, nic.provider);
  } else {
    progs.clear();
    ro.path = exec::Path::software;
    fmt::print("path: software fallback (the plan needs {} counters on its busiest rank, over "
               "the budget of {}): the host posts each operation once its dependences are done\n",
               needed, budget);
  }
  std::fflush(stdout);
  const exec::RunResult res = exec::run(fits ? assigned : dag, progs, ro);

  if (!res.ranks.empty() && !res.ranks[0].wall_us.empty()) {
    fmt::print("{:>4} {:>8} {:>10} {:>12} {:>12} {:>12} {:>10}\n", "rank", "counters", "ops", "wall_us/mean",
               "wall_us/min", "wall_us/max", "us/op");
    for (std::size_t r = 0; r < res.ranks.size(); ++r) {
      const auto& st = res.ranks[r];
      if (st.wall_us.empty()) continue;
      const double mean = std::accumulate(st.wall_us.begin(), st.wall_us.end(), 0.0) /
                          static_cast<double>(st.wall_us.size());
      fmt::print("{:>4} {:>8} {:>10} {:>12.1f} {:>12.1f} {:>12.1f} {:>10.2f}\n", r, st.counters, st.ops, mean,
                 *std::min_element(st.wall_us.begin(), st.wall_us.end()),
                 *std::max_element(st.wall_us.begin(), st.wall_us.end()),
                 st.ops > 0 ? mean / static_cast<double>(st.ops) : 0.0);
    }
    // The collective's time in an iteration is its slowest rank's.
    std::vector<double> iter;
    for (std::size_t i = 0; i < res.ranks[0].wall_us.size(); ++i) {
      double m = 0;
      for (const auto& st : res.ranks)
        if (i < st.wall_us.size()) m = std::max(m, st.wall_us[i]);
      iter.push_back(m);
    }
    std::sort(iter.begin(), iter.end());
    fmt::print("collective time: median {:.1f} us, min {:.1f} us, max {:.1f} us over {} "
               "iterations ({} on {}: software timings, not NIC offload)\n",
               iter[iter.size() / 2], iter.front(), iter.back(), iter.size(),
               fits ? "software triggers" : "host-driven operations", nic.provider);
  }
  if (res.ok()) {
    fmt::print("result: {}/{} iterations verified on every rank\n", res.iterations_verified, a.iterations);
    return 0;
  }
  fmt::print("result: FAILED ({} of {} iterations verified)\n", res.iterations_verified, a.iterations);
  for (const auto& f : res.failures) fmt::print("  {}\n", f);
  return 1;
}

}  // namespace

Command add_exec_command(CLI::App& app) {
  auto args = std::make_shared<ExecArgs>();
  CLI::App* c =
      app.add_subcommand("exec", "Run a collective for real on libfabric triggered operations, one process per rank on "
                                 "127.0.0.1, and check every rank's result; over the counter budget, fall back to a "
                                 "host-driven software path or refuse. Exit 1 on a wrong value, a stall or a refusal");
  add_collective_options(*c, args->collective, args->algorithm);
  c->add_option("--ranks", args->ranks, "number of ranks (processes), 2..64");
  add_strategy_option(*c, args->strategy, StrategyUse::run);
  c->add_option("--count", args->count,
                "elements per rank (per block for allgather and "
                "alltoall)")
      ->capture_default_str();
  add_shape_options(*c, args->shape, {"datatype", "root", "radix"});
  c->add_option("--budget", args->budget, "counters per rank the plan may use (default: the provider's cntr_cnt)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40));
  c->add_option("--fallback", args->fallback, "over budget: software (the host posts the operations) or refuse")
      ->capture_default_str();
  c->add_option("--iterations", args->iterations, "runs of the collective, each verified")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  c->add_option("--timeout", args->timeout, "seconds without progress after which the watchdog ends the run")
      ->capture_default_str();
  c->add_option("--provider", args->provider, "libfabric provider")->capture_default_str();
  c->add_option("--schedule", args->schedule_path,
                "run this schedule file (with a data layout, as `counters --json` writes) "
                "instead of building one; it must pass the verifier");
  c->add_option("--perturb-threshold", args->perturb,
                "RANK:DELTA: add DELTA to the threshold of RANK's last triggered operation "
                "(to test the watchdog and the checks)");
  return {c, [args] { return run_exec(*args); }};
}

}  // namespace fabriclab::cli
