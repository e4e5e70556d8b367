// A host and its RoCEv2 NIC (one port). Each flow is carried by one or more queue pairs;
// each QP sends its share of the flow as one RDMA WRITE message, segmented at the MTU.
//
// Sender: packets leave round-robin over the QPs with data (per priority, highest
// first), paced at the rate the QP's congestion control allows, never on a paused
// priority. RC: cumulative ACKs advance the oldest unacknowledged PSN; a NAK (sequence
// error) or a retransmission timeout without progress goes back to it (go-back-N).
// UC: no ACKs, nothing is resent. IRN: selective repeat (IrnParams below: SACKs, only
// the lost packets resent, BDP-FC, RTO low/high).
// Receiver: a data packet a switch trimmed to its headers (switch.trim) carries no data:
// RC answers it at once with a NAK at the expected PSN if it was that PSN, or if it opens
// a gap not yet NAKed (go-back-N can ask only for everything from the expected PSN on);
// IRN with a NACK for that PSN alone; UC counts it as lost.
// RC accepts the expected PSN, acknowledges every `ack_every` packets and the
// last one, answers the first out-of-sequence packet of a gap with one NAK and drops the
// gap, and re-acknowledges duplicates. With a reorder window W > 0 it also accepts and
// places packets up to W beyond the expected PSN (a bitmap) and NAKs only beyond that,
// or, with `reorder_timeout`, when the gap at the expected PSN has not filled by then.
// UC drops the rest of a message after a gap and discards packets from the past. As the
// notification point it answers a CE-marked packet with a CNP to the sending QP (or the
// BECN bit on its next ACK), at most one per `min_time_between_cnps` per QP or per port,
// since the last or per window (`CnpParams`) -- under the policies that read CNPs. For the
// policies that read ACKs (cc/congestion.h) it instead echoes CE marks on its ACKs, keeps
// each PSN's send time for RTT samples and holds a QP whose bytes in flight reach the
// policy's window until an ACK opens it; for Swift its ACKs also carry how long it held
// the packet they answer and the switches that packet crossed.
// Connections (open_send_connection / open_recv_connection): a QP that carries RDMA WRITE
// messages posted one after another during the run (post()), its PSNs running on across
// them; the receiver acknowledges the last packet of every message at once, and the
// context's MessageEvents learn each message's arrival and completion by its tag. UC
// connections resume at the next message's first packet after a gap (the broken
// message never arrives).
// Receive buffer: with `rx_rate` set, arriving packets wait in a buffer of `rx_buffer`
// bytes that the host drains at that rate (PCIe, memory); past `rx_buffer - headroom`
// the NIC sends PFC pauses for the lossless priorities (refreshed at half their time
// unless switch.pfc.pause_refresh = "off"),
// and resumes them `xon_offset` below. A packet that does not fit is dropped (on a
// lossless priority: counted as a lossless drop). Unset, the host takes packets as they
// arrive and never pauses anyone.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/params.h"
#include "core/ring.h"
#include "core/units.h"
#include "fabric/cc/congestion.h"
#include "fabric/context.h"
#include "fabric/entropy.h"
#include "fabric/cc/dcqcn.h"
#include "fabric/cc/dctcp.h"
#include "fabric/cc/hpcc.h"
#include "fabric/cc/nscc.h"
#include "fabric/cc/swift.h"
#include "fabric/cc/timely.h"
#include "fabric/flows.h"
#include "fabric/hash.h"
#include "fabric/node.h"
#include "fabric/pfc.h"

