#include "fabric/host.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.h"
#include "fabric/params.h"
#include "fabric/port.h"

namespace fabriclab::fabric {

namespace {
// RoCEv2 NICs derive the UDP source port from the QP; a mix of (host, QPN) spreads it
// over the dynamic range 49152..65535 the way a hash would.
std::uint16_t source_port(std::uint32_t host, std::uint32_t qpn) {
  std::uint64_t x = (static_cast<std::uint64_t>(host) << 32 | qpn) * 0x9e3779b97f4a7c15ull;
  x ^= x >> 31;
  return static_cast<std::uint16_t>(49152 + (x % 16384));
}
constexpr std::uint8_t kInitialTtl = Packet{}.ttl;

// An ACK under an endpoint policy carries, in fields an ACK has no other use for, the
// receiver's hold of the data it answers (`tag`, in ns, saturated) and the switches that
// data crossed (`message_bytes`).
void set_endpoint_echo(Packet& ack, Time hold, std::uint8_t hops) {
  ack.tag = static_cast<std::uint32_t>(std::min<std::int64_t>(hold.ps() / 1000, 0xffffffff));
  ack.message_bytes = hops;
}
// Bit i of a bitmap of 64-bit words (the receiver's placed packets, IRN's sender state).
bool test_bit(const std::vector<std::uint64_t>& b, std::uint32_t i) { return (b[i / 64] >> (i % 64)) & 1; }
void put_bit(std::vector<std::uint64_t>& b, std::uint32_t i, bool v) {
  const std::uint64_t m = 1ull << (i % 64);
  b[i / 64] = v ? b[i / 64] | m : b[i / 64] & ~m;
}
Time echoed_hold(const Packet& ack) { return Time::from_ps(std::int64_t{ack.tag} * 1000); }
std::uint8_t echoed_hops(const Packet& ack) { return static_cast<std::uint8_t>(ack.message_bytes); }
}  // namespace

std::uint32_t ack_every_of(const NicConfig& cfg) {
  if (cfg.ack_every > 0) return cfg.ack_every;
  if (cfg.transport == Transport::irn || cfg.transport == Transport::uet) return 1;
  return cc_policy(cfg.congestion_control).feedback & kFeedbackFromAcks ? 1 : 8;
}

void check_nic_config(const NicConfig& cfg) {
  if (cfg.mtu == 0) throw InputError("nic.mtu must be positive");
  const CcPolicy& policy = cc_policy(cfg.congestion_control);
  policy.check(cfg);
  if ((policy.feedback & kFeedbackFromAcks) && cfg.transport == Transport::uc)
    throw InputError("nic.congestion_control = " + cfg.congestion_control +
                     ": expected nic.transport = rc (it reads ACKs, which an unreliable connection does not send)");
  params::validate(cnp_table(), cfg.cnp);
  if (cfg.transport == Transport::uet && (policy.feedback & kFeedbackCnp) && cfg.congestion_control != "none")
    throw InputError("nic.congestion_control = " + cfg.congestion_control +
                     ": expected a policy that reads ACKs (nscc, dctcp, swift, ...) or none with nic.transport = uet "
                     "(UET sends no CNPs: its ACKs echo the CE marks)");
  if (cfg.transport == Transport::irn && cfg.irn.rto_low > cfg.irn.rto_high)
    throw InputError("nic.irn.rto_low = " + to_string(cfg.irn.rto_low) + ": expected at most nic.irn.rto_high (" +
                     to_string(cfg.irn.rto_high) + ")");
  if (cfg.transport == Transport::irn && (cfg.reorder_window > 0 || cfg.reorder_timeout > Time()))
    throw InputError(
        "nic.reorder_window / nic.reorder_timeout: expected neither with nic.transport = irn (its receiver places "
        "every packet within its bitmap, the BDP cap: nic.irn.bdp_cap)");
  if (cfg.transport == Transport::uet && (cfg.reorder_window > 0 || cfg.reorder_timeout > Time()))
    throw InputError(
        "nic.reorder_window / nic.reorder_timeout: expected neither with nic.transport = uet (its receiver places "
        "every packet within its bitmap: nic.uet.max_outstanding)");
  if (cfg.uet.rccc && cfg.transport != Transport::uet)
    throw InputError("nic.uet.rccc = true: expected nic.transport = uet (receiver credits are UET's)");
  if (cfg.transport == Transport::uet && !(cfg.ecmp_fields & kSrcPort))
    throw InputError("nic.ecmp_fields = " + hash_fields_text(cfg.ecmp_fields) +
                     ": expected src_port among them with nic.transport = uet (its entropy is the UDP source port)");
  if (!std::has_single_bit(cfg.uet.entropies) || cfg.uet.entropies > kMaxEntropies)
    throw InputError("nic.uet.entropies = " + std::to_string(cfg.uet.entropies) + ": expected a power of two, 1 to " +
                     std::to_string(kMaxEntropies));
  if (cfg.flow_end == FlowEnd::acked && cfg.transport == Transport::uc)
    throw InputError(
        "nic.flow_end = last_ack_received: expected nic.transport = rc (an unreliable connection's sender gets no "
        "ACKs)");
  if (cfg.cnp.enabled && cfg.cnp.form == CnpForm::becn && cfg.transport == Transport::uc)
    throw InputError(
        "nic.roce_np.cnp_form = becn (set by the key or by a preset such as ns3-mlx): expected nic.transport = rc "
        "(an unreliable connection sends no ACKs to carry the BECN bit)");
}

Host::Host(FabricContext& ctx, std::string name, std::uint32_t host_id, const NicConfig& cfg, const PfcConfig& pfc,
           FlowTable& flows)
    : Node(std::move(name)), ctx_(&ctx), host_id_(host_id), cfg_(cfg), pfc_(pfc), flows_(flows) {
  ring_head_.fill(kNone);
  cnp_interval_ = Time::from_ps(static_cast<std::int64_t>(cfg_.cnp.min_time_between_cnps) * 1'000'000);
  const std::uint8_t feedback = cc_policy(cfg_.congestion_control).feedback;
  // (UET has no CNPs: its ACKs always echo CE marks, for the entropies if not the policy.)
  cnps_on_ = cfg_.cnp.enabled && (feedback & kFeedbackCnp) && cfg_.transport != Transport::uet;
  echo_ecn_ = (feedback & kFeedbackEcnEcho) || cfg_.transport == Transport::uet;
  rtt_samples_ = feedback & kFeedbackRtt;
  windowed_ = feedback & kFeedbackWindow;
  reads_acks_ = feedback & kFeedbackFromAcks;
  echo_endpoint_ = feedback & kFeedbackEndpoint;
  collects_int_ = feedback & kFeedbackInt;
  ack_every_ = ack_every_of(cfg_);
  sr_ = cfg_.transport == Transport::irn || cfg_.transport == Transport::uet;
  uet_ = cfg_.transport == Transport::uet;
  rccc_ = uet_ && cfg_.uet.rccc;
  pull_unit_ = cfg_.uet.pull_bytes > 0 ? cfg_.uet.pull_bytes : 4 * cfg_.mtu;
  recv_window_ = cfg_.reorder_window;
  if (uet_) {
    ev_mask_ = cfg_.uet.entropies - 1;
    ev_delta_.resize(cfg_.uet.entropies);
    const std::uint32_t zero = flow_hash_key(cfg_.ecmp_hash, 0, 0, 0, cfg_.ecmp_fields);
    for (std::uint32_t ev = 0; ev < cfg_.uet.entropies; ++ev)
      ev_delta_[ev] = flow_hash_key(cfg_.ecmp_hash, 0, 0, static_cast<std::uint16_t>(ev), cfg_.ecmp_fields) ^ zero;
  }
}

std::uint32_t irn_bdp_cap(const IrnParams& p, std::uint32_t mtu, BitRate rate, Time rtt) {
  std::uint64_t cap = p.bdp_cap;
  if (cap == 0) {
    const double bdp = static_cast<double>(rate.bps()) * static_cast<double>(rtt.ps()) / 8e12;
    cap = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(bdp / mtu)));
    if (cap > kMaxIrnCap)
      throw InputError("nic.irn.bdp_cap = 0: the BDP (" + to_string(rtt) + " at " + to_string(rate) + ") is " +
                       std::to_string(cap) + " packets, above " + std::to_string(kMaxIrnCap) +
                       " (set nic.irn.bdp_cap, or a larger nic.mtu)");
  }
  if (p.reorder_tolerance >= cap)
    throw InputError("nic.irn.reorder_tolerance = " + std::to_string(p.reorder_tolerance) +
                     ": expected below the BDP cap (" + std::to_string(cap) +
                     " packets), beyond which no SACK can ever show a hole lost");
  return static_cast<std::uint32_t>(cap);
}

