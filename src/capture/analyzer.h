// The metrics of RoCE captures (`fabriclab analyze`), computed as the frames stream past,
// in memory that grows with the QPs, ports and pauses seen -- not with the frames.
//
// Per QP (a destination QP with its address pair, in one capture): packets, payload bytes
// and throughput over time; ACKs, NAKs by AETH syndrome and RNR NAKs; CNPs with the
// intervals between them; the ECN CE share of its data packets; its data packets' PSNs
// (24 bits, unwrapped, counted from the first one seen): gaps, PSNs still missing,
// duplicates, and the RFC 4737 / RFC 5236 reordering metrics of fabric/reorder_metrics.h
// (the code the simulator's reorder recorder runs). Per sending port: CNP intervals (the
// CNPs to one address, whatever the QP). PFC per sender MAC and priority: XOFF and XON
// frames, quanta and, at a known link speed, the time paused and the paused intervals (a
// pause lasts quanta x 512 bit times from its frame; a later frame of the same class
// replaces it, quanta 0 ends it). Per capture: frames by kind, truncated, malformed, bad
// ICRCs and IPv4 checksums, unknown opcodes -- counted, never fatal.
//
// Times are since the capture's first frame (its epoch time is kept).
//
//   Analyzer a(options);
//   read_capture("mirror.pcapng", a);  // or a.begin_capture(name); a.frame(...)...; a.end_capture();
//   for (const QpStats& q : a.qps()) ...
#pragma once

#include <functional>

#include <cmath>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "capture/decode.h"
#include "core/units.h"
#include "fabric/reorder_metrics.h"

namespace fabriclab::capture {

// The slowest link pauses are timed at: below it a pause of 65535 quanta would outlast what
// Time holds, and no RoCE link is that slow.
inline constexpr std::int64_t kMinLinkSpeedBps = 1'000'000;

struct AnalyzeOptions {
  // For pause times: when not given, a pcapng capture's own if_speed; without either PFC is
  // counted in quanta only.
  std::optional<BitRate> link_speed;
  Time bin;  // throughput bin; zero: automatic (1 us doubled until <= kMaxBins bins, and all within kMaxBinCells)
  std::uint64_t reorder_window = 65536;  // packets a QP's re-sequencer holds before giving up a missing PSN
  // Every QP's first PSN when known (a test stream's); otherwise PSNs count from the first
  // one seen, and those behind it are `before_start`.
  std::optional<std::uint32_t> first_psn;
  std::uint64_t max_pause_intervals = 1'000'000;  // paused intervals kept for the timeline (all are counted)
  static constexpr std::size_t kMaxBins = 256;
  static constexpr std::size_t kMaxGivenBins = std::size_t{1} << 22;  // with --bin: more is an input error
  // What one analysis keeps, over all its captures: QPs (source, destination, QP number),
  // CNP targets and PFC senders (MAC and priority), each at most kMaxTracked, and
  // throughput bins over all QPs at most kMaxBinCells (128 MiB of them). Past either, an
  // input error names the frame; automatic bins widen instead (kMaxTracked QPs of one bin
  // each fit).
  static constexpr std::size_t kMaxTracked = std::size_t{1} << 19;
  static constexpr std::uint64_t kMaxBinCells = std::uint64_t{1} << 24;
  static_assert(kMaxTracked < kMaxBinCells);
};

// Running minimum, maximum and mean of intervals between events.
struct Intervals {
  std::uint64_t count = 0;
  Time min, max;
  // A double: a hostile capture's intervals may each be weeks long, and the mean of
  // microsecond intervals stays exact below 2^53 ps (2.5 hours) in all.
  double sum_ps = 0;
  void add(Time d);
  Time mean() const { return count ? Time::from_ps(std::llround(sum_ps / static_cast<double>(count))) : Time(); }
};

struct CaptureSummary {
  std::string name;
  std::int64_t start_epoch_ns = 0;                     // the first frame's timestamp
  Time earliest, latest;                               // since the first frame (earliest < 0 when timestamps go back)
  Time duration() const { return latest - earliest; }  // the span of its timestamps
  std::uint64_t frames = 0, bytes = 0;                 // bytes as on the wire (the frames' original lengths)
  std::uint64_t roce = 0, roce_v1 = 0, erspan = 0, pfc = 0, other = 0, truncated = 0, malformed = 0;
  std::uint64_t short_captured = 0;  // frames captured shorter than they were (snap length)
  std::uint64_t unknown_opcode = 0, icrc_ok = 0, icrc_bad = 0, icrc_unchecked = 0, ipv4_checksum_bad = 0;
  std::uint64_t fcs_ok = 0, fcs_bad = 0;       // frames captured with their FCS (the rest have none to check)
  std::uint64_t timestamps_backwards = 0;      // frames stamped before the frame ahead of them
  Time bin;                                    // its throughput bins' width
  std::optional<BitRate> link_speed;           // the speed its pauses are timed at (given, or its own)
  std::vector<std::uint64_t> cnp_interval_us;  // [k]: CNP intervals (per QP) in [k, k+1) us; the last is 1 ms and more
  std::vector<std::uint64_t> extent_count;     // reordered packets by extent, over its QPs
};

struct QpStats {
  std::size_t capture = 0;
  Address src, dst;
  std::uint32_t qp = 0;
  Time first, last;  // any packet of it
  std::uint64_t packets = 0, data_packets = 0, payload_bytes = 0;
  // Of the data packets, RDMA READ responses: they carry the requester's PSNs, a sequence of
  // their own beside the peer's SENDs and WRITEs to the same QP, and are not PSN-tracked.
  std::uint64_t read_responses = 0;
  // Of the others, those with a bad ICRC: counted, their PSNs not tracked (a receiver drops
  // them). The rest are received, duplicates or before the start.
  std::uint64_t icrc_bad = 0;
  std::uint64_t acks = 0, rnr_naks = 0, cnps = 0, becn_acks = 0, read_requests = 0, atomics = 0, unknown_opcode = 0;
  std::uint64_t naks[5] = {};     // PSN sequence error, invalid request, remote access, remote operational, other
  std::uint64_t ect = 0, ce = 0;  // data packets ECN-capable, and marked CE
  // Data packets' PSNs
  Time data_first, data_last;
  std::uint64_t psn_gaps = 0;      // arrivals that skipped ahead of the next expected PSN
  std::uint64_t before_start = 0;  // PSNs behind the first one seen (sent before the capture began)
  fabric::ReorderTracker reorder;
  Intervals cnp;                         // between the CNPs to this QP
  std::vector<std::uint64_t> bin_bytes;  // payload bytes per throughput bin

