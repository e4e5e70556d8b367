// Fuzz target: a capture file (pcap or pcapng) read by capture::read_capture, the reader of
// `fabriclab analyze`: libpcap parses the file, capture::decode_frame each frame and the
// Analyzer keeps its counts. Each input goes through an in-memory file (memfd). Besides
// crashes and sanitizer reports, the counts must add up: every frame is of one kind, every
// RoCE frame has one ICRC verdict, and every data packet of a QP is a first arrival, a
// duplicate, one sent before the capture began, or left untracked (a READ response, a bad
// ICRC).
//
// Seeds (FABRICLAB_FUZZ_SEEDS=DIR): small pcap files of the simulator's frames -- data with
// reordered and repeated PSNs, ACKs, NAKs, CNPs and PFC -- written with libpcap.
#include <pcap/pcap.h>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "capture/analyzer.h"
#include "fabric/packet.h"
#include "fabric/wire.h"
#include "fuzz/fuzz_common.h"

namespace {

using namespace fabriclab;

void write_seed(const std::string& path, const std::vector<fabric::Packet>& packets, std::size_t snaplen) {
  pcap_t* p = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535, PCAP_TSTAMP_PRECISION_NANO);
  pcap_dumper_t* d = pcap_dump_open(p, path.c_str());
  if (!d) fuzz::finding("cannot write seed " + path);
  std::vector<std::uint8_t> buf(fabric::kMaxFrameBytes);
  const std::uint8_t mac[6] = {2, 0xfc, 0, 1, 0, 1};
  std::int64_t ns = 1000;
  for (const fabric::Packet& pk : packets) {
    const std::size_t n = fabric::encode_frame(pk, mac, buf.data());
    pcap_pkthdr h{};
    h.ts.tv_sec = 0;
    h.ts.tv_usec = static_cast<suseconds_t>(ns += 850);
    h.len = static_cast<bpf_u_int32>(n);
    h.caplen = static_cast<bpf_u_int32>(std::min(n, snaplen));
    pcap_dump(reinterpret_cast<u_char*>(d), &h, buf.data());
  }
  pcap_dump_close(d);
  pcap_close(p);
}

void write_seeds(const std::string& dir) {
  std::vector<fabric::Packet> packets;
  const auto data = [&](std::uint32_t psn, std::uint8_t ecn) {
    fabric::Packet p;
    p.src = 1;
    p.dst = 0;
    p.psn = psn;
    p.payload = 64;
    p.ecn = ecn;
    p.opcode = psn == 0 ? fabric::Opcode::rc_write_first : fabric::Opcode::rc_write_middle;
    packets.push_back(p);
  };
  for (std::uint32_t psn : {0u, 1u, 3u, 2u, 4u, 4u, 6u}) data(psn, psn % 3 ? fabric::kEcnEct0 : fabric::kEcnCe);
  fabric::Packet ack;
  ack.src = 0;
  ack.dst = 1;
  ack.opcode = fabric::Opcode::rc_ack;
  packets.push_back(ack);
  ack.syndrome = fabric::kAethNakSeq;
  packets.push_back(ack);
  fabric::Packet cnp = ack;
  cnp.opcode = fabric::Opcode::cnp;
  packets.push_back(cnp);
  packets.push_back(cnp);
  fabric::Packet pfc;
  pfc.opcode = fabric::Opcode::pfc;
  pfc.set_pause(3, 65535);
  packets.push_back(pfc);
  pfc.set_pause(3, 0);
  packets.push_back(pfc);
  write_seed(dir + "/mixed.pcap", packets, 65535);
  write_seed(dir + "/cut.pcap", packets, 60);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::side_job("FABRICLAB_FUZZ_SEEDS", write_seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fabriclab::fuzz::MemFile file("capture.pcap");
  file.write(data, size);
  fuzz::expect_input_errors([&] {
    capture::AnalyzeOptions o;
    o.link_speed = Gbps(100);
    capture::Analyzer a(o);
    capture::read_capture(file.path, a);
    for (const auto& c : a.captures()) {
      if (c.roce + c.pfc + c.other + c.truncated + c.malformed != c.frames)
        fuzz::finding("frames of no kind, or of two");
      if (c.icrc_ok + c.icrc_bad + c.icrc_unchecked != c.roce) fuzz::finding("a RoCE frame without one ICRC verdict");
    }
    for (const auto& q : a.qps()) {
      const auto& m = q.reorder.metrics();
      if (m.received + m.duplicates + q.before_start + q.read_responses + q.icrc_bad != q.data_packets)
        fuzz::finding("data packets neither received, duplicate, before the start nor left untracked");
      if (m.reordered > m.received) fuzz::finding("more packets reordered than received");
    }
    for (const auto& p : a.pfc())
      if (p.paused > a.captures()[p.capture].duration() + us(400))  // one full pause may outlast the capture
        fuzz::finding("paused longer than the capture");
  });
  return 0;
}
