// A switch: 8 priority queues per egress port, scheduled strict-priority or DWRR (with a
// set of strict classes above the DWRR ones); a shared-buffer MMU with ingress
// accounting per (port, priority group) -- a reserved minimum (per group, or per port
// and shared by its groups: reserve_per_port), then the shared pool up to a static or
// dynamic threshold, then, for lossless priorities, headroom; PFC per
// priority (XOFF when a lossless group leaves the shared pool, XON when it is back below
// its threshold minus `xon_offset` with the headroom empty, pauses refreshed before they
// expire); ECN marking by the WRED rule (Kmin/Kmax/Pmax on the egress queue or the whole
// egress port, at dequeue or enqueue); forwarding over equal-cost next hops by ECMP hash, packet spraying,
// adaptive routing or flowlets; packet trimming (a data packet over the trim threshold of
// its egress queue, or refused by the MMU, is cut to its headers and queued at a strict
// priority of its own, as htsim's CompositeQueue does for NDP and UET).
//
// Priority group = priority (one to one). A drop on a lossless priority cannot happen in
// a correctly sized switch: it is counted in the ledger and the run reports it loudly.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <utility>
#include <span>
#include <vector>

#include "core/params.h"
#include "core/random.h"
#include "core/simulator.h"
#include "core/units.h"
#include "fabric/context.h"
#include "fabric/hash.h"
#include "fabric/node.h"
#include "fabric/packet.h"
#include "fabric/pfc.h"
#include "fabric/pint.h"
#include "fabric/wred.h"

