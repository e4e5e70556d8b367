#include "fabric/switch.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.h"
#include "fabric/port.h"

namespace fabriclab::fabric {

namespace {
// DWRR credit per round for weight 1: a jumbo frame, so a class always gets at least
// one packet out per visit.
constexpr std::int64_t kDwrrQuantum = 9216;

std::uint32_t mix_seed(std::uint32_t seed, std::uint32_t index) {
  std::uint64_t x = (static_cast<std::uint64_t>(seed) << 32 | index) * 0x9e3779b97f4a7c15ull;
  return static_cast<std::uint32_t>(x >> 32);
}
}  // namespace

Switch::Switch(FabricContext& ctx, std::string name, std::uint32_t switch_index, const SwitchConfig& cfg,
               std::uint64_t run_seed)
    : Node(std::move(name)),
      ctx_(&ctx),
      seed_(cfg.seed_per_switch ? mix_seed(cfg.seed, switch_index) : cfg.seed),
      seed_hash_(flow_hash_seed(cfg.hash, seed_)),
      seed_mix_(0x9e3779b97f4a7c15ull * (static_cast<std::uint64_t>(seed_) * 2 + 1)),
      alpha_(std::ldexp(1.0, cfg.dynamic_th)),
      path_{.reserve = cfg.reserve.count(),
            .static_th = cfg.static_th.count(),
            .xon_offset = cfg.pfc.xon_offset.count(),
            .wred = cfg.wred,
            .lossless = cfg.pfc.active(),
            .strict = cfg.scheduler == Scheduler::strict ? std::uint8_t{0xff} : cfg.strict_classes,
            .threshold_mode = cfg.threshold_mode,
            .scheduler = cfg.scheduler,
            .load_balance = cfg.load_balance,
            .wd_action = cfg.wd_action,
            .ecn = cfg.ecn,
            .mark_at_enqueue = cfg.mark_at_enqueue,
            .mark_by_port = cfg.mark_by_port,
            .reserve_per_port = cfg.reserve_per_port,
            .release_at_start = cfg.release_at_start,
            .wred_by_rate = !cfg.wred_by_rate.empty(),
            .th_by_rate = !cfg.dynamic_th_by_rate.empty(),
            .trim = cfg.trim_threshold.count() > 0,
            .int_mode = ctx.wire.int_bytes == 0      ? IntMode::none
                        : ctx.wire.pint_log_base > 0 ? IntMode::pint
                                                     : IntMode::stack},
      rng_(run_seed, "switch/" + this->name()),
      cfg_(cfg),
      pint_rng_(run_seed, "switch-pint/" + this->name()) {
  if (path_.int_mode == IntMode::pint) pint_code_.emplace(ctx.wire.pint_log_base);
}

void check_switch_config(const SwitchConfig& cfg) {
  if ((cfg.load_balance == LoadBalance::adaptive || cfg.load_balance == LoadBalance::flowlet) &&
      !std::has_single_bit(cfg.flow_table))
    throw InputError(fmt::format("switch.flowlet.table = {}: expected a power of two", cfg.flow_table));
  if (cfg.trim_threshold.count() > 0 && cfg.trim_priority > 7)
    throw InputError(fmt::format("switch.trim.priority = {}: expected a priority 0..7", cfg.trim_priority));
  if (cfg.trim_threshold.count() > 0 && cfg.scheduler == Scheduler::dwrr &&
      !((cfg.strict_classes >> cfg.trim_priority) & 1))
    throw InputError(fmt::format(
        "switch.trim.priority = {}: expected a priority the DWRR scheduler serves strictly (switch.dwrr.strict), "
        "since trimmed headers go before the data they stand for",
        cfg.trim_priority));
}

void Switch::finalize() {
  check_switch_config(cfg_);
  ports_.assign(port_count(), SwitchPort{});
  if (cfg_.load_balance == LoadBalance::adaptive || cfg_.load_balance == LoadBalance::flowlet) {
    flows_.assign(cfg_.flow_table, FlowEntry{});
    rerouted_.assign(port_count(), 0);
  }
  if (path_.int_mode == IntMode::pint) pint_ports_.assign(port_count(), PintPort{});
  for (std::size_t c = 0; c < 8; ++c)
    if (cfg_.weights[c] == 0)
      throw InputError("switch " + name() + ": DWRR weight of priority " + std::to_string(c) + " is 0");
  for (std::size_t i = 0; i < port_count(); ++i) {
    port(i).set_pause_until_xon(cfg_.pfc.pause_until_xon);
    port(i).set_notify_start(cfg_.release_at_start);
  }
  const int lossless = std::popcount(cfg_.pfc.active());
  for (std::size_t i = 0; i < port_count() && lossless > 0; ++i)
    check_pause_refresh(cfg_.pfc, cfg_.max_frame.count(), port(i).rate(), "switch " + name(), ctx_->wire);
  // Each port's entry of the lists by rate, if its rate has one.
  wreds_.assign(1, path_.wred);
  alphas_.assign(1, alpha_);
  for (const auto& w : cfg_.wred_by_rate) wreds_.push_back(w.wred);
  for (const auto& d : cfg_.dynamic_th_by_rate) alphas_.push_back(std::ldexp(1.0, d.dynamic_th));
  for (std::size_t i = 0; i < port_count(); ++i) {
    for (std::size_t k = 0; k < cfg_.wred_by_rate.size(); ++k)
      if (cfg_.wred_by_rate[k].rate == port(i).rate()) ports_[i].wred_class = static_cast<std::uint8_t>(k + 1);
    for (std::size_t k = 0; k < cfg_.dynamic_th_by_rate.size(); ++k)
      if (cfg_.dynamic_th_by_rate[k].rate == port(i).rate()) ports_[i].th_class = static_cast<std::uint8_t>(k + 1);
  }
  std::int64_t headroom_total = 0;
  for (std::size_t i = 0; i < port_count(); ++i) {
    const Port& p = port(i);
    const std::int64_t h = lossless > 0 ? headroom_bytes(cfg_.pfc, cfg_.max_frame.count(), p.rate(), p.delay()) : 0;
    ports_[i].headroom = h;
    headroom_total += h * lossless;
  }
  const std::int64_t reserves = static_cast<std::int64_t>(port_count()) * (cfg_.reserve_per_port ? 1 : 8) *
                                cfg_.reserve.count();
  shared_size_ = cfg_.buffer.count() - reserves - headroom_total;
  if (shared_size_ <= 0)
    throw InputError("switch " + name() + ": switch.buffer = " + to_string(cfg_.buffer) +
                     " does not hold the reserves (switch.mmu.reserve = " + to_string(cfg_.reserve) +
                     (cfg_.reserve_per_port ? " per port: " : " per port and priority group: ") +
                     to_string(Bytes::from_count(reserves)) + ") and the PFC headroom (" +
                     to_string(Bytes::from_count(headroom_total)) + ") of its " + std::to_string(port_count()) +
                     " ports");
}

void Switch::emit_counters(std::size_t port, PortCounters& c) const {
  const SwitchPort& sp = ports_[port];
  c.drops += sp.drops;
  c.ecn_marks += sp.ecn_marks;
  c.rerouted += rerouted(port);
  c.trimmed += sp.trimmed;
  c.max_queue_bytes = std::max({c.max_queue_bytes, sp.max_queued, sp.max_queued_before});
}

void Switch::start() {
  if (cfg_.watchdog && cfg_.pfc.active()) ctx_->sim.schedule_in(cfg_.wd_poll, *this, kWatchdogTag);
}

void Switch::drop_packet(SwitchPort& at, Packet* p, DropReason why, std::uint8_t lossless) {
  ++at.drops;
  drop(*ctx_, p, why, lossless);
}

void Switch::watchdog_poll() {
  const Time now = ctx_->sim.now();
  for (std::size_t i = 0; i < ports_.size(); ++i) {
    SwitchPort& sp = ports_[i];
    Port& port = this->port(i);
    for (std::uint8_t c = 0; c < 8; ++c) {
      if (!((cfg_.pfc.active() >> c) & 1)) continue;
      if (!sp.storm[c]) {
        // Detection needs an unbroken pause: since it began, or since the last storm on
        // this queue ended, whichever is later.
        const Time since = std::max(port.paused_since(c), sp.storm_ended[c]);
        if (sp.queue[c].empty() || !port.paused(c) || now - since < cfg_.wd_detection) continue;
        sp.storm[c] = true;
        ++sp.storms;
        if (cfg_.wd_action == WatchdogAction::drop) {
          sp.backlogged &= static_cast<std::uint8_t>(~(1u << c));
          while (!sp.queue[c].empty()) {
            Packet* p = sp.queue[c].pop();
            const std::int64_t size = p->frame_bytes();
            sp.queue_bytes[c] -= size;
            sp.queued -= size;
            release(p->ingress, p->priority, size);
            ++sp.wd_drops;
            drop_packet(sp, p, DropReason::watchdog);
          }
        } else if (cfg_.wd_action == WatchdogAction::forward) {
          port.kick();
        }
      } else if ((port.last_pause_received(c) == Time::max() ||
                  now - port.last_pause_received(c) >= cfg_.wd_restoration) &&
                 (cfg_.pfc.refresh || !port.paused(c))) {
        // (Without refreshes no frame comes while a pause holds: it ends with the pause.)
        sp.storm[c] = false;
        sp.storm_ended[c] = now;
      }
    }
  }
}

void Switch::set_routes(const std::uint32_t* edge_of_host, std::size_t hosts,
                        const std::vector<std::uint32_t>& group_of_edge, const HostGroups& own, const HostGroups& fixed,
                        const std::vector<std::uint32_t>& begin, const std::vector<std::uint16_t>& ports) {
  // Groups with the same ports share one copy.
  const std::size_t groups = begin.size() - 1;
  std::vector<Route> route(groups);
  route_ports_.clear();
  std::map<std::vector<std::uint16_t>, std::uint32_t> shared;
  for (std::size_t g = 0; g < groups; ++g) {
    std::vector<std::uint16_t> list(ports.begin() + begin[g], ports.begin() + begin[g + 1]);
    const auto [it, added] = shared.emplace(std::move(list), static_cast<std::uint32_t>(route_ports_.size()));
    if (added) route_ports_.insert(route_ports_.end(), it->first.begin(), it->first.end());
    route[g] = {it->second, static_cast<std::uint16_t>(begin[g + 1] - begin[g])};
  }
  edge_of_host_ = edge_of_host;
  hosts_ = hosts;
  by_edge_.clear();
  for (std::uint32_t g : group_of_edge) by_edge_.push_back(route[g]);
  own_.clear();
  far_.clear();
  own_lo_ = own.empty() ? 0 : own.front().first;
  for (const auto& [h, g] : own) {
    if (h < own_lo_ || h >= hosts || (h - own_lo_ < own_.size() && own_[h - own_lo_].own))
      throw std::logic_error("switch " + name() + ": own routes out of order");
    own_.resize(h - own_lo_ + 1);
    own_.back() = route[g];
    own_.back().own = true;
    by_edge_[edge_of_host[h]].own = true;
  }
  for (const auto& [h, g] : fixed) {
    if (h >= hosts || (!far_.empty() && far_.back().first >= h))
      throw std::logic_error("switch " + name() + ": static routes out of order");
    Route fixed_route = route[g];
    fixed_route.own = true;
    if (const std::uint32_t i = h - own_lo_; i < own_.size()) own_[i] = fixed_route;
    else far_.emplace_back(h, fixed_route);
    by_edge_[edge_of_host[h]].own = true;
  }
  spray_next_.assign(path_.load_balance == LoadBalance::spray_round_robin ? hosts : 0, 0);
}

std::int64_t Switch::shared_limit(const SwitchPort& sp) const {
  if (path_.threshold_mode == ThresholdMode::static_th) return path_.static_th;
  const double alpha = path_.th_by_rate ? alphas_[sp.th_class] : alpha_;
  return static_cast<std::int64_t>(alpha * static_cast<double>(shared_size_ - shared_used_));
}

bool Switch::admit(std::uint16_t in, std::uint8_t pg, std::int64_t size) {
  SwitchPort& sp = ports_[in];
  PgState& g = sp.pg[pg];
  // What is left of the reserve this packet may use: the PG's, or the port's.
  const std::int64_t room = path_.reserve_per_port
                                ? path_.reserve - sp.reserved
                                : std::max<std::int64_t>(0, path_.reserve - (g.used - g.headroom_used));
  const std::int64_t to_reserve = std::min(size, room);
  const auto take_reserve = [&] {
    if (!path_.reserve_per_port) return;
    g.reserved += to_reserve;
    sp.reserved += to_reserve;
  };
  if (to_reserve == size) {
    g.used += size;
    take_reserve();
    return true;
  }
  const std::int64_t before = shared_part(g);
  const std::int64_t after = before + size - to_reserve;
  if (!g.xoff && after <= shared_limit(sp) && shared_used_ + (after - before) <= shared_size_) {
    g.used += size;
    take_reserve();
    shared_used_ += after - before;
    return true;
  }
  if (!((path_.lossless >> pg) & 1)) return false;
  if (!g.xoff) {
    g.xoff = true;
    send_pause(in, pg, cfg_.pfc.pause_quanta);
  }
  if (g.headroom_used + size > sp.headroom) return false;
  g.used += size;
  g.headroom_used += size;
  return true;
}

void Switch::release(std::uint16_t in, std::uint8_t pg, std::int64_t size) {
  SwitchPort& sp = ports_[in];
  PgState& g = sp.pg[pg];
  const std::int64_t before = shared_part(g);
  const std::int64_t from_headroom = std::min(size, g.headroom_used);
  g.used -= size;
  g.headroom_used -= from_headroom;
  if (path_.reserve_per_port) {  // out of the shared pool first, then the port's reserve
    const std::int64_t from_reserve = std::max<std::int64_t>(0, size - from_headroom - before);
    g.reserved -= from_reserve;
    sp.reserved -= from_reserve;
  }
  if (g.used < 0 || g.reserved < 0) throw std::logic_error("switch " + name() + ": MMU accounting went negative");
  shared_used_ += shared_part(g) - before;
  if (g.xoff && g.headroom_used == 0 &&
      shared_part(g) <= std::max<std::int64_t>(0, shared_limit(sp) - path_.xon_offset)) {
    g.xoff = false;
    g.refresh_at = Time::max();
    send_pause(in, pg, 0);
  }
}

void Switch::send_pause(std::uint16_t in, std::uint8_t pg, std::uint16_t quanta) {
  Packet* f = ctx_->packets.acquire();
  f->opcode = Opcode::pfc;
  f->set_pause(pg, quanta);
  f->priority = 7;
  f->ingress = 0xffff;
  f->seal(ctx_->wire);
  Port& p = port(in);
  p.send_control(f);
  if (quanta > 0 && cfg_.pfc.refresh) {
    // Refresh at half the pause time, so the upstream never resumes while XOFF holds.
    PgState& g = ports_[in].pg[pg];
    const Time half = Time::from_ps(p.pause_quantum_time(quanta).ps() / 2);
    g.refresh_at = ctx_->sim.now() + half;
    ctx_->sim.schedule_at(g.refresh_at, *this, static_cast<std::uint64_t>(in) * 8 + pg);
  }
}

void Switch::on_event(std::uint64_t tag) {
  if (tag == kWatchdogTag) {
    watchdog_poll();
    ctx_->sim.schedule_in(cfg_.wd_poll, *this, kWatchdogTag);
    return;
  }
  const auto in = static_cast<std::uint16_t>(tag / 8);
  const auto pg = static_cast<std::uint8_t>(tag % 8);
  const PgState& g = ports_[in].pg[pg];
  if (g.xoff && g.refresh_at == ctx_->sim.now()) send_pause(in, pg, cfg_.pfc.pause_quanta);
}

std::uint16_t Switch::choose_egress(const Packet& p) {
  if (p.dst >= hosts_) throw std::logic_error("switch " + name() + ": no route table for host");
  const Route& r = route_to(p.dst);
  const std::uint32_t b = r.first, n = r.count;
  if (n == 0) throw std::logic_error("switch " + name() + ": no route to host " + std::to_string(p.dst));
  if (n == 1) return route_ports_[b];
  switch (path_.load_balance) {
    case LoadBalance::ecmp: return route_ports_[b + select(seed_hash_ ^ p.hash_key, n)];
    case LoadBalance::spray_round_robin: {
      std::uint32_t& k = spray_next_[p.dst];
      const std::uint16_t out = route_ports_[b + k];
      k = k + 1 == n ? 0 : k + 1;
      return out;
    }
    case LoadBalance::spray_random: return route_ports_[b + rng_.below(n)];
    case LoadBalance::adaptive:
    case LoadBalance::flowlet: return choose_adaptive(p, b, n);
  }
  return route_ports_[b];
}

std::uint32_t least_loaded(const std::int64_t* queued, std::uint32_t n, std::uint32_t hashed, std::int64_t bias) {
  std::uint32_t best = hashed;
  std::int64_t best_q = queued[hashed] - bias;
  for (std::uint32_t k = 1; k < n; ++k) {
    const std::uint32_t i = hashed + k < n ? hashed + k : hashed + k - n;
    if (queued[i] < best_q) {
      best = i;
      best_q = queued[i];
    }
  }
  return best;
}

std::uint16_t Switch::choose_adaptive(const Packet& p, std::uint32_t b, std::uint32_t n) {
  const Time now = ctx_->sim.now();
  const std::uint32_t h = seed_hash_ ^ p.hash_key;
  FlowEntry& e =
      flows_[static_cast<std::uint32_t>((std::uint64_t{h} * 0x9e3779b97f4a7c15ull) >> 32) & (cfg_.flow_table - 1)];
  const std::uint32_t key = p.hash_key | 1;  // (0 is "none")
  const bool known = e.key == key;
  // The flow's last port, if it is in this group (a flow has one destination; a key
  // another flow shares may not).
  std::int32_t last = -1;
  if (known)
    for (std::uint32_t i = 0; i < n; ++i)
      if (route_ports_[b + i] == e.port) last = static_cast<std::int32_t>(i);
  std::uint32_t chosen;
  if (path_.load_balance == LoadBalance::flowlet && last >= 0 && now - e.last <= cfg_.flowlet_timeout) {
    chosen = static_cast<std::uint32_t>(last);  // within the flowlet
  } else if (path_.load_balance == LoadBalance::flowlet && cfg_.flowlet_choice == FlowletChoice::random) {
    chosen = static_cast<std::uint32_t>(rng_.below(n));
  } else {
    if (queued_.size() < n) queued_.resize(n);  // (once per larger group: not per packet)
    for (std::uint32_t i = 0; i < n; ++i) queued_[i] = ports_[route_ports_[b + i]].queued;
    chosen = least_loaded(queued_.data(), n, select(h, n), cfg_.ar_bias.count());
  }
  const std::uint16_t out = route_ports_[b + chosen];
  if (last >= 0 && static_cast<std::uint32_t>(last) != chosen) ++rerouted_[out];
  e = {key, out, now};
  return out;
}

void Switch::maybe_mark(SwitchPort& sp, Packet& p, std::uint8_t prio) {
  if (!path_.ecn || p.ecn == kEcnNotEct || p.ecn == kEcnCe || !is_data(p.opcode)) return;
  const Wred& wred = path_.wred_by_rate ? wreds_[sp.wred_class] : path_.wred;
  const bool mark = wred.mark(path_.mark_by_port ? sp.queued : sp.queue_bytes[prio], rng_);
  if (mark) {
    p.ecn = kEcnCe;
    ++sp.ecn_marks;
  }
}

inline void Switch::enqueue(std::uint16_t in, std::uint16_t out, std::uint8_t q, Packet* p) {
  SwitchPort& ep = ports_[out];
  const std::int64_t size = p->frame_bytes();
  if (ep.storm[q] && path_.wd_action == WatchdogAction::drop) {  // the watchdog drops what a storm gets
    release(in, p->priority, size);
    ++ep.wd_drops;
    drop_packet(ep, p, DropReason::watchdog);
    return;
  }
  ep.queue[q].push(p);
  ep.backlogged |= static_cast<std::uint8_t>(1u << q);
  ep.queue_bytes[q] += size;
  ep.queued += size;
  ep.max_queued = std::max(ep.max_queued, ep.queued);
  if (path_.mark_at_enqueue) maybe_mark(ep, *p, q);
  this->port(out).kick();
}

void Switch::receive(Port& port, Packet* p) {
  const std::uint16_t in = port.index();
  if (path_.trim) [[unlikely]] {
    receive_trimming(in, p);
    return;
  }
  const std::int64_t size = p->frame_bytes();
  if (p->ttl <= 1) {  // a routing loop (static routes): IP drops it here
    drop_packet(ports_[in], p, DropReason::ttl);
    return;
  }
  --p->ttl;
  p->ingress = in;
  if (!admit(in, p->priority, size)) {
    drop_packet(ports_[in], p, DropReason::buffer_full, path_.lossless);
    return;
  }
  enqueue(in, choose_egress(*p), p->priority, p);
}

void Switch::trim(Packet& p, SwitchPort& at) {
  ctx_->ledger.data_bytes_trimmed += p.payload;
  ++ctx_->ledger.data_packets_trimmed;
  p.payload = 0;
  p.trimmed = true;
  p.seal(ctx_->wire);
  ++at.trimmed;
}

void Switch::receive_trimming(std::uint16_t in, Packet* p) {
  if (p->ttl <= 1) {
    drop_packet(ports_[in], p, DropReason::ttl);
    return;
  }
  --p->ttl;
  p->ingress = in;
  const std::uint16_t out = choose_egress(*p);
  SwitchPort& ep = ports_[out];
  const bool trimmable = is_data(p->opcode) && !p->trimmed;
  const std::int64_t size = p->frame_bytes();
  // htsim's rule (CompositeQueue): trimmed when its queue with the packet would exceed the
  // threshold; else whole, if the buffer takes it.
  const bool over = trimmable && ep.queue_bytes[p->priority] + size > cfg_.trim_threshold.count();
  if (!over && admit(in, p->priority, size)) {
    enqueue(in, out, p->trimmed ? cfg_.trim_priority : p->priority, p);
    return;
  }
  if (trimmable) {  // over the threshold, or refused whole: its headers, if they fit
    Packet header = *p;
    header.payload = 0;
    header.seal(ctx_->wire);
    if (admit(in, p->priority, header.frame_bytes())) {
      trim(*p, ep);
      enqueue(in, out, cfg_.trim_priority, p);
      return;
    }
  }
  drop_packet(ports_[in], p, DropReason::buffer_full, path_.lossless);
}

Packet* Switch::dequeue(SwitchPort& sp, Port& port) {
  Time wake = Time::max();
  auto take = [&](std::uint8_t c) {
    if (!path_.mark_at_enqueue) maybe_mark(sp, *sp.queue[c].front(), c);
    Packet* p = sp.queue[c].pop();
    // The next packet of this queue leaves after this one: start fetching it now (it has
    // waited long enough to be out of cache).
    if (!sp.queue[c].empty()) __builtin_prefetch(sp.queue[c].front());
    else sp.backlogged &= static_cast<std::uint8_t>(~(1u << c));
    const std::int64_t size = p->frame_bytes();
    sp.queue_bytes[c] -= size;
    sp.queued -= size;
    // INT: a data packet records this hop as it starts onto the link (the queue without it).
    if (path_.int_mode != IntMode::none) [[unlikely]] {
      if (path_.int_mode == IntMode::pint) pint_dequeue(*p, sp, port);
      else if (p->telemetry && is_data(p->opcode)) stamp_int(*p, sp, port);  // (an ACK carries an echo)
    }
    return p;
  };
  const std::uint8_t strict = path_.strict;
  // The strict classes with packets, highest first.
  for (unsigned m = sp.backlogged & strict; m != 0;) {
    const auto k = static_cast<std::uint8_t>(std::bit_width(m) - 1);
    m &= ~(1u << k);
    if (!port.paused(k) || forwarding(sp, k)) return take(k);
    wake = std::min(wake, port.paused_until(k));
  }
  if (path_.scheduler == Scheduler::dwrr) {
    for (int visits = 0; visits < 17; ++visits) {
      const std::uint8_t c = sp.rr;
      const bool paused = port.paused(c) && !forwarding(sp, c);
      const bool skip = ((strict >> c) & 1) || sp.queue[c].empty() || paused;
      if (skip) {
        if (sp.queue[c].empty()) sp.deficit[c] = 0;
        else if (paused) wake = std::min(wake, port.paused_until(c));
        sp.quantum_given[c] = false;
        sp.rr = static_cast<std::uint8_t>((c + 1) % 8);
        continue;
      }
      if (!sp.quantum_given[c]) {
        sp.deficit[c] += cfg_.weights[c] * kDwrrQuantum;
        sp.quantum_given[c] = true;
      }
      const std::int64_t size = sp.queue[c].front()->frame_bytes();
      if (size <= sp.deficit[c]) {
        sp.deficit[c] -= size;
        return take(c);
      }
      sp.quantum_given[c] = false;
      sp.rr = static_cast<std::uint8_t>((c + 1) % 8);
    }
  }
  if (wake != Time::max()) port.wake_at(wake);
  return nullptr;
}

Packet* Switch::next_packet(Port& port) { return dequeue(ports_[port.index()], port); }

void Switch::pint_dequeue(Packet& p, const SwitchPort& sp, const Port& port) {
  PintPort& s = pint_ports_[port.index()];
  const Time now = ctx_->sim.now();
  if (p.telemetry && is_data(p.opcode)) {
    const double b = static_cast<double>(port.rate().bps()) / 8e12;  // bytes per ps
    const double u = pint_estimate(s.u, static_cast<double>(sp.queued), static_cast<double>((now - s.last_at).ps()),
                                   s.last_bytes, b, pint_t_ps_);
    IntStack& st = ctx_->telemetry.at(p.telemetry);
    st.pint = std::max(st.pint, pint_code_->encode(u, pint_rng_));
    s.u = u;
  }
  s.last_bytes = static_cast<double>(p.frame_bytes() + ctx_->wire.gap_bytes);
  s.last_at = now;
}

void Switch::stamp_int(Packet& p, const SwitchPort& sp, const Port& port) {
  const IntHop hop{ctx_->sim.now(), port.tx_bytes() + port.tx_packets() * ctx_->wire.gap_bytes,
                   static_cast<std::uint64_t>(sp.queued), port.rate()};
  if (ctx_->telemetry.push(p.telemetry, hop, ctx_->wire.int_max_hops)) return;
  const std::string why = fmt::format(
      "switch {}: a packet of flow {} (host {} to host {}) crosses more than wire.int_max_hops = {} switches: its "
      "INT header has no slot for this one (raise wire.int_max_hops, at most {})",
      name(), p.flow, p.src, p.dst, ctx_->wire.int_max_hops, kIntHopSlots);
  release_packet(*ctx_, &p);  // the run ends here: the packet goes back, not into a port
  throw InputError(why);
}

void Switch::transmitted(Port& /*port*/, const SentFrame& f) {
  if (!f.pfc && !path_.release_at_start) release(f.ingress, f.priority, f.frame_bytes);
}

void Switch::started(Port& /*port*/, const SentFrame& f) {
  if (!f.pfc && path_.release_at_start) release(f.ingress, f.priority, f.frame_bytes);
}

void Switch::queue_heads(std::vector<const Packet*>& heads) const {
  for (const auto& sp : ports_)
    for (const auto& q : sp.queue)
      if (!q.empty()) heads.push_back(q.front());
}

void Switch::take_queued(std::vector<Packet*>& lists) {
  for (auto& sp : ports_) {
    for (auto& q : sp.queue)
      if (!q.empty()) lists.push_back(q.take_all());
    sp.backlogged = 0;
  }
}

}  // namespace fabriclab::fabric