std::uint32_t selective_repeat_cap(const NicConfig& nic, BitRate rate, Time rtt) {
  if (nic.transport == Transport::irn) return irn_bdp_cap(nic.irn, nic.mtu, rate, rtt);
  if (nic.transport != Transport::uet) return 0;
  std::uint64_t cap = nic.uet.max_outstanding;
  const auto bdp = static_cast<double>(bytes_in(rate, rtt).count());
  if (cap == 0) {
    cap = std::max<std::uint64_t>(64, 8 * static_cast<std::uint64_t>(std::ceil(bdp / nic.mtu)));
    if (cap > kMaxIrnCap)
      throw InputError("nic.uet.max_outstanding = 0: 8 BDPs (" + to_string(rtt) + " at " + to_string(rate) + ") are " +
                       std::to_string(cap) + " packets, above " + std::to_string(kMaxIrnCap) +
                       " (set nic.uet.max_outstanding, or a larger nic.mtu)");
  }
  if (nic.uet.rccc) {
    // A pull target travels modulo 256 pull units and is unwrapped against the credit
    // granted: it may run ahead of it by the most a sender holds (speculative_bdp BDPs)
    // and behind it by a round trip of pulls (a BDP).
    const auto fits = [&](double unit) {
      return std::ceil((nic.uet.speculative_bdp * bdp + nic.mtu) / unit) + std::ceil(bdp / unit) + 1 <= 127;
    };
    const double unit = nic.uet.pull_bytes > 0 ? nic.uet.pull_bytes : 4.0 * nic.mtu;
    if (!fits(unit)) {
      auto least = static_cast<std::int64_t>(((nic.uet.speculative_bdp + 1) * bdp + nic.mtu) / 127);
      while (!fits(static_cast<double>(least))) ++least;
      throw InputError("nic.uet.pull_bytes = " + to_string(Bytes::from_count(static_cast<std::int64_t>(unit))) +
                       ": expected at least " + std::to_string(least) +
                       " bytes (a pull target travels modulo 256 pulls, and " +
                       fmt::format("{}", nic.uet.speculative_bdp) + " + 1 BDPs of " + to_string(rtt) + " at " +
                       to_string(rate) + " must fit in half of them)");
    }
  }
  return static_cast<std::uint32_t>(cap);
}

Time uet_rto(const UetParams& p, Time base_rtt, bool trimming) {
  return p.rto > Time() ? p.rto : Time::from_ps(15'000'000 + (trimming ? 6 : 30) * base_rtt.ps());
}

void Host::set_base_rtt(Time t, std::uint32_t sr_cap, Time uet_rto) {
  base_rtt_ = t;
  if (!sr_) return;
  if (sr_cap == 0) throw std::logic_error("host " + name() + ": selective repeat without its cap");
  sr_cap_ = sr_cap;
  uet_rto_ = uet_rto;
  if (uet_ && uet_rto_ <= Time()) throw std::logic_error("host " + name() + ": UET without its timeout");
  if (rccc_) {
    const BitRate line = port(0).rate();
    spec_credit_ = static_cast<std::int64_t>(cfg_.uet.speculative_bdp * static_cast<double>(bytes_in(line, t).count()));
    pull_lead_ = (spec_credit_ + cfg_.mtu + pull_unit_ - 1) / pull_unit_;
    // The pacer grants pull_unit_ of payload per period: its share of full frames' wire
    // bytes, at pull_share of the line rate.
    const std::uint64_t frame = max_frame_bytes(cfg_.mtu, ctx_->wire) + ctx_->wire.gap_bytes;
    const auto wire = Bytes::from_count(static_cast<std::int64_t>((pull_unit_ * frame + cfg_.mtu - 1) / cfg_.mtu));
    pull_period_ = serialization_time(
        wire, BitRate::from_bps(static_cast<std::int64_t>(static_cast<double>(line.bps()) * cfg_.uet.pull_share)),
        ctx_->wire.rounding);
  }
  sr_bits_ = std::bit_ceil(std::max<std::uint32_t>(sr_cap_, 64));
  recv_window_ = sr_cap_ - 1;
}

void Host::finalize() {
  for (std::size_t i = 0; i < port_count(); ++i) port(i).set_pause_until_xon(pfc_.pause_until_xon);
  if (cfg_.rx_rate.bps() <= 0) return;
  if (port_count() != 1) throw std::logic_error("host " + name() + " must have exactly one port");
  const Port& p = port(0);
  // The switches' rule: what is in flight after the NIC decides to pause.
  const std::int64_t headroom = headroom_bytes(pfc_, max_frame_bytes(cfg_.mtu, ctx_->wire), p.rate(), p.delay());
  xoff_at_ = cfg_.rx_buffer.count() - headroom;
  if (pfc_.active())
    check_pause_refresh(pfc_, max_frame_bytes(cfg_.mtu, ctx_->wire), p.rate(), "host " + name(), ctx_->wire);
  if (pfc_.active() && xoff_at_ <= 0)
    throw InputError("host " + name() + ": nic.rx_buffer = " + to_string(cfg_.rx_buffer) +
                     " is smaller than its PFC headroom (" + to_string(Bytes::from_count(headroom)) + ")");
}

std::uint32_t Host::add_recv_qp(std::uint32_t flow, std::uint64_t bytes) {
  RecvQp r;
  r.flow = flow;
  r.bytes = bytes;
  r.npkts = static_cast<std::uint32_t>((bytes + cfg_.mtu - 1) / cfg_.mtu);
  if (!free_recv_.empty()) {  // a freed number: its bitmap, cleared (placed_count was 0)
    const std::uint32_t q = free_recv_.back();
    free_recv_.pop_back();
    r.placed = std::move(recv_[q].placed);
    std::fill(r.placed.begin(), r.placed.end(), 0);
    r.gen = (recv_[q].gen + 1) & kGenMask;
    recv_[q] = std::move(r);
    return q;
  }
  if (recv_window_ > 0) r.placed.assign(recv_window_ / 64 + 1, 0);
  recv_.push_back(std::move(r));
  return static_cast<std::uint32_t>(recv_.size() - 1);
}

std::uint32_t Host::add_send_qp(std::uint32_t flow, std::uint32_t dst, std::uint32_t dst_qpn, std::uint64_t bytes,
                                std::uint8_t priority, Time start) {
  if (port_count() != 1) throw std::logic_error("host " + name() + " must have exactly one port");
  const std::uint64_t npkts = (bytes + cfg_.mtu - 1) / cfg_.mtu;
  if (npkts == 0 || npkts > kPsnMask)
    throw InputError("flow " + std::to_string(flow) + ": a QP's share must be 1 byte to 2^24 packets (use more QPs)");
  SendQp s;
  s.flow = flow;
  s.dst = dst;
  s.dst_qpn = dst_qpn;
  s.bytes = bytes;
  s.npkts = static_cast<std::uint32_t>(npkts);
  s.priority = priority;
  s.start = start;
  const std::uint32_t q = push_send_qp(std::move(s));
  if (start != Time::max()) start_send_qp(q, start);
  return q;
}

std::uint32_t Host::push_send_qp(SendQp s) {
  const bool reuse = !free_send_.empty();
  const auto q = reuse ? free_send_.back() : static_cast<std::uint32_t>(send_.size());
  // What names the QP (its source port, its random streams) is the order it was made in:
  // without recycling that is its number.
  const std::uint32_t serial = send_made_++;
  s.cc = make_congestion_control(cfg_.congestion_control,
                                 CcContext{ctx_->sim, port(0).rate(), base_rtt_, cfg_.mtu, this, q, tie_source(),
                                           max_frame_bytes(cfg_.mtu, ctx_->wire) + ctx_->wire.gap_bytes, ctx_->seed,
                                           serial},
                                 cfg_);
  // (UET: the entropy goes in the low bits, which the base leaves clear.)
  s.sport = static_cast<std::uint16_t>(source_port(host_id_, serial) & ~ev_mask_);
  s.hash_key = flow_hash_key(cfg_.ecmp_hash, host_ipv4(host_id_), host_ipv4(s.dst), s.sport, cfg_.ecmp_fields);
  if (reuse) {
    free_send_.pop_back();
    s.gen = (send_[q].gen + 1) & kGenMask;
    send_[q] = std::move(s);
  } else {
    send_.push_back(std::move(s));
  }
  if (sr_) {
    if (sr_bits_ == 0)
      throw std::logic_error("host " + name() + ": a selective-repeat QP before the network's base RTT");
    const std::vector<std::uint64_t> none(sr_bits_ / 64);
    SrSend x{.sacked = none, .resent = none, .trimmed = none};
    if (reuse) sr_send_[q] = std::move(x);
    else sr_send_.push_back(std::move(x));
    if (uet_) {
      UetSend u{.picker = EntropyPicker(cfg_.uet.entropy, cfg_.uet.entropies,
                                        RandomStream(ctx_->seed, "uet/entropy/" + std::to_string(host_id_) + "/" +
                                                                     std::to_string(serial)),
                                        sr_bits_),
                .ev_of = std::vector<std::uint16_t>(sr_bits_),
                .flying = none,
                .sent = std::vector<Time>(sr_bits_),
                .credit = rccc_ ? spec_credit_ : 0,
                .speculating = rccc_};
      if (reuse) uet_send_[q] = std::move(u);
      else uet_send_.push_back(std::move(u));
    }
  }
  return q;
}

bool Host::send_qp_finished(std::uint32_t qp) const {
  const SendQp& s = send_.at(qp);
  // (UC acknowledges nothing: a flow's QP is done once its last packet has left.)
  const std::uint32_t done = cfg_.transport == Transport::uc ? s.next_psn : s.una;
  return s.flow != kNone && s.conn == kNone && done >= s.npkts && !s.in_ring;
}

bool Host::recv_qp_finished(std::uint32_t qp) const {
  const RecvQp& r = recv_.at(qp);
  return r.flow != kNone && !r.conn && r.expected >= r.npkts && !r.in_pull;
}

