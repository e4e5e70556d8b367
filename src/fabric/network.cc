#include "fabric/network.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "core/error.h"
#include "core/spin_barrier.h"

namespace fabriclab::fabric {

Network::Network(NicConfig nic, SwitchConfig sw, std::uint64_t seed)
    : nic_(std::move(nic)), sw_(std::move(sw)), seed_(seed) {
  sw_.max_frame = Bytes::from_count(max_frame_bytes(nic_.mtu));
  nic_.ecmp_hash = sw_.hash;
  nic_.ecmp_fields = sw_.hash_fields;
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
  std::vector<std::vector<Packet*>> lists(parts_.empty() ? 1 : parts_.size());
  for (auto& s : switches_) s->take_queued(lists[parts_.empty() ? 0 : part_of_[s->id()]]);
  for (std::size_t q = 0; q < lists.size(); ++q) {
    Pool<Packet>& pool = parts_.empty() ? packets_ : parts_[q]->packets;
    for_each_in_turns(lists[q], [&](Packet* p) { pool.release(p); });
  }
}

void Network::set_static_route(std::uint32_t sw, std::uint32_t dst, std::vector<std::uint16_t> ports) {
  if (prepared_) throw std::logic_error("Network::set_static_route after the run was prepared");
  if (sw >= switches_.size()) throw InputError("static route: no switch " + std::to_string(sw));
  if (dst >= hosts_.size()) throw InputError("static route: no host " + std::to_string(dst));
  if (ports.empty()) throw InputError("static route at " + switches_[sw]->name() + ": no port");
  for (auto p : ports)
    if (p >= switches_[sw]->port_count())
      throw InputError("static route at " + switches_[sw]->name() + " toward " + hosts_[dst]->name() + ": port " +
                       std::to_string(p) + " does not exist (ports 0.." +
                       std::to_string(switches_[sw]->port_count() - 1) + ")");
  for (auto p : ports) {
    const Node& next = switches_[sw]->port(p).peer()->owner();
    if (next.id() < hosts_.size() && next.id() != dst)
      throw InputError("static route at " + switches_[sw]->name() + " toward " + hosts_[dst]->name() + ": port " +
                       std::to_string(p) + " leads to host " + next.name());
  }
  static_routes_[{sw, dst}] = std::move(ports);
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
    if (n->port_count() >= 0xfffe) throw InputError(n->name() + ": too many ports");
  a.add_port(std::make_unique<Port>(ctx_, a, static_cast<std::uint16_t>(a.port_count())));
  b.add_port(std::make_unique<Port>(ctx_, b, static_cast<std::uint16_t>(b.port_count())));
  Port::connect(a.port(a.port_count() - 1), b.port(b.port_count() - 1), rate, delay);
}

std::uint32_t Network::add_flow(const FlowSpec& f) {
  if (prepared_) throw std::logic_error("Network::add_flow after the run was prepared");
  const std::string what = "flow " + std::to_string(flows_.size());
  if (f.src >= hosts_.size() || f.dst >= hosts_.size())
    throw InputError(what + ": host out of range (" + std::to_string(hosts_.size()) + " hosts)");
  if (f.src == f.dst) throw InputError(what + ": source and destination are the same host");
  if (f.bytes == 0) throw InputError(what + ": must carry at least one byte");
  if (f.qps == 0) throw InputError(what + ": needs at least one QP");
  if (f.priority > 7) throw InputError(what + ": priority must be 0..7");
  if (f.start < Time()) throw InputError(what + ": start must not be negative");
  if (f.after_delay < Time()) throw InputError(what + ": after_delay must not be negative");
  for (std::uint32_t d : f.after)
    if (d >= flows_.size())
      throw InputError(what + ": waits for flow " + std::to_string(d) + ", which is not listed before it");
  flows_.push_back({.spec = f});
  return static_cast<std::uint32_t>(flows_.size() - 1);
}

void Network::build_routes() {
  const std::size_t n = nodes_.size();
  // Flows grouped by destination, to check each is reachable from its source.
  std::vector<std::vector<std::uint32_t>> sources_of(hosts_.size());
  for (const auto& f : flows_) sources_of[f.spec.dst].push_back(f.spec.src);

  std::vector<std::vector<std::uint32_t>> begin(switches_.size());
  std::vector<std::vector<std::uint16_t>> ports(switches_.size());
  std::vector<std::int32_t> dist(n);
  std::vector<std::uint32_t> frontier, next;
  for (std::uint32_t h = 0; h < hosts_.size(); ++h) {
    std::fill(dist.begin(), dist.end(), -1);
    dist[h] = 0;
    frontier.assign(1, h);
    // Breadth-first from host h; hosts are endpoints, never transit.
    while (!frontier.empty()) {
      next.clear();
      for (std::uint32_t u : frontier) {
        if (u != h && u < hosts_.size()) continue;
        Node& node = *nodes_[u];
        for (std::size_t i = 0; i < node.port_count(); ++i) {
          const std::uint32_t v = node.port(i).peer()->owner().id();
          if (dist[v] < 0) {
            dist[v] = dist[u] + 1;
            next.push_back(v);
          }
        }
      }
      frontier.swap(next);
    }
    for (std::uint32_t src : sources_of[h])
      if (dist[src] < 0)
        throw InputError("no path from " + hosts_[src]->name() + " to " + hosts_[h]->name());
    for (std::size_t s = 0; s < switches_.size(); ++s) {
      Switch& sw = *switches_[s];
      begin[s].push_back(static_cast<std::uint32_t>(ports[s].size()));
      auto fixed = static_routes_.find({static_cast<std::uint32_t>(s), h});
      if (fixed != static_routes_.end()) {
        ports[s].insert(ports[s].end(), fixed->second.begin(), fixed->second.end());
        continue;
      }
      const std::int32_t d = dist[sw.id()];
      if (d <= 0) continue;
      for (std::size_t i = 0; i < sw.port_count(); ++i)
        if (dist[sw.port(i).peer()->owner().id()] == d - 1) ports[s].push_back(static_cast<std::uint16_t>(i));
    }
  }
  for (std::size_t s = 0; s < switches_.size(); ++s) {
    begin[s].push_back(static_cast<std::uint32_t>(ports[s].size()));
    switches_[s]->set_routes(begin[s], ports[s]);
  }
}

void Network::prepare() {
  if (ran_) throw std::logic_error("Network::run may be called once");
  if (prepared_) return;
  prepared_ = true;
  for (auto& h : hosts_)
    if (h->port_count() != 1)
      throw InputError("host " + h->name() + " has " + std::to_string(h->port_count()) + " links (expected 1)");
  if (n_parts_ > 1) partition();
  for (auto& s : switches_) s->finalize();
  for (auto& h : hosts_) h->finalize();
  build_routes();
  dependents_.assign(flows_.size(), {});
  waiting_.assign(flows_.size(), 0);
  send_qps_.assign(flows_.size(), {});
  for (std::uint32_t id = 0; id < flows_.size(); ++id) {
    const FlowSpec& f = flows_[id].spec;
    for (std::uint32_t d : f.after) dependents_[d].push_back(id);
    waiting_[id] = static_cast<std::uint32_t>(f.after.size());
    const Time start = f.after.empty() ? f.start : Time::max();
    if (f.after.empty()) flows_[id].started = f.start;
    // The flow's bytes split over its QPs as evenly as possible, one message each.
    for (std::uint32_t q = 0; q < f.qps; ++q) {
      const std::uint64_t share = f.bytes / f.qps + (q < f.bytes % f.qps ? 1 : 0);
      if (share == 0) {  // more QPs than bytes: the spare QPs count as done
        ++flows_[id].qps_done;
        continue;
      }
      const std::uint32_t rq = hosts_[f.dst]->add_recv_qp(id, share);
      send_qps_[id].emplace_back(f.src, hosts_[f.src]->add_send_qp(id, f.dst, rq, share, f.priority, start));
    }
  }
  ctx_.flow_events = this;
  ctx_.flows_left = flows_.size();
  if (n_parts_ > 1) {
    for (auto& part : parts_) part->ctx.stop_at_last_flow = false;  // no `after`: no flow events
    for (const auto& f : flows_) ++parts_[part_of_[hosts_[f.spec.dst]->id()]]->ctx.flows_left;  // counted at the receiver
  }
  for (auto& s : switches_) s->start();
  monitor_.net = this;
  if (deadlock_interval_ > Time() && !switches_.empty() && n_parts_ == 1)
    sim_.schedule_in(deadlock_interval_, monitor_, 0);  // partitioned: at the ends of windows
}

void Network::flow_finished(std::uint32_t flow) {
  const Time now = sim_.now();
  for (std::uint32_t d : dependents_[flow]) {
    if (--waiting_[d] > 0) continue;
    const FlowSpec& f = flows_[d].spec;
    const Time at = std::max(now + f.after_delay, f.start);
    flows_[d].started = at;
    for (const auto& [h, q] : send_qps_[d]) hosts_[h]->start_send_qp(q, at);
  }
}

RunTotals Network::run(Time stop) {
  if (n_parts_ > 1) return run_partitioned(stop, stop, {});
  prepare();
  sim_.run(stop);
  return finish();
}

void Network::set_partitions(std::uint32_t partitions, std::uint32_t threads) {
  if (prepared_) throw std::logic_error("Network::set_partitions after the run was prepared");
  if (partitions < 1 || partitions > 64) throw InputError("partitions: expected 1..64, got " + std::to_string(partitions));
  if (threads < 1 || threads > partitions)
    throw InputError("threads: expected 1.." + std::to_string(partitions) + " (one per partition at most), got " +
                     std::to_string(threads));
  n_parts_ = partitions;
  n_threads_ = threads;
}

void Network::partition() {
  const std::string why = "a partitioned run (" + std::to_string(n_parts_) + " partitions) ";
  for (std::uint32_t id = 0; id < flows_.size(); ++id)
    if (!flows_[id].spec.after.empty())
      throw InputError(why + "cannot start a flow when another finishes: flow " + std::to_string(id) +
                       " waits for others (after)");
  if (!boxes_.empty() || !reseqs_.empty())
    throw InputError(why + "does not support reorder boxes or re-sequencers on links");
  for (Node* n : nodes_)
    for (std::size_t i = 0; i < n->port_count(); ++i)
      if (n->port(i).tap())
        throw InputError(why + "cannot capture or observe frames at a port (" + n->name() + " port " +
                         std::to_string(i) + ")");
  if (hosts_.size() < n_parts_)
    throw InputError(why + "needs a host per partition at least (" + std::to_string(hosts_.size()) + " hosts)");

  // Hosts by index; switches level by level away from the hosts, each to the part most
  // of its nearer neighbours are in, those without a majority spread evenly in id order.
  const std::size_t n = nodes_.size();
  constexpr std::uint32_t kNone = ~0u;
  part_of_.assign(n, kNone);
  std::vector<std::int32_t> level(n, -1);
  std::vector<std::uint32_t> frontier, next;
  for (std::uint32_t h = 0; h < hosts_.size(); ++h) {
    part_of_[h] = static_cast<std::uint32_t>(std::uint64_t{h} * n_parts_ / hosts_.size());
    level[h] = 0;
    frontier.push_back(h);
  }
  std::vector<std::uint32_t> votes(n_parts_), tied;
  for (std::int32_t l = 1; !frontier.empty(); ++l) {
    next.clear();
    for (std::uint32_t u : frontier)
      for (std::size_t i = 0; i < nodes_[u]->port_count(); ++i) {
        const std::uint32_t v = nodes_[u]->port(i).peer()->owner().id();
        if (level[v] < 0) {
          level[v] = l;
          next.push_back(v);
        }
      }
    std::sort(next.begin(), next.end());
    tied.clear();
    for (std::uint32_t v : next) {
      std::fill(votes.begin(), votes.end(), 0u);
      for (std::size_t i = 0; i < nodes_[v]->port_count(); ++i) {
        const std::uint32_t w = nodes_[v]->port(i).peer()->owner().id();
        if (level[w] >= 0 && level[w] < l) ++votes[part_of_[w]];
      }
      const auto best = std::max_element(votes.begin(), votes.end());
      if (std::count(votes.begin(), votes.end(), *best) == 1) part_of_[v] = static_cast<std::uint32_t>(best - votes.begin());
      else tied.push_back(v);
    }
    for (std::size_t i = 0; i < tied.size(); ++i)
      part_of_[tied[i]] = static_cast<std::uint32_t>(i * n_parts_ / tied.size());
    frontier.swap(next);
  }
  for (auto& p : part_of_)
    if (p == kNone) p = 0;  // not connected to any host

  parts_.clear();
  for (std::uint32_t q = 0; q < n_parts_; ++q) {
    parts_.push_back(std::make_unique<Part>());
    parts_.back()->out.resize(n_parts_);
  }
  auto bind = [&](Node& node, auto& concrete) {
    FabricContext& c = parts_[part_of_[node.id()]]->ctx;
    concrete.bind(c);
    for (std::size_t i = 0; i < node.port_count(); ++i) {
      Port& port = node.port(i);
      port.bind(c);
      const std::uint32_t there = part_of_[port.peer()->owner().id()];
      if (there == part_of_[node.id()]) continue;
      if (port.delay() <= Time())
        throw InputError(why + "needs a delay on every link between partitions: " + node.name() + "-" +
                         port.peer()->owner().name() + " has none");
      window_ = std::min(window_, port.delay());
      port.set_cut(&parts_[part_of_[node.id()]]->out[there]);
    }
  };
  for (auto& h : hosts_) bind(*h, *h);
  for (auto& sw : switches_) bind(*sw, *sw);
}

void Network::hand_over(std::uint32_t to, int window) {
  for (auto& from : parts_) {
    auto& frames = from->out[to].window[window].frames;
    for (const Crossing& c : frames) c.to->accept_crossing(c.at, c.packet);
    frames.clear();
  }
}

RunTotals Network::run_partitioned(Time stop, Time slice, const std::function<void(Time)>& progress) {
  prepare();
  const std::uint32_t parts = n_parts_, threads = n_threads_;
  SpinBarrier sync(threads, threads <= std::thread::hardware_concurrency());
  const bool look = deadlock_interval_ > Time() && !switches_.empty();
  // Windows on a fixed grid of `grid` from the start (whatever the checks), so that the
  // order of ties, which the hand-overs set, does not depend on what is observed.
  const Time grid = window_ != Time::max() ? window_ : look ? deadlock_interval_ : Time::max();
  // Every thread runs the same loop on its parts (t, t + threads, ...): run the window,
  // sending into this window's outboxes; publish what the decision needs in this
  // window's slot; meet; when a deadlock check or a progress report is due, thread 0
  // makes it at the window's end and the threads meet again, so nothing runs meanwhile;
  // take the frames sent to its parts; and decide, as every thread does, from the
  // published slots, whether to go on. Outboxes and slots alternate by window, so a
  // thread may run the next window while a slower one still reads the last. An exception
  // (in a part, the check or `progress`) is kept and ends the run after the next window
  // at the latest; every thread still meets the others until then, so none waits for ever.
  auto loop = [&](std::uint32_t t) {
    Time from = sim_.now();
    Time next_progress = from + slice;
    Time next_check = look ? from + deadlock_interval_ : Time::max();
    for (int w = 0;; w ^= 1) {
      const Time until = grid == Time::max() || stop - from < grid ? stop : from + grid - Time::from_ps(1);
      const Time boundary = until + Time::from_ps(1);  // every event before it has run
      for (std::uint32_t q = t; q < parts; q += threads) {
        Part& part = *parts_[q];
        for (Outbox& o : part.out) o.current = &o.window[w].frames;
        if (!part.error) {
          try {
            part.sim.run(until);
          } catch (...) {
            part.error = std::current_exception();
          }
        }
        Seen& seen = part.seen[w];
        seen = {part.ctx.flows_left, part.sim.pending(), part.sim.events(), 0, part.error != nullptr};
        for (const Outbox& o : part.out) seen.sent += o.window[w].frames.size();
      }
      sync.arrive_and_wait();
      std::uint64_t left = 0, pending = 0, events = 0;
      bool failed = false;
      for (const auto& part : parts_) {
        const Seen& seen = part->seen[w];
        left += seen.flows_left;
        pending += seen.pending + seen.sent;
        events += seen.events;
        failed = failed || seen.failed;
      }
      const bool check = next_check <= boundary && until < stop;
      const bool report = progress && until >= next_progress;
      if (check || report) {
        if (t == 0) {
          try {
            if (check && !failed) look_for_deadlock(boundary);  // a part that threw may be half-way
            if (report) {
              window_events_ = events;
              progress(until);
            }
          } catch (...) {
            if (!parts_[0]->error) parts_[0]->error = std::current_exception();  // thread 0 runs part 0
          }
        }
        while (check && next_check <= boundary) next_check += deadlock_interval_;
        if (report) next_progress = until + slice;
        sync.arrive_and_wait();
      }
      for (std::uint32_t q = t; q < parts; q += threads) {
        Part& part = *parts_[q];
        try {
          hand_over(q, w);
        } catch (...) {
          if (!part.error) part.error = std::current_exception();  // published after the next window
        }
      }
      if (failed || left == 0 || pending == 0 || until >= stop || (deadlock_ && !deadlock_keep_running_)) return;
      from = boundary;
    }
  };
  running_ = true;
  {
    // The workers start together once all exist: if one cannot be created, those that
    // were are told to return before they meet at a barrier that would never open.
    std::atomic<int> go{0};  // 0 wait, 1 run, 2 give up
    std::vector<std::jthread> workers;
    try {
      for (std::uint32_t t = 1; t < threads; ++t)
        workers.emplace_back([&, t] {
          go.wait(0);
          if (go.load() == 1) loop(t);
        });
    } catch (...) {
      go = 2;
      go.notify_all();
      running_ = false;
      throw;
    }
    go = 1;
    go.notify_all();
    loop(0);
  }
  running_ = false;
  for (const auto& part : parts_)
    if (part->error) std::rethrow_exception(part->error);
  return finish();
}

std::uint64_t Network::events() const {
  if (n_parts_ == 1 || parts_.empty()) return sim_.events();
  if (running_) return window_events_;  // for `progress`, on the thread that calls it
  std::uint64_t e = 0;
  for (const auto& part : parts_) e += part->sim.events();
  return e;
}

std::uint64_t Network::fingerprint() const {
  if (n_parts_ == 1 || parts_.empty()) return sim_.fingerprint();
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& part : parts_) h = (h ^ part->sim.fingerprint()) * 0x100000001b3ull;
  return h;
}

