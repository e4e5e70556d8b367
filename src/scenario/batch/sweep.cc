#include "scenario/batch/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>

#include "core/error.h"
#include "core/progress.h"
#include "core/random.h"
#include "fabric/topology.h"
#include "scenario/batch/ranks.h"
#include "scenario/batch/sweep_report.h"
#include "scenario/batch/workers.h"
#include "scenario/fabric/fabric_scenario.h"
#include "scenario/report/files.h"

namespace fabriclab::scenario {

namespace fs = std::filesystem;

namespace {
// A point's work, roughly, to hand the biggest out first: hosts x the bytes each sends
// (its traffic's and its collectives'), at most what its links carry until stop_time.
double estimated_work(const FabricScenario& s) {
  double bytes = static_cast<double>(s.traffic.bytes.count());
  for (const CollectiveSpec& c : s.collectives) bytes += static_cast<double>(c.bytes.count()) * c.iterations;
  const double carried = static_cast<double>(s.sim.stop_time.ps()) * 1e-12 *
                         static_cast<double>(s.topology.host_link.rate.bps()) / 8;
  // (an ns-3 topology's hosts are in its file, relative to the scenario: counted as one)
  const double hosts = s.topology.kind == fabric::TopologyKind::ns3 ? 1 : fabric::host_count(s.topology);
  return hosts * std::min(bytes, carried);
}

// The points `which` (indices), the biggest first by estimated_work, equals in order.
template <typename Overrides>
std::vector<std::size_t> biggest_first(const std::string& scenario, std::vector<std::size_t> which,
                                       const Overrides& overrides) {
  std::vector<std::pair<double, std::size_t>> work;
  for (std::size_t i : which)
    work.emplace_back(estimated_work(fabric_parameters().resolve(scenario, overrides(i)).value), i);
  std::stable_sort(work.begin(), work.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t k = 0; k < work.size(); ++k) which[k] = work[k].second;
  return which;
}

// One point run into `dir` (in a worker process): its exit status.
int run_point(const std::string& scenario, const std::vector<std::string>& overrides, const std::string& dir) {
  try {
    const FabricSetup cfg = fabric_parameters().resolve(scenario, overrides);
    const FabricOutcome o = run_fabric(cfg, {.scenario = scenario, .out_dir = dir, .progress = false});
    return (o.lossless_drops > 0 || o.deadlock) ? 1 : 0;
  } catch (const InputError& e) {  // the run's directory says which point (and which seed) it is
    rethrow_in(dir, e);
  }
}

// What the progress line says of a point that ended with `status`.
const char* ended(int status) {
  return status == 0 ? "done" : status == 1 ? "done: lossless drop or deadlock" : "FAILED";
}

}  // namespace

std::vector<int> run_scenario_points(const std::string& scenario, const std::vector<std::string>& sets,
                                     const std::vector<std::vector<std::string>>& points,
                                     const std::vector<std::string>& dirs, unsigned jobs, const std::string& label,
                                     bool progress) {
  const bool root = mpi_rank() == 0;
  const auto overrides = [&](std::size_t i) {
    std::vector<std::string> all = sets;
    all.insert(all.end(), points[i].begin(), points[i].end());
    return all;
  };
  // The biggest first (over MPI ranks: rank 0 hands them out).
  std::vector<std::size_t> order;
  if (root) {
    std::vector<std::size_t> all(points.size());
    std::iota(all.begin(), all.end(), std::size_t{0});
    order = biggest_first(scenario, std::move(all), overrides);
  }
  // On a terminal one line, rewritten; in a log a line per finished point.
  Progress::Options po = Progress::on_stderr(label, static_cast<double>(points.size()), "points", !progress || !root);
  po.period_seconds = 0;
  Progress report(std::move(po));
  std::size_t finished = 0;
  return run_across_ranks(
      points.size(), order, jobs, [&](std::size_t i) { return run_point(scenario, overrides(i), dirs[i]); }, {},
      [&](std::size_t i, int status) {
        report.update(static_cast<double>(++finished),
                      fmt::format("{} {}", fs::path(dirs[i]).filename().string(), ended(status)));
      });
}

namespace {

void flatten(const nlohmann::json& j, const std::string& prefix, const std::vector<std::string>& skip,
             std::vector<std::pair<std::string, std::string>>& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (std::find(skip.begin(), skip.end(), key) != skip.end()) continue;
    const auto& v = it.value();
    if (v.is_object()) {
      flatten(v, key, skip, out);
    } else if (v.is_string()) {
      out.emplace_back(key, v.get<std::string>());
    } else if (v.is_null()) {
      out.emplace_back(key, "");
    } else if (v.is_array()) {
      std::string joined;  // "a|b|c": a CSV cell without commas
      for (const auto& e : v) joined += (joined.empty() ? "" : "|") + (e.is_string() ? e.get<std::string>() : e.dump());
      out.emplace_back(key, joined);
    } else {
      out.emplace_back(key, v.dump());
    }
  }
}

struct Vary {
  std::string key;
  std::vector<std::string> values;
};

std::vector<Vary> parse_varies(const std::vector<std::string>& texts) {
  std::vector<Vary> out;
  for (const std::string& t : texts) {
    const auto eq = t.find('=');
    if (eq == std::string::npos || eq == 0) throw InputError(fmt::format("--vary '{}': expected key=v1,v2,...", t));
    Vary v{t.substr(0, eq), split_list(t.substr(eq + 1))};
    if (!fabric_parameters().find(v.key))
      throw InputError(fmt::format("--vary: unknown key '{}' (fabriclab run --parameters lists them)", v.key));
    if (v.values.empty()) throw InputError(fmt::format("--vary {}: no values", v.key));
    // Every item counts: an empty one is a typo, a repeated one would run a point twice.
    const std::string list = t.substr(eq + 1);
    if (static_cast<std::size_t>(std::count(list.begin(), list.end(), ',')) + 1 != v.values.size())
      throw InputError(
          fmt::format("--vary {}: an empty value in '{}' (values are separated by single commas)", v.key, list));
    for (std::size_t i = 0; i < v.values.size(); ++i)
      for (std::size_t k = 0; k < i; ++k)
        if (v.values[k] == v.values[i])
          throw InputError(fmt::format("--vary {}: value '{}' is given twice", v.key, v.values[i]));
    for (const Vary& o : out)
      if (o.key == v.key) throw InputError(fmt::format("--vary {}: given twice", v.key));
    out.push_back(std::move(v));
  }
  if (out.empty()) throw InputError("sweep: at least one --vary key=v1,v2,... is required");
  return out;
}

}  // namespace