namespace fabriclab::fabric {

// RC go-back-N, UC, RC with selective repeat and out-of-order placement as IRN defines
// it (Mittal et al., "Revisiting Network Support for RDMA", SIGCOMM 2018; see IrnParams),
// or the Ultra Ethernet transport's reliable unordered delivery over sprayed entropies
// (UetParams).
enum class Transport : std::uint8_t { rc, uc, irn, uet };
inline constexpr params::EnumNames<Transport, 4> kTransportNames{
    {{Transport::rc, "rc"}, {Transport::uc, "uc"}, {Transport::irn, "irn"}, {Transport::uet, "uet"}}};

// IRN (nic.transport = "irn"): the receiver places every packet within its bitmap where
// it belongs and answers each out-of-order one with a NACK carrying the cumulative ACK
// and that packet's PSN (a selective ACK); the sender keeps the PSNs SACKed, counts a
// hole as lost once a PSN more than `reorder_tolerance` beyond it is SACKed (IRN: any
// later one), resends only the lost ones, first, once per recovery episode (which ends
// when the cumulative ACK passes what had been sent when it began), and never has more
// than the BDP cap of packets outstanding beyond the cumulative ACK (BDP-FC), which is
// also the receiver's bitmap. Timeout: RTO_low while fewer than `rto_low_packets` are in
// flight, else RTO_high; it counts every unacknowledged hole as lost.
inline constexpr std::uint32_t kMaxIrnCap =
    65536;  // packets: a sending QP's bitmaps at most 24 KiB, a receiving one's 8
struct IrnParams;
// IRN's BDP cap in packets: nic.irn.bdp_cap, or the BDP of `rtt` at `rate` in MTUs; an
// InputError above kMaxIrnCap or when the reorder tolerance could never mark a loss.
std::uint32_t irn_bdp_cap(const IrnParams& p, std::uint32_t mtu, BitRate rate, Time rtt);
struct IrnParams {
  std::uint32_t bdp_cap = 0;  // packets; 0 = the BDP: the network's base RTT at the NIC's line rate, in MTUs
  Time rto_low = Time::from_ps(100'000'000);   // 100 us (IRN's)
  Time rto_high = Time::from_ps(320'000'000);  // 320 us (IRN's)
  std::uint32_t rto_low_packets = 3;           // IRN's N
  std::uint32_t reorder_tolerance = 0;         // 0: IRN's rule
};
// UET (nic.transport = "uet"): reliable unordered delivery as UE 1.0 defines it and
// uet-htsim models it. Every packet carries an entropy value (entropy.h: `entropies`
// values, picked by `entropy`) in the low bits of its UDP source port, so the switches'
// ECMP sprays a QP's packets; the receiver places each packet where it belongs and
// acknowledges every packet at once, echoing its entropy and PSN (its RTT sample) and, out
// of order, SACKing it (a NACK of syndrome 0x60 with the cumulative ACK, as IRN's). Loss is
// known from a trimmed packet's NACK (0x65) or a timeout only -- SACKs never infer it (the
// spraying reorders) -- and a timeout, counted from the send of the packet in flight sent
// first, resends that packet alone (uet-htsim). Packets in flight (sent, neither acknowledged, SACKed nor known lost)
// are what a window policy (NSCC) bounds, resends included. Outstanding PSNs beyond the cumulative ACK are at most
// `max_outstanding` (the sender's and receiver's bitmaps).
//
// RCCC (`rccc`): receiver credits. A QP may send a packet only while it has credit: at
// first `speculative_bdp` BDPs of it, dropped (if unspent) at the first ACK, NACK or pull;
// then what pulls grant. Each data packet (a trimmed header too) carries the sender's pull
// target: the credit it wants in all, in pull units -- its unsent bytes plus its known
// losses, at most the policy's window + one MTU and speculative_bdp BDPs, less the credit
// it holds, on top of what it was granted -- modulo 256 in the BTH's `syndrome` byte
// (unused on data), which the receiver unwraps against what it granted. The receiving
// NIC's one pacer grants `pull_bytes` (0: 4 MTUs) to one QP at a time, round-robin over
// those below their target, at `pull_share` of its line rate (the granted packets' wire
// bytes). A sender whose credit is spent and whose new demand no packet will carry (a
// message posted on an idle connection, a timeout) sends a request to send.
struct UetParams {
  std::uint32_t entropies = 64;              // a power of two (uet-htsim's -paths)
  EntropyAlgo entropy = EntropyAlgo::mixed;  // uet-htsim's default
  Time rto;                                  // 0 = uet_rto(): 15 us + 6 (trimming) or 30 base RTTs
  std::uint32_t max_outstanding = 0;         // packets; 0 = 8 BDPs (at least 64)
  bool rccc = false;                         // receiver credits
  std::uint32_t pull_bytes = 0;              // credit per pull; 0 = 4 MTUs (uet-htsim's)
  double pull_share = 0.99;                  // of the receiver's line rate
  double speculative_bdp = 1.5;              // credit before the first pull, and the most held
};
// The PSNs a selective-repeat QP may have outstanding beyond its cumulative ACK: IRN's BDP
// cap or UET's max_outstanding for the NIC's transport at `rate` over `rtt` (0 under the
// others); InputError as irn_bdp_cap.
std::uint32_t selective_repeat_cap(const NicConfig& nic, BitRate rate, Time rtt);
// UET's timeout in effect: nic.uet.rto, or uet-htsim's 15 us plus six drains of its
// switch queues -- 1 BDP deep where the switches trim (`trimming`), 5 BDPs where they do
// not -- a BDP's drain at line rate being one base RTT: 15 us + 6 or 30 base RTTs.
Time uet_rto(const UetParams& p, Time base_rtt, bool trimming);

// When a flow is finished (its FCT's end, the instant its dependents may start): its last
// byte placed at the receiver, or the last ACK at the sender (every QP's last PSN
// acknowledged: the sender's completion, as ns-3's RDMA model measures FCT).
enum class FlowEnd : std::uint8_t { placed, acked };
inline constexpr params::EnumNames<FlowEnd, 2> kFlowEndNames{
    {{FlowEnd::placed, "last_byte_placed"}, {FlowEnd::acked, "last_ack_received"}}};

// A NIC's transport statistics (Host::counters()).
struct HostCounters {
  std::uint64_t naks_sent = 0, out_of_sequence_drops = 0, duplicates = 0, ce_marked_received = 0, cnps_sent = 0,
                cnps_received = 0, reordered_accepted = 0, reorder_give_ups = 0, timeouts = 0, rx_buffer_drops = 0,
                misdelivered = 0, trimmed_received = 0;
  // IRN's limits hit: packets beyond the receiver's bitmap (dropped), and the times a
  // sender had new data but its BDP cap of packets outstanding.
  std::uint64_t bitmap_drops = 0, cap_stalls = 0;
  // The most packets the NIC held placed out of order at once, over all its QPs (the
  // reassembly buffer a reorder window or IRN needs).
  std::uint64_t reassembly_peak = 0;
  // UET's receiver credits: pulls sent (receiver), requests to send (sender).
  std::uint64_t pulls_sent = 0, rts_sent = 0;
  // Packets that arrived for a QP destroyed since they were sent (a late ACK or CNP, a
  // duplicate of data already placed): discarded, as a NIC discards a packet for a QP that
  // no longer exists (Host::free_send_qp).
  std::uint64_t late_discarded = 0;
};

struct NicConfig {
  std::uint32_t mtu = 4096;  // payload bytes per packet
  Transport transport = Transport::rc;
  bool ecn_capable = true;                  // data sent ECT(0)
  std::uint32_t ack_every = 0;              // coalesced ACKs: one per this many in-order packets
                                            // (0: 1 for policies that read ACKs, else 8)
  FlowEnd flow_end = FlowEnd::placed;       // when a flow is finished
  Time rto = Time::from_ps(1'000'000'000);  // 1 ms without progress: go back to the oldest unacked
  std::uint32_t reorder_window = 0;         // W: packets accepted beyond the expected PSN (0 = go-back-N)
  IrnParams irn;                            // nic.transport = "irn"
  UetParams uet;                            // nic.transport = "uet"
  Time reorder_timeout;                     // with W: a gap unfilled this long is NAKed (0 = wait for W)
  std::string congestion_control = "none";  // of the sending QPs: a cc_policies() name
  DcqcnParams dcqcn;                        // its parameters (reaction point)
  DctcpParams dctcp;
  TimelyParams timely;
  SwiftParams swift;
  HpccParams hpcc;
  NsccParams nscc;
  Time base_rtt;                                   // of window policies; 0 = the network's longest path's
  CnpParams cnp;                                   // CNP generation (notification point)
  HashFunction ecmp_hash = HashFunction::crc32;    // the switches' function (packets carry its key)
  std::uint8_t ecmp_fields = kAllHashFields;       // and the 5-tuple fields it hashes
  BitRate rx_rate;                                 // 0 = no receive buffer
  Bytes rx_buffer = Bytes::from_count(256 << 10);  // pauses (the network's PfcConfig) past it minus headroom
};

// nic.ack_every as it applies: 0 means 1 for a policy that reads its ACKs (ECN echo, RTT
// samples, a window) and 8 for the others.
std::uint32_t ack_every_of(const NicConfig& cfg);

// Throws InputError when a NIC configuration cannot run (checked once per network: every
// host shares it).
void check_nic_config(const NicConfig& cfg);

class Host final : public Node, public EventHandler, public RateListener {
 public:
  // `cfg` has passed check_nic_config(); `pfc` is the network's (it must outlive the host).
  Host(FabricContext& ctx, std::string name, std::uint32_t host_id, const NicConfig& cfg, const PfcConfig& pfc,
       FlowTable& flows);