  // internal: the PSN unwrapping
  std::uint32_t psn_base = 0;
  std::int64_t psn_high = -1;
  Time last_cnp;
  explicit QpStats(std::uint64_t window) : reorder(window) {}
  double throughput_gbps() const;  // payload over its first to last data packet; 0 with fewer than 2
};

// CNPs to one address (the data sender's port), whatever the QP.
struct CnpPort {
  std::size_t capture = 0;
  Address address;
  std::uint64_t cnps = 0;
  Intervals intervals;
  Time last;
};

// PFC frames from one MAC (one end of a link) for one priority.
struct PfcStats {
  std::size_t capture = 0;
  std::array<std::uint8_t, 6> mac{};
  std::uint8_t priority = 0;
  std::uint64_t xoff = 0, xon = 0, quanta = 0;
  std::uint64_t pauses = 0;  // paused intervals (needs the link speed)
  Time paused;               // their total time
  // internal: the pause in effect, and the last frame's time
  bool in_pause = false;
  Time pause_start, paused_until, last;
};

struct PauseInterval {
  std::size_t pfc;  // index into pfc()
  Time start, end;
};

class Analyzer {
 public:
  explicit Analyzer(AnalyzeOptions o) : o_(o) {}

  // `link_speed`: the capture's own, used when the options give none.
  void begin_capture(const std::string& name, std::optional<BitRate> link_speed = std::nullopt);
  // One frame: its timestamp (ns since the epoch), captured bytes and original length.
  void frame(std::int64_t epoch_ns, const std::uint8_t* data, std::size_t caplen, std::size_t len);
  void end_capture();

  const AnalyzeOptions& options() const { return o_; }
  const std::vector<CaptureSummary>& captures() const { return captures_; }
  // In the order first seen.
  const std::deque<QpStats>& qps() const { return qps_; }
  const std::vector<CnpPort>& cnp_ports() const { return cnp_ports_; }
  const std::vector<PfcStats>& pfc() const { return pfc_; }
  const std::vector<PauseInterval>& pause_timeline() const { return timeline_; }
  std::uint64_t pause_intervals_dropped() const { return timeline_dropped_; }

 private:
  struct Key {
    std::size_t capture;
    Address a, b;
    std::uint32_t n;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const;
  };
  QpStats& qp(const Frame& f);
  void data_packet(QpStats& q, const Frame& f, Time t);
  void cnp(QpStats& q, const Frame& f, Time t);
  void pfc_frame(const Frame& f, Time frame_time);
  void end_pause(std::size_t i, Time end);
  void add_bytes(QpStats& q, Time t, std::uint64_t bytes);
  // Before the analysis keeps one more of `what` (it keeps `kept`): an input error past kMaxTracked.
  void check_tracked(std::size_t kept, const char* what) const;

  AnalyzeOptions o_;
  std::vector<CaptureSummary> captures_;
  std::deque<QpStats> qps_;  // a deque: a QP's tracker is not moved as more come
  std::vector<CnpPort> cnp_ports_;
  std::vector<PfcStats> pfc_;
  std::vector<PauseInterval> timeline_;
  std::uint64_t timeline_dropped_ = 0;
  std::uint64_t bin_cells_ = 0;  // throughput bins over all QPs
  std::unordered_map<Key, std::size_t, KeyHash> qp_index_, cnp_index_, pfc_index_;
  bool open_ = false;
  Time prev_;
  std::vector<std::size_t> capture_qps_;  // the QPs of the open capture (for rebinning)
};

// The speed of the first interface a pcapng file describes (its Interface Description
// Block's if_speed option), or nothing: a pcap file, or no such option. libpcap reads the
// block but does not hand its options out, so the block is read here; a malformed one is
// left to libpcap to report. Nothing for "-" (standard input, which is read once).
std::optional<BitRate> pcapng_link_speed(const std::string& path);

// Streams a pcap or pcapng file (libpcap; nanosecond timestamps; "-" is standard input)
// into the analyzer as one capture. InputError naming the file when it cannot be opened or read, or when its link
// type is not Ethernet. `read`, when given, is told every 65 536 frames how many bytes of
// the file have been read (progress).
void read_capture(const std::string& path, Analyzer& a, const std::function<void(std::uint64_t)>& read = {});

}  // namespace fabriclab::capture
