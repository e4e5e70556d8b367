// Fuzz target: the HPCC ns-3 model's inputs as `fabriclab import-ns3` reads them
// (scenario::import_ns3). The input is split at lines "---": config.txt, then flow.txt,
// then topology.txt (a part left out keeps the last one written); the three are written to
// a folder of this process's, config.txt naming the other two. What it imports must be a
// scenario `run` accepts: resolved and its keys consistent -- a value the import passes on
// and the scenario refuses is a finding (the import must name the config key instead) --
// then built when small.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz/fuzz_common.h"
#include "scenario/fabric/fabric_scenario.h"
#include "scenario/fabric/ns3_import.h"

namespace {

std::string folder() {
  static const std::string dir = [] {
    const std::filesystem::path d = std::filesystem::temp_directory_path() /
                                    ("fabriclab-fuzz-ns3-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d.string();
  }();
  return dir;
}

void write(const std::string& name, const std::string& text) { std::ofstream(folder() + "/" + name) << text; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input = fabriclab::fuzz::text(data, size);
  const char* names[] = {"config.txt", "flow.txt", "topology.txt"};
  std::size_t at = 0;
  for (int part = 0; part < 3 && at <= input.size(); ++part) {
    const std::size_t end = input.find("\n---\n", at);
    write(names[part], input.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) break;
    at = end + 5;
  }
  fabriclab::scenario::Ns3Import imported;
  bool ok = false;
  fabriclab::fuzz::expect_input_errors([&] {
    imported = fabriclab::scenario::import_ns3(folder() + "/config.txt", {.approximate = true});
    ok = true;
  });
  if (!ok) return 0;
  const std::string out = folder() + "/imported";
  fabriclab::scenario::FabricSetup setup;
  try {
    setup = fabriclab::scenario::fabric_parameters().resolve(fabriclab::scenario::write_ns3_import(imported, out));
    fabriclab::scenario::check_across_keys(setup);
  } catch (const std::exception& e) {
    fabriclab::fuzz::finding(std::string("an imported scenario that run refuses: ") + e.what());
  }
  // Building may still refuse what only the network shows (a buffer too small for its
  // ports' headroom), as for any scenario.
  fabriclab::fuzz::expect_input_errors([&] {
    const auto flows = std::count(imported.flows.begin(), imported.flows.end(), '\n');
    if (fabriclab::fabric::host_count(setup.value.topology) <= 64 && flows <= 257 &&
        std::count(imported.topology.begin(), imported.topology.end(), '\n') <= 257)
      fabriclab::scenario::build_network(setup);
  });
  return 0;
}