  std::uint32_t host_id() const { return host_id_; }
  // IRN's BDP cap or UET's max_outstanding in effect (selective_repeat_cap(); 0 under
  // another transport).
  std::uint32_t outstanding_cap() const { return sr_cap_; }
  // Once connected: sizes the receive buffer's pause point (InputError if it cannot be).
  void finalize();
  // The simulator, pool and ledger of the partition this node runs in (before the run;
  // its ports are bound separately).
  void bind(FabricContext& ctx) { ctx_ = &ctx; }
  // The network's unloaded RTT, for the congestion control of the QPs added after it;
  // under IRN and UET also the cap of PSNs outstanding of its sending QPs and its
  // receiving QPs' bitmaps (one for the whole network: selective_repeat_cap()).
  // Under UET also its timeout (uet_rto()).
  void set_base_rtt(Time t, std::uint32_t sr_cap = 0, Time uet_rto = Time());
  // A receiving QP for `bytes` of flow `flow`; returns its QPN.
  std::uint32_t add_recv_qp(std::uint32_t flow, std::uint64_t bytes);
  // A sending QP toward (dst, dst_qpn), starting at `start` (Time::max(): when
  // start_send_qp says); returns its QPN.
  std::uint32_t add_send_qp(std::uint32_t flow, std::uint32_t dst, std::uint32_t dst_qpn, std::uint64_t bytes,
                            std::uint8_t priority, Time start);
  void start_send_qp(std::uint32_t qp, Time at);
  // A load's finished flows give their QPs back (Network, between windows): send QP `qp`
  // has finished for good when every packet is acknowledged (UC: sent) and it is out of
  // the send ring (its congestion control's timers, if any, run on detached:
  // CongestionControl::retire); receiving QP `qp` when every packet is placed and no pull
  // is pending. A freed QP is destroyed and its number taken by the next QP made here,
  // which keeps the UDP source port and random streams the QP made in that order would
  // have had without recycling. A packet that then arrives for the old QP (its flow no
  // longer the number's) is discarded and counted (HostCounters::late_discarded). The
  // caller frees only finished QPs (as read where the host runs: over several processes,
  // the others free their copies unread).
  bool send_qp_finished(std::uint32_t qp) const;
  bool recv_qp_finished(std::uint32_t qp) const;
  void free_send_qp(std::uint32_t qp);
  void free_recv_qp(std::uint32_t qp);
  std::uint32_t send_peer_qp(std::uint32_t qp) const { return send_.at(qp).dst_qpn; }
  // The send QP numbers made here, in use or free (with recycling, fewer than QPs made).
  std::size_t send_qp_numbers() const { return send_.size(); }
  // Connection `id`'s QPs: the receiving one here, and the sending one toward (dst,
  // dst_qpn); both return their QPN. `messages_hint`: how many messages may be in flight
  // at once (storage reserved up front, so that posting allocates nothing).
  std::uint32_t open_recv_connection(std::uint32_t id);
  std::uint32_t open_send_connection(std::uint32_t id, std::uint32_t dst, std::uint32_t dst_qpn, std::uint8_t priority,
                                     std::uint32_t messages_hint);
  // Posts a message of `bytes` (0 allowed: one packet without payload) on a sending
  // connection QP; InputError past 2^31 packets on one connection.
  void post(std::uint32_t qp, std::uint64_t bytes, std::uint32_t tag);
  // The payload of a sending connection QP's messages completed so far (RC: wholly
  // acknowledged; UC: sent).
  std::uint64_t connection_bytes_completed(std::uint32_t qp) const {
    return conns_.at(send_.at(qp).conn).completed_bytes;
  }

