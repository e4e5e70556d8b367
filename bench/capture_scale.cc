// How fast `fabriclab analyze` reads a capture, and in how much memory: writes a pcap of
// FRAMES RoCEv2 frames (QPS QPs sending PAYLOAD-byte WRITEs round-robin, 1 % of each QP's
// packets swapped with the next, one CNP per 64 frames, PFC XOFF/XON pairs every 1000
// frames) with libpcap, then streams it through capture::read_capture, and prints frames
// and bytes per second of the analysis and the process's peak RSS. The file is removed.
//
//   capture_scale [FRAMES (4000000)] [QPS (64)] [PAYLOAD (1024)] [DIR (/tmp)]
#include <fmt/format.h>
#include <pcap/pcap.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "capture/analyzer.h"
#include "fabric/packet.h"
#include "fabric/wire.h"

using namespace fabriclab;

namespace {

void write_capture(const std::string& path, std::uint64_t frames, std::uint32_t qps, std::uint32_t payload) {
  pcap_t* p = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535, PCAP_TSTAMP_PRECISION_NANO);
  pcap_dumper_t* d = pcap_dump_open(p, path.c_str());
  if (!d) {
    fmt::print(stderr, "capture_scale: cannot write {}: {}\n", path, pcap_geterr(p));
    std::exit(2);
  }
  std::vector<std::uint8_t> buf(fabric::kMaxFrameBytes);
  const std::uint8_t mac[6] = {2, 0xfc, 0, 0, 0, 1};
  std::vector<std::uint32_t> next_psn(qps, 0);
  std::int64_t ns = 0;
  for (std::uint64_t i = 0; i < frames; ++i) {
    fabric::Packet k;
    if (i % 1000 == 998 || i % 1000 == 999) {
      k.opcode = fabric::Opcode::pfc;
      k.set_pause(3, i % 1000 == 998 ? 65535 : 0);
    } else if (i % 64 == 63) {
      k.opcode = fabric::Opcode::cnp;
      k.src = 0;
      k.dst = 1 + static_cast<std::uint32_t>(i / 64 % qps);
    } else {
      const auto q = static_cast<std::uint32_t>(i % qps);
      std::uint32_t psn = next_psn[q]++;
      // 1 % swapped with the next: PSN n+1 goes first, n right after.
      if (psn % 100 == 50) psn += 1;
      else if (psn % 100 == 51) psn -= 1;
      k.opcode = fabric::Opcode::rc_write_middle;
      k.src = 1 + q;
      k.dst = 0;
      k.psn = psn & fabric::kPsnMask;
      k.payload = payload;
      k.ecn = i % 10 ? fabric::kEcnEct0 : fabric::kEcnCe;
    }
    const std::size_t n = fabric::encode_frame(k, mac, buf.data());
    ns += static_cast<std::int64_t>(n) * 8 / 100 + 1;  // back to back at 100 Gb/s
    pcap_pkthdr h{};
    h.ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    h.ts.tv_usec = static_cast<suseconds_t>(ns % 1'000'000'000);
    h.caplen = h.len = static_cast<bpf_u_int32>(n);
    pcap_dump(reinterpret_cast<u_char*>(d), &h, buf.data());
  }
  pcap_dump_close(d);
  pcap_close(p);
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t frames = argc > 1 ? std::stoull(argv[1]) : 4'000'000;
  const auto qps = static_cast<std::uint32_t>(argc > 2 ? std::stoul(argv[2]) : 64);
  const auto payload = static_cast<std::uint32_t>(argc > 3 ? std::stoul(argv[3]) : 1024);
  const std::string dir = argc > 4 ? argv[4] : "/tmp";
  const std::string path = dir + fmt::format("/capture_scale_{}.pcap", ::getpid());
  write_capture(path, frames, qps, payload);
  const auto size = std::filesystem::file_size(path);

  capture::AnalyzeOptions o;
  o.link_speed = Gbps(100);
  capture::Analyzer a(o);
  const auto t0 = std::chrono::steady_clock::now();
  capture::read_capture(path, a);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::filesystem::remove(path);

  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const auto& c = a.captures()[0];
  std::uint64_t reordered = 0;
  for (const auto& q : a.qps()) reordered += q.reorder.metrics().reordered;
  fmt::print("{} frames, {:.2f} GB of pcap, {} QPs: analysed in {:.2f} s: {:.2f} M frames/s, {:.2f} GB/s; peak RSS "
             "{:.1f} MiB ({} RoCE, {} PFC, {} reordered, {} pauses)\n",
             c.frames, static_cast<double>(size) / 1e9, a.qps().size(), s, static_cast<double>(c.frames) / s / 1e6,
             static_cast<double>(size) / s / 1e9, static_cast<double>(ru.ru_maxrss) / 1024.0, c.roce, c.pfc, reordered,
             a.pfc().empty() ? 0 : a.pfc()[0].pauses);
  return 0;
}
