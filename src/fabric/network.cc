#include "fabric/network.h"

#include <algorithm>
#include <limits>
#include <map>
#include <span>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.h"
#include "fabric/pint.h"

namespace fabriclab::fabric {

namespace {
// The format with the INT header's bytes when the NIC's policy reads INT.
// (HPCC-PINT's header is its code alone.)
WireFormat with_int_header(WireFormat w, const NicConfig& nic) {
  w.int_bytes = 0;
  w.pint_log_base = 0;
  const CcPolicy& policy = cc_policy(nic.congestion_control);
  if (!(policy.feedback & kFeedbackInt)) return w;
  w.pint_log_base = policy.pint_log_base ? policy.pint_log_base(nic) : 0;
  w.int_bytes = w.pint_log_base > 0 ? PintCode(w.pint_log_base).bytes()
                                    : kIntHeaderBytes + kIntHopBytes * w.int_max_hops;
  return w;
}
}  // namespace

Network::Network(NicConfig nic, SwitchConfig sw, std::uint64_t seed)
    : nic_(std::move(nic)), sw_(std::move(sw)), seed_(seed) {
  check_nic_config(nic_);
  ctx_.seed = seed;
  ctx_.wire = with_int_header(ctx_.wire, nic_);
  sw_.max_frame = Bytes::from_count(max_frame_bytes(nic_.mtu, ctx_.wire));
  nic_.ecmp_hash = sw_.hash;
  nic_.ecmp_fields = sw_.hash_fields;
}

void check_wire_format(const NicConfig& nic, const WireFormat& w) {
  if (max_frame_bytes(nic.mtu, w) > 0xffff)
    throw InputError(fmt::format("wire.header_bytes = {}, wire.min_frame_bytes = {}: a frame of nic.mtu = {} payload "
                                 "bytes would pass 65535 bytes",
                                 w.header_bytes, w.min_frame_bytes, nic.mtu));
}

void Network::set_wire_format(const WireFormat& w) {
  if (!nodes_.empty()) throw std::logic_error("Network::set_wire_format after nodes were added");
  ctx_.wire = with_int_header(w, nic_);
  check_wire_format(nic_, ctx_.wire);
  sw_.max_frame = Bytes::from_count(max_frame_bytes(nic_.mtu, ctx_.wire));
}

PortCounters Network::port_counters(const Node& node, std::size_t port, Time end) {
  PortCounters c;
  node.port(port).emit_counters(c, end);
  node.emit_counters(port, c);
  return c;
}

Network::~Network() {
  // Release what a run that threw left behind, so the pool does not report a leak twice.
  for (auto& p : hosts_)
    for (std::size_t i = 0; i < p->port_count(); ++i) p->port(i).drain();
  for (auto& s : switches_)
    for (std::size_t i = 0; i < s->port_count(); ++i) s->port(i).drain();
  for (auto& h : hosts_) h->drain();
  release_switch_queues();
  for (auto& b : boxes_) b->drain();
  for (auto& r : reseqs_) r->drain();
}

void Network::release_switch_queues() {
  // A few long queues hold most packets, so all the queues of a part's switches are
  // walked together; each part's packets go back to its own pool.
  const bool split = run_.n_parts_ > 1 && !run_.parts_.empty();
  std::vector<std::vector<Packet*>> lists(split ? run_.parts_.size() : 1);
  for (auto& s : switches_) s->take_queued(lists[split ? run_.part_of_[s->id()] : 0]);
  for (std::size_t q = 0; q < lists.size(); ++q) {
    FabricContext& ctx = split ? run_.parts_[q]->ctx : ctx_;
    for_each_in_turns(lists[q], [&](Packet* p) { release_packet(ctx, p); });
  }
}

ReorderBox& Network::add_impairment(Port& port, ImpairmentConfig cfg) {
  if (prepared_) throw std::logic_error("Network::add_impairment after the run was prepared");
  if (!port.peer()) throw std::logic_error("Network::add_impairment on an unconnected port");
  claim_link(port);
  boxes_.push_back(std::make_unique<ReorderBox>(ctx_, port, std::move(cfg), seed_));
  port.set_impairment(boxes_.back().get());
  return *boxes_.back();
}

void Network::claim_link(const Port& port) const {
  if (port.impairment())
    throw InputError("the link leaving " + port.owner().name() + " port " + std::to_string(port.index()) +
                     " already has an element on it (a reorder box or a re-sequencer)");
}

Resequencer& Network::add_resequencer(Port& port, ResequencerConfig cfg) {
  if (prepared_) throw std::logic_error("Network::add_resequencer after the run was prepared");
  if (!port.peer()) throw std::logic_error("Network::add_resequencer on an unconnected port");
  claim_link(port);
  reseqs_.push_back(std::make_unique<Resequencer>(ctx_, port, cfg));
  port.set_impairment(reseqs_.back().get());
  return *reseqs_.back();
}

std::uint32_t Network::add_host(std::string name) {
  if (!switches_.empty()) throw std::logic_error("Network: add every host before the switches");
  const auto h = static_cast<std::uint32_t>(hosts_.size());
  if (name.empty()) name = fmt::format("h{}", h);
  hosts_.push_back(std::make_unique<Host>(ctx_, std::move(name), h, nic_, sw_.pfc, flows_));
  hosts_.back()->set_id(static_cast<std::uint32_t>(nodes_.size()));
  nodes_.push_back(hosts_.back().get());
  return h;
}

std::uint32_t Network::add_switch(std::string name) {
  const auto s = static_cast<std::uint32_t>(switches_.size());
  switches_.push_back(std::make_unique<Switch>(ctx_, std::move(name), s, sw_, seed_));
  switches_.back()->set_id(static_cast<std::uint32_t>(nodes_.size()));
  nodes_.push_back(switches_.back().get());
  return s;
}

void Network::connect(Node& a, Node& b, BitRate rate, Time delay) {
  if (prepared_) throw std::logic_error("Network::connect after the run was prepared");
  if (&a == &b) throw InputError("a link must join two different nodes (" + a.name() + ")");
  if (rate.bps() <= 0) throw InputError("link " + a.name() + "-" + b.name() + ": the rate must be positive");
  if (delay < Time()) throw InputError("link " + a.name() + "-" + b.name() + ": the delay must not be negative");
  for (Node* n : {&a, &b})
    if (n->port_count() >= kMaxPorts)
      throw InputError(fmt::format("{}: more than {} ports (port numbers are 16-bit)", n->name(), kMaxPorts));
  a.add_port(std::make_unique<Port>(ctx_, a, static_cast<std::uint16_t>(a.port_count())));
  b.add_port(std::make_unique<Port>(ctx_, b, static_cast<std::uint16_t>(b.port_count())));
  Port::connect(a.port(a.port_count() - 1), b.port(b.port_count() - 1), rate, delay);
}

std::uint32_t Network::add_flow(const FlowSpec& f) {
  if (prepared_) throw std::logic_error("Network::add_flow after the run was prepared");
  return push_flow(f);
}

void Network::check_flow_size(std::uint64_t bytes, std::uint32_t qps, const std::string& what,
                              const std::string& qps_key) const {
  if (bytes == 0) throw InputError(what + ": must carry at least one byte");
  if (qps == 0) throw InputError(what + ": needs at least one QP");
  // A QP numbers its packets with 24-bit PSNs: the largest share must fit (checked here,
  // before the run builds anything for the flows).
  const std::uint64_t share = bytes / qps + (bytes % qps != 0 ? 1 : 0);
  if (const std::uint64_t packets = (share + nic_.mtu - 1) / nic_.mtu; packets > kPsnMask)
    throw InputError(fmt::format("{}: {} bytes over {} QP(s) make {} packets of nic.mtu = {} bytes on a QP, more "
                                 "than its 24-bit PSNs number ({}); use more QPs ({})",
                                 what, bytes, qps, packets, nic_.mtu, kPsnMask, qps_key));
}

void Network::feed_flows(std::unique_ptr<FlowSource> source, Time step) {
  if (prepared_) throw std::logic_error("Network::feed_flows after the run was prepared");
  if (feed_) throw std::logic_error("Network::feed_flows: one source per run");
  if (step <= Time()) throw std::logic_error("Network::feed_flows: the step must be positive");
  feed_ = std::make_unique<FlowFeed>(*this, std::move(source), step);
}

std::uint32_t Network::push_flow(const FlowSpec& f) {
  const std::string what = "flow " + std::to_string(flows_.size());
  if (f.src >= hosts_.size() || f.dst >= hosts_.size())
    throw InputError(what + ": host out of range (" + std::to_string(hosts_.size()) + " hosts)");
  if (f.src == f.dst) throw InputError(what + ": source and destination are the same host");
  if (flows_.size() >= kConnectionFlow) throw InputError(what + ": too many flows (at most 2^31)");
  check_flow_size(f.bytes, f.qps, what);
  if (f.priority > 7) throw InputError(what + ": priority must be 0..7");
  if (f.start < Time()) throw InputError(what + ": start must not be negative");
  if (f.after_delay < Time()) throw InputError(what + ": after_delay must not be negative");
  for (std::uint32_t d : f.after)
    if (d >= flows_.size())
      throw InputError(what + ": waits for flow " + std::to_string(d) + ", which is not listed before it");
  flows_.push_back({.spec = f});
  return static_cast<std::uint32_t>(flows_.size() - 1);
}

std::uint32_t Network::open_connection(std::uint32_t src, std::uint32_t dst, std::uint8_t priority,
                                       std::uint32_t messages_hint) {
  if (prepared_) throw std::logic_error("Network::open_connection after the run was prepared");
  const std::string what = "connection " + std::to_string(src) + " -> " + std::to_string(dst);
  if (src >= hosts_.size() || dst >= hosts_.size())
    throw InputError(what + ": host out of range (" + std::to_string(hosts_.size()) + " hosts)");
  if (src == dst) throw InputError(what + ": source and destination are the same host");
  if (priority > 7) throw InputError(what + ": priority must be 0..7");
  if (conns_.size() >= kConnectionFlow) throw InputError(what + ": too many connections");
  conns_.push_back({src, dst, messages_hint, priority});
  return static_cast<std::uint32_t>(conns_.size() - 1);
}

void Network::hold(std::uint64_t n) {
  if (prepared_) throw std::logic_error("Network::hold after the run was prepared");
  held_ += n;
}

void Network::release() {
  if (released_ >= held_) throw std::logic_error("Network::release: more work released than was held");
  ++released_;  // (held_ - released_ joins the parts' count of work left)
}

void Network::hold_in(std::uint32_t node, std::uint64_t n) {
  if (!prepared_ || ran_) throw std::logic_error("Network::hold_in outside the coordinator's begin()");
  FabricContext& c = run_.ctx_of(node, ctx_);
  c.work_held += n;
  c.flows_left += n;
  held_in_ += n;
}

Time Network::base_rtt_of_longest_path() const {
  if (hosts_.size() < 2) return Time();
  const WireFormat& w = ctx_.wire;
  const auto data = Bytes::from_count(max_frame_bytes(nic_.mtu, w) + w.gap_bytes);
  const auto ack = Bytes::from_count(std::max(w.header_bytes + kAethBytes + w.int_bytes, w.min_frame_bytes) +
                                     w.gap_bytes);
  // Breadth first from host 0, each node's largest cost over its fewest-hop paths.
  const std::size_t n = nodes_.size();
  std::vector<std::int32_t> level(n, -1);
  std::vector<Time> cost(n);
  std::vector<bool> is_host(n, false);
  for (const auto& h : hosts_) is_host[h->id()] = true;
  std::vector<std::uint32_t> frontier{hosts_[0]->id()}, next;
  level[frontier[0]] = 0;
  for (std::int32_t l = 1; !frontier.empty(); ++l) {
    next.clear();
    for (std::uint32_t u : frontier) {
      const Node& node = *nodes_[u];
      // Only switches forward; a path does not pass through another host.
      if (l > 1 && is_host[u]) continue;
      for (std::size_t i = 0; i < node.port_count(); ++i) {
        const Port& port = node.port(i);
        const std::uint32_t v = port.peer()->owner().id();
        if (level[v] >= 0 && level[v] != l) continue;
        const Time hop = port.delay() + port.delay() + serialization_time(data, port.rate(), w.rounding) +
                         serialization_time(ack, port.peer()->rate(), w.rounding);
        if (level[v] < 0) {
          level[v] = l;
          next.push_back(v);
          cost[v] = cost[u] + hop;
        } else {
          cost[v] = std::max(cost[v], cost[u] + hop);
        }
      }
    }
    frontier.swap(next);
  }
  Time longest;
  for (const auto& h : hosts_) longest = std::max(longest, cost[h->id()]);
  return longest;
}

Time Network::least_path_time(std::uint32_t from, std::uint32_t to, const PathFrames& frames, IdealCache* cache) const {
  using Link = std::pair<std::int64_t, std::int64_t>;  // (rate in bit/s, delay in ps)
  using Path = std::vector<Link>;
  const Host& src = *hosts_.at(from);
  const Host& dst = *hosts_.at(to);
  if (src.port_count() == 0 || dst.port_count() == 0) return Time::max();
  const auto link_of = [](const Port& p) { return Link{p.rate().bps(), p.delay().ps()}; };
  // A path: the sender's link, the switches' links between the first switch and the
  // last, the last switch's link to the receiver (the same rate and delay as the
  // receiver's own: a link is the same both ways).
  const Port& out = src.port(0);
  const Node& first = out.peer()->owner();
  const Node& last = dst.port(0).peer()->owner();
  if (&first == &dst) return path_time(Path{link_of(out)}, frames);
  if (first.id() < hosts_.size() || last.id() < hosts_.size()) return Time::max();  // a host forwards nothing
  // The switches' part: every routed path from `first` to `last` toward `to` (with static
  // routes, to `to` itself: a route may lead past `last`), depth first over the
  // equal-cost next hops, those of equal links once (every path of a fat-tree).
  const bool to_host = !static_routes_.empty();
  const std::uint32_t target = to_host ? dst.id() : last.id();
  const auto walk_all = [&] {
    std::vector<Path> found;
    std::vector<const Port*> path;
    Path links;
    std::size_t paths = 0;
    const auto walk = [&](auto&& self, std::uint32_t node) -> void {
      if (paths >= kMaxIdealPaths || path.size() > (to_host ? 63 : 62)) return;
      if (node == target) {
        ++paths;
        links.clear();
        for (const Port* p : path) links.push_back(link_of(*p));
        if (std::find(found.begin(), found.end(), links) == found.end()) found.push_back(links);
        return;
      }
      if (node < hosts_.size()) return;  // (a static route's way out of the fabric)
      const Node& n = *nodes_[node];
      for (const std::uint16_t port : switches_[node - hosts_.size()]->next_hops(to)) {
        path.push_back(&n.port(port));
        self(self, n.port(port).peer()->owner().id());
        path.pop_back();
      }
    };
    walk(walk, first.id());
    return found;
  };
  // (Static routes are per destination host: then every flow walks its own.)
  std::vector<Path> own;
  const std::vector<Path>* middles = &own;
  if (cache && !to_host) {
    const std::uint64_t key = std::uint64_t{first.id()} << 32 | last.id();
    auto it = cache->paths_.find(key);
    if (it == cache->paths_.end()) it = cache->paths_.emplace(key, walk_all()).first;
    middles = &it->second;
  } else {
    own = walk_all();
  }
  Time best = Time::max();
  Path whole;
  for (const Path& m : *middles) {
    whole.assign(1, link_of(out));
    whole.insert(whole.end(), m.begin(), m.end());
    if (!to_host) whole.push_back(link_of(dst.port(0)));
    best = std::min(best, path_time(whole, frames));
  }
  return best;
}

Time Network::path_time(const std::vector<std::pair<std::int64_t, std::int64_t>>& links,
                        const PathFrames& frames) const {
  const WireRounding rounding = ctx_.wire.rounding;
  __extension__ using I128 = __int128;
  // Turning at link k: the first frame up to it, every frame through it (each serialized
  // and rounded as the wire does), the last one after it; in 128 bits, Time::max() past
  // what a Time holds.
  const std::size_t n = links.size();
  const auto ser = [&](Bytes b, std::int64_t bps) {
    return static_cast<I128>(serialization_time(b, BitRate::from_bps(bps), rounding).ps());
  };
  std::vector<I128> after(n + 1, 0);  // per link: the last frame's delay + serialization over the links after it
  for (std::size_t i = n; i-- > 0;) after[i] = after[i + 1] + links[i].second + ser(frames.last, links[i].first);
  I128 before = 0, worst = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const auto [bps, delay] = links[k];
    I128 through = delay;
    for (const auto& [bytes, count] : frames.all) through += ser(bytes, bps) * count;
    worst = std::max(worst, before + through + after[k + 1]);
    before += delay + ser(frames.first, bps);
  }
  return worst > std::numeric_limits<std::int64_t>::max() ? Time::max()
                                                          : Time::from_ps(static_cast<std::int64_t>(worst));
}