  Packet* next_packet(Port& port) override;
  void receive(Port& port, Packet* p) override;
  void emit_counters(std::size_t port, PortCounters& c) const override;
  void on_event(std::uint64_t tag) override;
  void rate_raised(std::uint32_t qp) override;

  // Send QP `qpn`'s UDP source port (its base: UET's entropies set its low bits).
  std::uint16_t send_source_port(std::uint32_t qpn) const { return send_.at(qpn).sport; }
  // Each sending QP: f(qpn, flow, its congestion control, bytes acknowledged).
  template <typename F>
  void for_each_send_qp(F&& f) const {
    for (std::size_t q = 0; q < send_.size(); ++q) {
      const SendQp& s = send_[q];
      if (s.conn != kNone || s.flow == kNone) continue;  // a connection (no flow), or freed
      const std::uint64_t acked = std::min<std::uint64_t>(s.bytes, std::uint64_t{s.una} * cfg_.mtu);
      f(static_cast<std::uint32_t>(q), s.flow, static_cast<const CongestionControl&>(*s.cc), acked);
    }
  }

  // Receiver statistics, one by one and together.
  HostCounters counters() const {
    return {.naks_sent = naks_sent_,
            .out_of_sequence_drops = oos_drops_,
            .duplicates = duplicates_,
            .ce_marked_received = ce_received_,
            .cnps_sent = cnps_sent_,
            .cnps_received = cnps_received_,
            .reordered_accepted = ooo_accepted_,
            .reorder_give_ups = give_ups_,
            .timeouts = timeouts_,
            .rx_buffer_drops = rx_drops_,
            .misdelivered = misdelivered_,
            .trimmed_received = trimmed_received_,
            .bitmap_drops = bitmap_drops_,
            .cap_stalls = cap_stalls_,
            .reassembly_peak = held_peak_,
            .pulls_sent = pulls_sent_,
            .rts_sent = rts_sent_,
            .late_discarded = late_discarded_};
  }
  std::uint64_t naks_sent() const { return naks_sent_; }
  std::uint64_t out_of_sequence_drops() const { return oos_drops_; }
  std::uint64_t duplicates() const { return duplicates_; }
  std::uint64_t ce_marked_received() const { return ce_received_; }
  std::uint64_t cnps_sent() const { return cnps_sent_; }
  std::uint64_t cnps_received() const { return cnps_received_; }
  std::uint64_t reordered_accepted() const { return ooo_accepted_; }
  std::uint64_t reorder_give_ups() const { return give_ups_; }
  std::uint64_t timeouts() const { return timeouts_; }
  std::uint64_t rx_buffer_drops() const { return rx_drops_; }
  std::uint64_t misdelivered() const { return misdelivered_; }
  std::int64_t rx_buffer_peak() const { return rx_peak_; }
  // Packets waiting in the NIC's control queues (end-of-run ledger), and their release.
  template <typename F>
  void for_each_queued(F&& f) const {
    for (const auto& q : ctrl_)
      for (const Packet* p = q.front(); p; p = p->next) f(*p);
    for (const Packet* p = rx_.front(); p; p = p->next) f(*p);
  }
  void drain();

