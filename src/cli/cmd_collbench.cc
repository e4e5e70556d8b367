// fabriclab collbench COLLECTIVE [SCENARIO] --algorithm A --ranks N -b MIN -e MAX -f F:
// nccl-tests on the simulated fabric (scenario/fabric/collbench.h): the collective at
// every size, its table as nccl-tests prints it, collbench.csv and busbw.png in DIR.
#include <fmt/format.h>

#include <filesystem>

#include "cli/commands.h"
#include "core/error.h"
#include "scenario/fabric/collbench.h"

namespace fabriclab::cli {

namespace {

struct CollbenchArgs {
  scenario::CollbenchOptions opt;
  std::string min = "8B", max = "64MB";
  std::string out;
  std::int64_t seed = -1;
  bool quiet = false;
};

int run_collbench_command(CollbenchArgs& a) {
  auto& o = a.opt;
  if (o.scenario.empty()) {  // the working directory's examples/collbench.toml, else the shipped one
    const std::filesystem::path here = "examples/collbench.toml";
    o.scenario = std::filesystem::exists(here)
                     ? here.string()
                     : (std::filesystem::path(FABRICLAB_SHIPPED_EXAMPLES) / here.filename()).string();
  }
  // A size with its unit, or a bare number of bytes as nccl-tests takes it ("-b 8").
  const auto size = [](const std::string& text, const char* option) {
    try {
      const bool bare = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
      return parse_bytes(bare ? text + "B" : text);
    } catch (const InputError& e) {
      throw InputError(fmt::format("collbench: {}: {}", option, e.what()));
    }
  };
  o.min = size(a.min, "--minbytes");
  o.max = size(a.max, "--maxbytes");
  if (a.seed >= 0) o.sets.push_back(fmt::format("sim.seed={}", a.seed));
  o.out_dir = out_or_default(a.out, fmt::format("collbench-{}-{}", o.collective, o.algorithm));
  o.progress = !a.quiet;
  const scenario::CollbenchResult r = scenario::run_collbench(o);
  fmt::print("# fabriclab collbench: {} {} on {} ranks, {}\n#\n", o.collective, o.algorithm, r.ranks, o.scenario);
  fmt::print("{}", scenario::nccl_table(r));
  fmt::print("# outputs: {}/collbench.csv, busbw.png, sizes/\n", o.out_dir);
  return 0;
}

}  // namespace

Command add_collbench_command(CLI::App& app) {
  auto a = std::make_shared<CollbenchArgs>();
  CLI::App* sub = app.add_subcommand(
      "collbench",
      "Benchmark a collective as nccl-tests does, on the simulated fabric: every size from -b to -e (x -f), "
      "offloaded or in software "
      "as the NICs' counters allow; prints nccl-tests' table (size, count, type, redop, root, time, algbw, busbw in "
      "GB/s) and writes collbench.csv, busbw.png and each size's run in DIR");
  sub->add_option("collective", a->opt.collective, offload::collectives_help())->required();
  sub->add_option(
      "scenario", a->opt.scenario,
      "scenario file whose fabric runs it, without [[collective]] entries (default examples/collbench.toml: "
      "the working directory's, else the shipped one)");
  sub->add_option("--algorithm", a->opt.algorithm, offload::algorithms_help())->capture_default_str();
  sub->add_option("--ranks", a->opt.ranks, "ranks, on hosts 0..N-1 (0: every host of the fabric)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  sub->add_option("-b,--minbytes", a->min, "smallest size: with its unit, or a number of bytes (nccl-tests' -b)")
      ->capture_default_str();
  sub->add_option("-e,--maxbytes", a->max, "largest size: with its unit, or a number of bytes (nccl-tests' -e)")
      ->capture_default_str();
  sub->add_option("-f,--stepfactor", a->opt.factor, "each size this many times the one before (nccl-tests' -f)")
      ->capture_default_str()
      ->check(CLI::Range(2, 1 << 20));
  sub->add_option("-n,--iters", a->opt.iters, "instances timed per size, back to back (nccl-tests' -n)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  sub->add_option("-w,--warmup-iters", a->opt.warmup, "instances run before them, not timed (nccl-tests' -w)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  add_out_option(*sub, a->out);
  add_seed_option(*sub, a->seed);
  add_set_option(*sub, a->opt.sets);
  add_quiet_flag(*sub, a->quiet);
  return {sub, [a] { return run_collbench_command(*a); }};
}

}  // namespace fabriclab::cli