Time Network::ideal_fct(const FlowSpec& f, IdealCache* cache) const {
  const WireFormat& w = ctx_.wire;
  // A data frame of `payload` bytes on the wire, gap included (as Packet::seal counts a
  // WRITE; every data frame carries the INT header when the format has one).
  const auto frame = [&](std::uint64_t payload, bool reth) -> std::uint64_t {
    return frame_bytes_of(reth ? kRethBytes : 0, static_cast<std::uint32_t>(payload), true, w) + w.gap_bytes;
  };
  const auto bytes = [](std::uint64_t n) { return Bytes::from_count(static_cast<std::int64_t>(n)); };
  std::uint64_t first = 0, smallest = std::numeric_limits<std::uint64_t>::max();
  std::map<std::uint64_t, std::uint64_t> count;  // frames by wire bytes (a few sizes)
  for (std::uint32_t q = 0; q < f.qps; ++q) {
    const std::uint64_t share = f.bytes / f.qps + (q < f.bytes % f.qps ? 1 : 0);
    if (share == 0) continue;
    const std::uint64_t packets = (share + nic_.mtu - 1) / nic_.mtu, last = share - (packets - 1) * nic_.mtu;
    const std::uint64_t head = frame(packets == 1 ? last : nic_.mtu, true);
    first = std::max(first, head);
    ++count[head];
    if (packets > 2) count[frame(nic_.mtu, false)] += packets - 2;
    if (packets > 1) ++count[frame(last, false)];
    smallest = std::min(smallest, packets == 1 ? head : frame(last, false));
  }
  PathFrames frames{bytes(first), bytes(smallest), {}};
  for (const auto& [b, n] : count) frames.all.emplace_back(bytes(b), n);
  const Time t = least_path_time(f.src, f.dst, frames, cache);
  if (t == Time::max() || nic_.flow_end != FlowEnd::acked) return t;
  const Bytes ack = bytes(frame_bytes_of(kAethBytes, 0, true, w) + w.gap_bytes);  // it echoes the INT stack
  const Time back = least_path_time(f.dst, f.src, {ack, ack, {{ack, 1}}}, cache);
  return back == Time::max() || back.ps() > std::numeric_limits<std::int64_t>::max() - t.ps() ? Time::max() : t + back;
}

