#include "scenario/fabric/collbench.h"

#include <fmt/format.h>

#include <filesystem>

#include "core/error.h"
#include "core/input.h"
#include "fabric/topology.h"
#include "offload/collectives.h"
#include "scenario/fabric/fabric_scenario.h"
#include "scenario/report/files.h"
#include "scenario/report/gnuplot.h"

namespace fabriclab::scenario {

namespace fs = std::filesystem;

namespace {

// nccl-tests' count is a rank's part for these: those whose size is n of the planner's
// blocks (nccl_size), and reduce_scatter.
bool count_per_rank(const std::string& c) { return nccl_size(c, 1, 2) > 1 || c == "reduce_scatter"; }
bool reduces(const std::string& c) { return c == "allreduce" || c == "reduce" || c == "reduce_scatter"; }
bool rooted(const std::string& collective, const std::string& algorithm) {
  for (const offload::AlgorithmInfo& a : offload::algorithms())
    if (a.collective == collective && a.algorithm == algorithm) return a.uses_root;
  return false;
}

}  // namespace

CollbenchResult run_collbench(const CollbenchOptions& o) {
  if (o.collective == "barrier")
    throw InputError("collbench: a barrier moves no bytes: there is no bandwidth to measure");
  if (o.min.count() <= 0) throw InputError("collbench: --minbytes must be at least 1B");
  if (o.max < o.min)
    throw InputError(
        fmt::format("collbench: --maxbytes {} is below --minbytes {}", to_string(o.max), to_string(o.min)));
  if (o.factor < 2) throw InputError("collbench: --stepfactor must be at least 2");
  if (o.iters < 1) throw InputError("collbench: --iters must be at least 1");
  // The scenario with one [[collective]] entry more: collbench's.
  const std::string text = read_input(o.scenario, "scenario", kScenarioBytes) + "\n[[collective]]\n";
  std::vector<std::string> base = o.sets;
  base.push_back("collective.0.collective=" + o.collective);
  base.push_back("collective.0.algorithm=" + o.algorithm);
  base.push_back(fmt::format("collective.0.iterations={}", o.warmup + o.iters));
  base.push_back("collective.0.in_flight=1");
  if (o.ranks > 0) base.push_back(fmt::format("collective.0.ranks={}", o.ranks));
  const FabricSetup probe = fabric_parameters().resolve_text(text, o.scenario, base);
  if (probe.value.collectives.size() != 1)
    throw InputError(
        fmt::format("{}: collbench adds the one [[collective]] it measures; the scenario has {} of its own", o.scenario,
                    probe.value.collectives.size() - 1));
  const CollectiveSpec& spec = probe.value.collectives.front();
  fabric::TopologySpec topo = probe.value.topology;
  topo.file = probe.config.path("topology.file");  // relative to the scenario
  const auto hosts = static_cast<std::int32_t>(fabric::host_count(topo));
  if (o.ranks > hosts)
    throw InputError(fmt::format("collbench: --ranks {}: the scenario's fabric has {} hosts", o.ranks, hosts));
  const std::int32_t n = o.ranks > 0 ? o.ranks : hosts;
  CollbenchResult r;
  r.type = std::string(offload::to_string(spec.shape.datatype));
  r.redop = reduces(o.collective) ? "sum" : "none";
  r.root = rooted(o.collective, o.algorithm) ? spec.shape.root : -1;
  r.ranks = n;
  const std::int64_t elem = offload::datatype_size(spec.shape.datatype);
  const std::int64_t unit = elem * (count_per_rank(o.collective) ? n : 1);
  if (!o.out_dir.empty()) prepare_outputs(o.out_dir, "collbench.csv");
  std::vector<std::int64_t> sizes;
  for (std::int64_t s = o.min.count(); s <= o.max.count(); s *= o.factor) {
    if (s / unit * unit > 0) sizes.push_back(s / unit * unit);
    if (s > o.max.count() / o.factor) break;  // the next would pass max (or overflow)
  }
  if (sizes.empty())
    throw InputError(fmt::format("collbench: every size from {} to {} rounds to 0: {} ranks of {} elements need {} "
                                 "bytes at least",
                                 to_string(o.min), to_string(o.max), n, r.type, unit));
  double busbw_sum = 0;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    const std::int64_t size = sizes[k];
    const std::int64_t bytes = size / nccl_size(o.collective, 1, n);  // (sizes are multiples of `unit`)
    std::vector<std::string> sets = base;
    sets.push_back(fmt::format("collective.0.bytes={}B", bytes));
    const FabricSetup setup = fabric_parameters().resolve_text(text, o.scenario, sets);
    if (o.progress) fmt::print(stderr, "collbench: {} of {}: {} bytes\n", k + 1, sizes.size(), size);
    const FabricOutcome out = run_fabric(
        setup, {.scenario = o.scenario,
                .out_dir = o.out_dir.empty() ? "" : (fs::path(o.out_dir) / "sizes" / std::to_string(size)).string()});
    CollbenchRow row;
    row.size = size;
    row.count = size / elem / (count_per_rank(o.collective) ? n : 1);
    Time sum;
    for (const CollectiveRow& c : out.collectives) {
      if (!c.result.done())
        throw NegativeAnswer(fmt::format("collbench: {} of {} bytes: instance {} never completed (its counters never "
                                         "came free under policy stall? see {})",
                                         o.collective, size, c.iteration,
                                         o.out_dir.empty() ? "a run with --out" : o.out_dir));
      if (c.iteration < o.warmup) continue;
      sum += c.result.job.completion();
      (c.result.job.offloaded ? row.offloaded : row.software) += 1;
    }
    const double ns = static_cast<double>(sum.ps()) / 1e3 / o.iters;
    row.time_us = ns / 1e3;
    row.algbw = static_cast<double>(size) / ns;  // bytes per ns = GB/s
    row.busbw = row.algbw * busbw_factor(o.collective, n);
    busbw_sum += row.busbw;
    r.rows.push_back(row);
  }
  r.avg_busbw = busbw_sum / static_cast<double>(r.rows.size());
  if (!o.out_dir.empty()) {
    const fs::path dir(o.out_dir);
    std::string dat = "# size_bytes busbw_GBps\n";
    for (const auto& row : r.rows) dat += fmt::format("{} {:.4f}\n", row.size, row.busbw);
    write_file(dir / "busbw.dat", dat);
    draw_plot(dir, "busbw",
              fmt::format("set title '{} {} on {} ranks: bus bandwidth (nccl-tests busbw)'\nset xlabel 'size "
                          "(bytes)'\nset ylabel 'busbw (GB/s)'\nset logscale x 2\nset yrange [0:*]\nset grid\nset key "
                          "off\nplot 'busbw.dat' using 1:2 with linespoints lw 2\n",
                          o.collective, o.algorithm, n));
    std::string csv = "size_bytes,count,type,redop,root,time_us,algbw_GBps,busbw_GBps,offloaded,software\n";
    for (const auto& row : r.rows)
      csv += fmt::format("{},{},{},{},{},{:.3f},{:.4f},{:.4f},{},{}\n", row.size, row.count, r.type, r.redop, r.root,
                         row.time_us, row.algbw, row.busbw, row.offloaded, row.software);
    write_file(dir / "collbench.csv", csv);
  }
  return r;
}

std::string nccl_table(const CollbenchResult& r) {
  std::string t = "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
                  "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       \n";
  for (const auto& row : r.rows) {
    // nccl-tests' time: two decimals below 100 us, one below 10 ms, none above.
    const std::string time = row.time_us >= 10000   ? fmt::format("{:7.0f}", row.time_us)
                             : row.time_us >= 100.0 ? fmt::format("{:7.1f}", row.time_us)
                                                    : fmt::format("{:7.2f}", row.time_us);
    t += fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:6.2f}  {:6.2f}  {:>5}\n", row.size, row.count,
                     r.type, r.redop, r.root, time, row.algbw, row.busbw, "N/A");
  }
  t += fmt::format("# Avg bus bandwidth    : {:g}\n", r.avg_busbw);
  return t;
}

}  // namespace fabriclab::scenario
