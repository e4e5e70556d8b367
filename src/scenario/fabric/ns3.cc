#include "scenario/fabric/ns3.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>
#include <vector>

namespace fabriclab::scenario {

std::uint32_t ns3_host_ip(std::uint32_t h) { return 0x0b000001u + (h / 256) * 0x00010000u + (h % 256) * 0x00000100u; }

std::string ns3_fct_txt(const fabric::Network& net, const Slowdowns& slow) {
  const fabric::FlowTable& flows = net.flows();
  std::vector<std::uint32_t> done;
  for (std::uint32_t i = 0; i < flows.size(); ++i)
    if (flows[i].finished()) done.push_back(i);
  std::stable_sort(done.begin(), done.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return flows[a].finish < flows[b].finish; });
  const auto ns = [](Time t) { return t.ps() / 1000; };
  std::string out;
  for (const std::uint32_t i : done) {
    const fabric::FlowState& f = flows[i];
    const std::int64_t ideal = slow.ideal[i] == Time::max() ? 0 : ns(slow.ideal[i]);
    out += fmt::format("{:08x} {:08x} {} {} {} {} {} {}\n", ns3_host_ip(f.spec.src), ns3_host_ip(f.spec.dst),
                       net.source_port(i), f.spec.dport, f.spec.bytes, ns(f.started), ns(f.finish - f.started), ideal);
  }
  return out;
}

std::string ns3_pfc_txt(const fabric::Network& net) {
  // (time, node, port, arrival at the port): one order whatever part recorded it.
  struct Line {
    Time at;
    std::uint32_t node;
    std::size_t port, k;
    bool pause;
  };
  std::vector<Line> lines;
  for (const fabric::Node* n : net.nodes())
    for (std::size_t p = 0; p < n->port_count(); ++p) {
      const auto& rec = n->port(p).pfc_records();
      for (std::size_t k = 0; k < rec.size(); ++k) lines.push_back({rec[k].at, n->id(), p, k, rec[k].quanta > 0});
    }
  std::sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) {
    return std::tie(a.at, a.node, a.port, a.k) < std::tie(b.at, b.node, b.port, b.k);
  });
  std::string out;
  for (const Line& l : lines)
    out += fmt::format("{} {} {} {} {}\n", l.at.ps() / 1000, l.node, l.node < net.host_count() ? 0 : 1, l.port + 1,
                       l.pause ? 1 : 0);
  return out;
}

}  // namespace fabriclab::scenario