void Host::free_send_qp(std::uint32_t qp) {
  SendQp& s = send_.at(qp);
  if (s.flow == kNone || s.conn != kNone)
    throw std::logic_error("host " + name() + ": send QP " + std::to_string(qp) + " is not a flow's to free");
  if (s.in_ring) throw std::logic_error("host " + name() + ": send QP " + std::to_string(qp) + " freed while sending");
  // A pending retransmission check finds timer_at moved and does nothing; the congestion
  // control's events run on, detached, until none is left (then it goes).
  const Time now = ctx_->sim.now();
  if (retired_.size() >= 2 * retired_kept_ + 16) {
    std::erase_if(retired_, [&](const auto& cc) { return !cc->has_pending_events(now); });
    retired_kept_ = retired_.size();
  }
  if (s.cc->has_pending_events(now)) {
    s.cc->retire();
    retired_.push_back(std::move(s.cc));
  }
  s.flow = kNone;
  s.cc.reset();
  s.timer_at = Time::max();
  s.sent_at = {};
  free_send_.push_back(qp);
}

void Host::free_recv_qp(std::uint32_t qp) {
  RecvQp& r = recv_.at(qp);
  if (r.flow == kNone || r.conn)
    throw std::logic_error("host " + name() + ": receiving QP " + std::to_string(qp) + " is not a flow's to free");
  if (r.in_pull)
    throw std::logic_error("host " + name() + ": receiving QP " + std::to_string(qp) + " freed while it awaits a pull");
  r.flow = kNone;
  r.gap_due = Time::max();  // (a give-up check still queued finds it so)
  free_recv_.push_back(qp);
}

bool Host::late(const Packet& p) const {
  const bool to_receiver = is_data(p.opcode) || (p.opcode == Opcode::rc_ack && p.syndrome == kAethRts);
  return (to_receiver ? recv_[p.dst_qp].flow : send_[p.dst_qp].flow) != p.flow;
}

void Host::start_send_qp(std::uint32_t qp, Time at) {
  send_.at(qp).start = at;
  ctx_->sim.schedule_at(at, *this, qp_tag(kStart, qp, send_[qp].gen));
}

std::uint32_t Host::open_recv_connection(std::uint32_t id) {
  RecvQp r;
  r.flow = kConnectionFlow | id;
  r.npkts = 0xffffffffu;  // open-ended: messages end at their last packets
  r.conn = true;
  if (recv_window_ > 0) r.placed.assign(recv_window_ / 64 + 1, 0);
  recv_.push_back(std::move(r));
  return static_cast<std::uint32_t>(recv_.size() - 1);
}

std::uint32_t Host::open_send_connection(std::uint32_t id, std::uint32_t dst, std::uint32_t dst_qpn,
                                         std::uint8_t priority, std::uint32_t messages_hint) {
  if (port_count() != 1) throw std::logic_error("host " + name() + " must have exactly one port");
  SendQp s;
  s.flow = kConnectionFlow | id;
  s.dst = dst;
  s.dst_qpn = dst_qpn;
  s.bytes = 0;
  s.npkts = 0;
  s.priority = priority;
  s.start = Time();
  s.conn = static_cast<std::uint32_t>(conns_.size());
  const std::uint32_t q = push_send_qp(std::move(s));
  SendConn c;
  c.ring.resize(std::bit_ceil(std::max<std::uint32_t>(messages_hint, 4)));
  conns_.push_back(std::move(c));
  return q;
}

void Host::post(std::uint32_t qp, std::uint64_t bytes, std::uint32_t tag) {
  SendQp& s = send_.at(qp);
  if (s.conn == kNone)
    throw std::logic_error("host " + name() + ": post on QP " + std::to_string(qp) + ", not a connection");
  SendConn& c = conns_[s.conn];
  const std::uint64_t npkts = std::max<std::uint64_t>(1, (bytes + cfg_.mtu - 1) / cfg_.mtu);
  if (std::uint64_t{s.npkts} + npkts >= (std::uint64_t{1} << 31))
    throw InputError("host " + name() + ": a connection to host " + std::to_string(s.dst) +
                     " would carry 2^31 packets or more (fewer iterations, or a larger nic.mtu)");
  if (c.count == c.ring.size()) {  // full: double, oldest first
    std::vector<Message> bigger(c.ring.size() * 2);
    for (std::size_t k = 0; k < c.count; ++k) bigger[k] = c.at(k);
    c.ring = std::move(bigger);
    c.head = 0;
  }
  c.ring[(c.head + c.count++) & (c.ring.size() - 1)] = Message{s.npkts, static_cast<std::uint32_t>(npkts), bytes,
                                                               s.bytes, tag};
  // RCCC: a sender without credit whose new message no packet of its own will announce
  // (nothing unsent before it) asks for it.
  const bool announced = s.next_psn < s.npkts;
  s.npkts += static_cast<std::uint32_t>(npkts);
  s.bytes += bytes;
  if (rccc_ && !announced && !uet_send_[qp].speculating && uet_send_[qp].credit <= 0) {
    send_rts(s, qp);
    // (the timer repeats it if it or its pull is lost)
    if (s.timer_at == Time::max()) arm_timer(s, qp, ctx_->sim.now() + rto_of(s));
  }
  if (!s.in_ring && has_work(s, qp)) {
    ring_insert(qp);
    port(0).kick();
  }
}

// The message that packet `psn` belongs to: the send cursor moves on as packets go, and
// back to the oldest message not yet completed after a go-back.
const Host::Message& Host::message_of(SendQp& s, std::uint32_t psn) {
  SendConn& c = conns_[s.conn];
  if (c.cursor >= c.count || psn < c.at(c.cursor).first_psn) c.cursor = 0;
  while (psn >= c.at(c.cursor).first_psn + c.at(c.cursor).npkts) ++c.cursor;
  return c.at(c.cursor);
}

// Messages wholly acknowledged (RC) are done, oldest first.
void Host::complete_messages(SendQp& s) {
  SendConn& c = conns_[s.conn];
  while (c.count > 0 && c.at(0).first_psn + c.at(0).npkts <= s.una) {
    const std::uint32_t tag = c.at(0).tag;
    c.completed_bytes += c.at(0).bytes;
    c.head = (c.head + 1) & (c.ring.size() - 1);
    --c.count;
    c.cursor = c.cursor > 0 ? c.cursor - 1 : 0;
    ctx_->message_events->message_completed(tag);
  }
}

std::uint32_t Host::payload_of(std::uint32_t psn, std::uint32_t npkts, std::uint64_t bytes) const {
  if (psn + 1 < npkts) return cfg_.mtu;
  return static_cast<std::uint32_t>(bytes - static_cast<std::uint64_t>(npkts - 1) * cfg_.mtu);
}

std::uint64_t Host::acked_offset(const SendQp& s) const {
  if (s.conn == kNone) return std::min<std::uint64_t>(std::uint64_t{s.una} * cfg_.mtu, s.bytes);
  const SendConn& c = conns_[s.conn];
  if (c.count == 0) return s.bytes;
  const Message& m = c.ring[c.head];
  return m.first_byte + std::uint64_t{s.una - m.first_psn} * cfg_.mtu;
}

// The send time of `psn` in the QP's ring, which keeps those of una..high (doubling, by
// PSN, when a new PSN would overwrite one of them: storage grows with the most packets
// ever in flight, never per packet); Time::max() for a packet sent again.
void Host::record_send(SendQp& s, std::uint32_t psn, Time now) {
  const std::uint32_t need = std::max(s.high, psn + 1) - s.una;
  if (need > s.sent_at.size()) {
    std::vector<Time> bigger(std::bit_ceil(std::max<std::uint32_t>(need, 32)) * 2);
    const std::size_t old_mask = s.sent_at.size() - 1, mask = bigger.size() - 1;
    if (!s.sent_at.empty())
      for (std::uint32_t n = s.una; n < s.high; ++n) bigger[n & mask] = s.sent_at[n & old_mask];
    s.sent_at = std::move(bigger);
  }
  // A packet sent again gives no RTT sample: its ACK may answer either copy (Karn).
  s.sent_at[psn & (s.sent_at.size() - 1)] = psn < s.high ? Time::max() : now;
}

void Host::ring_insert(std::uint32_t q) {
  SendQp& s = send_[q];
  s.in_ring = true;
  std::uint32_t& head = ring_head_[s.priority];
  if (head == kNone) {
    head = s.ring_next = s.ring_prev = q;
    return;
  }
  // Before the head: the last to be served in this round.
  SendQp& h = send_[head];
  s.ring_next = head;
  s.ring_prev = h.ring_prev;
  send_[h.ring_prev].ring_next = q;
  h.ring_prev = q;
}

void Host::ring_remove(std::uint32_t q) {
  SendQp& s = send_[q];
  s.in_ring = false;
  std::uint32_t& head = ring_head_[s.priority];
  if (s.ring_next == q) {
    head = kNone;
  } else {
    send_[s.ring_prev].ring_next = s.ring_next;
    send_[s.ring_next].ring_prev = s.ring_prev;
    if (head == q) head = s.ring_next;
  }
  s.ring_next = s.ring_prev = kNone;
}

