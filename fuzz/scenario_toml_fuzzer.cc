// Fuzz target: a fabric scenario (TOML) as `fabriclab run` loads it -- the parameters
// resolved from the text (scenario::fabric_parameters().resolve_text, what resolve() does
// after reading the file), then, for scenarios small enough to build in a few
// milliseconds, the network they describe (scenario::build_network: topology, buffers,
// flows and flows files, routing.static, impair.rules, reseq.link, sim.partitions). The
// simulation itself is not run. The scenario's origin is a file in examples/, so that a
// relative traffic.flows_file names the shipped flows files.
//
// FABRICLAB_FUZZ_DICT=FILE: write a libFuzzer dictionary of every key, section and choice
// to FILE and exit.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "fabric/topology.h"
#include "fuzz/fuzz_common.h"
#include "scenario/fabric/fabric_scenario.h"

namespace {

using fabriclab::fabric::TopologyKind;
using fabriclab::scenario::FabricScenario;

// Scenarios whose network is built: a few dozen nodes and flows. Size limits are what the
// user asks for, not bugs: a fat-tree of 2^20 hosts takes its gigabytes on purpose.
bool small_enough(const FabricScenario& s) {
  const auto& t = s.topology;
  std::uint64_t switches = 0, fabric_links = 0;
  switch (t.kind) {
    case TopologyKind::back_to_back: break;
    case TopologyKind::single_switch: switches = 1; break;
    case TopologyKind::two_switches:
      switches = 2;
      fabric_links = t.inter_switch_links;
      break;
    case TopologyKind::leaf_spine:
      switches = std::uint64_t{t.leaves} + t.spines;
      fabric_links = std::uint64_t{t.leaves} * t.spines * t.uplinks;
      break;
    case TopologyKind::fat_tree:
      switches = 5 * std::uint64_t{t.k} * t.k / 4;
      fabric_links = std::uint64_t{t.k} * t.k * t.k / 2;
      break;
    case TopologyKind::ring:
      switches = t.ring_switches;
      fabric_links = t.ring_switches;
      break;
    case TopologyKind::ns3: break;  // the file's size: its own reader bounds it, and its hosts count below
  }
  std::uint64_t hosts = 0;
  try {
    hosts = fabriclab::fabric::host_count(t);
  } catch (const fabriclab::InputError&) {
    return true;  // build_network says so
  }
  return hosts <= 32 && switches <= 32 && fabric_links <= 256 && s.traffic.qps_per_flow <= 8 &&
         s.traffic.iterations <= 4 && s.collectives.size() <= 8;
}

std::string origin() { return std::string(FABRICLAB_FUZZ_EXAMPLES) + "/fuzz.toml"; }

// Every word of the input language, for the dictionary.
std::set<std::string> dictionary() {
  std::set<std::string> words;
  const auto& p = fabriclab::scenario::fabric_parameters();
  auto add_key = [&](const std::string& key, const std::vector<std::string>& choices) {
    words.insert(key);
    std::string section;
    for (std::size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1)) {
      section = key.substr(0, dot);
      words.insert("[" + section + "]");
    }
    words.insert(key.substr(section.empty() ? 0 : section.size() + 1));
    for (const auto& c : choices) words.insert("\"" + c + "\"");
  };
  for (const auto& [key, spec] : p.registry().all()) add_key(key, spec.choices);
  for (const auto& list : p.lists()) {
    words.insert("[[" + list.name + "]]");
    for (const auto& [key, spec] : list.items->all()) add_key(key, spec.choices);
  }
  return words;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fabriclab::fuzz::side_job("FABRICLAB_FUZZ_DICT",
                            [](const std::string& path) { fabriclab::fuzz::write_dictionary(path, dictionary()); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fabriclab::fuzz::expect_input_errors([&] {
    const auto setup = fabriclab::scenario::fabric_parameters().resolve_text(fabriclab::fuzz::text(data, size),
                                                                             origin());
    if (small_enough(setup.value)) fabriclab::scenario::build_network(setup);
  });
  return 0;
}
