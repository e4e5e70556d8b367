// A port and the link that leaves it: a serializer at line rate, then a propagation delay
// to the peer port. The port is a small state machine -- idle or transmitting -- with a
// pause state per priority set by the PFC frames it receives; it pulls its next packet
// from its Node, so queues live in one place. Pending wake-ups: the end of the frame being
// serialized, and one arrival per frame on the link, scheduled one propagation delay
// after its last bit left (frames on a link arrive in order, so the frames wait in a
// ring and each arrival takes the ring's front; every arrival of a link has the same
// delay, which the simulator's event lanes serve in O(1)).
//
// PFC frames a node sends (send_control) go before any queued packet and are never
// paused; PFC frames arriving are consumed here and pause or resume this port's egress.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/simulator.h"
#include "core/units.h"
#include "fabric/context.h"
#include "fabric/interfaces.h"
#include "fabric/node.h"
#include "fabric/packet.h"

namespace fabriclab::fabric {

class Port;

// A frame crossing a link between two partitions of a parallel run (Network): handed
// over at the end of a window, a copy, since each partition has its own packet pool.
struct Crossing {
  Time at;  // when its last bit reaches `to`
  Port* to;
  std::uint64_t key;  // the arrival's tie key, drawn by the sending node
  Packet packet;
};
// The frames one partition sends another: the window being run appends to `current`,
// which the network points at each buffer in turn, so that the receiving partition can
// take one window's frames while the sender runs the next. Each buffer has a cache line
// of its own: while one thread appends to one, another reads and clears the other (when
// the two shared a line, every append of the sender missed in its cache during the
// receiver's hand-over: part 0 of fat_tree_128 ran about 10 % slower).
// A frame's INT stack crosses beside it: its Crossing::packet.telemetry is then an index
// + 1 into the buffer's `stacks`.
struct Outbox {
  struct alignas(64) Buffer {
    std::vector<Crossing> frames;
    std::vector<IntStack> stacks;
    void clear() {
      frames.clear();
      stacks.clear();
    }
  };
  std::array<Buffer, 2> window;
  Buffer* current = &window[0];
};

class alignas(64) Port final : public EventHandler {
 public:
  Port(FabricContext& ctx, Node& owner, std::uint16_t index) : index_(index), ctx_(&ctx), owner_(owner) {}
  // The link ring points into the port itself.
  Port(const Port&) = delete;
  Port& operator=(const Port&) = delete;

  // Both ends get the same rate and delay (full duplex).
  static void connect(Port& a, Port& b, BitRate rate, Time delay);
  // The simulator, pool and ledger of the partition this port runs in (before the run).
  void bind(FabricContext& ctx) { ctx_ = &ctx; }

  // A link between partitions (Network's parallel run): frames leaving this port go to
  // `out` when their last bit leaves, instead of onto the link; the peer's partition
  // takes them after the window with accept_crossing. nullptr = a local link.
  void set_cut(Outbox* out) { cut_ = out; }
  // The receiving end of a cut link: `p` (copied into this partition's pool, its INT
  // stack, if any, from `stacks`) arrives at `at` (no earlier than now), its event keyed
  // `key` among ties.
  void accept_crossing(Time at, std::uint64_t key, const Packet& p, const std::vector<IntStack>& stacks);

  Node& owner() { return owner_; }
  const Node& owner() const { return owner_; }
  std::uint16_t index() const { return index_; }
  Port* peer() const { return peer_; }
  BitRate rate() const { return rate_; }
  // A connected link's rate, both ends (before the run).
  static void set_link_rate(Port& a, BitRate rate);
  Time delay() const { return delay_; }
  bool transmitting() const { return on_wire_ != nullptr; }