void Host::arm_timer(SendQp& s, std::uint32_t q, Time at) {
  s.timer_at = at;
  ctx_->sim.schedule_at(at, *this, qp_tag(kRto, q, s.gen));
}

Packet* Host::make_data(SendQp& s) {
  const Time now = ctx_->sim.now();
  Packet* p = ctx_->packets.acquire();
  const std::uint32_t psn = sr_ ? sr_pick(s) : s.next_psn++;
  p->flow = s.flow;
  p->src = host_id_;
  p->dst = s.dst;
  p->dst_qp = s.dst_qpn;
  p->src_qp = static_cast<std::uint32_t>(&s - send_.data());
  p->psn = psn;
  const bool rc = cfg_.transport != Transport::uc;
  bool message_end = false;  // a connection's UC message completes as its last packet leaves
  // The window's sent offset follows the packets sent in order (all of go-back-N's; not
  // IRN's resends of lost ones, which the window does not count).
  const bool in_order = psn + 1 == s.next_psn;
  if (s.conn == kNone) {
    p->payload = payload_of(psn, s.npkts, s.bytes);
    p->message_bytes = static_cast<std::uint32_t>(std::min<std::uint64_t>(s.bytes, 0xffffffffu));
    if (s.npkts == 1) p->opcode = rc ? Opcode::rc_write_only : Opcode::uc_write_only;
    else if (psn == 0) p->opcode = rc ? Opcode::rc_write_first : Opcode::uc_write_first;
    else if (psn + 1 == s.npkts) p->opcode = rc ? Opcode::rc_write_last : Opcode::uc_write_last;
    else p->opcode = rc ? Opcode::rc_write_middle : Opcode::uc_write_middle;
    if (windowed_ && in_order) s.sent_off = std::uint64_t{psn} * cfg_.mtu + p->payload;
  } else {
    const Message& m = message_of(s, psn);
    const std::uint32_t k = psn - m.first_psn;
    p->payload = payload_of(k, m.npkts, m.bytes);
    if (windowed_ && in_order) s.sent_off = m.first_byte + std::uint64_t{k} * cfg_.mtu + p->payload;
    p->message_bytes = static_cast<std::uint32_t>(std::min<std::uint64_t>(m.bytes, 0xffffffffu));
    p->tag = m.tag;
    if (m.npkts == 1) p->opcode = rc ? Opcode::rc_write_only : Opcode::uc_write_only;
    else if (k == 0) p->opcode = rc ? Opcode::rc_write_first : Opcode::uc_write_first;
    else if (k + 1 == m.npkts) p->opcode = rc ? Opcode::rc_write_last : Opcode::uc_write_last;
    else p->opcode = rc ? Opcode::rc_write_middle : Opcode::uc_write_middle;
    message_end = !rc && k + 1 == m.npkts;
  }
  if (uet_) {  // its entropy: the port's low bits, and the key's change for them
    UetSend& u = uet_send_[p->src_qp];
    const std::uint32_t ev = u.picker.next();
    u.ev_of[psn & (sr_bits_ - 1)] = static_cast<std::uint16_t>(ev);
    u.sent[psn & (sr_bits_ - 1)] = now;
    set_flying(p->src_qp, psn, true);
    p->udp_sport = static_cast<std::uint16_t>(s.sport | ev);
    p->hash_key = s.hash_key ^ ev_delta_[ev];
  } else {
    p->udp_sport = s.sport;
    p->hash_key = s.hash_key;
  }
  p->priority = s.priority;
  p->dscp = static_cast<std::uint8_t>(s.priority * 8 & 63);
  p->ecn = cfg_.ecn_capable ? kEcnEct0 : kEcnNotEct;
  if (collects_int_) p->telemetry = ctx_->telemetry.acquire();

  p->seal(ctx_->wire);
  // A connection idle until this new packet: its timeout counts from now, not from the
  // last ACK of the messages before.
  if (s.conn != kNone && psn >= s.high && s.una >= s.high) s.last_progress = now;
  if (rtt_samples_) record_send(s, psn, now);
  if (psn < s.high) {
    if (s.conn == kNone) ++flows_[s.flow].retransmitted;
    else ctx_->message_events->message_retransmitted(p->tag);
  } else {
    s.high = psn + 1;
  }
  ++ctx_->ledger.data_packets_sent;
  ctx_->ledger.data_bytes_sent += p->payload;

  const BitRate r = s.cc->rate();
  const std::uint32_t wire = p->wire_bytes(ctx_->wire);
  s.cc->on_sent(now, wire);
  s.last_sent = now;
  s.last_wire = wire;
  s.next_send = r < port(0).rate() ? now + serialization_time(Bytes::from_count(wire), r, ctx_->wire.rounding) : now;
  if (rc && s.timer_at == Time::max()) {
    s.last_progress = now;
    arm_timer(s, p->src_qp, now + rto_of(s));
  }
  if (message_end) {  // UC: nothing comes back; done once sent (never resent)
    s.una = psn + 1;
    complete_messages(s);
  }
  if (rccc_) {  // spent, and what it wants now
    uet_send_[p->src_qp].credit -= p->payload;
    p->syndrome = pull_target_code(s, p->src_qp);
  }
  return p;
}

Packet* Host::next_packet(Port& port) {
  const Time now = ctx_->sim.now();
  Time wake = Time::max();
  // Control frames first, highest priority first, through the mask of non-empty queues
  // (the 8 queues span three cache lines).
  for (unsigned m = ctrl_backlog_; m != 0;) {
    const auto c = static_cast<std::uint8_t>(std::bit_width(m) - 1);
    m &= ~(1u << c);
    if (!port.paused(c)) {
      Packet* p = ctrl_[c].pop();
      if (ctrl_[c].empty()) ctrl_backlog_ &= static_cast<std::uint8_t>(~(1u << c));
      return p;
    }
    wake = std::min(wake, port.paused_until(c));
  }
  for (int c = 7; c >= 0; --c) {
    const std::uint32_t head = ring_head_[c];
    if (head == kNone) continue;
    if (port.paused(static_cast<std::uint8_t>(c))) {
      wake = std::min(wake, port.paused_until(static_cast<std::uint8_t>(c)));
      continue;
    }
    std::uint32_t q = head;
    do {
      SendQp& s = send_[q];
      const std::uint32_t next = s.ring_next;
      if (s.next_send > now) {
        wake = std::min(wake, s.next_send);
      } else if ((window_open(s) || (sr_ && !uet_ && sr_next_lost(s, sr_send_[q]) != kNone)) && credit_open(q)) {
        // (A closed window waits for an ACK, not a time; IRN resends a lost packet in
        // place of the one lost, outside the window, which counts new data; UET's window
        // counts every packet in flight, resends too.)
        Packet* p = make_data(s);
        ring_head_[c] = next;  // round-robin: the next QP goes first next time
        if (!sr_) {
          if (s.next_psn >= s.npkts) ring_remove(q);
        } else if (!has_work(s, q)) {
          if (s.next_psn < s.npkts) ++cap_stalls_;  // new data waits for the cap (BDP-FC)
          ring_remove(q);
        }
        return p;
      }
      q = next;
    } while (q != head);
  }
  if (wake != Time::max()) port.wake_at(wake);
  return nullptr;
}

void Host::send_control(Packet* p) {
  ++ctx_->ledger.control_packets_sent;
  ctrl_[p->priority].push(p);
  ctrl_backlog_ |= static_cast<std::uint8_t>(1u << p->priority);
  port(0).kick();
}

void Host::learn_peer(RecvQp& r, const Packet& data) {
  r.peer = data.src;
  r.peer_qp = data.src_qp;
  r.peer_sport = static_cast<std::uint16_t>(data.udp_sport & ~ev_mask_);  // (UET: without its entropy)
  r.peer_priority = data.priority;
  r.ack_hash_key = flow_hash_key(cfg_.ecmp_hash, host_ipv4(host_id_), host_ipv4(data.src), r.peer_sport,
                                 cfg_.ecmp_fields);
  r.peer_known = true;
}

Packet* Host::reply_to(const RecvQp& r, std::uint32_t qpn, std::uint32_t ev) {
  Packet* a = ctx_->packets.acquire();
  a->hash_key = r.ack_hash_key;
  a->flow = r.flow;
  a->src = host_id_;
  a->dst = r.peer;
  a->dst_qp = r.peer_qp;
  a->src_qp = qpn;
  a->udp_sport = r.peer_sport;
  if (uet_) {
    a->udp_sport = static_cast<std::uint16_t>(r.peer_sport | ev);
    a->hash_key ^= ev_delta_[ev];
  }
  a->ecn = kEcnNotEct;
  return a;
}

void Host::send_ack(RecvQp& r, std::uint32_t qpn, std::uint32_t psn, std::uint8_t syndrome, std::uint32_t about) {
  Packet* a = reply_to(r, qpn, echo_ev_);  // (UET: on the entropy of the data it answers, which it echoes)
  a->psn = psn;
  if (about != kNone) a->src_qp = about;
  a->opcode = Opcode::rc_ack;
  a->syndrome = syndrome;
  if (r.becn_pending) {
    a->becn = true;
    r.becn_pending = false;
    ++cnps_sent_;
  }
  if (r.ce_unechoed) {  // ECN echo (cnps_on_ is false then: the bit means one thing)
    a->becn = true;
    r.ce_unechoed = false;
  }
  if (echo_endpoint_) set_endpoint_echo(*a, r.echo_hold, r.echo_hops);
  a->telemetry = std::exchange(echo_stack_, 0);  // the INT stack of the data it answers, if any
  a->priority = r.peer_priority;
  a->dscp = static_cast<std::uint8_t>(r.peer_priority * 8 & 63);
  a->seal(ctx_->wire);
  send_control(a);
}