void Network::check_buffers() {
  for (auto& s : switches_) s->finalize();
  for (auto& h : hosts_) h->finalize();
}

void Network::prepare() {
  if (ran_) throw std::logic_error("Network::run may be called once");
  if (prepared_) return;
  prepared_ = true;
  for (auto& h : hosts_)
    if (h->port_count() != 1)
      throw InputError("host " + h->name() + " has " + std::to_string(h->port_count()) + " links (expected 1)");
  if (!conns_.empty() && !message_events_)
    throw std::logic_error("Network: connections without a MessageEvents handler");
  // Ties at one instant are ordered by node (Simulator: tie keys), so that a split run
  // orders them as the undivided one: each node, its ports and its QPs' congestion
  // control draw their keys from the node's source, its id + 1 (0 is the simulator's).
  auto tie = [](Node& node, EventHandler& self) {
    self.set_tie_source(node.id() + 1);
    for (std::size_t i = 0; i < node.port_count(); ++i) node.port(i).set_tie_source(node.id() + 1);
  };
  for (auto& h : hosts_) tie(*h, *h);
  for (auto& s : switches_) tie(*s, *s);
  run_.prepare_parts();
  for (auto& s : switches_) s->finalize();
  for (auto& h : hosts_) h->finalize();
  if (feed_) feed_->add_first();  // (the first instant's flows: routes check them with the others)
  build_routes();
  // (Only the policies that read ACKs and IRN's BDP cap use it: no walk of a 65 536-host
  // fabric for others.)
  if (nic_.base_rtt > Time()) base_rtt_ = nic_.base_rtt;
  else if ((cc_policy(nic_.congestion_control).feedback & kFeedbackFromAcks) || nic_.transport == Transport::irn ||
           nic_.transport == Transport::uet)
    base_rtt_ = base_rtt_of_longest_path();
  // IRN, UET: one cap of outstanding PSNs for the network, at the fastest NIC's rate, so
  // that no sender outruns a receiver's bitmap.
  std::uint32_t sr_cap = 0;
  if (nic_.transport == Transport::irn || nic_.transport == Transport::uet) {
    BitRate fastest;
    for (auto& h : hosts_)
      if (h->port_count() > 0 && h->port(0).rate().bps() > fastest.bps()) fastest = h->port(0).rate();
    sr_cap = selective_repeat_cap(nic_, fastest, base_rtt_);
  }
  for (auto& h : hosts_) h->set_base_rtt(base_rtt_, sr_cap, uet_rto());
  for (auto& s : switches_) s->set_int_window(base_rtt_);
  // (Flows with `after` are all added before the run: fed flows have none.)
  dependents_.assign(flows_.size(), {});
  waiting_.assign(flows_.size(), 0);
  for (std::uint32_t id = 0; id < flows_.size(); ++id) {
    const FlowSpec& f = flows_[id].spec;
    for (std::uint32_t d : f.after) dependents_[d].push_back(id);
    waiting_[id] = static_cast<std::uint32_t>(f.after.size());
  }
  for (std::uint32_t id = 0; id < flows_.size(); ++id) make_qps(id);
  // Connections after the flows: the flows' QPNs (and so their UDP ports) do not move
  // (those of flows fed during the run come after them).
  for (std::uint32_t c = 0; c < conns_.size(); ++c) {
    Conn& k = conns_[c];
    const std::uint32_t rq = hosts_[k.dst]->open_recv_connection(c);
    k.send_qp = hosts_[k.src]->open_send_connection(c, k.dst, rq, k.priority, k.messages_hint);
  }
  ctx_.flow_events = this;
  ctx_.message_events = message_events_;
  ctx_.flows_left = flows_.size();  // (the work held for the coordinator is counted by the run)
  run_.share_flows();
  run_.observers_.clear();
  if (looks_for_deadlocks()) run_.observers_.push_back(&deadlock_check_);
  if (!snapshots_.empty()) run_.observers_.push_back(&snapshot_reader_);
  for (auto& s : switches_) s->start();
  if (feed_) {  // (the coordinator's step first at an instant both have)
    if (coordinator_) coordinators_ = std::make_unique<CoordinatorPair>(*coordinator_, *feed_);
    coordinator_ = coordinators_ ? static_cast<Coordinator*>(coordinators_.get()) : feed_.get();
  }
  if (coordinator_) coordinator_->begin();
}

