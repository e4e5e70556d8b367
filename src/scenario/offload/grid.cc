#include "scenario/offload/grid.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>

#include "core/error.h"
#include "core/progress.h"
#include "nicmodel/model.h"
#include "offload/advice.h"
#include "offload/assignment.h"
#include "offload/options.h"
#include "scenario/batch/ranks.h"
#include "scenario/batch/workers.h"
#include "scenario/offload/offload_scenario.h"
#include "scenario/offload/simulation.h"
#include "scenario/report/files.h"

namespace fabriclab::scenario {

namespace offload_internal {

namespace {

std::vector<std::string> list_of(const Config& cfg, const std::string& key) {
  auto out = split_list(cfg.text(key));
  if (out.empty()) throw InputError(fmt::format("{}: {}: expected a comma-separated list", cfg.origin(key), key));
  return out;
}

std::vector<std::int64_t> numbers_of(const Config& cfg, const std::string& key) {
  std::vector<std::int64_t> out;
  for (const std::string& x : list_of(cfg, key)) {
    const auto v = parse_integer(x);
    if (!v || *v < 1) throw InputError(fmt::format("{}: {}: '{}' is not a positive integer", cfg.origin(key), key, x));
    out.push_back(*v);
  }
  return out;
}

// Most offloaded collectives running at one instant ([start, done) intervals).
std::int64_t max_concurrent(const std::vector<nicmodel::JobResult>& rs) {
  std::vector<std::pair<Time, int>> ev;
  for (const auto& r : rs)
    if (r.offloaded) {
      ev.push_back({r.start, +1});
      ev.push_back({r.done, -1});
    }
  std::sort(ev.begin(), ev.end(),
            [](auto a, auto b) { return a.first < b.first || (a.first == b.first && a.second < b.second); });
  std::int64_t cur = 0, best = 0;
  for (auto [t, d] : ev) best = std::max(best, cur += d);
  return best;
}

// A simulation to run; rows name theirs (several rows can share one).
struct Task {
  Spec proto;
  std::shared_ptr<const offload::Schedule> schedule;
  offload::Strategy strategy{};
  nicmodel::Policy policy{};
  nicmodel::NicParams params;
  std::int64_t k = 0, cost = 0;
  bool software_only = false;
};

// What a worker reports of its simulation.
struct TaskResult {
  std::int64_t makespan = 0, stall = 0, mean_completion = 0, max_concurrent = 0, software = 0;
  std::uint64_t hits = 0, misses = 0;
};

// The grid's rows and the simulations they need.
struct Plan {
  std::vector<GridRow> rows;
  std::vector<Task> tasks;
  std::vector<std::pair<std::size_t, std::size_t>> row_task;  // (row, task)
};

// One collective of the grid: KIND (COLLECTIVE:ALGORITHM) on P ranks.
Spec shape(const OffloadSetup& setup, const std::string& kind, std::int64_t P) {
  offload::CollectiveKind k = offload::parse_collective_kind(
      kind, fmt::format("{}: experiment.collectives", setup.config.origin("experiment.collectives")));
  Spec proto;
  proto.collective = std::move(k.collective);
  proto.algorithm = std::move(k.algorithm);
  proto.ranks = static_cast<int>(P);
  proto.bytes = setup.value.workload.bytes.count();
  return proto;
}

// The task that simulates a point: a new one, or the software-only one it shares.
std::size_t task_for(Plan& plan, Task t) {
  std::size_t task = plan.tasks.size();
  for (std::size_t i = 0; i < plan.tasks.size() && t.software_only; ++i)
    if (plan.tasks[i].software_only && plan.tasks[i].schedule == t.schedule && plan.tasks[i].k == t.k) task = i;
  if (task == plan.tasks.size()) plan.tasks.push_back(std::move(t));
  return task;
}

// The rows of one collective shape and assignment: every budget, cache, policy and k.
// offload::decide() says, as the model will, whether a point can ever offload: a copy
// that never fits an idle NIC is refused under stall (no simulation: "never fits") and
// runs in software under fallback.
void plan_shape(const OffloadSetup& setup, const GridAxes& axes, const Spec& proto, const std::string& strat,
                offload::Strategy strategy, ScheduleCache& cache, Plan& plan) {
  const auto sched = cache.get(proto, strategy);
  cache.prepared(proto, strategy);  // here, once, before the workers fork
  const std::int64_t per_nic = sched->counter_summary().max;
  const std::vector<offload::NicResources> need = offload::needs_per_rank(*sched);  // rank r on NIC r
  const auto ops = static_cast<std::int64_t>(sched->size());
  for (std::int64_t budget : axes.budgets) {
    const offload::NicResources idle{.counters = budget, .slots = setup.value.nic.slots};
    const std::vector<offload::NicResources> all_free(need.size(), idle);
    for (std::int64_t c : axes.caches)
      for (const std::string& pol : axes.policies) {
        const nicmodel::Policy policy = pol == "stall" ? nicmodel::Policy::stall : nicmodel::Policy::fallback;
        const offload::OffloadDecision d = offload::decide(need, all_free, idle, nicmodel::when_short(policy));
        const bool never_fits = d.why == offload::OffloadDecision::Why::never_fits;
        for (std::int64_t k : axes.ks) {
          GridRow row;
          row.collective = proto.collective;
          row.algorithm = proto.algorithm;
          row.strategy = strat;
          row.policy = pol;
          row.ranks = proto.ranks;
          row.counters = budget;
          row.cache = c;
          row.k = k;
          row.counters_per_nic = per_nic;
          row.never_fits = never_fits;
          if (k * ops > axes.max_ops || d.decision == offload::Decision::refuse) {
            plan.rows.push_back(row);
            continue;
          }
          Task t;
          t.proto = proto;
          t.schedule = sched;
          t.strategy = strategy;
          t.policy = policy;
          t.params = setup.value.nic;
          t.params.counters = budget;
          t.params.cache_entries = static_cast<std::int32_t>(c);
          t.k = k;
          // When no copy can ever be offloaded, every one runs in software from its
          // issue and neither the counter budget nor the cache plays a part: such points
          // share one simulation per schedule and k.
          t.software_only = never_fits;
          t.cost = k * ops;
          row.simulated = true;
          plan.row_task.emplace_back(plan.rows.size(), task_for(plan, std::move(t)));
          plan.rows.push_back(row);
        }
      }
  }
}

Plan plan_grid(const OffloadSetup& setup, const GridAxes& axes, ScheduleCache& cache) {
  Plan plan;
  for (const std::string& kind : axes.kinds)
    for (std::int64_t P : axes.ranks)
      for (const std::string& strat : axes.strategies) {
        const auto strategy = *params::value_named(offload::kStrategyNames, strat);  // (grid_axes checked it)
        plan_shape(setup, axes, shape(setup, kind, P), strat, strategy, cache, plan);
      }
  return plan;
}

std::string describe(const Task& t) {
  return fmt::format("{}:{} on {} ranks, {}, {} counters, cache {}, {}, {} at once", t.proto.collective,
                     t.proto.algorithm, t.proto.ranks, offload::to_string(t.strategy), t.params.counters,
                     t.params.cache_entries, t.policy == nicmodel::Policy::stall ? "stall" : "fallback", t.k);
}

// In a worker: k copies of the collective issued at once.
TaskResult simulate_task(const Task& t, ScheduleCache& cache) {
  std::vector<Spec> specs(static_cast<std::size_t>(t.k), t.proto);
  for (std::int64_t x = 0; x < t.k; ++x) specs[static_cast<std::size_t>(x)].name = fmt::format("c{}", x);
  Simulated sim;
  try {
    sim = simulate(t.params, t.policy, t.strategy, specs, cache);
  } catch (const InputError& e) {
    throw InputError(describe(t) + ": " + e.what());
  } catch (const std::bad_alloc&) {
    throw InputError(describe(t) + ": out of memory (fewer --jobs, or a smaller experiment.max_ops)");
  }
  TaskResult r;
  r.makespan = sim.model->makespan().ps();
  r.max_concurrent = max_concurrent(sim.results);
  for (int n = 0; n < sim.nics; ++n) {
    r.hits += sim.model->cache(n).hits();
    r.misses += sim.model->cache(n).misses();
  }
  Time total;
  for (const auto& x : sim.results) {
    r.stall += x.stall().ps();
    total += x.completion();
    r.software += !x.offloaded;
  }
  r.mean_completion = total.ps() / t.k;
  return r;
}

// The figures a worker left in `file`, once its status says it finished.
TaskResult task_result(const Task& t, std::size_t index, int status, const std::filesystem::path& file) {
  // The worker printed its own message; name the point here too.
  if (status == 2) throw InputError("offload experiment: " + describe(t) + " failed (see above)");
  if (status == 128 + 9)
    throw InputError("offload experiment: " + describe(t) +
                     ": its worker was killed (out of memory? try "
                     "fewer --jobs or a smaller experiment.max_ops)");
  if (status != 0)
    throw std::runtime_error(
        fmt::format("offload experiment: {} failed in its worker (status {})", describe(t), status));
  std::istringstream in(read_text(file));
  TaskResult r;
  if (!(in >> r.makespan >> r.stall >> r.mean_completion >> r.max_concurrent >> r.software >> r.hits >> r.misses))
    throw std::runtime_error(fmt::format("offload experiment: a worker left an unreadable result for point {}", index));
  return r;
}

// The points run in worker processes, largest first (so that the last to finish is a
// small one); each child leaves its figures in a file of DIR/.points, read back here in
// task order.
std::vector<TaskResult> run_tasks(const std::vector<Task>& tasks, ScheduleCache& cache, const std::string& out_dir,
                                  unsigned jobs, bool quiet) {
  // Over MPI ranks, rank 0 makes the scratch directory, hands the points out and reads
  // them back; the others run points only.
  const bool root = mpi_rank() == 0;
  const std::filesystem::path scratch = std::filesystem::path(out_dir) / ".points";
  std::string error;
  if (root) {
    std::error_code ec;
    std::filesystem::remove_all(scratch, ec);
    std::filesystem::create_directories(scratch, ec);
    if (ec) error = fmt::format("{}: cannot create {}: {}", out_dir, scratch.string(), ec.message());
  }
  if (!(error = broadcast_from_root(error)).empty()) throw InputError(error);
  struct RemovedOnExit {  // however this ends
    std::filesystem::path path;
    ~RemovedOnExit() {
      std::error_code ignored;
      if (!path.empty()) std::filesystem::remove_all(path, ignored);
    }
  } scratch_guard{root ? scratch : std::filesystem::path()};
  std::vector<std::size_t> order(tasks.size());
  for (std::size_t t = 0; t < order.size(); ++t) order[t] = t;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return tasks[a].cost > tasks[b].cost; });
  // What remains is estimated by the tasks' costs (they run largest first).
  double total_cost = 0, done_cost = 0;
  for (const Task& t : tasks) total_cost += static_cast<double>(t.cost);
  std::size_t finished = 0;
  Progress::Options po = Progress::on_stderr("offload experiment", total_cost, "", quiet || !root);
  po.show = [&](double) { return fmt::format("{} of {} simulations", finished, order.size()); };
  Progress progress(std::move(po));
  const auto statuses = run_across_ranks(
      tasks.size(), order, jobs,
      [&](std::size_t t) {
        const TaskResult r = simulate_task(tasks[t], cache);
        write_file(scratch / std::to_string(t),
                   fmt::format("{} {} {} {} {} {} {}\n", r.makespan, r.stall, r.mean_completion, r.max_concurrent,
                               r.software, r.hits, r.misses));
        return 0;
      },
      {},
      [&](std::size_t t, int) {
        ++finished;
        done_cost += static_cast<double>(tasks[t].cost);
        progress.update(done_cost);
      });
  progress.finish();
  if (!root) return {};
  std::vector<TaskResult> results(tasks.size());
  for (std::size_t t = 0; t < tasks.size(); ++t)
    results[t] = task_result(tasks[t], t, statuses[t], scratch / std::to_string(t));
  return results;
}

// Each simulated row takes its task's figures.
void fill_rows(Plan& plan, const std::vector<TaskResult>& results) {
  for (const auto& [row_index, t] : plan.row_task) {
    GridRow& row = plan.rows[row_index];
    const TaskResult& r = results[t];
    row.makespan = Time::from_ps(r.makespan);
    row.stall = Time::from_ps(r.stall);
    row.mean_completion = Time::from_ps(r.mean_completion);
    row.max_concurrent = r.max_concurrent;
    row.software = r.software;
    row.hit_rate = r.hits + r.misses ? static_cast<double>(r.hits) / static_cast<double>(r.hits + r.misses) : 0.0;
  }
}

std::string experiment_csv(const std::vector<GridRow>& rows) {
  std::string csv =
      "collective,algorithm,ranks,strategy,counters,cache_entries,policy,concurrency,counters_per_nic,simulated,"
      "max_concurrent_offloaded,software,makespan_us,stall_us_total,mean_completion_us,cache_hit_rate\n";
  for (const GridRow& r : rows)
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.4f}\n", r.collective, r.algorithm, r.ranks,
                       r.strategy, r.counters, r.cache, r.policy, r.k, r.counters_per_nic,
                       r.simulated ? "yes" : (r.never_fits && r.policy == "stall" ? "never-fits" : "skipped"),
                       r.max_concurrent, r.software, us_text(r.makespan), us_text(r.stall), us_text(r.mean_completion),
                       r.hit_rate);
  return csv;
}

}  // namespace

