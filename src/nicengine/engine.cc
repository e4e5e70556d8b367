#include "nicengine/engine.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "core/error.h"

namespace fabriclab::nicengine {

namespace {
// Storage reserved per connection for messages in flight at once (it grows past this).
constexpr std::uint32_t kMessagesHint = 8;
}  // namespace

Engine::Engine(fabric::Network& net, nicmodel::NicParams nic, nicmodel::Policy policy, std::uint8_t priority,
               std::uint32_t tag_bits)
    : net_(net),
      priority_(priority),
      model_(nic, static_cast<std::int32_t>(net.host_count()), policy, *this),
      tag_span_(std::uint64_t{1} << tag_bits) {
  if (priority > 7) throw InputError("collectives: priority must be 0..7");
  if (tag_bits < 1 || tag_bits > 32) throw std::logic_error("collectives: tags of 1..32 bits");
  conns_.resize(net.host_count());
  net_.set_message_events(this);
  net_.set_coordinator(this);
}

// The network is prepared: the NICs run on their hosts' simulators, and each part holds
// the run open until its share of every collective is done.
void Engine::begin() {
  const auto hosts = static_cast<std::uint32_t>(net_.host_count());
  const std::uint32_t parts = net_.partitions();
  std::vector<Simulator*> sims(parts, nullptr);  // null: a part another process runs
  part_of_host_.resize(hosts);
  host_of_part_.assign(parts, hosts);
  for (std::uint32_t h = 0; h < hosts; ++h) {
    const std::uint32_t id = net_.host(h).id(), p = net_.partition_of(id);
    part_of_host_[h] = p;
    if (net_.runs_here(id)) sims[p] = &net_.sim_of(id);
    if (host_of_part_[p] == hosts) host_of_part_[p] = h;
  }
  model_.bind(sims, part_of_host_);
  for (std::uint32_t j = 0; j < jobs_; ++j)
    for (std::uint32_t p = 0; p < parts; ++p)
      if (model_.ops_in_part(j, p) > 0) net_.hold_in(net_.host(host_of_part_[p]).id(), 1);
  traffic_.assign(parts, std::vector<Traffic>(jobs_));
  begun_ = true;
}

void Engine::started(std::uint32_t job) {
  // (Checked before anything changes: the parts of a split run go on to the window's end.)
  const std::uint32_t first = live_.empty() ? job : std::min(job, *live_.begin());
  const std::uint32_t last = live_.empty() ? job : std::max(job, *live_.rbegin());
  if (const std::uint64_t span = first_tag_[last + 1] - first_tag_[first]; span > tag_span_)
    throw InputError(fmt::format("collectives: '{}' starts while '{}' still runs, {} operations apart; the "
                                 "collectives running at once (from the first added to the last) must have at most "
                                 "{} operations for their messages to be told apart",
                                 model_.job(job).name, model_.job(job == last ? first : last).name, span, tag_span_));
  live_.insert(job);
  live_low_ = first_tag_[*live_.begin()];
}

void Engine::drained(std::uint32_t job) {
  live_.erase(job);
  if (!live_.empty()) live_low_ = first_tag_[*live_.begin()];
}

std::pair<std::uint32_t, offload::OpId> Engine::of_tag(std::uint32_t tag) const {
  const std::uint64_t at = live_low_ + ((tag - live_low_) & (tag_span_ - 1));
  const auto j = static_cast<std::uint32_t>(std::upper_bound(first_tag_.begin(), first_tag_.end(), at) -
                                            first_tag_.begin() - 1);
  return {j, static_cast<offload::OpId>(at - first_tag_[j])};
}

void Engine::add(nicmodel::Job job) {
  if (!job.schedule) throw InputError("collective '" + job.name + "': no schedule");
  const offload::Schedule& s = *job.schedule;
  for (const offload::Op& o : s.ops())
    if (o.kind == offload::OpKind::get)
      throw InputError("collective '" + job.name + "': get operations (RDMA READ) are not modelled on the fabric");
  const std::string name = job.name;
  std::vector<std::int32_t> hosts = job.nic_of_rank;
  // Its operations' tags follow the last job's (32 bits on the wire: see live_).
  if (s.ops().size() > tag_span_)
    throw InputError(fmt::format("collective '{}': {} operations; its messages tell at most {} apart", name,
                                 s.ops().size(), tag_span_));
  model_.add(std::move(job));  // checks the schedule and the rank map
  first_tag_.push_back(first_tag_.back() + s.ops().size());
  ++jobs_;
  net_.hold(1);  // until its host sees it complete
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
  const auto from = static_cast<std::uint32_t>(from_nic), to = static_cast<std::uint32_t>(to_nic);
  Traffic& t = traffic_[part_of_host_[from]][job];
  ++t.messages;
  t.bytes += static_cast<std::uint64_t>(bytes);
  net_.post(connection(from, to), static_cast<std::uint64_t>(bytes),
            static_cast<std::uint32_t>((first_tag_[job] + static_cast<std::uint64_t>(op)) & (tag_span_ - 1)));
}

void Engine::message_arrived(std::uint32_t tag) {
  const auto [job, op] = of_tag(tag);
  model_.message_arrived(job, op);
}

void Engine::message_completed(std::uint32_t tag) {
  const auto [job, op] = of_tag(tag);
  model_.message_completed(job, op);
}

// (At the sender: its part's count.)
void Engine::message_retransmitted(std::uint32_t tag) {
  const auto [job, op] = of_tag(tag);
  ++traffic_[part_of_host_[static_cast<std::size_t>(model_.op_nic(job, op))]][job].retransmitted;
}

void Engine::part_done(std::uint32_t /*job*/, std::uint32_t part) {
  net_.release_in(net_.host(host_of_part_[part]).id());
}

void Engine::seen_complete(std::uint32_t job, Time at) {
  net_.release();
  if (on_seen_complete_) on_seen_complete_(job, at);
}

// Each part this process runs: its traffic, job by job; then what its NICs kept.
void Engine::share_results(ByteWriter& out) const {
  for (std::uint32_t p = 0; p < traffic_.size(); ++p)
    if (net_.runs_part(p)) {
      out.put(p);
      for (const Traffic& t : traffic_[p]) out.put(t);
    }
  out.put(~std::uint32_t{0});
  model_.write_part_results(out);
}

void Engine::take_results(ByteReader& in) {
  for (auto p = in.get<std::uint32_t>(); p != ~std::uint32_t{0}; p = in.get<std::uint32_t>()) {
    if (p >= traffic_.size() || net_.runs_part(p))
      throw std::logic_error("collectives: another process sent the traffic of part " + std::to_string(p));
    for (Traffic& t : traffic_[p]) t = in.get<Traffic>();
  }
  model_.read_part_results(in);
}

std::vector<CollectiveResult> Engine::results() const {
  std::vector<CollectiveResult> out;
  const auto& jobs = model_.results();
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    CollectiveResult r{jobs[j], 0, 0, 0};
    for (const auto& part : traffic_) {  // none before the run
      r.messages += part[j].messages;
      r.bytes += part[j].bytes;
      r.retransmitted += part[j].retransmitted;
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace fabriclab::nicengine