 private:
  static constexpr std::uint32_t kNone = 0xffffffff;
  struct SendQp {
    std::uint32_t flow, dst, dst_qpn;
    std::uint64_t bytes;
    std::uint32_t npkts;
    std::uint32_t next_psn = 0;  // next to send
    std::uint32_t una = 0;       // oldest unacknowledged
    std::uint32_t high = 0;      // one past the highest PSN ever sent
    std::uint16_t sport = 0;
    std::uint32_t hash_key = 0;  // of (this host, dst, sport)
    std::uint8_t priority;
    bool in_ring = false;
    std::uint32_t ring_next = kNone, ring_prev = kNone;
    Time start, next_send, last_progress;
    Time last_sent;               // when the last packet left, and its wire bytes: the
    std::uint32_t last_wire = 0;  // pacing gap is redone at a new rate
    Time timer_at = Time::max();  // the pending RTO check, if any
    std::unique_ptr<CongestionControl> cc;
    std::uint32_t conn = kNone;  // a connection: its messages in conns_
    // Last, for the policies that read ACKs only: byte offsets (of the QP's messages laid
    // end to end) of next_psn and una, whose difference a window bounds (kept under a
    // windowed policy), and the send times by PSN mod their number (una..high kept).
    std::uint64_t sent_off = 0, acked_off = 0;
    std::vector<Time> sent_at;
    std::uint32_t gen = 0;  // its number's reuses (qp_tag)
  };
  // Adds `s` as a send QP (a freed number, else send_.size()), with its congestion
  // control, UDP source port and ECMP hash key; returns its number.
  std::uint32_t push_send_qp(SendQp s);
  // Whether `p` is for a QP freed since it was sent (its number's flow is not p's).
  bool late(const Packet& p) const;
  // Freed QP numbers, reused last freed first; send QPs made so far (each one's serial).
  std::vector<std::uint32_t> free_send_, free_recv_;
  std::uint32_t send_made_ = 0;
  std::uint64_t late_discarded_ = 0;
  // Freed QPs' congestion controls with events still due (CongestionControl::retire),
  // swept when they have doubled since the last sweep.
  std::vector<std::unique_ptr<CongestionControl>> retired_;
  std::size_t retired_kept_ = 0;
  // A sending connection's messages not yet completed, oldest first: a ring that grows
  // only when full.
  struct Message {
    std::uint32_t first_psn = 0, npkts = 0;
    std::uint64_t bytes = 0;
    std::uint64_t first_byte = 0;  // the connection's bytes posted before it
    std::uint32_t tag = 0;
  };
  struct SendConn {
    std::vector<Message> ring;  // capacity a power of two
    std::size_t head = 0, count = 0;
    std::size_t cursor = 0;  // the message being sent, counted from head
    std::uint64_t completed_bytes = 0;
    Message& at(std::size_t k) { return ring[(head + k) & (ring.size() - 1)]; }
  };
  struct RecvQp {
    std::uint32_t flow = 0;
    std::uint64_t bytes = 0;
    std::uint32_t npkts = 0;
    std::uint32_t expected = 0;
    std::uint32_t since_ack = 0;
    bool nak_sent = false;
    bool broken = false;  // UC: a gap ended the message
    // The sender, learned from the first data packet: where ACKs, NAKs and CNPs go.
    bool peer_known = false;
    std::uint8_t peer_priority = 0;
    std::uint16_t peer_sport = 0;
    std::uint32_t peer = 0, peer_qp = 0;
    std::uint32_t ack_hash_key = 0;                             // of the replies' 5-tuple (this host -> the sender)
    Time last_cnp = Time::max();                                // per-QP CNP interval (max: none sent yet)
    bool becn_pending = false;                                  // the next ACK carries BECN
    bool ce_unechoed = false;                                   // ECN echo: a CE mark the next ACK reports
    std::uint8_t echo_hops = 0;                                 // endpoint echo: of the last data packet,
    Time echo_hold;                                             // the switches it crossed and its hold
    std::vector<std::uint64_t> placed;                          // reorder window bitmap, indexed by PSN mod its size
    std::uint32_t placed_count = 0;                             // packets placed beyond the expected PSN
    std::uint32_t gap_at = 0;                                   // the expected PSN when the give-up timer was armed
    Time gap_due = Time::max();                                 // the pending give-up check
    bool conn = false;                                          // a connection: messages end at their last packets
    std::uint32_t pull_target = 0, latest_pull = 0;             // RCCC: pull units the sender wants, granted
    bool in_pull = false;                                       // RCCC: in the pacer's queue
    std::vector<std::pair<std::uint32_t, std::uint32_t>> ends;  // connection, reorder window:
                                                                // (PSN, tag) of last packets placed ahead
    std::uint32_t gen = 0;                                      // its number's reuses (qp_tag)
  };
  // IRN's sender state beside each SendQp (sr_, IRN only): PSNs SACKed, PSNs resent in
  // the current recovery episode and PSNs trimmed (NACKed as such) since last sent,
  // bitmaps by PSN mod sr_bits_ (they cover una..high, which BDP-FC keeps under the cap);
  // the lost ones are the holes below lost_end neither SACKed nor resent and the trimmed
  // ones (below trimmed_end), found from `scan` on.
  struct SrSend {
    std::vector<std::uint64_t> sacked, resent, trimmed;
    std::uint32_t lost_end = 0, trimmed_end = 0, scan = 0, recovery_end = 0;
    bool recovery = false;
  };
  // UET's sender state beside each SendQp and its SrSend (uet_ only): its entropy picker,
  // each outstanding PSN's entropy and whether it is in flight (sent, neither acknowledged,
  // SACKed nor known lost), by PSN mod sr_bits_, and how many are.
  // Under RCCC also its credit (bytes; spending may take it below 0), the cumulative pull
  // it last heard of (pull units), whether it still speculates, and its packets known lost
  // not yet resent.
  struct UetSend {
    EntropyPicker picker;
    std::vector<std::uint16_t> ev_of;
    std::vector<std::uint64_t> flying;
    std::vector<Time> sent;  // when each outstanding PSN last left (its timeout counts from it)
    std::uint32_t in_flight = 0;
    std::int64_t credit = 0;
    std::uint32_t pull_seen = 0;
    bool speculating = false;
    std::uint32_t lost_pending = 0;
    Time last_rts = Time::max();  // none yet
  };
  enum : std::uint64_t {
    kStart = 1ull << 32,
    kRto = 2ull << 32,
    kRxDrain = 3ull << 32,
    kRefresh = 4ull << 32,
    kGiveUp = 5ull << 32,
    kPull = 6ull << 32,
  };
  // A QP's event: its kind, its number, and its number's generation (bumped each time a
  // freed number is reused, modulo 2^24): an event of a freed QP meets another generation
  // and does nothing. Without recycling every generation is 0: the tags are kind | number.
  static constexpr std::uint64_t kKindMask = 0xffull << 32;
  static constexpr std::uint32_t kGenMask = 0xffffff;
  static std::uint64_t qp_tag(std::uint64_t kind, std::uint32_t q, std::uint32_t gen) {
    return kind | std::uint64_t{gen} << 40 | q;
  }
  void arm_give_up(RecvQp& r, std::uint32_t q);
  void process(Packet* p);
  void send_pauses(std::uint16_t quanta);

