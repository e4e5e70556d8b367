#include "nicengine/engine.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

#include "core/error.h"

namespace fabriclab::nicengine {

namespace {
// Storage reserved per connection for messages in flight at once (it grows past this).
constexpr std::uint32_t kMessagesHint = 8;
}  // namespace

Engine::Engine(fabric::Network& net, nicmodel::NicParams nic, nicmodel::Policy policy, std::uint8_t priority)
    : net_(net),
      priority_(priority),
      model_(nic, static_cast<std::int32_t>(net.host_count()), policy, net.sim(), *this) {
  if (priority > 7) throw InputError("collectives: priority must be 0..7");
  conns_.resize(net.host_count());
  net_.set_message_events(this);
}

void Engine::add(nicmodel::Job job) {
  if (!job.schedule) throw InputError("collective '" + job.name + "': no schedule");
  const offload::Schedule& s = *job.schedule;
  for (const offload::Op& o : s.ops())
    if (o.kind == offload::OpKind::get)
      throw InputError("collective '" + job.name + "': get operations (RDMA READ) are not modelled on the fabric");
  const std::string name = job.name;
  std::vector<std::int32_t> hosts = job.nic_of_rank;
  model_.add(std::move(job));  // checks the schedule and the rank map
  traffic_.emplace_back();
  net_.hold(1);
  // One connection per pair of hosts that exchange data, shared by every collective.
  std::map<std::pair<std::uint32_t, std::uint32_t>, bool> pairs;
  for (const offload::Op& o : s.ops()) {
    if (!offload::is_data_op(o.kind)) continue;
    const auto a = static_cast<std::uint32_t>(hosts[static_cast<std::size_t>(o.rank)]);
    const auto b = static_cast<std::uint32_t>(hosts[static_cast<std::size_t>(o.peer)]);
    if (a != b) pairs[{a, b}] = true;
  }
  for (const auto& [pair, _] : pairs) {
    auto& mine = conns_[pair.first];
    const auto at = std::lower_bound(mine.begin(), mine.end(), std::make_pair(pair.second, 0u));
    if (at != mine.end() && at->first == pair.second) continue;
    mine.insert(at, {pair.second, net_.open_connection(pair.first, pair.second, priority_, kMessagesHint)});
  }
}

std::uint32_t Engine::connection(std::uint32_t src, std::uint32_t dst) const {
  const auto& mine = conns_[src];
  const auto at = std::lower_bound(mine.begin(), mine.end(), std::make_pair(dst, 0u));
  if (at == mine.end() || at->first != dst)
    throw std::logic_error("collectives: no connection from host " + std::to_string(src) + " to host " +
                           std::to_string(dst));
  return at->second;
}

void Engine::send(std::uint32_t job, offload::OpId op, std::int32_t from_nic, std::int32_t to_nic, std::int64_t bytes) {
  std::uint32_t tag;
  if (!free_.empty()) {
    tag = free_.back();
    free_.pop_back();
  } else {
    tag = static_cast<std::uint32_t>(in_flight_.size());
    in_flight_.emplace_back();
  }
  in_flight_[tag] = {job, op, 2};
  Traffic& t = traffic_[job];
  ++t.messages;
  t.bytes += static_cast<std::uint64_t>(bytes);
  net_.post(connection(static_cast<std::uint32_t>(from_nic), static_cast<std::uint32_t>(to_nic)),
            static_cast<std::uint64_t>(bytes), tag);
}

void Engine::settle(std::uint32_t tag) {
  if (--in_flight_[tag].reports_left == 0) free_.push_back(tag);
}

void Engine::message_arrived(std::uint32_t tag) {
  const InFlight m = in_flight_.at(tag);
  settle(tag);
  model_.message_arrived(m.job, m.op);
}

void Engine::message_completed(std::uint32_t tag) {
  const InFlight m = in_flight_.at(tag);
  settle(tag);
  model_.message_completed(m.job, m.op);
}

void Engine::message_retransmitted(std::uint32_t tag) { ++traffic_[in_flight_.at(tag).job].retransmitted; }

void Engine::finished(std::uint32_t /*job*/) { net_.release(); }

std::vector<CollectiveResult> Engine::results() const {
  std::vector<CollectiveResult> out;
  const auto& jobs = model_.results();
  for (std::size_t j = 0; j < jobs.size(); ++j)
    out.push_back({jobs[j], traffic_[j].messages, traffic_[j].bytes, traffic_[j].retransmitted});
  return out;
}

}  // namespace fabriclab::nicengine