void Network::make_qps(std::uint32_t id, bool fed) {
  FlowState& row = flows_[id];
  const FlowSpec& f = row.spec;
  // Fed during the run: checked as build_routes checks the others, its work counted where
  // it finishes, its start only where its sender runs (another process's copy of the host
  // never runs).
  if (fed) {
    const Node& first = hosts_[f.src]->port(0).peer()->owner();
    const Node& last = hosts_[f.dst]->port(0).peer()->owner();
    const bool reaches = first.id() == hosts_[f.dst]->id() ||
                         (first.id() >= hosts_.size() && last.id() >= hosts_.size() &&
                          (&first == &last || !switches_[first.id() - hosts_.size()]->next_hops(f.dst).empty()));
    if (!reaches) throw InputError("no path from " + hosts_[f.src]->name() + " to " + hosts_[f.dst]->name());
    ++run_.ctx_of(hosts_[finishing_host(f)]->id(), ctx_).flows_left;
  }
  const Time start = !f.after.empty() || (fed && !runs_here(hosts_[f.src]->id())) ? Time::max() : f.start;
  if (f.after.empty()) row.started = f.start;
  if (send_qps_.size() <= id) {
    send_qps_.resize(id + 1);
    source_ports_.resize(id + 1, 0);
  }
  // The flow's bytes split over its QPs as evenly as possible, one message each.
  for (std::uint32_t q = 0; q < f.qps; ++q) {
    const std::uint64_t share = f.bytes / f.qps + (q < f.bytes % f.qps ? 1 : 0);
    if (share == 0) {  // more QPs than bytes: the spare QPs count as done
      ++row.qps_done;
      continue;
    }
    const std::uint32_t rq = hosts_[f.dst]->add_recv_qp(id, share);
    send_qps_[id].emplace_back(f.src, hosts_[f.src]->add_send_qp(id, f.dst, rq, share, f.priority, start));
  }
  if (!send_qps_[id].empty()) source_ports_[id] = hosts_[f.src]->send_source_port(send_qps_[id].front().second);
}

