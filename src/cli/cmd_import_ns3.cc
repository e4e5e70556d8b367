// fabriclab import-ns3 CONFIG.txt [--out DIR] [--approximate]: the HPCC ns-3 RDMA model's
// config.txt with its topology.txt and flow.txt as a scenario (scenario/fabric/ns3_import.h):
// DIR/scenario.toml, flows.csv and, for a graph, topology.txt.
#include <fmt/format.h>

#include <filesystem>

#include "cli/commands.h"
#include "scenario/fabric/ns3_import.h"

namespace fabriclab::cli {

namespace {

struct ImportArgs {
  std::string config, out;
  bool approximate = false;
};

int run_import_command(const ImportArgs& a) {
  const scenario::Ns3Import imported = scenario::import_ns3(a.config, {.approximate = a.approximate});
  const std::string dir = out_or_default(a.out, "import-ns3-" + std::filesystem::path(a.config).stem().string());
  const std::string path = scenario::write_ns3_import(imported, dir);
  fmt::print("wrote {}, flows.csv{}\n", path, imported.topology.empty() ? "" : ", topology.txt");
  for (const std::string& n : imported.notes) fmt::print("note: {}\n", n);
  for (const std::string& x : imported.approximations) fmt::print("approximated: {}\n", x);
  fmt::print("run it: fabriclab run {}\n", path);
  return 0;
}

}  // namespace

Command add_import_ns3_command(CLI::App& app) {
  auto a = std::make_shared<ImportArgs>();
  CLI::App* sub = app.add_subcommand(
      "import-ns3",
      "Turn the HPCC ns-3 RDMA model's inputs (config.txt, the topology.txt and flow.txt it names) into a scenario: "
      "writes scenario.toml, flows.csv and (for a graph) topology.txt in DIR; a key fabriclab cannot honour is an "
      "error naming it and its line");
  sub->add_option("config", a->config,
                  "the model's config.txt (TOPOLOGY_FILE and FLOW_FILE beside it, from its "
                  "parent, or from the working directory)")
      ->required();
  sub->add_flag(
      "--approximate", a->approximate,
      "take values fabriclab can only approximate (listed in what it prints and in the scenario's header) instead "
      "of refusing them");
  add_out_option(*sub, a->out);
  return {sub, [a] { return run_import_command(*a); }};
}

}  // namespace fabriclab::cli
