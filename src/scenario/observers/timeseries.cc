#include "scenario/observers/timeseries.h"

#include <fmt/format.h>

#include <filesystem>

#include "core/error.h"
#include "scenario/report/files.h"

namespace fabriclab::scenario {

TimeSeries::TimeSeries(fabric::Network& net, Time interval, const std::string& dir,
                       const std::vector<std::pair<fabric::Node*, std::size_t>>& ports)
    : net_(net), interval_(interval) {
  if (interval <= Time()) throw std::logic_error("TimeSeries: the interval must be positive");
  for (const auto& [node, p] : ports) ports_.push_back({node, dynamic_cast<const fabric::Switch*>(node), p});
  if (ports_.empty())
    for (std::uint32_t s = 0; s < net.switch_count(); ++s)
      for (std::size_t p = 0; p < net.switch_at(s).port_count(); ++p)
        ports_.push_back({&net.switch_at(s), &net.switch_at(s), p});
  const auto path = [&](const char* f) { return (std::filesystem::path(dir) / f).string(); };
  queues_.open(path("queues.csv"));
  qps_.open(path("qps.csv"));
  if (!queues_ || !qps_) throw InputError(dir + ": cannot write queues.csv and qps.csv");
  queues_ << "time_ns,node,port,queue_bytes,paused_ns\n";
  qps_ << "time_ns,host,qp,flow,rate_gbps,target_gbps,alpha,acked_bytes,window_bytes,rtt_ns\n";
  net.sim().schedule_in(Time(), *this, 0);
}

void TimeSeries::on_event(std::uint64_t /*tag*/) {
  sample();
  net_.sim().schedule_in(interval_, *this, 0);
}

void TimeSeries::sample() {
  ++samples_;
  const Time now = net_.sim().now();
  const std::string t = ns_text(now);
  for (const Sampled& s : ports_)
    queues_ << fmt::format("{},{},{},{},{}\n", t, s.node->name(), s.port,
                           s.sw ? std::to_string(s.sw->queued_bytes(s.port)) : std::string(),
                           ns_text(s.node->port(s.port).paused_time(now)));
  for (std::uint32_t h = 0; h < net_.host_count(); ++h)
    net_.host(h).for_each_send_qp([&](std::uint32_t qp, std::uint32_t flow, const fabric::CongestionControl& cc,
                                      std::uint64_t acked) {
      const Time rtt = cc.rtt();
      qps_ << fmt::format("{},{},{},{},{:.3f},{:.3f},{:.6f},{},{},{}\n", t, net_.host(h).name(), qp, flow,
                          static_cast<double>(cc.rate().bps()) / 1e9, static_cast<double>(cc.target_rate().bps()) / 1e9,
                          cc.alpha(now), acked, cc.window(), rtt == Time::max() ? std::string() : ns_text(rtt));
    });
}

}  // namespace fabriclab::scenario
