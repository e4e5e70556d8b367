// The flow feed (feed.h): a source's flows added between windows shortly before they
// start, and the QPs of finished ones freed for later ones.
#include "fabric/feed.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "fabric/network.h"

namespace fabriclab::fabric {

FlowFeed::FlowFeed(Network& net, std::unique_ptr<FlowSource> source, Time step)
    : net_(net), source_(std::move(source)), step_(step) {}

bool FlowFeed::pull() {
  const Time last = has_next_ ? next_.start : Time();
  has_next_ = source_->next(next_);
  if (has_next_ && next_.start < last)
    throw std::logic_error("Network::feed_flows: the source's flows are not in start order (one at " +
                           to_string(next_.start) + " after one at " + to_string(last) + ")");
  if (has_next_ && !next_.after.empty())
    throw std::logic_error("Network::feed_flows: a fed flow cannot wait for others (after)");
  return has_next_;
}

void FlowFeed::add_first() {
  first_ = static_cast<std::uint32_t>(net_.flows_.size());
  // The table sized once for the flows expected (and six standard deviations of a
  // Poisson count), rather than grown by doubling: pages not reached are never touched.
  const double n = source_->expected_flows();
  if (n > 0) {
    const auto rows = static_cast<std::size_t>(std::min(n + 6 * std::sqrt(n) + 64, double{1 << 24}));
    net_.flows_.reserve(first_ + rows);
    net_.send_qps_.reserve(first_ + rows);
    net_.source_ports_.reserve(first_ + rows);
    done_.reserve(rows);
  }
  pull();
  add(step_, false);
  if (has_next_) {  // (Network::hold, which the prepared network no longer takes)
    ++net_.held_;
    held_ = true;
  }
}

void FlowFeed::add(Time before, bool during_run) {
  while (has_next_ && next_.start < before) {
    const std::uint32_t id = net_.push_flow(next_);
    if (during_run) net_.make_qps(id, true);
    live_.push_back(id);
    done_.push_back(0);
    pull();
  }
}

std::uint64_t FlowFeed::flows_added() const { return net_.flows_.size() - first_; }

Time FlowFeed::next_step(bool /*idle*/) {
  if (!has_next_) return Time::max();
  // k x step - 1 ps for the k whose [k x step, (k + 1) x step) holds the next start (k >= 1:
  // the first instant's flows were added with the network).
  return Time::from_ps(next_.start.ps() / step_.ps() * step_.ps() - 1);
}

void FlowFeed::step(Time /*at*/) {
  found_.clear();
  told_ = false;
  look_for_finished();
}

bool FlowFeed::after_step(Time /*at*/) {
  free_finished();
  add(step_ * (next_.start.ps() / step_.ps() + 1), true);  // (to the end of the instant's span)
  if (!has_next_ && held_) {
    net_.release();
    held_ = false;
  }
  return true;
}

void FlowFeed::free_finished() {
  std::size_t kept = 0;
  for (const std::uint32_t id : live_) {
    if (done_[id - first_] == 3) net_.free_qps(id);
    else live_[kept++] = id;
  }
  live_.resize(kept);
}

void FlowFeed::look_for_finished() {
  // (What a finished QP does until it is freed -- a late ACK or CNP may start its
  // congestion control's timers again -- is why every look starts afresh.)
  for (const std::uint32_t id : live_) {
    std::uint8_t& d = done_[id - first_];
    d = 0;
    const FlowSpec& f = net_.flows_[id].spec;
    if (net_.runs_here(net_.hosts_[f.src]->id()) && net_.sent_all(id)) {
      d |= 1;
      found_.push_back(id * 2);
    }
    if (net_.runs_here(net_.hosts_[f.dst]->id()) && net_.received_all(id)) {
      d |= 2;
      found_.push_back(id * 2 + 1);
    }
  }
}

void FlowFeed::share(ByteWriter& out) const {
  const std::uint64_t n = told_ ? 0 : found_.size();
  out.put(n);
  for (std::uint64_t i = 0; i < n; ++i) out.put(found_[i]);
}

void FlowFeed::take_shared(ByteReader& in) {
  told_ = true;  // (every process's share for this exchange is written before any is read)
  for (auto n = in.get<std::uint64_t>(); n > 0; --n) {
    const auto v = in.get<std::uint32_t>();
    const std::uint32_t id = v / 2;
    if (id < first_ || id - first_ >= done_.size())
      throw std::logic_error("a process found finished a flow " + std::to_string(id) + " not fed here");
    done_[id - first_] |= static_cast<std::uint8_t>(1u << (v & 1));
  }
}

}  // namespace fabriclab::fabric