void Host::notify_congestion(RecvQp& r, std::uint32_t qpn) {
  const Time now = ctx_->sim.now();
  Time& last = cfg_.cnp.per_qp ? r.last_cnp : last_cnp_;
  if (last != Time::max()) {
    if (cfg_.cnp.pacing == CnpPacing::since_last) {
      if (now - last < cnp_interval_) return;
    } else if (cnp_interval_.ps() > 0 && last.ps() / cnp_interval_.ps() == now.ps() / cnp_interval_.ps()) {
      return;  // one already in this window
    }
  }
  last = now;
  if (cfg_.cnp.form == CnpForm::becn) {
    r.becn_pending = true;  // counted when the ACK carrying it leaves
    return;
  }
  Packet* c = reply_to(r, qpn, echo_ev_);
  c->opcode = Opcode::cnp;
  c->priority = cfg_.cnp.cnp_802p_prio;
  c->dscp = cfg_.cnp.cnp_dscp & 63;
  c->seal(ctx_->wire);
  ++cnps_sent_;
  send_control(c);
}

void Host::rate_raised(std::uint32_t qp) {
  SendQp& s = send_[qp];
  if (!s.in_ring) return;
  const Time now = ctx_->sim.now();
  const Time again = std::max(now, s.last_sent + serialization_time(Bytes::from_count(s.last_wire), s.cc->rate(),
                                                                    ctx_->wire.rounding));
  if (again >= s.next_send) return;
  s.next_send = again;
  port(0).kick();
}

bool Host::bit(const RecvQp& r, std::uint32_t psn) const {
  return test_bit(r.placed, psn % static_cast<std::uint32_t>(r.placed.size() * 64));
}
void Host::set_bit(RecvQp& r, std::uint32_t psn, bool v) {
  put_bit(r.placed, psn % static_cast<std::uint32_t>(r.placed.size() * 64), v);
}

void Host::deliver(RecvQp& r, std::uint32_t psn) {
  if (r.conn) return;  // messages are counted by their MessageEvents
  FlowState& f = flows_[r.flow];
  f.delivered += payload_of(psn, r.npkts, r.bytes);
}

void Host::message_arrived(std::uint32_t tag) { ctx_->message_events->message_arrived(tag); }

// A connection's last packet of a message placed ahead of the expected PSN: remembered
// (in PSN order) until the expected PSN passes it.
void Host::place_end(RecvQp& r, const Packet& p) {
  if (!r.conn || !is_last(p.opcode)) return;
  auto at = std::upper_bound(r.ends.begin(), r.ends.end(), std::make_pair(p.psn, p.tag));
  r.ends.insert(at, {p.psn, p.tag});
}

// The messages whose last packets the expected PSN has now passed have arrived; true if any.
bool Host::flush_ends(RecvQp& r) {
  std::size_t k = 0;
  while (k < r.ends.size() && r.ends[k].first < r.expected) message_arrived(r.ends[k++].second);
  r.ends.erase(r.ends.begin(), r.ends.begin() + static_cast<std::ptrdiff_t>(k));
  return k > 0;
}

void Host::qp_complete(const RecvQp& r) {
  if (cfg_.flow_end == FlowEnd::placed) flow_qp_done(r.flow);
}

void Host::flow_qp_done(std::uint32_t flow) {
  FlowState& f = flows_[flow];
  if (++f.qps_done < f.spec.qps) return;
  f.finish = ctx_->sim.now();
  if (ctx_->flow_events) ctx_->flow_events->flow_finished(flow);
  ctx_->last_done = ctx_->sim.now();
  if (--ctx_->flows_left == 0 && ctx_->stop_at_last_flow) ctx_->sim.stop();
}

void Host::on_data(Packet* p) {
  const std::uint32_t q = p->dst_qp;
  RecvQp& r = recv_.at(q);
  ++ctx_->ledger.data_packets_arrived;
  ctx_->ledger.data_bytes_arrived += p->payload;
  if (!r.peer_known) learn_peer(r, *p);
  if (uet_) {  // its replies echo its entropy (and its PSN: send_ack's `about`)
    echo_ev_ = p->udp_sport & ev_mask_;
    if (rccc_) note_pull_target(r, q, p->syndrome);  // (a trimmed header's too)
  }
  if (p->ecn == kEcnCe) {
    ++ce_received_;
    if (cnps_on_) notify_congestion(r, q);
    r.ce_unechoed = echo_ecn_;
  } else if (uet_) {
    r.ce_unechoed = false;  // (UET: the ACK echoes the mark of the packet it answers)
  }
  if (echo_endpoint_) {  // what the ACK answering this packet reports
    r.echo_hops = static_cast<std::uint8_t>(kInitialTtl - p->ttl);
    r.echo_hold = hold_;
  }
  const std::uint32_t psn = p->psn;
  if (p->trimmed) [[unlikely]] {
    on_trimmed(r, q, p);
    return;
  }

  if (cfg_.transport == Transport::uc) {
    on_uc_data(r, p);
    return;
  }

  // Its INT stack goes on the ACK or NAK that answers it, if one does (send_ack).
  echo_stack_ = std::exchange(p->telemetry, 0);
  if (psn == r.expected) {
    deliver(r, psn);
    std::uint32_t advanced = 1;
    ++r.expected;
    r.nak_sent = false;
    bool message_end = false;  // a connection: acknowledged at once
    if (r.conn && is_last(p->opcode)) {
      message_arrived(p->tag);
      message_end = true;
    }
    // Packets already placed out of order now join the in-order prefix.
    while (!r.placed.empty() && r.expected < r.npkts && bit(r, r.expected)) {
      set_bit(r, r.expected, false);
      --r.placed_count;
      --held_;
      ++r.expected;
      ++advanced;
    }
    if (r.gap_due != Time::max()) {  // the give-up timer follows the gap, if one is left
      if (r.placed_count == 0) r.gap_due = Time::max();
      else arm_give_up(r, q);
    }
    if (!r.ends.empty()) message_end |= flush_ends(r);
    r.since_ack += advanced;
    const bool complete = r.expected == r.npkts;
    if (r.since_ack >= ack_every_ || complete || message_end) {
      send_ack(r, q, r.expected - 1, kAethAck, uet_ ? psn : kNone);
      r.since_ack = 0;
    }
    if (complete) qp_complete(r);
  } else if (psn > r.expected) {
    if (psn - r.expected <= recv_window_ && psn < r.npkts) {
      if (bit(r, psn)) {
        ++duplicates_;
        if (uet_) send_ack(r, q, r.expected, kAethNakSeq, psn);  // SACKed again (uet-htsim ACKs duplicates)
      } else {
        set_bit(r, psn, true);
        ++r.placed_count;
        held_peak_ = std::max(held_peak_, ++held_);
        deliver(r, psn);
        place_end(r, *p);
        ++ooo_accepted_;
        if (sr_) {  // IRN: a NACK that SACKs it
          send_ack(r, q, r.expected, kAethNakSeq, psn);
          ++naks_sent_;
        } else if (cfg_.reorder_timeout > Time() && r.gap_due == Time::max()) arm_give_up(r, q);
      }
    } else if (sr_) {
      ++oos_drops_;
      ++bitmap_drops_;  // beyond the bitmap (a sender with a larger cap)
    } else {
      ++oos_drops_;
      if (!r.nak_sent) {
        send_ack(r, q, r.expected, kAethNakSeq);
        r.nak_sent = true;
        ++naks_sent_;
      }
    }
  } else {
    ++duplicates_;
    send_ack(r, q, r.expected - 1, kAethAck, uet_ ? psn : kNone);
  }
  if (echo_stack_) ctx_->telemetry.release(std::exchange(echo_stack_, 0));  // answered by no ACK
  release_packet(*ctx_, p);
}

// UC: a packet from the past (late, or a copy) is discarded and changes nothing; after a
// gap the broken message is dropped to its end (a flow's one message: the rest of the
// flow), and on a connection the next message's first packet starts over (UC has no
// retransmission: the broken message never arrives).
void Host::on_uc_data(RecvQp& r, Packet* p) {
  const std::uint32_t psn = p->psn;
  if (psn < r.expected) {
    ++duplicates_;
  } else {
    if (psn > r.expected || r.broken) {
      if (has_reth(p->opcode)) {
        r.expected = psn;
        r.broken = false;
      } else {
        r.broken = true;
      }
    }
    if (r.broken) {
      ++oos_drops_;
    } else {
      deliver(r, psn);
      if (++r.expected == r.npkts) qp_complete(r);  // a flow (a connection's npkts is open-ended)
      if (r.conn && is_last(p->opcode)) message_arrived(p->tag);
    }
  }
  release_packet(*ctx_, p);
}