std::optional<double> metric_number(const std::string& t) {
  if (t.empty()) return std::nullopt;
  std::size_t used = 0;
  try {
    const double v = std::stod(t, &used);
    if (used == t.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

std::vector<std::pair<std::string, double>> derived_metrics(const std::map<std::string, double>& summary) {
  const auto bytes = summary.find("totals.data_bytes_arrived"), end = summary.find("run.simulated_end_ns");
  if (bytes == summary.end() || end == summary.end() || !(end->second > 0)) return {};
  return {{"goodput_gbps", bytes->second * 8 / end->second}};
}

bool complete_summary(const fs::path& p) {
  std::error_code ec;
  if (!fs::exists(p, ec)) return false;
  try {
    return read_json(p).contains("run");
  } catch (const InputError&) {
    return false;  // cut short by an interruption: run it again
  }
}

std::vector<std::pair<std::string, std::string>> flatten_summary(const nlohmann::json& j,
                                                                 const std::vector<std::string>& skip) {
  std::vector<std::pair<std::string, std::string>> out;
  flatten(j, "", skip, out);
  return out;
}

namespace {

// Every value must parse on its own before anything runs. Returns, per --vary and value,
// the value as the run reads it ("4MiB" for "4194304B"), or "" where it is the scenario's
// own (after --set): what a point's seed is drawn from.
std::vector<std::vector<std::string>> check_values(const SweepOptions& opt, const std::vector<Vary>& varies,
                                                   const Config& base) {
  std::vector<std::vector<std::string>> changed;
  for (const Vary& v : varies) {
    changed.emplace_back();
    for (const std::string& value : v.values) {
      std::vector<std::string> sets = opt.sets;
      sets.push_back(v.key + "=" + value);
      try {
        const std::string read = fabric_parameters().resolve(opt.scenario, sets).config.shown(v.key);
        changed.back().push_back(read == base.shown(v.key) ? "" : read);
      } catch (const InputError& e) {
        std::string why = e.what();
        if (why.rfind("--set: ", 0) == 0) why = why.substr(7);
        throw InputError(fmt::format("--vary {}: value '{}': {}", v.key, value, why));
      }
    }
  }
  return changed;
}

struct Point {
  std::string id;
  std::vector<std::string> values;  // one per --vary
  std::uint64_t seed;               // 0 when sim.seed is varied
};

// The cartesian product, first --vary slowest. Each point's seed is drawn from the
// scenario's sim.seed and the values in which the point differs from the scenario, in key
// order: it depends on nothing else, so a point keeps its seed, and its results, when
// values are added to a list, lists are reordered, or another dimension is added that
// includes the scenario's own value.
std::vector<Point> points_of(const std::vector<Vary>& varies, const std::vector<std::vector<std::string>>& changed,
                             const Config& base, bool seed_varied) {
  std::size_t total = 1;
  for (const Vary& v : varies) {
    total *= v.values.size();  // values.size() >= 1 and total <= 100000 before: no overflow
    if (total > 100000) throw InputError("sweep: the --vary lists make more than 100000 points");
  }
  std::vector<Point> points;
  std::vector<std::pair<std::string, std::string>> differs;
  for (std::size_t n = 0; n < total; ++n) {
    Point p;
    p.id = fmt::format("p{:04}", n);
    std::size_t rest = n, stride = total;
    differs.clear();
    for (std::size_t k = 0; k < varies.size(); ++k) {
      const Vary& v = varies[k];
      stride /= v.values.size();
      const std::size_t i = rest / stride;
      p.values.push_back(v.values[i]);
      if (!changed[k][i].empty()) differs.emplace_back(v.key, changed[k][i]);
      rest %= stride;
    }
    std::sort(differs.begin(), differs.end());
    std::string text;
    for (const auto& [key, value] : differs) text += key + "=" + value + ";";
    p.seed = seed_varied
                 ? 0
                 : RandomStream(static_cast<std::uint64_t>(base.integer("sim.seed")), "sweep/" + text).next() >> 33;
    points.push_back(std::move(p));
  }
  return points;
}

// DIR/sweep.json: written by the first run; a directory made by another sweep is refused
// rather than mixed.
void claim_directory(const fs::path& dir, const SweepOptions& opt, const std::vector<Vary>& varies,
                     const std::vector<Point>& points, bool seed_varied) {
  nlohmann::ordered_json manifest;
  manifest["scenario"] = fs::absolute(opt.scenario).lexically_normal().string();
  manifest["scenario_text"] = read_text(opt.scenario);
  manifest["vary"] = opt.vary;
  manifest["set"] = opt.sets;
  for (const Point& p : points) {
    nlohmann::ordered_json pj;
    pj["point"] = p.id;
    for (std::size_t k = 0; k < varies.size(); ++k) pj[varies[k].key] = p.values[k];
    if (!seed_varied) pj["seed"] = p.seed;
    manifest["points"].push_back(std::move(pj));
  }
  std::error_code ec;
  fs::create_directories(dir / "points", ec);
  if (ec) throw InputError(fmt::format("{}: cannot create: {}", dir.string(), ec.message()));
  const fs::path manifest_path = dir / "sweep.json";
  if (fs::exists(manifest_path)) {
    const nlohmann::json old = read_json(manifest_path);
    if (old != nlohmann::json(manifest))
      throw InputError(fmt::format("{} holds a different sweep (scenario, its text, --vary or --set differ): use "
                                   "another --out or remove it",
                                   dir.string()));
  } else {
    write_file(manifest_path, manifest.dump(2) + "\n");
  }
}

// DIR/points.log, one line per event, appended as it happens (rank 0 only): "started
// POINT rank R on HOST" and "ended POINT status S". What it says about the points still
// to run names those an earlier run lost (killed, or a rank that died).
class Journal {
 public:
  explicit Journal(const fs::path& path) : path_(path) {}
  // The points started and never ended in earlier runs: point -> "rank R on HOST".
  std::map<std::string, std::string> lost() const {
    std::map<std::string, std::string> running;
    std::ifstream in(path_);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream words(line);
      std::string what, point;
      words >> what >> point;
      if (what == "started") {
        std::string rest;
        std::getline(words, rest);
        running[point] = rest.empty() ? rest : rest.substr(1);
      } else if (what == "ended") {
        running.erase(point);
      }
    }
    return running;
  }
  void add(const std::string& line) {
    std::ofstream out(path_, std::ios::app);
    out << line << '\n';
  }

 private:
  fs::path path_;
};

// Runs the points whose summary.json is not complete yet, over every rank (the biggest
// first); returns each point's exit status on rank 0 (0 for those skipped), nothing on
// the others.
std::vector<int> run_pending(const fs::path& dir, const SweepOptions& opt, const std::vector<Vary>& varies,
                             const std::vector<Point>& points, bool seed_varied, SweepOutcome& out) {
  const bool root = mpi_rank() == 0;
  const auto overrides = [&](std::size_t i) {
    std::vector<std::string> o = opt.sets;
    for (std::size_t k = 0; k < varies.size(); ++k) o.push_back(varies[k].key + "=" + points[i].values[k]);
    if (!seed_varied) o.push_back(fmt::format("sim.seed={}", points[i].seed));
    return o;
  };
  std::vector<std::size_t> order;  // rank 0: the points to run, biggest first
  Journal journal(dir / "points.log");
  if (root) {
    std::vector<std::size_t> pending;
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (complete_summary(dir / "points" / points[i].id / "summary.json")) ++out.skipped;
      else pending.push_back(i);
    }
    order = biggest_first(opt.scenario, std::move(pending), overrides);
    if (opt.progress && out.skipped > 0)
      std::fprintf(stderr, "sweep: %zu of %zu points already done, %zu to run\n", out.skipped, out.points,
                   order.size());
    const auto lost = journal.lost();
    for (std::size_t i : order)
      if (const auto it = lost.find(points[i].id); it != lost.end() && opt.progress)
        std::fprintf(stderr,
                     "sweep: %s was running (%s) when an earlier run stopped, and did not finish: running it "
                     "again\n",
                     points[i].id.c_str(), it->second.c_str());
  }
  Progress::Options po = Progress::on_stderr("sweep", static_cast<double>(order.size()), "points",
                                             !opt.progress || !root);
  po.period_seconds = 0;
  Progress report(std::move(po));
  std::size_t finished = 0;
  const std::vector<int> status = run_across_ranks(
      points.size(), order, opt.jobs,
      [&](std::size_t i) { return run_point(opt.scenario, overrides(i), (dir / "points" / points[i].id).string()); },
      [&](std::size_t i, int rank, const std::string& host) {
        journal.add(fmt::format("started {} rank {} on {}", points[i].id, rank, host));
      },
      [&](std::size_t i, int code) {
        journal.add(fmt::format("ended {} status {}", points[i].id, code));
        report.update(static_cast<double>(++finished), fmt::format("{} {}", points[i].id, ended(code)));
      });
  if (!root) return {};
  out.ran = order.size();
  std::vector<int> status_of(points.size(), 0);
  for (std::size_t i : order) status_of[i] = status[i];
  return status_of;
}

// Every point's summary metrics (flattened) and state: ok, failed, lossless_drops or deadlock.
struct Metrics {
  std::vector<std::string> names;                      // in order of first appearance
  std::vector<std::map<std::string, std::string>> of;  // per point
  std::vector<std::string> state;
};

Metrics collect(const fs::path& dir, const std::vector<Point>& points, const std::vector<int>& status,
                SweepOutcome& out) {
  Metrics m;
  m.of.resize(points.size());
  m.state.assign(points.size(), "ok");
  const std::vector<std::string> skip = {"config", "scenario", "congestion_control.dcqcn", "run.wall_seconds"};
  for (std::size_t i = 0; i < points.size(); ++i) {
    const fs::path summary = dir / "points" / points[i].id / "summary.json";
    const int code = status[i];
    if (code >= 2 || !complete_summary(summary)) {
      m.state[i] = fmt::format("failed (exit {})", code);
      out.failed.push_back(points[i].id);
      continue;
    }
    std::map<std::string, double> numbers;
    for (auto& [k, v] : flatten_summary(read_json(summary), skip)) {
      if (std::find(m.names.begin(), m.names.end(), k) == m.names.end()) m.names.push_back(k);
      if (const auto x = metric_number(v)) numbers[k] = *x;
      m.of[i][k] = v;
    }
    for (const auto& [k, x] : derived_metrics(numbers)) {
      if (std::find(m.names.begin(), m.names.end(), k) == m.names.end()) m.names.push_back(k);
      m.of[i][k] = fmt::format("{:.3f}", x);
    }
    const auto& pm = m.of[i];
    const bool lossless = pm.count("totals.lossless_drops") && pm.at("totals.lossless_drops") != "0";
    const bool deadlock = pm.count("pfc_deadlock.detected_at_ns") > 0;
    if (lossless || deadlock) {
      m.state[i] = lossless ? "lossless_drops" : "deadlock";
      out.unsafe.push_back(points[i].id);
    }
  }
  // The columns a user asks for first, then the others in the summaries' order.
  std::vector<std::string> names;
  for (const std::string& k : kFirstSweepColumns)
    if (std::find(m.names.begin(), m.names.end(), k) != m.names.end()) names.push_back(k);
  for (const std::string& k : m.names)
    if (std::find(names.begin(), names.end(), k) == names.end()) names.push_back(k);
  m.names = std::move(names);
  return m;
}

// sweep.csv: the varied values, the seed, the status, then the first metrics
// (kFirstSweepColumns) and every other metric of the summaries.
std::string sweep_csv(const std::vector<Vary>& varies, const std::vector<Point>& points, std::ptrdiff_t seed_at,
                      const Metrics& m) {
  std::string csv = "point";
  for (const Vary& v : varies) csv += "," + v.key;
  csv += ",seed,status";
  for (const auto& name : m.names) csv += "," + name;
  csv += "\n";
  for (std::size_t i = 0; i < points.size(); ++i) {
    csv += points[i].id;
    for (const auto& v : points[i].values) csv += "," + v;
    csv += "," + (seed_at >= 0 ? points[i].values[static_cast<std::size_t>(seed_at)] : std::to_string(points[i].seed));
    csv += "," + m.state[i];
    for (const auto& name : m.names) {
      const auto it = m.of[i].find(name);
      std::string cell = it == m.of[i].end() ? std::string() : it->second;
      std::replace(cell.begin(), cell.end(), ',', ';');  // keep the row's width
      csv += "," + cell;
    }
    csv += "\n";
  }
  return csv;
}

// DIR/report.md: opt.metric against each varied key. InputError if no point that ran has
// it (after sweep.csv, which lists the columns there are).
void write_report(const fs::path& dir, const SweepOptions& opt, const std::vector<Vary>& varies,
                  const std::vector<Point>& points, const Metrics& m) {
  const bool any_ran = std::any_of(m.state.begin(), m.state.end(),
                                   [](const auto& s) { return s.rfind("failed", 0) != 0; });
  if (any_ran && std::find(m.names.begin(), m.names.end(), opt.metric) == m.names.end())
    throw InputError(fmt::format("sweep: --metric {}: not a column of {} (its metrics are the columns after "
                                 "'status'; the points are done: the same sweep with another --metric only "
                                 "redraws the report)",
                                 opt.metric, (dir / "sweep.csv").string()));
  SweepTable t;
  t.scenario = opt.scenario;
  t.sets = opt.sets;
  t.metric = opt.metric;
  for (const Vary& v : varies) {
    t.keys.push_back(v.key);
    t.values.push_back(v.values);
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    SweepTable::Row r;
    r.id = points[i].id;
    for (std::size_t k = 0; k < varies.size(); ++k)
      r.at.push_back(static_cast<std::size_t>(
          std::find(varies[k].values.begin(), varies[k].values.end(), points[i].values[k]) - varies[k].values.begin()));
    r.status = m.state[i];
    if (const auto it = m.of[i].find(opt.metric); it != m.of[i].end()) r.metric = metric_number(it->second);
    t.rows.push_back(std::move(r));
  }
  write_sweep_report(dir, t);
}

}  // namespace

SweepOutcome run_sweep(const SweepOptions& opt) {
  // Under MPI, rank 0 checks everything and claims the directory; the others go on only
  // if it could (its error is the run's: they exit 2 without repeating it).
  const bool root = mpi_rank() == 0;
  std::string error;
  std::vector<Vary> varies;
  std::vector<Point> points;
  bool seed_varied = false;
  std::ptrdiff_t seed_at = -1;  // sim.seed's --vary, if any
  try {
    if (opt.out_dir.empty()) throw InputError("sweep: --out DIR is required");
    varies = parse_varies(opt.vary);
    const Config base = fabric_parameters().resolve(opt.scenario, opt.sets).config;
    const auto seed_it = std::find_if(varies.begin(), varies.end(), [](const Vary& v) { return v.key == "sim.seed"; });
    seed_varied = seed_it != varies.end();
    seed_at = seed_varied ? seed_it - varies.begin() : -1;
    // Every rank draws the seeds, so every rank reads the values (rank 0's error wins).
    points = points_of(varies, check_values(opt, varies, base), base, seed_varied);
    if (opt.metric.empty()) throw InputError("sweep: --metric: expected a column of sweep.csv, e.g. goodput_gbps");
    if (root) {
      claim_directory(fs::path(opt.out_dir), opt, varies, points, seed_varied);
      std::error_code ec;  // written last: a report there is this run's
      fs::remove(fs::path(opt.out_dir) / "report.md", ec);
    }
  } catch (const InputError& e) {
    error = e.what();
  }
  error = broadcast_from_root(error);
  if (!error.empty()) throw InputError(error);
  const fs::path dir(opt.out_dir);

  SweepOutcome out;
  out.root = root;
  out.points = points.size();
  const std::vector<int> status = run_pending(dir, opt, varies, points, seed_varied, out);
  if (!root) return out;
  const Metrics m = collect(dir, points, status, out);
  out.csv = (dir / "sweep.csv").string();
  write_file(out.csv, sweep_csv(varies, points, seed_at, m));
  write_report(dir, opt, varies, points, m);
  out.report = (dir / "report.md").string();
  return out;
}

}  // namespace fabriclab::scenario
