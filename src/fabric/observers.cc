// The run's observers (RunObserver): PFC deadlock checks and snapshots, read while no
// part runs; over several processes each reads its own nodes and they put the rest
// together.
#include "fabric/network.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>

namespace fabriclab::fabric {

void Network::detect_deadlocks(Time interval, Time persist, bool keep_running) {
  if (prepared_) throw std::logic_error("Network::detect_deadlocks after the run was prepared");
  deadlock_interval_ = interval;
  deadlock_persist_ = persist;
  deadlock_keep_running_ = keep_running;
}

void Network::look_for_deadlock(Time now) {
  if (deadlock_) return;  // one report; a watchdog that may break it keeps the run going
  const auto first = static_cast<std::uint32_t>(hosts_.size());
  if (!run_.exchange_) {
    deadlock_ = find_pfc_deadlock(switches_, first, now, deadlock_persist_);
    return;
  }
  // Over several processes: each collects its switches' paused queues, every one puts
  // them all together in the undivided order and finds the same cycle.
  const auto mine = paused_queues(switches_, first, now, deadlock_persist_,
                                  [&](std::size_t i) { return runs_here(static_cast<std::uint32_t>(first + i)); });
  std::vector<std::byte> bytes;
  ByteWriter w(bytes);
  w.put(static_cast<std::uint64_t>(mine.size()));
  for (const PausedQueue& q : mine) {
    w.put(q.sw);
    w.put(q.port);
    w.put(q.prio);
    w.put(static_cast<std::uint64_t>(q.upstream.size()));
    for (const auto& [node, port] : q.upstream) {
      w.put(node);
      w.put(port);
    }
  }
  ByRank all;
  run_.exchange_->all_gather(bytes, all, "a deadlock check");
  std::vector<PausedQueue> queues;
  for (int r = 0; r < run_.exchange_->size(); ++r) {
    ByteReader in(all.of(r));
    for (auto n = in.get<std::uint64_t>(); n > 0; --n) {
      PausedQueue q{in.get<std::uint32_t>(), in.get<std::uint16_t>(), in.get<std::uint8_t>(), {}};
      for (auto u = in.get<std::uint64_t>(); u > 0; --u) {
        const auto node = in.get<std::uint32_t>();
        q.upstream.emplace_back(node, in.get<std::uint16_t>());
      }
      queues.push_back(std::move(q));
    }
  }
  std::sort(queues.begin(), queues.end(), [](const PausedQueue& a, const PausedQueue& b) {
    return std::tie(a.sw, a.port, a.prio) < std::tie(b.sw, b.port, b.prio);
  });
  deadlock_ = find_cycle(queues, switches_, first, now);
}

void Network::snapshot_at(std::vector<Time> instants) {
  if (prepared_) throw std::logic_error("Network::snapshot_at after the run was prepared");
  for (std::size_t i = 0; i < instants.size(); ++i)
    if (instants[i] <= Time() || (i > 0 && instants[i] <= instants[i - 1]))
      throw std::logic_error("Network::snapshot_at: instants must be after 0 and ascending");
  snapshots_.clear();
  for (Time t : instants) snapshots_.push_back({.at = t});
}

void Network::take_snapshot(Snapshot& s) {
  s.taken = true;
  s.ports.clear();
  s.delivered.clear();
  const auto hosts = static_cast<std::uint32_t>(hosts_.size());
  for (std::uint32_t n = 0; n < nodes_.size(); ++n)
    for (std::size_t i = 0; i < nodes_[n]->port_count(); ++i) {
      if (!runs_here(n)) {
        s.ports.emplace_back();
        continue;
      }
      s.ports.push_back(port_counters(*nodes_[n], i, s.at));
      if (n >= hosts) s.ports.back().max_queue_bytes = switches_[n - hosts]->take_max_queue_since(i);
    }
  for (const auto& f : flows_) s.delivered.push_back(runs_here(f.spec.dst) ? f.delivered : 0);
}

}  // namespace fabriclab::fabric
