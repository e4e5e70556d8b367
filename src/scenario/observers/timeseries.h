// Sampled time series, written as the run goes (an observer: it reads the components'
// state every `interval` and never changes it):
//   queues.csv  time_ns,node,port,queue_bytes,paused_ns  -- every port chosen: a switch
//               egress port's queue, any port's paused time so far (a host's port has
//               no switch queue: its queue_bytes is empty)
//   qps.csv     time_ns,host,qp,flow,rate_gbps,target_gbps,alpha,acked_bytes,window_bytes,rtt_ns  -- every sending QP
// rate is what the QP's congestion control allows now (DCQCN's Rc; line rate under
// `none`), target its Rt, alpha its congestion estimate (0 under `none`); the throughput
// over an interval is the difference of acked_bytes.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/simulator.h"
#include "fabric/network.h"

namespace fabriclab::scenario {

class TimeSeries final : public EventHandler {
 public:
  // `ports`: the ports to sample, of switches or hosts (empty: every switch port). Throws
  // InputError if the files cannot be written.
  TimeSeries(fabric::Network& net, Time interval, const std::string& dir,
             const std::vector<std::pair<fabric::Node*, std::size_t>>& ports);
  void on_event(std::uint64_t tag) override;
  std::uint64_t samples() const { return samples_; }

 private:
  void sample();
  fabric::Network& net_;
  Time interval_;
  struct Sampled {
    const fabric::Node* node;
    const fabric::Switch* sw;  // the node as a switch (nullptr: a host)
    std::size_t port;
  };
  std::vector<Sampled> ports_;
  std::ofstream queues_, qps_;
  std::uint64_t samples_ = 0;
};

}  // namespace fabriclab::scenario