GridAxes grid_axes(const OffloadSetup& setup) {
  const Config& cfg = setup.config;
  GridAxes a;
  a.ks = numbers_of(cfg, "experiment.concurrency");
  a.ranks = numbers_of(cfg, "experiment.ranks");
  a.budgets = numbers_of(cfg, "experiment.counters");
  a.caches = numbers_of(cfg, "experiment.cache_entries");
  a.strategies = list_of(cfg, "experiment.strategies");
  a.policies = list_of(cfg, "experiment.policies");
  a.kinds = list_of(cfg, "experiment.collectives");
  a.max_ops = setup.value.experiment.max_ops;
  // Checked here, before the work: the grid runs them all.
  for (const auto& x : a.strategies)
    offload::parse_strategy(x, offload::StrategyUse::run,
                            fmt::format("{}: experiment.strategies", cfg.origin("experiment.strategies")));
  for (const auto& x : a.kinds)
    offload::parse_collective_kind(x, fmt::format("{}: experiment.collectives", cfg.origin("experiment.collectives")));
  for (const std::int64_t P : a.ranks)
    offload::check_ranks(P, fmt::format("{}: experiment.ranks", cfg.origin("experiment.ranks")));
  for (const auto& x : a.policies)
    if (x != "stall" && x != "fallback")
      throw InputError(fmt::format("{}: experiment.policies: '{}' (expected stall or fallback)",
                                   cfg.origin("experiment.policies"), x));
  return a;
}

std::string us_text(Time t) { return fmt::format("{:.1f}", static_cast<double>(t.ps()) / 1e6); }

}  // namespace offload_internal

std::size_t run_offload_experiment(const OffloadSetup& setup, const std::string& scenario, const std::string& out_dir,
                                   unsigned jobs, bool quiet) {
  using namespace offload_internal;
  const GridAxes axes = grid_axes(setup);
  ScheduleCache cache;
  Plan plan = plan_grid(setup, axes, cache);
  if (mpi_rank() == 0) prepare_outputs(out_dir, "report.md");  // written last
  const std::vector<TaskResult> results = run_tasks(plan.tasks, cache, out_dir, jobs, quiet);
  if (mpi_rank() != 0) return plan.rows.size();  // rank 0 writes the outputs
  fill_rows(plan, results);
  const std::filesystem::path dir(out_dir);
  write_file(dir / "experiment.csv", experiment_csv(plan.rows));
  write_grid_report(dir, scenario, setup.config, axes, plan.rows);
  return plan.rows.size();
}

}  // namespace fabriclab::scenario