void Host::on_trimmed(RecvQp& r, std::uint32_t q, Packet* p) {
  ++trimmed_received_;
  const std::uint32_t psn = p->psn;
  if (cfg_.transport != Transport::uc && psn >= r.expected && psn < r.npkts) {
    // Placed already (a copy of a packet the reorder window holds): nothing is missing.
    const bool placed = psn > r.expected && psn - r.expected <= recv_window_ && bit(r, psn);
    // IRN: a NACK for that packet alone; go-back-N: a NAK at the expected PSN.
    if (!placed && (sr_ || psn == r.expected || !r.nak_sent)) {
      echo_stack_ = std::exchange(p->telemetry, 0);  // the NAK echoes its INT stack, as for any data
      send_ack(r, q, r.expected, sr_ ? kAethNakTrimmed : kAethNakSeq, sr_ ? psn : kNone);
      if (!sr_) r.nak_sent = true;
      ++naks_sent_;
    }
  }
  release_packet(*ctx_, p);
}

void Host::arm_give_up(RecvQp& r, std::uint32_t q) {
  r.gap_at = r.expected;
  r.gap_due = ctx_->sim.now() + cfg_.reorder_timeout;
  ctx_->sim.schedule_at(r.gap_due, *this, qp_tag(kGiveUp, q, r.gen));
}

void Host::on_ack(const Packet& p) {
  const std::uint32_t q = p.dst_qp;
  SendQp& s = send_.at(q);
  const Time now = ctx_->sim.now();
  Time rtt = Time::max();
  const std::uint32_t una_before = s.una;
  bool kick = false;            // after the policy has read the ACK, as its rate and window apply
  bool nak = false;             // a NAK acted on
  std::uint32_t delivered = 0;  // (selective repeat: SACKs count)
  if (rccc_) stop_speculating(q);
  if (sr_) {
    nak = on_sr_ack(p, s, q, now, rtt, delivered);
    const bool work = has_work(s, q);  // (a SACK may have taken the only hole left)
    if (!s.in_ring && work) {
      ring_insert(q);
      kick = true;
    } else if (s.in_ring && !work) {
      ring_remove(q);
    }
    kick = kick || (windowed_ && s.in_ring);
  } else if (p.syndrome == kAethNakSeq) {
    // The receiver expects p.psn: everything before it arrived; resend from there. A NAK
    // older than what has been acknowledged since (an ACK overtook it) changes nothing.
    if (p.psn >= s.una) {
      nak = true;
      if (p.psn > s.una) {
        s.una = p.psn;
        if (s.conn != kNone) complete_messages(s);
        if (windowed_) s.acked_off = acked_offset(s);
      }
      // Back to p.psn, or on to it after a timeout went back further (what the receiver
      // has is not sent again).
      if (s.next_psn != p.psn) {
        s.next_psn = p.psn;
        s.sent_off = s.acked_off;
      }
      s.last_progress = now;
      if (!s.in_ring && s.next_psn < s.npkts) {
        ring_insert(q);
        kick = true;
      }
      kick = kick || (windowed_ && s.in_ring);  // the go-back reopened the window
    }
  } else if (p.psn + 1 > s.una) {
    if (rtt_samples_ && p.psn < s.high) rtt = s.sent_at[p.psn & (s.sent_at.size() - 1)];
    if (rtt != Time::max()) rtt = now - rtt;  // (max: sent again since, Karn's rule: no sample)
    acknowledge(s, q, p.psn + 1, now);
    kick = windowed_ && s.in_ring;  // the window may have opened
  }
  if (!sr_) delivered = s.una - una_before;
  if (uet_) {  // what came back on the entropy it echoes
    EntropyPicker& picker = uet_send_[q].picker;
    const std::uint32_t ev = p.udp_sport & ev_mask_;
    if (p.syndrome == kAethNakTrimmed) picker.on_trim(ev);
    else if (p.becn) picker.on_ecn(ev);
    else picker.on_clean_ack(ev);
  }
  if (reads_acks_)
    s.cc->on_ack(now, AckInfo{.acked = s.una,
                              .next_psn = s.next_psn,
                              .rtt = rtt,
                              .ecn_echo = echo_ecn_ && p.becn,
                              .nak = nak,
                              .newly_acked = s.una - una_before,
                              .delivered = delivered,
                              .trimmed = p.syndrome == kAethNakTrimmed,
                              .in_flight = uet_ ? std::uint64_t{uet_send_[q].in_flight} * cfg_.mtu
                                                : s.sent_off - s.acked_off,
                              .hops = echo_endpoint_ ? echoed_hops(p) : std::uint8_t{0},
                              .remote_hold = echo_endpoint_ ? echoed_hold(p) : Time(),
                              .local_hold = hold_,
                              .telemetry = p.telemetry ? &ctx_->telemetry.at(p.telemetry) : nullptr});
  if (kick) port(0).kick();
}

void Host::acknowledge(SendQp& s, std::uint32_t q, std::uint32_t una, Time now) {
  const bool was_acked = s.una >= s.npkts;
  s.una = una;
  s.last_progress = now;
  // After a go-back, what the receiver already has is not sent again.
  if (s.next_psn < s.una) s.next_psn = s.una;
  if (s.in_ring && !has_work(s, q)) ring_remove(q);
  if (s.conn != kNone) complete_messages(s);
  if (windowed_) {
    s.acked_off = acked_offset(s);
    if (s.next_psn == s.una) s.sent_off = s.acked_off;
  }
  if (s.conn == kNone && cfg_.flow_end == FlowEnd::acked && !was_acked && s.una >= s.npkts) flow_qp_done(s.flow);
}

bool Host::has_work(SendQp& s, std::uint32_t q) {
  if (!sr_) return s.next_psn < s.npkts;
  if (sr_next_lost(s, sr_send_[q]) != kNone) return true;
  return s.next_psn < s.npkts && s.next_psn - s.una < sr_cap_;
}

Time Host::rto_of(const SendQp& s) const {
  if (!sr_) return cfg_.rto;
  if (uet_) return uet_rto_;
  return s.high - s.una < cfg_.irn.rto_low_packets ? cfg_.irn.rto_low : cfg_.irn.rto_high;
}

std::uint32_t Host::sr_next_lost(const SendQp& s, SrSend& x) const {
  if (!x.recovery) return kNone;
  // Lost: below lost_end and neither SACKed nor resent, or trimmed and not resent since.
  const std::uint32_t lost_end = std::min(x.lost_end, s.high), mask = sr_bits_ - 1;
  const std::uint32_t end = std::max(lost_end, std::min(x.trimmed_end, s.high));
  std::uint32_t n = std::max(x.scan, s.una);
  for (; n < end; ++n) {
    const std::uint32_t i = n & mask;
    if (test_bit(x.resent, i)) continue;
    if (test_bit(x.trimmed, i) || (n < lost_end && !test_bit(x.sacked, i))) break;
  }
  x.scan = n;
  return n < end ? n : kNone;
}

void Host::sr_begin_episode(SrSend& x, const SendQp& s, std::uint32_t lost_end) const {
  x.recovery = true;
  x.recovery_end = s.high;
  x.lost_end = lost_end;
  x.trimmed_end = x.scan = s.una;
  for (std::uint32_t n = s.una; n < s.high; ++n) put_bit(x.resent, n & (sr_bits_ - 1), false);
}

std::uint32_t Host::sr_pick(SendQp& s) {
  SrSend& x = sr_send_[static_cast<std::size_t>(&s - send_.data())];
  const std::uint32_t lost = sr_next_lost(s, x);
  if (lost == kNone) {
    if (s.next_psn >= s.npkts || s.next_psn - s.una >= sr_cap_)
      throw std::logic_error("host " + name() + ": IRN QP " + std::to_string(&s - send_.data()) +
                             " sends past its end or its cap (PSN " + std::to_string(s.next_psn) + ")");
    return s.next_psn++;
  }
  put_bit(x.resent, lost & (sr_bits_ - 1), true);
  mark_lost(x, static_cast<std::uint32_t>(&s - send_.data()), lost, false);
  x.scan = lost + 1;
  return lost;
}

void Host::set_flying(std::uint32_t q, std::uint32_t psn, bool v) {
  UetSend& u = uet_send_[q];
  const std::uint32_t i = psn & (sr_bits_ - 1);
  if (test_bit(u.flying, i) == v) return;
  put_bit(u.flying, i, v);
  if (v) ++u.in_flight;
  else --u.in_flight;
}