namespace fabriclab::fabric {

enum class Scheduler : std::uint8_t { strict, dwrr };
inline constexpr params::EnumNames<Scheduler, 2> kSchedulerNames{
    {{Scheduler::strict, "strict"}, {Scheduler::dwrr, "dwrr"}}};

// What a switch writes into the INT stack of a packet it sends (telemetry.h): nothing, a
// record per hop (HPCC), or PINT's code (HPCC-PINT).
enum class IntMode : std::uint8_t { none, stack, pint };

// Among equal-cost next hops: the flow's hash (ECMP); every packet to the next one in
// turn or at random (spraying); every packet to the least-loaded (adaptive); a flow's
// packets to one port until it pauses longer than the flowlet timeout (flowlet).
enum class LoadBalance : std::uint8_t { ecmp, spray_round_robin, spray_random, adaptive, flowlet };
inline constexpr params::EnumNames<LoadBalance, 5> kLoadBalanceNames{{{LoadBalance::ecmp, "ecmp"},
                                                                      {LoadBalance::spray_round_robin, "spray_rr"},
                                                                      {LoadBalance::spray_random, "spray_random"},
                                                                      {LoadBalance::adaptive, "adaptive"},
                                                                      {LoadBalance::flowlet, "flowlet"}}};
// A new flowlet's port: the least-loaded (as adaptive routing chooses; CONGA's local
// choice, Spectrum-X's) or one at random (LetFlow).
enum class FlowletChoice : std::uint8_t { least_loaded, random };
inline constexpr params::EnumNames<FlowletChoice, 2> kFlowletChoiceNames{
    {{FlowletChoice::least_loaded, "least_loaded"}, {FlowletChoice::random, "random"}}};

// Adaptive routing's rule: of the n ports' queued bytes, the index chosen -- the hashed
// port `hashed` unless another's queue is more than `bias` bytes shorter; among the
// others the shortest, ties to the first after the hashed port in the group's order.
std::uint32_t least_loaded(const std::int64_t* queued, std::uint32_t n, std::uint32_t hashed, std::int64_t bias);
enum class ThresholdMode : std::uint8_t { static_th, dynamic_th };
inline constexpr params::EnumNames<ThresholdMode, 2> kThresholdModeNames{
    {{ThresholdMode::static_th, "static"}, {ThresholdMode::dynamic_th, "dynamic"}}};
enum class WatchdogAction : std::uint8_t { drop, forward, alert };
inline constexpr params::EnumNames<WatchdogAction, 3> kWatchdogActionNames{
    {{WatchdogAction::drop, "drop"}, {WatchdogAction::forward, "forward"}, {WatchdogAction::alert, "alert"}}};

// A switch port's PFC watchdog: the storms it declared and the packets it dropped.
struct WatchdogCounts {
  std::uint64_t storms = 0, drops = 0;
};

struct SwitchConfig {
  Bytes buffer = Bytes::from_count(32 << 20);  // shared buffer of the whole switch
  Bytes reserve = Bytes::from_count(0);        // per ingress port and priority group (or per port)
  bool reserve_per_port = false;               // one reserve per ingress port, its PGs sharing it
  // A packet's buffer (its ingress group's bytes, the shared pool's) is freed after its
  // last bit left the egress port, or as its transmission starts (the ns-3 RDMA model,
  // which frees it on dequeue): the resume, and the room, come one frame time sooner.
  bool release_at_start = false;
  ThresholdMode threshold_mode = ThresholdMode::dynamic_th;
  Bytes static_th = Bytes::from_count(512 << 10);
  int dynamic_th = 0;  // limit = 2^n x free shared buffer
  // The dynamic threshold of an ingress port at a listed rate (the HPCC ns-3 model's
  // pfc_a_shift, larger for ports faster than the NICs); other ports take dynamic_th.
  struct RateDynamicTh {
    BitRate rate;
    int dynamic_th = 0;
  };
  std::vector<RateDynamicTh> dynamic_th_by_rate;
  PfcConfig pfc;                                               // the network's: its NICs read it too
  Bytes max_frame = Bytes::from_count(max_frame_bytes(4096));  // set by the Network from the NICs' MTU
  // PFC watchdog (SONiC PFC_WD): a lossless queue with packets, paused without a break
  // for `wd_detection`, is in a storm; `wd_action` drop (flush it and drop what comes
  // for it), forward (send despite pauses) or alert (only count); the storm ends when
  // no pause has arrived for `wd_restoration`. Checked every `wd_poll`.
  bool watchdog = false;
  WatchdogAction wd_action = WatchdogAction::drop;
  Time wd_detection = Time::from_ps(200'000'000'000);  // 200 ms, SONiC's default
  Time wd_restoration = Time::from_ps(200'000'000'000);
  Time wd_poll = Time::from_ps(100'000'000'000);
  Scheduler scheduler = Scheduler::strict;
  std::array<std::uint32_t, 8> weights{1, 1, 1, 1, 1, 1, 1, 1};  // DWRR
  std::uint8_t strict_classes = 0xc0;                            // DWRR: classes served strictly first (6, 7)
  bool ecn = true;
  bool mark_at_enqueue = false;
  bool mark_by_port = false;  // WRED reads the egress port's bytes, all queues (else the packet's queue)
  Wred wred;
  // The marking of an egress port at a listed rate (the HPCC ns-3 model's KMIN_MAP,
  // KMAX_MAP, PMAX_MAP); other ports mark with `wred`.
  struct RateWred {
    BitRate rate;
    Wred wred;
  };
  std::vector<RateWred> wred_by_rate;
  LoadBalance load_balance = LoadBalance::ecmp;
  // Adaptive routing and flowlets (lb adaptive, flowlet): the hashed port's advantage;
  // the idle gap that ends a flowlet; how a new flowlet picks its port; the entries of
  // the flow table that remembers each flow's port (a power of two; flows that hash to
  // one entry take turns in it).
  Bytes ar_bias = Bytes::from_count(0);
  Time flowlet_timeout = Time::from_ps(50'000'000);  // 50 us
  FlowletChoice flowlet_choice = FlowletChoice::least_loaded;
  std::uint32_t flow_table = 4096;
  // Packet trimming (0 = off): a data packet whose egress queue (its priority's) would
  // hold more than `trim_threshold` bytes with it, or that the MMU would drop, is cut to
  // its headers (trimmed: its payload gone, counted) and queued at `trim_priority` at
  // this and every later switch; the receiver answers it with a NAK at once.
  Bytes trim_threshold = Bytes::from_count(0);
  std::uint8_t trim_priority = 7;
  HashFunction hash = HashFunction::crc32;
  std::uint8_t hash_fields = kAllHashFields;
  std::uint32_t seed = 0;
  bool seed_per_switch = true;  // false: every switch hashes alike (polarizes)
};

// Throws InputError when a switch configuration cannot run (the keys named as the
// scenario spells them): a flow table that is not a power of two, trimmed headers on a
// priority the scheduler does not serve strictly.
void check_switch_config(const SwitchConfig& cfg);

class alignas(64) Switch final : public Node, public EventHandler {
 public:
  Switch(FabricContext& ctx, std::string name, std::uint32_t switch_index, const SwitchConfig& cfg,
         std::uint64_t run_seed);

  // Called once all ports exist: sizes the MMU (throws InputError when the reserves and
  // headroom do not fit in the buffer).
  void finalize();
  // The simulator, pool and ledger of the partition this node runs in (before the run;
  // its ports are bound separately).
  void bind(FabricContext& ctx) { ctx_ = &ctx; }
  // Called when the run starts: arms the watchdog's poll.
  void start();
  // HPCC-PINT: T of each port's utilization estimate (the network's base RTT, the
  // model's maxRtt).
  void set_int_window(Time t) { pint_t_ps_ = static_cast<double>(t.ps()); }
  // HPCC-PINT: port `port`'s utilization estimate (0 before its first data packet).
  double pint_utilization(std::size_t port) const { return pint_ports_.empty() ? 0 : pint_ports_[port].u; }
  // Equal-cost egress ports toward each host, filled by the network's routing as a real
  // switch's forwarding table: a host is found by its edge switch, whose hosts all share
  // one ECMP group here (a leaf's prefix), but for hosts routed on their own (this
  // switch's own hosts, static routes). Host h's edge switch is edge_of_host[h] (the
  // network's array of `hosts`, which outlives the switch; an index into group_of_edge);
  // `own`: (host, group) for the hosts on its ports, `fixed` for static routes, each by
  // host (a static route replaces an own host's route); group g's ports are
  // ports[begin[g], begin[g + 1]).
  using HostGroups = std::vector<std::pair<std::uint32_t, std::uint32_t>>;
  void set_routes(const std::uint32_t* edge_of_host, std::size_t hosts, const std::vector<std::uint32_t>& group_of_edge,
                  const HostGroups& own, const HostGroups& fixed, const std::vector<std::uint32_t>& begin,
                  const std::vector<std::uint16_t>& ports);

  // The equal-cost egress ports toward host `host` (once routed).
  std::span<const std::uint16_t> next_hops(std::uint32_t host) const {
    const Route& r = route_to(host);
    return {route_ports_.data() + r.first, r.count};
  }
  // Entries of its forwarding table: one per edge switch (and one for hosts no switch
  // reaches), one per host routed on its own.
  std::size_t route_entries() const {
    return by_edge_.size() + far_.size() +
           static_cast<std::size_t>(std::count_if(own_.begin(), own_.end(), [](const Route& r) { return r.own; }));
  }

  Packet* next_packet(Port& port) override;
  void transmitted(Port& port, const SentFrame& f) override;
  void started(Port& port, const SentFrame& f) override;
  void receive(Port& port, Packet* p) override;
  void emit_counters(std::size_t port, PortCounters& c) const override;
  void on_event(std::uint64_t tag) override;

  // Per-port statistics.
  std::uint64_t drops(std::size_t port) const { return ports_[port].drops; }
  std::uint64_t ecn_marks(std::size_t port) const { return ports_[port].ecn_marks; }
  // Packets sent by this port whose flow's previous packet here left by another (lb
  // adaptive, flowlet).
  std::uint64_t rerouted(std::size_t port) const { return rerouted_.empty() ? 0 : rerouted_[port]; }
  // Data packets this port's queues took trimmed (cut to their headers here).
  std::uint64_t trimmed(std::size_t port) const { return ports_[port].trimmed; }
  std::int64_t max_queue_bytes(std::size_t port) const {
    return std::max(ports_[port].max_queued, ports_[port].max_queued_before);
  }
  // The most the port's queues held since the last call (or the start), and from now on
  // the most since now (starting from what they hold now): the maximum over a span. The
  // run's maximum stays whole (the packet path keeps one maximum, the span's; the spans
  // before are folded into another).
  std::int64_t take_max_queue_since(std::size_t port) {
    SwitchPort& sp = ports_[port];
    sp.max_queued_before = std::max(sp.max_queued_before, sp.max_queued);
    return std::exchange(sp.max_queued, sp.queued);
  }
  std::int64_t queued_bytes(std::size_t port) const { return ports_[port].queued; }
  std::int64_t headroom_of(std::size_t port) const { return ports_[port].headroom; }
  std::int64_t shared_pool() const { return shared_size_; }
  std::uint32_t seed() const { return seed_; }
  // Watchdog statistics, per port.
  std::uint64_t storms(std::size_t port) const { return ports_[port].storms; }
  std::uint64_t watchdog_drops(std::size_t port) const { return ports_[port].wd_drops; }
  bool in_storm(std::size_t port, std::uint8_t prio) const { return ports_[port].storm[prio]; }
  // The packets queued for `port` at `prio` (deadlock detection reads their ingress).
  const PacketFifo& queue(std::size_t port, std::uint8_t prio) const { return ports_[port].queue[prio]; }

  // The first packet of each non-empty queue, appended to `heads`: the end-of-run audit
  // walks the queues of every switch together (for_each_in_turns), since a few long
  // queues hold most packets.
  void queue_heads(std::vector<const Packet*>& heads) const;
  // Empties every queue, appending each one's packets (still linked) to `lists` for the
  // caller to release (the network, for every switch at once).
  void take_queued(std::vector<Packet*>& lists);

 private:
  struct PgState {
    std::int64_t used = 0;  // bytes of this ingress (port, PG) in the switch
    std::int64_t headroom_used = 0;
    std::int64_t reserved = 0;  // reserve_per_port: bytes of the port's reserve this PG holds
    bool xoff = false;
    Time refresh_at = Time::max();
  };
  // Per port, the fields a packet touches first (its queue's state and the egress
  // totals), then its ingress accounting, then the scheduler's and the cold ones.
  struct alignas(64) SwitchPort {
    std::uint8_t backlogged = 0;  // bit c: queue[c] holds packets
    std::uint8_t rr = 0;
    std::uint8_t wred_class = 0, th_class = 0;  // its rate's entry of wreds_, alphas_ (0: the switch's)
    std::array<bool, 8> storm{};
    std::int64_t queued = 0, max_queued = 0;  // (max_queued: since take_max_queue_since)
    std::array<std::int64_t, 8> queue_bytes{};
    std::array<PacketFifo, 8> queue;
    std::array<PgState, 8> pg;
    std::int64_t headroom = 0;  // per lossless PG
    std::int64_t reserved = 0;  // reserve_per_port: bytes of the reserve its PGs hold
    std::uint64_t drops = 0, ecn_marks = 0;
    std::array<std::int64_t, 8> deficit{};
    std::uint64_t trimmed = 0;
    std::array<bool, 8> quantum_given{};
    std::array<Time, 8> storm_ended{};
    std::uint64_t storms = 0, wd_drops = 0;
    std::int64_t max_queued_before = 0;  // the maximum before take_max_queue_since
  };
  static constexpr std::uint64_t kWatchdogTag = 1ull << 40;
  void watchdog_poll();
  bool forwarding(const SwitchPort& sp, std::uint8_t prio) const {
    return sp.storm[prio] && path_.wd_action == WatchdogAction::forward;
  }
  // Counts `p` as dropped at `sp` and in the ledger (drop()).
  void drop_packet(SwitchPort& sp, Packet* p, DropReason why, std::uint8_t lossless = 0);

  // A PG's bytes in the shared pool: beyond its reserve, or beyond what it holds of its
  // port's (reserve_per_port).
  std::int64_t shared_part(const PgState& g) const {
    if (path_.reserve_per_port) return g.used - g.headroom_used - g.reserved;
    const std::int64_t s = g.used - g.headroom_used - path_.reserve;
    return s > 0 ? s : 0;
  }
  // The shared-pool limit of an ingress (port, PG) at `sp`.
  std::int64_t shared_limit(const SwitchPort& sp) const;
  bool admit(std::uint16_t in, std::uint8_t pg, std::int64_t size);
  void release(std::uint16_t in, std::uint8_t pg, std::int64_t size);
  void send_pause(std::uint16_t in, std::uint8_t pg, std::uint16_t quanta);
  std::uint16_t choose_egress(const Packet& p);
  // Queues `p` (admitted at ingress port `in`) at egress port `out`, in queue `q`.
  [[gnu::always_inline]] void enqueue(std::uint16_t in, std::uint16_t out, std::uint8_t q, Packet* p);
  // receive() with trimming on: the egress chosen first, then the trim threshold and the
  // MMU (a packet it refuses is trimmed, and dropped only if its headers do not fit).
  [[gnu::noinline]] void receive_trimming(std::uint16_t in, Packet* p);
  void trim(Packet& p, SwitchPort& at);
  // lb adaptive and flowlet: the port of group [b, b + n) for `p`, through the flow table.
  [[gnu::noinline]] std::uint16_t choose_adaptive(const Packet& p, std::uint32_t b, std::uint32_t n);
  Packet* dequeue(SwitchPort& sp, Port& port);
  // INT: `p`, a data packet with a stack, records this hop (telemetry.h); out of line, so
  // that the runs without INT keep dequeue's fast path small. Throws InputError when the
  // stack has no slot left.
  [[gnu::noinline]] void stamp_int(Packet& p, const SwitchPort& sp, const Port& port);
  // HPCC-PINT, for every packet the port sends: a data packet with a stack gets the
  // port's new utilization estimate, the model's (switch-node.cc, CC_MODE 10)
  //   u = qlen dt / (B T^2) + last / (B T) + u (T - dt) / T
  // (qlen: the port's bytes queued without it; dt: the time since the port's last packet
  // of any kind, at most T; last: that packet's bytes on the wire, frame and gap; B: the
  // line rate in bytes per unit time) encoded in its PINT code if above the code it has;
  // every packet then becomes the port's last. The model computes the three terms with a
  // hardware-style log2 (16 significant bits, rounded at random; qlen in 256-byte units):
  // here they are exact.
  [[gnu::noinline]] void pint_dequeue(Packet& p, const SwitchPort& sp, const Port& port);
  void maybe_mark(SwitchPort& sp, Packet& p, std::uint8_t prio);

  // Members in the order a packet reads them, the switch line-aligned: the part of the
  // configuration a packet reads is copied into path_, which fills the switch's third
  // line with the shared-pool use (cfg_ spans three lines, far behind).
  FabricContext* ctx_;
  std::uint32_t seed_;
  std::uint32_t seed_hash_;  // flow_hash_seed(cfg_.hash, seed_)
  std::uint64_t seed_mix_;   // odd multiplier from the seed: the selection's finalizer
  // Which of n next hops a hash picks. CRCs and XOR-fold are linear, so with a power-of-
  // two n a seed XORed into the hash would only relabel the next hops, and every tier
  // below the first would follow the first's choice whatever its seed; hardware avoids
  // this with per-switch hash offsets and bit selections. A multiply by an odd constant
  // from the seed, keeping the high bits, plays that part: equal seeds (and functions)
  // still choose alike at every tier, and polarize.
  std::uint32_t select(std::uint32_t h, std::uint32_t n) const {
    const std::uint64_t x = (h * seed_mix_) >> 32;
    return static_cast<std::uint32_t>((x * n) >> 32);
  }
  double alpha_;  // dynamic threshold: 2^dynamic_th
  struct PacketPath {
    std::int64_t reserve, static_th, xon_offset;
    Wred wred;
    std::uint8_t lossless;  // cfg_.pfc.active()
    std::uint8_t strict;    // classes served strictly: all (strict) or cfg_.strict_classes (DWRR)
    ThresholdMode threshold_mode;
    Scheduler scheduler;
    LoadBalance load_balance;
    WatchdogAction wd_action;
    bool ecn, mark_at_enqueue, mark_by_port, reserve_per_port, release_at_start;
    bool wred_by_rate, th_by_rate;  // some port has an entry of wreds_, alphas_: read its class
    bool trim;                      // cfg_.trim_threshold > 0
    IntMode int_mode;               // what a dequeue writes into a packet's INT stack, if anything
  };
  std::int64_t shared_size_ = 0, shared_used_ = 0;
  PacketPath path_;
  std::vector<SwitchPort> ports_;
  // By class (SwitchPort::wred_class, th_class): 0 is path_.wred and alpha_, then the
  // entries of cfg_.wred_by_rate and dynamic_th_by_rate.
  std::vector<Wred> wreds_;
  std::vector<double> alphas_;
  // Next hops: route_ports_[first, first + count). Groups with the same next hops share
  // one list (a leaf's uplinks serve every remote leaf), so what a switch reads per
  // packet -- its edge switch, then one route of a table by edge switch -- stays small
  // and in cache whatever the number of hosts.
  struct Route {
    std::uint32_t first = 0;
    std::uint16_t count = 0;
    // By edge switch: some hosts behind it are routed on their own. In own_: this host is.
    bool own = false;
  };
  const std::uint32_t* edge_of_host_ = nullptr;
  std::size_t hosts_ = 0;
  std::vector<Route> by_edge_;
  // Hosts routed on their own: those from own_lo_ to the last of the switch's own hosts
  // (usually consecutive) in own_[host - own_lo_] (`own`: this one is); static routes to
  // hosts outside that range in far_, by host.
  std::uint32_t own_lo_ = 0;
  std::vector<Route> own_;
  std::vector<std::pair<std::uint32_t, Route>> far_;
  const Route& route_to(std::uint32_t host) const {
    const Route& r = by_edge_[edge_of_host_[host]];
    if (!r.own) return r;
    if (const std::uint32_t i = host - own_lo_; i < own_.size()) return own_[i].own ? own_[i] : r;
    const auto at = std::lower_bound(far_.begin(), far_.end(), host,
                                     [](const auto& e, std::uint32_t h) { return e.first < h; });
    return at != far_.end() && at->first == host ? at->second : r;
  }
  std::vector<std::uint16_t> route_ports_;
  RandomStream rng_;
  std::vector<std::uint32_t> spray_next_;  // per host: round-robin position (round-robin spraying only)
  const SwitchConfig cfg_;                 // never changes: path_ copies part of it
  // HPCC-PINT (path_.int_mode pint): per port, the estimate u, the last packet's bytes and
  // time; T; the code; the stream of its rounding.
  struct PintPort {
    double u = 0;
    double last_bytes = 0;
    Time last_at;
  };
  std::vector<PintPort> pint_ports_;
  // Adaptive routing and flowlets: per flow-table entry the flow (its hash key, 0: none),
  // the port its last packet left by and when; per port the packets rerouted.
  struct FlowEntry {
    std::uint32_t key = 0;
    std::uint16_t port = 0;
    Time last;
  };
  std::vector<FlowEntry> flows_;
  std::vector<std::uint64_t> rerouted_;
  std::vector<std::int64_t> queued_;  // scratch: a group's queues
  double pint_t_ps_ = 0;
  std::optional<PintCode> pint_code_;
  RandomStream pint_rng_;
};

}  // namespace fabriclab::fabric