  // The owner has something new for this port: start serializing if idle.
  void kick();
  // Wake the port at `t` to pull again (pacing or a pause running out).
  void wake_at(Time t);
  // A PFC frame (or other MAC control) that jumps the queues.
  void send_control(Packet* p);
  // Frames on this port's outgoing link pass `imp` before the peer sees them (not owned;
  // nullptr = a clean link).
  void set_impairment(LinkImpairment* imp) { impairment_ = imp; }
  const LinkImpairment* impairment() const { return impairment_; }
  // For an impairment: hand `p` to the peer now, or lose it on the link.
  void deliver_now(Packet* p);
  void lose(Packet* p);
  // Frames sent and received here are shown to `tap` (not owned; nullptr = none).
  void set_tap(PortTap* tap) { tap_ = tap; }
  PortTap* tap() const { return tap_; }
  // For a tap: the INT header `p` carries (its stack is in this port's partition).
  IntOnWire int_header(const Packet& p) const {
    if (!p.telemetry) return {};
    if (ctx_->wire.pint_log_base > 0) return {&ctx_->telemetry.at(p.telemetry), 0, ctx_->wire.int_bytes};
    return {&ctx_->telemetry.at(p.telemetry), ctx_->wire.int_max_hops};
  }

  bool paused(std::uint8_t prio) const {
    const Time now = ctx_->sim.now();
    return pause_any_until_ > now && pause_until_[prio] > now;  // the first test mostly ends it
  }
  Time paused_until(std::uint8_t prio) const { return pause_until_[prio]; }
  // Start of the current uninterrupted pause of `prio` (meaningful while paused), and
  // when the last PFC frame for it arrived (Time::max() = never).
  Time paused_since(std::uint8_t prio) const { return pause_start_[prio]; }
  Time last_pause_received(std::uint8_t prio) const { return last_pfc_rx_[prio]; }
  // Reaction to a received PFC frame: pause `prio` for `quanta` x 512 bit times at this
  // port's rate (0 = resume now).
  void pause(std::uint8_t prio, std::uint16_t quanta);
  // Every pause() from now on, recorded (output.ns3's pfc.txt): when, which class, how
  // long (0: a resume). Written by this port's part alone.
  struct PfcRecord {
    Time at;
    std::uint8_t prio;
    std::uint16_t quanta;
  };
  void record_pfc() { record_pfc_ = true; }
  const std::vector<PfcRecord>& pfc_records() const { return pfc_records_; }
  // Pauses received from now on last until their XON, whatever their quanta
  // (PfcConfig::pause_until_xon; its owner sets it when the network is finalized).
  void set_pause_until_xon(bool v) { pause_until_xon_ = v; }
  // Tell the owner when each frame starts (Node::started), not only when it ends.
  void set_notify_start(bool v) { notify_start_ = v; }
  bool pause_until_xon() const { return pause_until_xon_; }
  // 512 bit times at this port's rate, rounded up to the picosecond.
  Time pause_quantum_time(std::uint32_t quanta) const;

  // Statistics.
  std::uint64_t tx_bytes() const { return tx_bytes_; }  // frame bytes
  std::uint64_t tx_packets() const { return tx_packets_; }
  std::uint64_t pfc_sent() const { return pfc_sent_; }
  std::uint64_t pfc_received() const { return pfc_received_; }
  std::uint64_t link_drops() const { return link_drops_; }  // lost on the outgoing link
  std::uint64_t rx_errors() const { return rx_errors_; }    // received corrupted, discarded
  // Time this port's egress was paused up to `now`, summed over priorities.
  Time paused_time(Time now) const;
  // Adds this port's counts (transmitted, lost on its link, corrupted on arrival, PFC
  // frames, paused time up to `end`) to `c`.
  void emit_counters(PortCounters& c, Time end) const;
  Time paused_time(std::uint8_t prio, Time now) const;

  // Packets still on this port's wire or link (for the end-of-run ledger).
  template <typename F>
  void for_each_in_flight(F&& f) const {
    if (on_wire_) f(*on_wire_);
    for (std::size_t i = 0; i < link_.size(); ++i) f(*link_.at(i));
    for (std::size_t i = 0; i < crossed_.size(); ++i) f(*crossed_.at(i));
    for (const Packet* p = control_.front(); p; p = p->next) f(*p);
  }
  // Releases every packet still held here to the pool (end of run).
  void drain();

  void on_event(std::uint64_t tag) override;