bool Host::on_sr_ack(const Packet& p, SendQp& s, std::uint32_t q, Time now, Time& rtt, std::uint32_t& delivered) {
  SrSend& x = sr_send_[q];
  const std::uint32_t mask = sr_bits_ - 1;
  const bool nack = p.syndrome != kAethAck;
  // UET: every ACK and SACK names the packet it answers, whose send time gives the RTT
  // sample (none if it was sent again, Karn; none for a trimmed one's NACK).
  if (uet_ && rtt_samples_ && p.syndrome != kAethNakTrimmed && p.src_qp >= s.una && p.src_qp < s.high)
    if (const Time sent = s.sent_at[p.src_qp & (s.sent_at.size() - 1)]; sent != Time::max()) rtt = now - sent;
  // A NACK's PSN is the receiver's expected one: everything before it arrived.
  const std::uint32_t cum = nack ? p.psn : p.psn + 1;
  if (cum > s.una) {
    // (IRN -- Karn: no sample from a packet sent again, nor from one SACKed earlier, whose
    // cumulative ACK comes only when the hole before it is repaired.)
    if (!uet_ && !nack && rtt_samples_ && p.psn < s.high && !test_bit(x.sacked, p.psn & mask))
      rtt = s.sent_at[p.psn & (s.sent_at.size() - 1)];
    if (!uet_ && rtt != Time::max()) rtt = now - rtt;
    for (std::uint32_t n = s.una; n < cum && n < s.high; ++n) {  // the bits go round: clear what is behind
      if (!test_bit(x.sacked, n & mask)) ++delivered;
      put_bit(x.sacked, n & mask, false);
      put_bit(x.resent, n & mask, false);
      mark_lost(x, q, n, false);
      if (uet_) set_flying(q, n, false);
    }
    // The episode ends as the cumulative ACK passes what had been sent when it began --
    // unless holes found lost since lie beyond (a trimmed packet's): then it goes on.
    if (x.recovery && cum >= x.recovery_end) {
      if (std::max(x.lost_end, x.trimmed_end) > cum) x.recovery_end = s.high;
      else x.recovery = false;
    }
    acknowledge(s, q, cum, now);
    // Fewer packets in flight may make the timeout RTO_low: a check sooner than the one
    // pending (which, superseded, then does nothing).
    if (!uet_ && s.timer_at != Time::max() && s.una < s.high && s.last_progress + rto_of(s) < s.timer_at)
      arm_timer(s, q, s.last_progress + rto_of(s));
  }
  if (!nack) return false;
  const std::uint32_t at = p.src_qp;
  if (at < s.una || at >= s.high) return false;  // stale: acknowledged since
  if (!x.recovery && (p.syndrome == kAethNakTrimmed || !uet_)) sr_begin_episode(x, s, s.una);
  bool found = false;                   // this NACK shows a packet lost
  if (p.syndrome == kAethNakTrimmed) {  // that packet is lost (again, if it was resent), and only it
    sr_lose(x, q, at);
    // RCCC: its resend needs credit that no packet of this QP will ask for.
    if (rccc_ && uet_send_[q].credit <= 0 && s.next_psn >= s.npkts) maybe_send_rts(s, q);
    found = true;
  } else {
    if (!test_bit(x.sacked, at & mask)) ++delivered;
    put_bit(x.sacked, at & mask, true);
    if (uet_) {
      // (UET infers no loss from a SACK: its spraying reorders; a packet thought lost
      // that arrives after all is not resent)
      set_flying(q, at, false);
      mark_lost(x, q, at, false);
    } else if (at >= cfg_.irn.reorder_tolerance && at - cfg_.irn.reorder_tolerance > x.lost_end) {
      // The scan may have passed holes below the new end while only trimmed ones were due.
      x.scan = std::min(x.scan, x.lost_end);
      x.lost_end = at - cfg_.irn.reorder_tolerance;
      found = true;
    }
  }
  return found && sr_next_lost(s, x) != kNone;
}

Time Host::uet_oldest_flying(const SendQp& s, std::uint32_t q, std::uint32_t& n) const {
  const UetSend& u = uet_send_[q];
  const std::uint32_t mask = sr_bits_ - 1;
  Time oldest = Time::max();
  n = kNone;
  for (std::uint32_t k = s.una; k < s.high; ++k)
    if (test_bit(u.flying, k & mask) && u.sent[k & mask] < oldest) {
      oldest = u.sent[k & mask];
      n = k;
    }
  return oldest;
}

void Host::uet_check_timer(SendQp& s, std::uint32_t q, Time now) {
  std::uint32_t n = kNone;
  const Time oldest = uet_oldest_flying(s, q, n);
  if (oldest == Time::max()) {
    // Nothing in flight. RCCC: data or a resend waiting for credit asks for it (a lost
    // pull would hold it), again at every timeout while it waits.
    const UetSend& u = uet_send_[q];
    if (rccc_ && u.credit <= 0 && (s.next_psn < s.npkts || u.lost_pending > 0)) {
      send_rts(s, q);
      arm_timer(s, q, now + uet_rto_);
    }
    return;
  }
  if (now - oldest < uet_rto_) {
    arm_timer(s, q, oldest + uet_rto_);
    return;
  }
  ++timeouts_;
  uet_timeout(s, q, n);
  if (reads_acks_) s.cc->on_timeout(now);
  if (rccc_ && uet_send_[q].credit <= 0) send_rts(s, q);
  if (!s.in_ring) ring_insert(q);
  // The next check: the next packet sent first, at once if it is as late.
  const Time next = uet_oldest_flying(s, q, n);
  arm_timer(s, q, next == Time::max() ? now + uet_rto_ : std::max(now, next + uet_rto_));
  port(0).kick();
}

void Host::uet_timeout(SendQp& s, std::uint32_t q, std::uint32_t n) {
  SrSend& x = sr_send_[q];
  if (!x.recovery) sr_begin_episode(x, s, s.una);
  sr_lose(x, q, n);
  uet_send_[q].picker.on_timeout(uet_send_[q].ev_of[n & (sr_bits_ - 1)]);
}

void Host::sr_lose(SrSend& x, std::uint32_t q, std::uint32_t n) {
  put_bit(x.resent, n & (sr_bits_ - 1), false);
  mark_lost(x, q, n, true);
  x.trimmed_end = std::max(x.trimmed_end, n + 1);
  x.scan = std::min(x.scan, n);
  if (uet_) set_flying(q, n, false);
}

void Host::maybe_send_rts(const SendQp& s, std::uint32_t q) {
  UetSend& u = uet_send_[q];
  const Time now = ctx_->sim.now();
  if (u.last_rts != Time::max() && now - u.last_rts < base_rtt_) return;
  send_rts(s, q);
}

void Host::mark_lost(SrSend& x, std::uint32_t q, std::uint32_t n, bool v) {
  const std::uint32_t i = n & (sr_bits_ - 1);
  if (uet_ && test_bit(x.trimmed, i) != v) {
    if (v) ++uet_send_[q].lost_pending;
    else --uet_send_[q].lost_pending;
  }
  put_bit(x.trimmed, i, v);
}

std::uint8_t Host::pull_target_code(const SendQp& s, std::uint32_t q) const {
  const UetSend& u = uet_send_[q];
  const std::int64_t mtu = cfg_.mtu;
  const std::int64_t unsent = std::int64_t{s.npkts - std::min(s.next_psn, s.npkts)} * mtu;
  std::int64_t t = unsent + std::int64_t{u.lost_pending} * mtu;
  if (windowed_)
    if (const std::uint64_t w = s.cc->window(); w > 0)
      t = std::min<std::int64_t>(t, static_cast<std::int64_t>(w) + mtu);
  t = std::min(t, spec_credit_) - u.credit;
  if (u.speculating && t < mtu && unsent > 0) t = mtu;
  t = std::max<std::int64_t>(t, 0);
  const std::uint32_t units = u.pull_seen + static_cast<std::uint32_t>((t + pull_unit_ - 1) / pull_unit_);
  return static_cast<std::uint8_t>(units);
}

std::uint32_t Host::note_pull_target(RecvQp& r, std::uint32_t q, std::uint8_t code) {
  // Within 128 units of what was granted either way (selective_repeat_cap checks it).
  const auto ahead = static_cast<std::int8_t>(
      static_cast<std::uint8_t>(code - static_cast<std::uint8_t>(r.latest_pull)));
  const auto target = static_cast<std::uint32_t>(std::max<std::int64_t>(0, std::int64_t{r.latest_pull} + ahead));
  // A code further ahead than a sender can ask for is an old one that fell more than
  // 128 units behind (held in paused queues): ignored.
  if (std::int64_t{target} > std::int64_t{r.latest_pull} + pull_lead_) return r.latest_pull;
  r.pull_target = std::max(r.pull_target, target);
  if (r.pull_target > r.latest_pull && !r.in_pull) {
    r.in_pull = true;
    pull_queue_.push_back(q);
    if (!pacer_running_) {
      pacer_running_ = true;
      ctx_->sim.schedule_in(Time(), *this, kPull);
    }
  }
  return target;
}

void Host::send_pull(RecvQp& r, std::uint32_t q) {
  Packet* a = reply_to(r, q, 0);  // (pulls leave on the base entropy)
  a->opcode = Opcode::rc_ack;
  a->syndrome = kAethPull;
  a->src_qp = r.latest_pull;
  a->priority = r.peer_priority;
  a->dscp = static_cast<std::uint8_t>(r.peer_priority * 8 & 63);
  a->seal(ctx_->wire);
  send_control(a);
  ++pulls_sent_;
}

void Host::grant_pull() {
  if (pull_queue_.empty()) {  // a period with nothing to grant: the pacer stops
    pacer_running_ = false;
    return;
  }
  const std::uint32_t q = pull_queue_.pop_front();
  RecvQp& r = recv_[q];
  ++r.latest_pull;
  send_pull(r, q);
  if (r.pull_target > r.latest_pull) pull_queue_.push_back(q);
  else r.in_pull = false;
  ctx_->sim.schedule_in(pull_period_, *this, kPull);
}

void Host::stop_speculating(std::uint32_t q) {
  UetSend& u = uet_send_[q];
  if (!u.speculating) return;
  u.speculating = false;
  u.credit = std::min<std::int64_t>(u.credit, 0);  // unspent speculative credit goes
}

