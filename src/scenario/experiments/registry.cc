#include "scenario/experiments/registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "scenario/batch/ranks.h"
#include "scenario/batch/sweep.h"
#include "scenario/experiments/experiment.h"
#include "scenario/fabric/fabric_scenario.h"
#include "scenario/report/csv_table.h"
#include "scenario/report/files.h"
#include "scenario/report/markdown.h"

namespace fabriclab::scenario {

namespace fs = std::filesystem;
using experiments::Definition;
using experiments::Ran;
using experiments::Report;
using experiments::Variant;

namespace {

const std::vector<Definition>& definitions() {
  static const std::vector<Definition> d = {experiments::training(),    experiments::congestion_spreading(),
                                            experiments::ecn_cnp_pfc(), experiments::ecmp_vs_spray(),
                                            experiments::reorder(),     experiments::collectives(),
                                            experiments::transports(),  experiments::spraying(),
                                            experiments::fct_slowdown()};
  return d;
}

}  // namespace

const std::vector<std::string>& experiment_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& d : definitions()) n.push_back(d.name);
    return n;
  }();
  return names;
}

namespace {

const Definition& definition(const std::string& name) {
  const auto def = std::find_if(definitions().begin(), definitions().end(),
                                [&](const Definition& d) { return d.name == name; });
  if (def == definitions().end()) {
    std::string list;
    for (const auto& n : experiment_names()) list += (list.empty() ? "" : ", ") + n;
    throw InputError("unknown experiment '" + name + "' (expected one of: " + list + ")");
  }
  return *def;
}

// Runs every variant into OUT/variants/LABEL and reads its outputs back; the labels of
// those that dropped on a lossless priority or deadlocked go to `unsafe`.
std::vector<Ran> run_variants(const ExperimentOptions& opt, const std::string& scenario, const fs::path& out,
                              const std::vector<Variant>& variants, std::vector<std::string>& unsafe) {
  std::vector<std::vector<std::string>> points;
  std::vector<std::string> dirs;
  for (const Variant& v : variants) {
    points.push_back(v.sets);
    dirs.push_back((out / "variants" / v.label).string());
  }
  std::string error;
  if (mpi_rank() == 0) {  // the others run variants only once it is there
    std::error_code ec;
    fs::create_directories(out / "variants", ec);
    if (ec) error = fmt::format("{}: cannot create: {}", out.string(), ec.message());
  }
  if (!(error = broadcast_from_root(error)).empty()) throw InputError(error);
  const std::vector<int> status = run_scenario_points(scenario, opt.sets, points, dirs, opt.jobs,
                                                      "experiment " + opt.name, opt.progress);
  std::vector<Ran> runs;
  if (mpi_rank() != 0) return runs;  // rank 0 reads them and reports
  for (std::size_t i = 0; i < variants.size(); ++i) {
    if (status[i] >= 2)
      throw InputError(fmt::format("experiment {}: variant {} failed (exit {}; its message is above)", opt.name,
                                   variants[i].label, status[i]));
    if (status[i] == 1) unsafe.push_back(variants[i].label);
    const fs::path d = dirs[i];
    runs.push_back(
        {variants[i], d, read_json(d / "summary.json"), read_csv(d / "flows.csv"), read_csv(d / "ports.csv")});
  }
  return runs;
}

// report.md: the command, the headlines (and any unsafe variant), what was varied (the
// variants' table when it is short), what was measured, then the analysis's sections.
std::string report_md(const ExperimentOptions& opt, const std::string& scenario, const std::vector<Variant>& variants,
                      const std::vector<std::string>& unsafe, const Report& r) {
  std::string md = "# " + r.title + "\n\n";
  md += fmt::format("`fabriclab experiment {}` on `{}`", opt.name, scenario);
  for (const auto& s : opt.sets) md += " `--set " + s + "`";
  md += ". Every run's outputs are in `variants/`; the numbers below are in `results.csv` and `results.json`.\n\n";
  md += "## Headline\n\n";
  for (const auto& h : r.headlines) md += "- " + h + "\n";
  if (!unsafe.empty()) {
    md += "- **Lossless drops or a PFC deadlock** in:";
    for (const auto& u : unsafe) md += " " + u;
    md += " (see their summary.json).\n";
  }
  md += "\n## What was varied\n\n" + r.varied + "\n\n";
  std::vector<std::vector<std::string>> vt;
  for (const Variant& v : variants) {
    std::string sets;
    for (const auto& s : v.sets) sets += (sets.empty() ? "`" : " `") + s + "`";
    vt.push_back({v.label, v.what, sets});
  }
  if (variants.size() <= 12) md += markdown_table({"variant", "what", "settings"}, vt) + "\n";
  md += "## What was measured\n\n" + r.measured + "\n\n" + r.body;
  return md;
}

}  // namespace

ExperimentOutcome run_experiment(const ExperimentOptions& opt) {
  const Definition& def = definition(opt.name);
  std::string scenario = opt.scenario;
  if (scenario.empty()) {
    const fs::path here = fs::path("examples") / (opt.name + ".toml");
    scenario = fs::exists(here) || opt.shipped.empty() ? here.string()
                                                       : (fs::path(opt.shipped) / here.filename()).string();
  }
  if (!fs::exists(scenario))
    throw InputError(scenario + ": not found" +
                     (opt.scenario.empty() ? " (nor in ./examples/): give --scenario FILE" : std::string()));
  const fs::path out = opt.out_dir.empty() ? fs::path("results") / opt.name : fs::path(opt.out_dir);
  const Config base = fabric_parameters().resolve(scenario, opt.sets).config;
  const std::vector<Variant> variants = def.variants(base);
  std::vector<std::string> unsafe;
  if (mpi_rank() == 0) prepare_outputs(out, "results.json");  // written last
  const std::vector<Ran> runs = run_variants(opt, scenario, out, variants, unsafe);
  ExperimentOutcome o;
  o.root = mpi_rank() == 0;
  if (!o.root) return o;  // another MPI rank: rank 0 writes and reports

  Report r;
  r.title = def.title;
  def.analyze(base, runs, out, r);
  write_file(out / "report.md", report_md(opt, scenario, variants, unsafe, r));
  r.results["experiment"] = opt.name;
  r.results["scenario"] = scenario;
  r.results["headlines"] = r.headlines;
  write_file(out / "results.json", r.results.dump(2) + "\n");

  o.dir = out.string();
  o.unsafe = !unsafe.empty();
  o.headlines = r.headlines;
  o.results = r.results;
  return o;
}

}  // namespace fabriclab::scenario