  std::uint32_t payload_of(std::uint32_t psn, std::uint32_t npkts, std::uint64_t bytes) const;
  Packet* make_data(SendQp& s);
  const Message& message_of(SendQp& s, std::uint32_t psn);
  void complete_messages(SendQp& s);
  void message_arrived(std::uint32_t tag);
  void place_end(RecvQp& r, const Packet& p);
  bool flush_ends(RecvQp& r);
  void send_control(Packet* p);
  // The byte offset of PSN `psn` of `s` (una's: after complete_messages).
  std::uint64_t acked_offset(const SendQp& s) const;
  bool window_open(const SendQp& s) const {
    if (!windowed_) return true;
    const std::uint64_t w = s.cc->window();
    if (uet_) return w == 0 || std::uint64_t{uet_send_[&s - send_.data()].in_flight} * cfg_.mtu < w;
    return w == 0 || s.sent_off - s.acked_off < w;
  }
  // UET: PSN `psn` of QP `q` is in flight (v) or no longer; keeps the count.
  void set_flying(std::uint32_t q, std::uint32_t psn, bool v);
  void record_send(SendQp& s, std::uint32_t psn, Time now);
  void learn_peer(RecvQp& r, const Packet& data);
  // A control frame to r's sender, on entropy `ev` under UET (its base port otherwise).
  Packet* reply_to(const RecvQp& r, std::uint32_t qpn, std::uint32_t ev);
  // `about`: an IRN NACK's PSN (the packet SACKed, or trimmed), carried in src_qp.
  void send_ack(RecvQp& r, std::uint32_t qpn, std::uint32_t psn, std::uint8_t syndrome, std::uint32_t about = kNone);
  // A CE-marked packet arrived on `r`: a notification if the pacing allows one.
  void notify_congestion(RecvQp& r, std::uint32_t qpn);
  void on_data(Packet* p);
  void on_uc_data(RecvQp& r, Packet* p);
  // A data packet a switch trimmed (its headers only): its data is lost.
  void on_trimmed(RecvQp& r, std::uint32_t q, Packet* p);
  void on_ack(const Packet& p);
  // IRN, UET: an ACK or NACK for `s` (QP q); returns true when it found a packet lost
  // that the sender will resend (AckInfo::nak), the RTT sample if it gave one, and the
  // packets it showed received that none had before (SACKed or cumulatively acknowledged).
  bool on_sr_ack(const Packet& p, SendQp& s, std::uint32_t q, Time now, Time& rtt, std::uint32_t& delivered);
  // UET: the packet in flight (neither acknowledged, SACKed nor known lost) sent first,
  // and when (Time::max(): none); a timeout check (uet-htsim's: the timer runs from that
  // send), and the timeout that makes PSN n lost.
  Time uet_oldest_flying(const SendQp& s, std::uint32_t q, std::uint32_t& n) const;
  void uet_check_timer(SendQp& s, std::uint32_t q, Time now);
  void uet_timeout(SendQp& s, std::uint32_t q, std::uint32_t n);
  // IRN, UET: PSN n is lost for certain (trimmed, or timed out under UET): resent first,
  // again if it was resent already.
  void sr_lose(SrSend& x, std::uint32_t q, std::uint32_t n);
  // RCCC: a request to send unless one went less than a base RTT ago.
  void maybe_send_rts(const SendQp& s, std::uint32_t q);
  // IRN, UET: PSN n of QP q known lost (v) or no longer (resent, acknowledged); keeps
  // UET's count of those not yet resent.
  void mark_lost(SrSend& x, std::uint32_t q, std::uint32_t n, bool v);
  // RCCC: the sender's pull target, modulo 256 pull units; the receiver's reading of one
  // (queues the QP at the pacer when it wants more); a pull or RTS arriving; the pacer's
  // next grant; the first ACK, NACK or pull ends speculation.
  std::uint8_t pull_target_code(const SendQp& s, std::uint32_t q) const;
  // (returns the target it read)
  std::uint32_t note_pull_target(RecvQp& r, std::uint32_t q, std::uint8_t code);
  void send_pull(RecvQp& r, std::uint32_t q);
  void on_pull(const Packet& p);
  void on_rts(const Packet& p);
  void send_rts(const SendQp& s, std::uint32_t q);
  void grant_pull();
  void stop_speculating(std::uint32_t q);
  bool credit_open(std::uint32_t q) const { return !rccc_ || uet_send_[q].credit > 0; }
  // una moves on to `una` (everything before it acknowledged).
  void acknowledge(SendQp& s, std::uint32_t q, std::uint32_t una, Time now);
  // Whether `s` has a packet to send now (IRN: a lost hole, or new data within the cap).
  bool has_work(SendQp& s, std::uint32_t q);
  // IRN: the lost hole to resend next (kNone: none); the next PSN to send (a lost one
  // first).
  std::uint32_t sr_next_lost(const SendQp& s, SrSend& x) const;
  std::uint32_t sr_pick(SendQp& s);
  // IRN: a recovery episode begins (until the cumulative ACK passes s.high), the holes
  // below `lost_end` lost, none resent yet.
  void sr_begin_episode(SrSend& x, const SendQp& s, std::uint32_t lost_end) const;
  Time rto_of(const SendQp& s) const;
  void deliver(RecvQp& r, std::uint32_t psn);
  void qp_complete(const RecvQp& r);
  // One of flow `flow`'s QPs is done (at the end point nic.flow_end chose).
  void flow_qp_done(std::uint32_t flow);
  void ring_insert(std::uint32_t q);
  void ring_remove(std::uint32_t q);
  void arm_timer(SendQp& s, std::uint32_t q, Time at);
  bool bit(const RecvQp& r, std::uint32_t psn) const;
  void set_bit(RecvQp& r, std::uint32_t psn, bool v);