bool Network::sent_all(std::uint32_t id) const {
  for (const auto& [h, q] : send_qps_[id])
    if (!hosts_[h]->send_qp_finished(q)) return false;
  return true;
}

bool Network::received_all(std::uint32_t id) const {
  const Host& dst = *hosts_[flows_[id].spec.dst];
  for (const auto& [h, q] : send_qps_[id])
    if (!dst.recv_qp_finished(hosts_[h]->send_peer_qp(q))) return false;
  return true;
}

void Network::free_qps(std::uint32_t id) {
  Host& dst = *hosts_[flows_[id].spec.dst];
  for (const auto& [h, q] : send_qps_[id]) {
    dst.free_recv_qp(hosts_[h]->send_peer_qp(q));
    hosts_[h]->free_send_qp(q);
  }
  send_qps_[id] = {};
}

void Network::flow_finished(std::uint32_t flow) {
  const Time now = sim_.now();
  for (std::uint32_t d : flow < dependents_.size() ? std::span(dependents_[flow]) : std::span<std::uint32_t>()) {
    if (--waiting_[d] > 0) continue;
    const FlowSpec& f = flows_[d].spec;
    const Time at = std::max(now + f.after_delay, f.start);
    flows_[d].started = at;
    for (const auto& [h, q] : send_qps_[d]) hosts_[h]->start_send_qp(q, at);
  }
  if (flow_observer_) flow_observer_->flow_finished(flow);
}

