#include "scenario/observers/reorder_recorder.h"

#include <fmt/format.h>

#include <algorithm>

#include "fabric/node.h"
#include "scenario/report/files.h"

namespace fabriclab::scenario {

void ReorderRecorder::watch(fabric::Port& port) {
  watched_.push_back(&port);
  if (fabric::PortTap* existing = port.tap()) {
    fanouts_.push_back(std::make_unique<Fanout>());
    fanouts_.back()->first = existing;
    fanouts_.back()->second = this;
    port.set_tap(fanouts_.back().get());
  } else {
    port.set_tap(this);
  }
}

void ReorderRecorder::on_frame(const fabric::Port& port, const fabric::Packet& p, bool egress) {
  if (!egress || !fabric::is_data(p.opcode)) return;
  const auto w = static_cast<std::size_t>(std::find(watched_.begin(), watched_.end(), &port) - watched_.begin());
  auto& [flow, tracker] = seen_[{w, p.dst, p.dst_qp, p.flow}];
  flow = p.flow;
  tracker.add(p.psn, sim_.now());
}

std::vector<ReorderRecorder::Result> ReorderRecorder::results() const {
  std::vector<Result> out;
  for (const auto& [key, v] : seen_) {
    const auto& [w, dst, qp, id] = key;
    const fabric::Port& port = *watched_[w];
    out.push_back({fmt::format("{}:{}", port.owner().name(), port.index()), dst, qp, v.first, v.second.metrics()});
  }
  return out;
}

void ReorderRecorder::write(const std::filesystem::path& dir) const {
  static constexpr std::uint32_t kN[] = {1, 2, 4, 8, 16, 32, 64};
  std::string csv = "port,dst,qp,flow,received,duplicates,reordered,reordered_ratio,max_extent,max_late_ns";
  for (std::uint32_t n : kN) csv += fmt::format(",reordering_{}", n);
  csv += "\n";
  std::string density = "port,dst,qp,kind,value,packets\n";
  for (const Result& r : results()) {
    const auto& m = r.m;
    csv += fmt::format("{},h{},{},{},{},{},{},{:.6f},{},{}", r.port, r.dst, r.qp, r.flow, m.received, m.duplicates,
                       m.reordered, m.ratio(), m.max_extent, ns_text(m.max_late));
    for (std::uint32_t n : kN) csv += fmt::format(",{:.6f}", m.n_reordering(n));
    csv += "\n";
    for (const auto& [d, k] : m.displacement)
      density += fmt::format("{},h{},{},displacement,{},{}\n", r.port, r.dst, r.qp, d, k);
    for (std::size_t o = 0; o < m.occupancy.size(); ++o)
      if (m.occupancy[o]) density += fmt::format("{},h{},{},occupancy,{},{}\n", r.port, r.dst, r.qp, o, m.occupancy[o]);
  }
  write_file(dir / "reorder.csv", csv);
  write_file(dir / "reorder_density.csv", density);
}

}  // namespace fabriclab::scenario