std::size_t Network::packets_alive() const {
  std::size_t live = packets_.live();
  for (const auto& part : parts_) live += part->packets.live();
  return live;
}

void Network::detect_deadlocks(Time interval, Time persist, bool keep_running) {
  if (prepared_) throw std::logic_error("Network::detect_deadlocks after the run was prepared");
  deadlock_interval_ = interval;
  deadlock_persist_ = persist;
  deadlock_keep_running_ = keep_running;
}

void Network::check_deadlock() {
  look_for_deadlock(sim_.now());
  if (deadlock_ && !deadlock_keep_running_) {
    sim_.stop();
    return;
  }
  sim_.schedule_in(deadlock_interval_, monitor_, 0);
}

void Network::look_for_deadlock(Time now) {
  if (deadlock_) return;  // one report; a watchdog that may break it keeps the run going
  // Candidates: egress queues holding packets, paused without a break for `persist`.
  struct Q {
    Switch* sw;
    std::uint16_t port;
    std::uint8_t prio;
    auto operator<=>(const Q&) const = default;
  };
  std::map<Q, std::size_t> index;
  std::vector<Q> nodes;
  for (auto& s : switches_)
    for (std::size_t p = 0; p < s->port_count(); ++p) {
      const Port& port = s->port(p);
      for (std::uint8_t c = 0; c < 8; ++c)
        if (!s->queue(p, c).empty() && port.paused(c) && now - port.paused_since(c) >= deadlock_persist_) {
          const Q q{s.get(), static_cast<std::uint16_t>(p), c};
          index.emplace(q, nodes.size());
          nodes.push_back(q);
        }
    }
  if (!nodes.empty()) {
    // u -> v: queue u is paused because the switch of v holds, in v, packets that came
    // in over u's link.
    std::vector<std::vector<std::size_t>> out(nodes.size());
    for (std::size_t v = 0; v < nodes.size(); ++v) {
      const Q& q = nodes[v];
      std::set<std::uint16_t> ingress;
      for (const Packet* p = q.sw->queue(q.port, q.prio).front(); p; p = p->next) ingress.insert(p->ingress);
      for (std::uint16_t in : ingress) {
        const Port* up = q.sw->port(in).peer();
        auto* usw = dynamic_cast<Switch*>(&const_cast<Port*>(up)->owner());
        if (!usw) continue;
        auto it = index.find({usw, up->index(), q.prio});
        if (it != index.end()) out[it->second].push_back(v);
      }
    }
    // A cycle by depth-first search (colors: 0 new, 1 on the stack, 2 done).
    std::vector<int> color(nodes.size(), 0);
    std::vector<std::size_t> stack, parent(nodes.size(), 0);
    for (std::size_t start = 0; start < nodes.size() && !deadlock_; ++start) {
      if (color[start]) continue;
      std::vector<std::pair<std::size_t, std::size_t>> dfs = {{start, 0}};
      color[start] = 1;
      while (!dfs.empty() && !deadlock_) {
        auto& [u, next] = dfs.back();
        if (next == out[u].size()) {
          color[u] = 2;
          dfs.pop_back();
          continue;
        }
        const std::size_t v = out[u][next++];
        if (color[v] == 0) {
          color[v] = 1;
          parent[v] = u;
          dfs.push_back({v, 0});
        } else if (color[v] == 1) {
          DeadlockReport r;
          r.detected_at = now;
          std::vector<std::size_t> cyc;
          for (std::size_t w = u; w != v; w = parent[w]) cyc.push_back(w);
          cyc.push_back(v);
          std::reverse(cyc.begin(), cyc.end());
          for (std::size_t w : cyc)
            r.cycle.push_back(fmt::format("{} port {} priority {}", nodes[w].sw->name(), nodes[w].port, nodes[w].prio));
          deadlock_ = std::move(r);
        }
      }
    }
  }
}

