#include "scenario/offload/workload.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/csv.h"
#include "core/error.h"
#include "core/input.h"
#include "offload/options.h"
#include "core/params.h"
#include "core/random.h"

namespace fabriclab::scenario::offload_internal {

namespace {

// One row of a workload file (its six fields).
Spec spec_of(const std::vector<std::string>& f, const std::string& where) {
  Spec s;
  s.name = f[0];
  const offload::CollectiveKind kind = offload::collective_kind(f[1], f[2], where);
  s.collective = kind.collective;
  s.algorithm = kind.algorithm;
  s.ranks = offload::parse_ranks(f[3], where + ": column ranks");
  try {
    s.bytes = parse_bytes(f[4]).count();
    s.issue = parse_time(f[5]);
  } catch (const InputError& e) {
    throw InputError(where + ": " + e.what());
  }
  return s;
}

}  // namespace

std::vector<Spec> read_workload_file(const std::string& path) {
  InputStream in(path, "workload file", kTableBytes);
  csv::Reader reader(in, path, {.comments = true});
  reader.expect_header({"name", "collective", "algorithm", "ranks", "bytes", "issue"});
  std::vector<Spec> out;
  for (csv::Row row; reader.next(row);) out.push_back(spec_of(row.fields, reader.where(row)));
  if (out.empty()) throw InputError(path + ": no collectives");
  return out;
}

namespace {

// workload.file, relative to the scenario file that set it (as given when set by --set).
std::string workload_file_path(const OffloadScenario::Workload& wl, const Config& cfg) {
  if (wl.file.empty())
    throw InputError(
        fmt::format("{}: workload.arrival = \"file\" needs workload.file", cfg.origin("workload.arrival")));
  return cfg.path("workload.file");
}

// workload.collectives: (collective, algorithm) pairs.
std::vector<std::pair<std::string, std::string>> collective_kinds(const OffloadScenario::Workload& wl,
                                                                  const Config& cfg) {
  std::vector<std::pair<std::string, std::string>> kinds;
  std::stringstream ss(wl.collectives);
  const std::string what = fmt::format("{}: workload.collectives", cfg.origin("workload.collectives"));
  for (std::string item; std::getline(ss, item, ',');) {
    offload::CollectiveKind k = offload::parse_collective_kind(item, what);
    kinds.emplace_back(std::move(k.collective), std::move(k.algorithm));
  }
  if (kinds.empty()) throw InputError("workload.collectives is empty");
  return kinds;
}

// workload.count collectives cycling through the kinds, k in flight or Poisson arrivals.
std::vector<Spec> generated_workload(const OffloadScenario& sc, const Config& cfg) {
  const OffloadScenario::Workload& wl = sc.workload;
  const auto kinds = collective_kinds(wl, cfg);
  const std::int64_t n = wl.count;
  const std::int64_t k = wl.in_flight;
  RandomStream rng(sc.seed, "offload/arrivals");
  Time t;
  std::vector<Spec> specs;
  for (std::int64_t i = 0; i < n; ++i) {
    Spec s;
    const auto& [c, a] = kinds[static_cast<std::size_t>(i) % kinds.size()];
    s.name = fmt::format("{}-{}", c, i);
    s.collective = c;
    s.algorithm = a;
    s.ranks = static_cast<int>(wl.ranks);
    s.bytes = wl.bytes.count();
    if (wl.arrival == "poisson") {
      s.issue = t;
      const double gap = -std::log(1.0 - rng.uniform()) * static_cast<double>(wl.mean_gap.ps());
      t += Time::from_ps(static_cast<std::int64_t>(gap));
    } else if (i >= k) {
      s.after = static_cast<std::int32_t>(i - k);
    }
    specs.push_back(s);
  }
  return specs;
}

}  // namespace

std::vector<Spec> make_workload(const OffloadScenario& sc, const Config& cfg) {
  if (sc.workload.arrival == "file") return read_workload_file(workload_file_path(sc.workload, cfg));
  return generated_workload(sc, cfg);
}

}  // namespace fabriclab::scenario::offload_internal