Network::ConnectionBytes Network::connection_bytes(std::uint32_t c) const {
  const Conn& k = conns_.at(c);
  return {k.src, k.dst,
          k.gathered != ~std::uint64_t{0} ? k.gathered : hosts_[k.src]->connection_bytes_completed(k.send_qp)};
}

void Network::start_flow(std::uint32_t id, Time at) {
  FlowState& f = flows_.at(id);
  if (!prepared_ || f.spec.start != Time::max() || !f.spec.after.empty() || f.started != Time::max())
    throw std::logic_error("Network::start_flow: flow " + std::to_string(id) + " is not a held flow of a prepared run");
  f.started = at;
  for (const auto& [h, q] : send_qps_[id]) hosts_[h]->start_send_qp(q, at);
}

std::uint64_t Network::events() const { return run_.events(); }

std::uint64_t Network::fingerprint() const { return run_.fingerprint(); }

std::size_t Network::packets_alive() const {
  std::size_t live = packets_.live();
  for (const auto& part : run_.parts_)
    if (part->own) live += part->own->packets.live();
  return live;
}

PortCounters Network::port_counters_at_end(std::uint32_t node, std::size_t port) const {
  if (!run_.gathered_ports_.empty()) return run_.gathered_ports_.at(run_.port_base_.at(node) + port);
  return port_counters(*nodes_.at(node), port, run_.end_);
}