  FabricContext* ctx_;
  std::uint32_t host_id_;
  // What every pull reads, together (the configuration below spans several lines).
  std::uint8_t ctrl_backlog_ = 0;  // bit c: ctrl_[c] holds frames
  std::array<std::uint32_t, 8> ring_head_;
  std::vector<SendQp> send_;
  NicConfig cfg_;
  const PfcConfig& pfc_;
  FlowTable& flows_;
  std::vector<RecvQp> recv_;
  std::vector<SendConn> conns_;
  std::array<PacketFifo, 8> ctrl_;  // ACK/NAK/CNP per priority
  PacketFifo rx_;                   // the receive buffer (rx_rate set)
  std::int64_t rx_bytes_ = 0, rx_peak_ = 0, xoff_at_ = 0;
  bool rx_draining_ = false, xoff_ = false;
  Time refresh_at_ = Time::max();
  Time last_cnp_ = Time::max();  // per-port CNP interval
  Time cnp_interval_;            // min_time_between_cnps
  Time base_rtt_;
  // What the policy reads (CcFeedback): CNPs answered, marks echoed, send times kept, a window.
  bool cnps_on_ = false, echo_ecn_ = false, rtt_samples_ = false, windowed_ = false;
  bool reads_acks_ = false;  // any of the three before: the policy is told of every ACK
  bool echo_endpoint_ = false;
  bool collects_int_ = false;     // its data packets collect INT stacks
  std::uint32_t echo_stack_ = 0;  // the INT stack of the data packet being answered (on_data)
  // The hold of the packet being processed: how long it waited in the receive buffer
  // (0 without one), from the arrival times kept beside the buffer (a ring of them).
  Time hold_;
  std::vector<Time> rx_arrivals_;
  std::size_t rx_arrivals_head_ = 0;
  std::uint32_t ack_every_;  // ack_every_of(cfg_)
  std::uint64_t rx_drops_ = 0, misdelivered_ = 0, trimmed_received_ = 0, bitmap_drops_ = 0, cap_stalls_ = 0;
  std::uint64_t held_ = 0, held_peak_ = 0;  // packets placed out of order now, and at most
  // IRN: its sender state per send QP, the cap, the bits of its bitmaps; and the packets a
  // receiver accepts beyond the expected PSN (IRN: the cap - 1; else nic.reorder_window).
  bool sr_ = false;
  std::vector<SrSend> sr_send_;
  std::uint32_t sr_cap_ = 0, sr_bits_ = 0;
  std::uint32_t recv_window_ = 0;
  // UET: its sender state per send QP; the entropies' mask (their count - 1), and each
  // entropy's change to a packet's ECMP key (flow_hash_key is affine: the key of port
  // base | ev is the base's XOR ev_delta_[ev]); the timeout; the entropy and PSN of the
  // data packet being answered (on_data), which its ACK echoes.
  bool uet_ = false;
  std::vector<UetSend> uet_send_;
  std::uint32_t ev_mask_ = 0;
  std::vector<std::uint32_t> ev_delta_;
  Time uet_rto_;
  std::uint32_t echo_ev_ = 0;
  // RCCC: on; the pull unit (bytes), the pacer's time per pull, a QP's first credit (and
  // the most it may hold); the pacer's queue of receiving QPs, and whether it is running.
  bool rccc_ = false;
  std::uint32_t pull_unit_ = 0;
  Time pull_period_;
  std::int64_t spec_credit_ = 0;
  std::int64_t pull_lead_ = 0;  // the most pull units a sender's target can run ahead of its grant
  GrowingRing<std::uint32_t> pull_queue_;
  bool pacer_running_ = false;
  std::uint64_t pulls_sent_ = 0, rts_sent_ = 0;
  std::uint64_t naks_sent_ = 0, oos_drops_ = 0, duplicates_ = 0, ce_received_ = 0, ooo_accepted_ = 0, timeouts_ = 0,
                cnps_sent_ = 0, cnps_received_ = 0, give_ups_ = 0;
};

}  // namespace fabriclab::fabric