RunTotals Network::finish() {
  ran_ = true;
  RunTotals t;
  t.end = sim_.now();
  t.events = events();
  t.peak_packets = packets_.peak();
  if (!parts_.empty()) {
    // Frames still crossing between parts are on their links; the clock ends at the
    // latest part's, as an undivided run's ends at `stop` or its last event.
    for (std::uint32_t q = 0; q < parts_.size(); ++q)
      for (int w : {0, 1}) hand_over(q, w);
    t.peak_packets = 0;
    for (const auto& part : parts_) {
      t.end = std::max(t.end, part->sim.now());
      t.peak_packets += part->packets.peak();
      ledger_ += part->ledger;
    }
  }
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
  for (const auto& f : flows_) t.flows_finished += f.finished();
  t.all_finished = t.flows_finished == flows_.size();
  t.deadlock = deadlock_.has_value();

  const Ledger& l = ledger_;
  if (l.data_bytes_sent + l.data_bytes_duplicated !=
          l.data_bytes_arrived + l.data_bytes_dropped + t.in_flight_data_bytes ||
      l.data_packets_sent + l.data_packets_duplicated !=
          l.data_packets_arrived + l.data_packets_dropped + t.in_flight_data_packets)
    throw std::logic_error(
        "conservation violated: data sent " + std::to_string(l.data_packets_sent) + " packets / " +
        std::to_string(l.data_bytes_sent) + " B, duplicated on links " + std::to_string(l.data_packets_duplicated) +
        " / " + std::to_string(l.data_bytes_duplicated) + ", arrived " + std::to_string(l.data_packets_arrived) + " / " +
        std::to_string(l.data_bytes_arrived) + ", dropped " + std::to_string(l.data_packets_dropped) + " / " +
        std::to_string(l.data_bytes_dropped) + ", in flight " + std::to_string(t.in_flight_data_packets) + " / " +
        std::to_string(t.in_flight_data_bytes));
  if (found != packets_alive())
    throw std::logic_error("packet leak: " + std::to_string(packets_alive()) + " packets alive, " +
                           std::to_string(found) + " in queues and on links");
  for (Node* n : nodes_)
    for (std::size_t i = 0; i < n->port_count(); ++i) n->port(i).drain();
  for (auto& h : hosts_) h->drain();
  release_switch_queues();
  for (auto& b : boxes_) b->drain();
  for (auto& r : reseqs_) r->drain();
  packets_.check_no_leaks();
  for (const auto& part : parts_) part->packets.check_no_leaks();
  return t;
}

}  // namespace fabriclab::fabric