HostCounters Network::host_counters(std::uint32_t h) const {
  if (!run_.gathered_hosts_.empty()) return run_.gathered_hosts_.at(h);
  return hosts_.at(h)->counters();
}

WatchdogCounts Network::watchdog_counts(std::uint32_t sw, std::size_t port) const {
  const auto node = static_cast<std::uint32_t>(hosts_.size() + sw);
  if (!run_.gathered_watchdog_.empty()) return run_.gathered_watchdog_.at(run_.port_base_.at(node) + port);
  return own_watchdog(node, port);
}

WatchdogCounts Network::own_watchdog(std::uint32_t node, std::size_t port) const {
  const Switch& sw = *switches_[node - hosts_.size()];
  return {sw.storms(port), sw.watchdog_drops(port)};
}

RunTotals Network::finish() {
  ran_ = true;
  RunTotals t;
  t.end = sim_.now();
  t.events = events();
  t.peak_packets = packets_.peak();
  // Partitioned: whether events remain, and the last part's clock (over several
  // processes, this one's parts' until agree_on_totals).
  bool pending = false;
  Time last_now;
  run_.end_windows(t, pending, last_now);
  std::uint64_t found = 0;
  auto count = [&](const Packet& p) {
    ++found;
    if (is_data(p.opcode)) {
      ++t.in_flight_data_packets;
      t.in_flight_data_bytes += p.payload;
    }
  };
  for (Node* n : nodes_)
    for (std::size_t i = 0; i < n->port_count(); ++i) {
      n->port(i).for_each_in_flight(count);
      t.packet_hops += n->port(i).tx_packets();
    }
  for (auto& h : hosts_) h->for_each_queued(count);
  std::vector<const Packet*> queues;
  for (auto& s : switches_) s->queue_heads(queues);
  for_each_in_turns(queues, [&](const Packet* p) { count(*p); });
  for (auto& b : boxes_) b->for_each_held(count);
  for (auto& r : reseqs_) r->for_each_held(count);
  // Finished flows are counted where they finish (another process's are pristine here).
  for (const auto& f : flows_) t.flows_finished += f.finished() && runs_here(finishing_host(f.spec));
  // Each process's own packets are in its own pools, queues and links.
  if (found != packets_alive())
    throw std::logic_error("packet leak: " + std::to_string(packets_alive()) + " packets alive, " +
                           std::to_string(found) + " in queues and on links");
  // The work held in this process's parts is done (another process's parts' copies here
  // are held but never run).
  bool work_done = run_.work_done();
  if (run_.exchange_) run_.agree_on_totals(t, pending, last_now, work_done);
  // As an undivided run's, the clock ends where the last window did if events remain,
  // else at the last event.
  t.end = run_.end_at(t.end, pending, last_now);
  // A snapshot past the run's last event (read while nothing was left to happen) is no
  // instant of the run: as if the run had not reached it, however it was split. The end's
  // reading takes its maxima back (they are the end's, since the last snapshot kept).
  if (!snapshots_.empty()) {
    end_snapshot_ = {.at = run_.end_};
    take_snapshot(end_snapshot_);
    for (Snapshot& s : snapshots_) {
      if (s.at <= run_.end_) continue;
      for (std::size_t p = 0; p < s.ports.size(); ++p)
        end_snapshot_.ports[p].max_queue_bytes = std::max(end_snapshot_.ports[p].max_queue_bytes,
                                                          s.ports[p].max_queue_bytes);
      s = {.at = s.at};
    }
  }
  t.all_finished = t.flows_finished == flows_.size() && released_ == held_ && work_done;
  t.deadlock = deadlock_.has_value();

  const Ledger& l = ledger_;
  if (l.data_bytes_sent + l.data_bytes_duplicated !=
          l.data_bytes_arrived + l.data_bytes_dropped + l.data_bytes_trimmed + t.in_flight_data_bytes ||
      l.data_packets_sent + l.data_packets_duplicated !=
          l.data_packets_arrived + l.data_packets_dropped + t.in_flight_data_packets)
    throw std::logic_error(
        "conservation violated: data sent " + std::to_string(l.data_packets_sent) + " packets / " +
        std::to_string(l.data_bytes_sent) + " B, duplicated on links " + std::to_string(l.data_packets_duplicated) +
        " / " + std::to_string(l.data_bytes_duplicated) + ", arrived " + std::to_string(l.data_packets_arrived) +
        " / " + std::to_string(l.data_bytes_arrived) + ", dropped " + std::to_string(l.data_packets_dropped) + " / " +
        std::to_string(l.data_bytes_dropped) + ", trimmed " + std::to_string(l.data_bytes_trimmed) + " B, in flight " +
        std::to_string(t.in_flight_data_packets) + " / " + std::to_string(t.in_flight_data_bytes));
  if (run_.exchange_) run_.gather_results();
  for (Node* n : nodes_)
    for (std::size_t i = 0; i < n->port_count(); ++i) n->port(i).drain();
  for (auto& h : hosts_) h->drain();
  release_switch_queues();
  for (auto& b : boxes_) b->drain();
  for (auto& r : reseqs_) r->drain();
  packets_.check_no_leaks();
  ctx_.telemetry.check_no_leaks();
  for (const auto& part : run_.parts_)
    if (part->own) {
      part->own->packets.check_no_leaks();
      part->own->ctx.telemetry.check_no_leaks();
    }
  return t;
}

}  // namespace fabriclab::fabric
