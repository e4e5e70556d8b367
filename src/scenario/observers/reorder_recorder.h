// Records the order in which data packets leave chosen ports (the egress toward a
// receiver: what a re-sequencer there, or the NIC behind it, is offered) and writes the
// reordering metrics of fabric/reorder_metrics.h per destination QP:
//   reorder.csv          port,dst,qp,flow,received,duplicates,reordered,reordered_ratio,
//                        max_extent,max_late_ns,reordering_1,_2,_4,_8,_16,_32,_64
//   reorder_density.csv  port,dst,qp,kind,value,packets  (kind: displacement | occupancy)
// An observer: it never changes the run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "core/simulator.h"
#include "fabric/port.h"
#include "fabric/reorder_metrics.h"

namespace fabriclab::scenario {

class ReorderRecorder final : public fabric::PortTap {
 public:
  explicit ReorderRecorder(const Simulator& sim) : sim_(sim) {}
  // Watches what leaves `port` (keeping a tap already there, a pcap writer, in front).
  void watch(fabric::Port& port);
  void on_frame(const fabric::Port& port, const fabric::Packet& p, bool egress) override;

  struct Result {
    std::string port;  // NODE:PORT
    std::uint32_t dst, qp, flow;
    fabric::ReorderMetrics m;
  };
  std::vector<Result> results() const;
  // Writes reorder.csv and reorder_density.csv into `dir`.
  void write(const std::filesystem::path& dir) const;

 private:
  struct Fanout final : fabric::PortTap {
    fabric::PortTap* first;
    fabric::PortTap* second;
    void on_frame(const fabric::Port& port, const fabric::Packet& p, bool egress) override {
      first->on_frame(port, p, egress);
      second->on_frame(port, p, egress);
    }
  };
  const Simulator& sim_;
  std::vector<std::unique_ptr<Fanout>> fanouts_;
  std::vector<const fabric::Port*> watched_;
  // (watched port index, dst host, dst QP, flow: a load's QP numbers are reused) -> flow
  // and its metrics so far, in a fixed order
  std::map<std::tuple<std::size_t, std::uint32_t, std::uint32_t, std::uint32_t>,
           std::pair<std::uint32_t, fabric::ReorderTracker>>
      seen_;
};

}  // namespace fabriclab::scenario