 private:
  // A frame whose last bit left onto a cut link: a copy (with its INT stack) to the outbox.
  [[gnu::noinline]] void send_across(Packet* p);
  enum : std::uint64_t { kTxDone = 0, kArrive = 1, kWake = 2 };
  static std::array<Time, 8> filled(Time t) {
    std::array<Time, 8> a;
    a.fill(t);
    return a;
  }
  void start_next();
  void deliver(Packet* p);
  void receive_frame(Packet* p);  // p's last bit has arrived here

  // Fields in the order the per-packet path touches them, so that an event reads few
  // cache lines (the port is line-aligned; the index sits in the tail padding of the
  // EventHandler base): line 0 is what both the end of a frame and an arrival at the peer
  // need, line 1 the rest of the end of a frame and the pause summary the owner reads
  // when it pulls, from line 2 the cut-link outbox and the counters the end of a frame
  // reads, the link ring (with the impairment an arrival checks), then the pause
  // deadlines and the cold bookkeeping.
  std::uint16_t index_;
  FabricContext* ctx_;
  Node& owner_;
  Port* peer_ = nullptr;
  Packet* on_wire_ = nullptr;  // being serialized
  PortTap* tap_ = nullptr;
  BitRate rate_;  // the owner's pull reads it (a host's pacing) with the line's pointers

  Time delay_;
  SentFrame sending_;             // what owner_.transmitted() needs of on_wire_, read when it started
  std::uint32_t memo_bytes_ = 0;  // serialization time of the last frame size seen
  Time memo_time_;
  PacketFifo control_;     // PFC frames to send
  Time pause_any_until_;   // >= every pause_until_: before it no class can be paused
  Outbox* cut_ = nullptr;  // a link between partitions: where frames go
  std::uint64_t tx_bytes_ = 0, tx_packets_ = 0;
  LinkImpairment* impairment_ = nullptr;  // read with the link ring, when a frame arrives

  // Frames serialized and propagating to the peer, in arrival order (each has its
  // kArrive pending): a ring kept inside the port (8 frames: a 100G link of up to ~2.5 us
  // at 4 KiB frames) so that reading it costs no cache miss, doubling onto the heap for
  // longer links.
  class LinkRing {
   public:
    std::size_t size() const { return count_; }
    Packet* front() const { return ring_[head_]; }
    Packet* at(std::size_t i) const { return ring_[(head_ + i) & (cap_ - 1)]; }
    void pop() {
      head_ = (head_ + 1) & (cap_ - 1);
      --count_;
    }
    void push(Packet* p) {
      if (count_ == cap_) grow();
      ring_[(head_ + count_) & (cap_ - 1)] = p;
      ++count_;
    }

   private:
    void grow() {
      auto bigger = std::make_unique<Packet*[]>(2 * cap_);
      for (std::size_t i = 0; i < count_; ++i) bigger[i] = at(i);
      heap_ = std::move(bigger);
      ring_ = heap_.get();
      cap_ *= 2;
      head_ = 0;
    }
    Packet** ring_ = inline_;
    std::uint32_t cap_ = 8, head_ = 0, count_ = 0;
    Packet* inline_[8];
    std::unique_ptr<Packet*[]> heap_;
  };
  LinkRing link_;

  std::array<Time, 8> pause_until_{};
  bool pause_until_xon_ = false;
  bool notify_start_ = false;
  Time wake_pending_ = Time::max();  // earliest kWake scheduled and not yet run

  LinkRing crossed_;  // frames from a cut link, each with its kArrive pending

  std::array<Time, 8> pause_start_{};
  std::array<Time, 8> last_pfc_rx_ = filled(Time::max());
  std::array<Time, 8> paused_closed_{};  // paused time in intervals that have ended
  std::uint64_t pfc_sent_ = 0, pfc_received_ = 0, link_drops_ = 0, rx_errors_ = 0;
  std::uint64_t pfc_resume_sent_ = 0, pfc_resume_received_ = 0;  // of those, XON (zero quanta)
  bool record_pfc_ = false;
  std::vector<PfcRecord> pfc_records_;
};

}  // namespace fabriclab::fabric