void Host::on_pull(const Packet& p) {
  const std::uint32_t q = p.dst_qp;
  stop_speculating(q);
  UetSend& u = uet_send_.at(q);
  if (p.src_qp > u.pull_seen) {
    u.credit = std::min(u.credit + std::int64_t{p.src_qp - u.pull_seen} * pull_unit_, spec_credit_);
    u.pull_seen = p.src_qp;
  }
  SendQp& s = send_[q];
  if (u.credit <= 0) return;
  if (!s.in_ring && has_work(s, q)) ring_insert(q);
  if (s.in_ring) port(0).kick();
}

void Host::send_rts(const SendQp& s, std::uint32_t q) {
  Packet* a = ctx_->packets.acquire();
  a->flow = s.flow;
  a->src = host_id_;
  a->dst = s.dst;
  a->dst_qp = s.dst_qpn;
  a->src_qp = q;
  a->psn = pull_target_code(s, q);
  a->opcode = Opcode::rc_ack;
  a->syndrome = kAethRts;
  a->udp_sport = s.sport;
  a->hash_key = s.hash_key;
  a->priority = s.priority;
  a->dscp = static_cast<std::uint8_t>(s.priority * 8 & 63);
  a->ecn = kEcnNotEct;
  a->seal(ctx_->wire);
  send_control(a);
  ++rts_sent_;
  uet_send_[q].last_rts = ctx_->sim.now();
}

void Host::on_rts(const Packet& p) {
  const std::uint32_t q = p.dst_qp;
  RecvQp& r = recv_.at(q);
  if (!r.peer_known) learn_peer(r, p);
  // A sender that asks for no more than was granted has lost a pull: the cumulative
  // grant again (unpaced: it grants nothing new).
  if (note_pull_target(r, q, static_cast<std::uint8_t>(p.psn)) <= r.latest_pull && r.latest_pull > 0) send_pull(r, q);
}

void Host::emit_counters(std::size_t /*port*/, PortCounters& c) const { c.drops += rx_drops_ + misdelivered_; }

void Host::receive(Port& /*port*/, Packet* p) {
  if (cfg_.rx_rate.bps() <= 0) {
    process(p);
    return;
  }
  const std::int64_t size = p->frame_bytes();
  if (rx_bytes_ + size > cfg_.rx_buffer.count()) {
    ++rx_drops_;
    drop(*ctx_, p, DropReason::nic_rx_full, pfc_.active());
    return;
  }
  rx_.push(p);
  if (echo_endpoint_) {  // its arrival, for its hold (a ring beside the buffer, doubled when full)
    if (rx_.size() > rx_arrivals_.size()) {
      std::vector<Time> bigger(std::max<std::size_t>(16, rx_arrivals_.size() * 2));
      for (std::size_t k = 0; k + 1 < rx_.size(); ++k)
        bigger[k] = rx_arrivals_[(rx_arrivals_head_ + k) & (rx_arrivals_.size() - 1)];
      rx_arrivals_ = std::move(bigger);
      rx_arrivals_head_ = 0;
    }
    rx_arrivals_[(rx_arrivals_head_ + rx_.size() - 1) & (rx_arrivals_.size() - 1)] = ctx_->sim.now();
  }
  rx_bytes_ += size;
  rx_peak_ = std::max(rx_peak_, rx_bytes_);
  if (!xoff_ && pfc_.active() && rx_bytes_ > xoff_at_) {
    xoff_ = true;
    send_pauses(pfc_.pause_quanta);
  }
  if (!rx_draining_) {
    rx_draining_ = true;
    ctx_->sim.schedule_in(serialization_time(Bytes::from_count(size), cfg_.rx_rate), *this, kRxDrain);
  }
}

void Host::send_pauses(std::uint16_t quanta) {
  for (std::uint8_t c = 0; c < 8; ++c) {
    if (!((pfc_.active() >> c) & 1)) continue;
    Packet* f = ctx_->packets.acquire();
    f->opcode = Opcode::pfc;
    f->set_pause(c, quanta);
    f->priority = 7;
    f->seal(ctx_->wire);
    port(0).send_control(f);
  }
  if (quanta > 0 && pfc_.refresh) {
    refresh_at_ = ctx_->sim.now() + Time::from_ps(port(0).pause_quantum_time(quanta).ps() / 2);
    ctx_->sim.schedule_at(refresh_at_, *this, kRefresh);
  } else {
    refresh_at_ = Time::max();
  }
}

void Host::process(Packet* p) {
  if (p->dst != host_id_) {  // not ours (a static route sent it here): the NIC drops it
    ++misdelivered_;
    drop(*ctx_, p, DropReason::misdelivered);
    return;
  }
  if (late(*p)) [[unlikely]] {
    ++late_discarded_;
    if (is_data(p->opcode)) {  // arrived, as on_data counts it, and discarded
      ++ctx_->ledger.data_packets_arrived;
      ctx_->ledger.data_bytes_arrived += p->payload;
    }
    release_packet(*ctx_, p);
    return;
  }
  if (is_data(p->opcode)) {
    on_data(p);
    return;
  }
  if (p->opcode == Opcode::rc_ack && (p->syndrome == kAethPull || p->syndrome == kAethRts)) [[unlikely]] {
    if (p->syndrome == kAethPull) on_pull(*p);
    else on_rts(*p);
  } else if (p->opcode == Opcode::rc_ack) {
    on_ack(*p);
    if (p->becn && !echo_ecn_) {
      ++cnps_received_;
      send_.at(p->dst_qp).cc->on_cnp(ctx_->sim.now());
    }
  } else if (p->opcode == Opcode::cnp) {
    ++cnps_received_;
    send_.at(p->dst_qp).cc->on_cnp(ctx_->sim.now());
  }
  release_packet(*ctx_, p);
}

void Host::on_event(std::uint64_t tag) {
  if (tag == kRxDrain) {
    Packet* p = rx_.pop();
    rx_bytes_ -= p->frame_bytes();
    if (echo_endpoint_) {
      hold_ = ctx_->sim.now() - rx_arrivals_[rx_arrivals_head_];
      rx_arrivals_head_ = (rx_arrivals_head_ + 1) & (rx_arrivals_.size() - 1);
    }
    process(p);
    hold_ = Time();
    if (xoff_ && rx_bytes_ <= std::max<std::int64_t>(0, xoff_at_ - pfc_.xon_offset.count())) {
      xoff_ = false;
      send_pauses(0);
    }
    if (rx_.empty()) rx_draining_ = false;
    else
      ctx_->sim.schedule_in(serialization_time(Bytes::from_count(rx_.front()->frame_bytes()), cfg_.rx_rate), *this,
                            kRxDrain);
    return;
  }
  if (tag == kRefresh) {
    if (xoff_ && refresh_at_ == ctx_->sim.now()) send_pauses(pfc_.pause_quanta);
    return;
  }
  if (tag == kPull) {
    grant_pull();
    return;
  }
  if ((tag & kKindMask) == kGiveUp) {
    const auto q = static_cast<std::uint32_t>(tag & 0xffffffffu);
    RecvQp& r = recv_.at(q);
    if (tag >> 40 != r.gen || r.gap_due != ctx_->sim.now()) return;  // a freed QP's, or superseded
    r.gap_due = Time::max();
    // The gap at the expected PSN did not fill in time: give up waiting, NAK it.
    if (r.placed_count > 0 && r.expected == r.gap_at && r.expected < r.npkts && !r.nak_sent) {
      send_ack(r, q, r.expected, kAethNakSeq);
      r.nak_sent = true;
      ++naks_sent_;
      ++give_ups_;
    }
    return;
  }
  const auto q = static_cast<std::uint32_t>(tag & 0xffffffffu);
  SendQp& s = send_.at(q);
  if (tag >> 40 != s.gen) return;  // a freed QP's
  const Time now = ctx_->sim.now();
  if ((tag & kKindMask) == kStart) {
    s.next_send = now;
    ring_insert(q);
    port(0).kick();
    return;
  }
  // RTO check (lazy: one pending per QP, moved forward by progress; IRN may arm one
  // sooner, which supersedes it). With nothing in flight there is nothing to time out:
  // the next packet sent arms it again.
  if (now != s.timer_at) return;  // (go-back-N: never superseded)
  s.timer_at = Time::max();
  if (uet_) {
    uet_check_timer(s, q, now);
    return;
  }
  if (s.una >= s.npkts || s.una >= s.high) return;
  if (now - s.last_progress >= rto_of(s)) {
    ++timeouts_;
    if (sr_) {  // IRN: every hole not SACKed is lost (the trimmed ones among them)
      sr_begin_episode(sr_send_[q], s, s.high);
    } else {
      s.next_psn = s.una;
      s.sent_off = s.acked_off;  // (both 0 without a window)
    }
    if (reads_acks_) s.cc->on_timeout(now);
    s.last_progress = now;
    if (!s.in_ring) ring_insert(q);
    arm_timer(s, q, now + rto_of(s));
    port(0).kick();
  } else {
    arm_timer(s, q, s.last_progress + rto_of(s));
  }
}

void Host::drain() {
  for (auto& q : ctrl_)
    while (!q.empty()) release_packet(*ctx_, q.pop());
  ctrl_backlog_ = 0;
  while (!rx_.empty()) release_packet(*ctx_, rx_.pop());
  if (echo_stack_) ctx_->telemetry.release(std::exchange(echo_stack_, 0));  // a run that stopped in on_data
}

}  // namespace fabriclab::fabric
