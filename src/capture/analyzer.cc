#include "capture/analyzer.h"

#include <fmt/format.h>
#include <pcap/pcap.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "core/error.h"

namespace fabriclab::capture {

namespace {

constexpr std::size_t kCnpHistogramBins = 1001;  // 0..999 us, then 1 ms and more

std::int64_t ns_count(Time t) { return t.ps() / 1000; }

std::size_t mix(std::size_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

std::uint64_t word(const Address& a, std::size_t i) {
  std::uint64_t w;
  std::memcpy(&w, a.bytes.data() + 8 * i, 8);
  return w;
}

}  // namespace

void Intervals::add(Time d) {
  if (count == 0 || d < min) min = d;
  if (count == 0 || d > max) max = d;
  sum_ps += static_cast<double>(d.ps());
  ++count;
}

double QpStats::throughput_gbps() const {
  if (data_packets < 2 || data_last <= data_first) return 0.0;
  return static_cast<double>(payload_bytes) * 8.0 / static_cast<double>((data_last - data_first).ps()) * 1e3;
}

std::size_t Analyzer::KeyHash::operator()(const Key& k) const {
  std::size_t h = mix(k.capture, k.n);
  for (std::size_t i = 0; i < 2; ++i) h = mix(mix(h, word(k.a, i)), word(k.b, i));
  return h;
}

void Analyzer::begin_capture(const std::string& name, std::optional<BitRate> link_speed) {
  if (open_) throw std::logic_error("Analyzer::begin_capture: the previous capture is still open");
  captures_.emplace_back();
  captures_.back().name = name;
  captures_.back().link_speed = o_.link_speed ? o_.link_speed : link_speed;
  captures_.back().bin = o_.bin.ps() > 0 ? o_.bin : us(1);
  captures_.back().cnp_interval_us.assign(kCnpHistogramBins, 0);
  capture_qps_.clear();
  open_ = true;
  prev_ = Time();
}

void Analyzer::frame(std::int64_t epoch_ns, const std::uint8_t* data, std::size_t caplen, std::size_t len) {
  if (!open_) throw std::logic_error("Analyzer::frame: no capture open");
  CaptureSummary& c = captures_.back();
  if (c.frames == 0) c.start_epoch_ns = epoch_ns;
  // Time counts picoseconds in 64 bits (106 days): every frame within 50 days of the first,
  // so that any two frames' distance fits too.
  constexpr std::int64_t kMaxNs = std::int64_t{50} * 86400 * 1'000'000'000;
  const std::int64_t rel_ns = epoch_ns - c.start_epoch_ns;
  if (rel_ns > kMaxNs || rel_ns < -kMaxNs)
    throw InputError(fmt::format("{}: frame {} is stamped {} s from the first frame; a capture must lie within "
                                 "50 days of its first frame",
                                 c.name, c.frames + 1, rel_ns / 1'000'000'000));
  const Time t = ns(rel_ns);
  if (c.frames > 0 && t < prev_) ++c.timestamps_backwards;
  prev_ = t;
  c.earliest = std::min(c.earliest, t);
  c.latest = std::max(c.latest, t);

  ++c.frames;
  c.bytes += len;
  if (caplen < len) ++c.short_captured;

  const Frame f = decode_frame(data, caplen, len);
  if (f.erspan) ++c.erspan;
  if (f.fcs == Check::ok) ++c.fcs_ok;
  if (f.fcs == Check::bad) ++c.fcs_bad;
  switch (f.kind) {
    case FrameKind::other: ++c.other; return;
    case FrameKind::truncated: ++c.truncated; return;
    case FrameKind::malformed: ++c.malformed; return;
    case FrameKind::pfc:
      ++c.pfc;
      pfc_frame(f, t);
      return;
    case FrameKind::roce: break;
  }
  ++c.roce;
  if (f.roce_v1) ++c.roce_v1;
  if (f.ip_checksum == Check::bad) ++c.ipv4_checksum_bad;
  (f.icrc == Check::ok ? c.icrc_ok : f.icrc == Check::bad ? c.icrc_bad : c.icrc_unchecked) += 1;
  QpStats& q = qp(f);
  if (q.packets == 0) q.first = t;
  q.last = t;
  ++q.packets;
  if (!f.opcode_known) {
    ++q.unknown_opcode;
    ++c.unknown_opcode;
  } else if (f.opcode == kCnpOpcode) {
    cnp(q, f, t);
  } else if (carries_data(f.opcode)) {
    data_packet(q, f, t);
  } else if (is_ack(f.opcode)) {
    if (f.becn) ++q.becn_acks;  // a congestion notification riding the ACK or NAK
    switch (ack_kind(f.syndrome)) {
      case AckKind::ack: ++q.acks; break;
      case AckKind::rnr_nak: ++q.rnr_naks; break;
      case AckKind::nak_psn_sequence: ++q.naks[0]; break;
      case AckKind::nak_invalid_request: ++q.naks[1]; break;
      case AckKind::nak_remote_access: ++q.naks[2]; break;
      case AckKind::nak_remote_operational: ++q.naks[3]; break;
      case AckKind::nak_other: ++q.naks[4]; break;
    }
  } else if ((f.opcode & 0x1f) == 0x0c) {
    ++q.read_requests;
  } else {
    ++q.atomics;  // compare-swap, fetch-add and their ACKs: what a known opcode leaves
  }
}

QpStats& Analyzer::qp(const Frame& f) {
  const Key k{captures_.size() - 1, f.src_ip, f.dst_ip, f.dest_qp};
  const auto [it, added] = qp_index_.try_emplace(k, qps_.size());
  if (added) {
    check_tracked(qps_.size(), "QPs (source, destination, QP number)");
    qps_.emplace_back(o_.reorder_window);
    QpStats& q = qps_.back();
    q.capture = k.capture;
    q.src = f.src_ip;
    q.dst = f.dst_ip;
    q.qp = f.dest_qp;
    capture_qps_.push_back(qps_.size() - 1);
  }
  return qps_[it->second];
}

void Analyzer::data_packet(QpStats& q, const Frame& f, Time t) {
  if (q.data_packets == 0) q.data_first = t;
  q.data_last = t;
  ++q.data_packets;
  q.payload_bytes += f.payload;
  if (f.ecn != 0) ++q.ect;
  if (f.ecn == 3) ++q.ce;
  add_bytes(q, t, f.payload);
  const std::uint8_t code = f.opcode & 0x1f;
  if (f.opcode >> 5 == 0 && code >= 0x0d && code <= 0x10) {
    ++q.read_responses;
    return;
  }
  if (f.icrc == Check::bad) {
    ++q.icrc_bad;
    return;
  }
  // The PSN, unwrapped: its 24-bit distance from the highest seen, taken as the nearer way
  // round, then counted from the first PSN seen.
  std::int64_t rel = 0;
  if (q.psn_high < 0 && !o_.first_psn) {
    q.psn_base = f.psn;
  } else {
    if (q.psn_high < 0) q.psn_base = *o_.first_psn & 0xffffff;  // the QP's first PSN, before any arrived
    const std::uint32_t high24 = (q.psn_base + static_cast<std::uint32_t>(q.psn_high)) & 0xffffff;
    std::int64_t d = static_cast<std::int64_t>((f.psn - high24) & 0xffffff);
    if (d >= 0x800000) d -= 0x1000000;
    rel = q.psn_high + d;
  }
  if (rel < 0) {
    ++q.before_start;
    return;
  }
  if (rel > q.psn_high + 1) ++q.psn_gaps;
  q.psn_high = std::max(q.psn_high, rel);
  q.reorder.add(static_cast<std::uint64_t>(rel), t);
}

void Analyzer::cnp(QpStats& q, const Frame& f, Time t) {
  CaptureSummary& c = captures_.back();
  if (q.cnps++ > 0) {
    const Time d = std::max(t - q.last_cnp, Time());  // 0 when timestamps go back
    q.cnp.add(d);
    const auto k = static_cast<std::size_t>(std::clamp<std::int64_t>(d / us(1), 0, kCnpHistogramBins - 1));
    ++c.cnp_interval_us[k];
  }
  q.last_cnp = t;
  const Key k{captures_.size() - 1, f.dst_ip, Address{}, 0};
  const auto [it, added] = cnp_index_.try_emplace(k, cnp_ports_.size());
  if (added) {
    check_tracked(cnp_ports_.size(), "addresses CNPs are sent to");
    cnp_ports_.emplace_back();
    cnp_ports_.back().capture = k.capture;
    cnp_ports_.back().address = f.dst_ip;
  }
  CnpPort& p = cnp_ports_[it->second];
  if (p.cnps++ > 0) p.intervals.add(std::max(t - p.last, Time()));
  p.last = t;
}

void Analyzer::add_bytes(QpStats& q, Time t, std::uint64_t bytes) {
  CaptureSummary& c = captures_.back();
  const auto bin_of = [&] { return static_cast<std::size_t>(std::max<std::int64_t>(t / c.bin, 0)); };
  std::size_t bin = bin_of();
  // The bins this packet adds to its QP's.
  const auto added = [&] { return q.bin_bytes.size() > bin ? 0 : bin + 1 - q.bin_bytes.size(); };
  if (o_.bin.ps() == 0) {
    // Automatic bins: double their width, merging pairs, until the capture fits (and the
    // analysis's bins over all QPs do, while merging frees some).
    while (bin >= AnalyzeOptions::kMaxBins || bin_cells_ + added() > AnalyzeOptions::kMaxBinCells) {
      const std::uint64_t before = bin_cells_;
      c.bin = c.bin * 2;
      for (std::size_t i : capture_qps_) {
        auto& v = qps_[i].bin_bytes;
        for (std::size_t j = 0; j < v.size(); ++j) v[j / 2] = (j % 2 ? v[j / 2] : 0) + v[j];
        bin_cells_ -= v.size() / 2;
        v.resize((v.size() + 1) / 2);
      }
      bin = bin_of();
      if (bin == 0 && bin_cells_ == before) break;  // no wider bin frees any
    }
  }
  if (bin >= AnalyzeOptions::kMaxGivenBins)
    throw InputError(fmt::format("{}: --bin {} ns would need more than {} throughput bins (a frame {} ns after the "
                                 "first); give a wider bin, or none for automatic ones",
                                 c.name, ns_count(c.bin), AnalyzeOptions::kMaxGivenBins, ns_count(t)));
  const std::size_t grow = added();
  if (bin_cells_ + grow > AnalyzeOptions::kMaxBinCells)
    throw InputError(fmt::format("{}: frame {}: {} ns throughput bins would be more than {} over the analysis's {} "
                                 "QPs{}",
                                 c.name, c.frames, ns_count(c.bin), AnalyzeOptions::kMaxBinCells, qps_.size(),
                                 o_.bin.ps() > 0 ? "; give a wider --bin, or none for automatic ones" : ""));
  if (grow > 0) {
    bin_cells_ += grow;
    q.bin_bytes.resize(bin + 1, 0);
  }
  q.bin_bytes[bin] += bytes;
}

void Analyzer::check_tracked(std::size_t kept, const char* what) const {
  if (kept < AnalyzeOptions::kMaxTracked) return;
  const CaptureSummary& c = captures_.back();
  throw InputError(fmt::format("{}: frame {}: more than {} {} in one analysis", c.name, c.frames,
                               AnalyzeOptions::kMaxTracked, what));
}

void Analyzer::pfc_frame(const Frame& f, Time frame_time) {
  for (std::uint8_t c = 0; c < 8; ++c) {
    if (!(f.pfc_enable >> c & 1)) continue;
    Address mac;
    std::copy(f.src_mac.begin(), f.src_mac.end(), mac.bytes.begin());
    const Key k{captures_.size() - 1, mac, Address{}, c};
    const auto [it, added] = pfc_index_.try_emplace(k, pfc_.size());
    if (added) {
      check_tracked(pfc_.size(), "PFC senders (MAC, priority)");
      pfc_.emplace_back();
      pfc_.back().capture = k.capture;
      pfc_.back().mac = f.src_mac;
      pfc_.back().priority = c;
    }
    const std::size_t i = it->second;
    PfcStats& s = pfc_[i];
    const Time t = std::max(frame_time, s.last);  // a pause cannot end before it began (timestamps going back)
    s.last = t;
    const std::uint16_t q = f.pfc_quanta[c];
    (q ? s.xoff : s.xon) += 1;
    s.quanta += q;
    const std::optional<BitRate>& speed = captures_.back().link_speed;
    if (!speed) continue;
    if (s.in_pause && s.paused_until <= t) end_pause(i, s.paused_until);
    if (q == 0) {
      if (s.in_pause) end_pause(i, t);
      continue;
    }
    if (!s.in_pause) {
      s.in_pause = true;
      s.pause_start = t;
    }
    s.paused_until = t + serialization_time(Bytes::from_count(std::int64_t{q} * 64), *speed);
  }
}

void Analyzer::end_pause(std::size_t i, Time end) {
  PfcStats& s = pfc_[i];
  s.in_pause = false;
  ++s.pauses;
  s.paused += end - s.pause_start;
  if (timeline_.size() < o_.max_pause_intervals) timeline_.push_back({i, s.pause_start, end});
  else ++timeline_dropped_;
}

void Analyzer::end_capture() {
  if (!open_) return;
  open_ = false;
  CaptureSummary& c = captures_.back();
  for (std::size_t i = 0; i < pfc_.size(); ++i)
    if (pfc_[i].capture == captures_.size() - 1 && pfc_[i].in_pause) end_pause(i, pfc_[i].paused_until);
  for (std::size_t i : capture_qps_) {
    const auto& e = qps_[i].reorder.metrics().extent_count;
    if (c.extent_count.size() < e.size()) c.extent_count.resize(e.size(), 0);
    for (std::size_t k = 0; k < e.size(); ++k) c.extent_count[k] += e[k];
  }
  capture_qps_.clear();
}

std::optional<BitRate> pcapng_link_speed(const std::string& path) {
  // Only a regular file can be read twice: standard input ("-"), a pipe or a device is
  // libpcap's alone.
  std::error_code ec;
  if (path == "-" || !std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  std::uint8_t h[12];
  // Section Header Block: type 0x0A0D0D0A, total length, byte-order magic 0x1A2B3C4D.
  if (!in.read(reinterpret_cast<char*>(h), 12)) return std::nullopt;
  if (!(h[0] == 0x0a && h[1] == 0x0d && h[2] == 0x0d && h[3] == 0x0a)) return std::nullopt;
  const bool little = h[8] == 0x4d && h[9] == 0x3c && h[10] == 0x2b && h[11] == 0x1a;
  if (!little && !(h[8] == 0x1a && h[9] == 0x2b && h[10] == 0x3c && h[11] == 0x4d)) return std::nullopt;
  const auto get = [little](const std::uint8_t* b, int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= std::uint64_t{b[little ? i : n - 1 - i]} << (8 * i);
    return v;
  };
  std::uint64_t at = get(h + 4, 4);
  // The blocks that follow, up to the first Interface Description Block (type 1), which is
  // read whole (its options are small); a section's second header or a packet block first
  // means there is none to read.
  constexpr std::uint64_t kMaxIdb = 1 << 16;
  for (int blocks = 0; blocks < 64; ++blocks) {
    std::uint8_t b[8];
    in.seekg(static_cast<std::streamoff>(at));
    if (!in.read(reinterpret_cast<char*>(b), 8)) return std::nullopt;
    const std::uint64_t type = get(b, 4), len = get(b + 4, 4);
    if (len < 12 || len % 4) return std::nullopt;
    if (type == 0x0a0d0d0a || type == 6 || type == 3) return std::nullopt;
    if (type != 1) {
      at += len;
      continue;
    }
    if (len > kMaxIdb || len < 20) return std::nullopt;
    std::vector<std::uint8_t> body(len - 12);
    if (!in.read(reinterpret_cast<char*>(body.data()), static_cast<std::streamsize>(body.size()))) return std::nullopt;
    // Link type (2), reserved (2), snap length (4), then options: code (2), length (2),
    // the value padded to 4 bytes; if_speed is code 8, 8 bytes of bits per second.
    for (std::size_t o = 8; o + 4 <= body.size();) {
      const std::uint64_t code = get(&body[o], 2), n = get(&body[o + 2], 2);
      if (code == 0 || o + 4 + n > body.size()) break;
      if (code == 8 && n == 8) {
        const std::uint64_t bps = get(&body[o + 4], 8);
        if (bps < kMinLinkSpeedBps || bps > std::uint64_t{INT64_MAX}) return std::nullopt;
        return BitRate::from_bps(static_cast<std::int64_t>(bps));
      }
      o += 4 + (n + 3) / 4 * 4;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

void read_capture(const std::string& path, Analyzer& a, const std::function<void(std::uint64_t)>& read) {
  char err[PCAP_ERRBUF_SIZE] = "";
  std::unique_ptr<pcap_t, decltype(&pcap_close)> p(
      pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err), &pcap_close);
  if (!p) throw InputError(fmt::format("{}: cannot read the capture: {}", path, err));
  const int link = pcap_datalink(p.get());
  if (link != DLT_EN10MB) {
    const char* name = pcap_datalink_val_to_name(link);
    throw InputError(fmt::format("{}: link type {} ({}) is not supported: captures must be Ethernet", path, link,
                                 name ? name : "unknown"));
  }
  a.begin_capture(path, pcapng_link_speed(path));
  pcap_pkthdr* h = nullptr;
  const u_char* data = nullptr;
  int r = 0;
  while ((r = pcap_next_ex(p.get(), &h, &data)) == 1) {
    std::int64_t ns = 0;
    if (__builtin_mul_overflow(static_cast<std::int64_t>(h->ts.tv_sec), std::int64_t{1'000'000'000}, &ns) ||
        __builtin_add_overflow(ns, static_cast<std::int64_t>(h->ts.tv_usec), &ns))
      throw InputError(fmt::format("{}: frame {} is stamped {} s after 1970, beyond what 64 bits of ns hold (2262)",
                                   path, a.captures().back().frames + 1, static_cast<std::int64_t>(h->ts.tv_sec)));
    a.frame(ns, data, h->caplen, h->len);
    if (read && a.captures().back().frames % 65536 == 0)
      if (const long at = std::ftell(pcap_file(p.get())); at > 0) read(static_cast<std::uint64_t>(at));
  }
  if (r == PCAP_ERROR)
    throw InputError(fmt::format("{}: cannot read the capture after {} frames: {}", path, a.captures().back().frames,
                                 pcap_geterr(p.get())));
  a.end_capture();
}

}  // namespace fabriclab::capture
