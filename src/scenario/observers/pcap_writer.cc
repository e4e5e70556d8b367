#include "scenario/observers/pcap_writer.h"

#include <fmt/format.h>
#include <pcap/pcap.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "fabric/wire.h"

namespace fabriclab::scenario {

PcapWriter::PcapWriter(const std::string& path, const Simulator& sim, Options o)
    : path_(path), tmp_(path + ".tmp"), sim_(sim), buf_(fabric::kMaxFrameBytes + 4), o_(o) {
  pcap_ = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535, PCAP_TSTAMP_PRECISION_NANO);
  if (!pcap_) throw InputError(path + ": libpcap could not start a capture");
  dumper_ = pcap_dump_open(pcap_, tmp_.c_str());
  if (!dumper_) {
    const std::string why = pcap_geterr(pcap_);
    pcap_close(pcap_);
    throw InputError(path + ": cannot write the pcap file: " + why);
  }
}

PcapWriter::~PcapWriter() {
  release();
  if (published_) return;
  std::error_code ignored;
  std::filesystem::remove(tmp_, ignored);
}

void PcapWriter::release() {
  if (dumper_) pcap_dump_close(dumper_);
  if (pcap_) pcap_close(pcap_);
  dumper_ = nullptr;
  pcap_ = nullptr;
}

void PcapWriter::fail(int error) {
  release();
  std::error_code ignored;
  std::filesystem::remove(tmp_, ignored);
  throw InputError(fmt::format("{}: cannot write the pcap file ({} frames captured): {}", path_, frames_,
                               error ? std::strerror(error) : "write error"));
}

void PcapWriter::close() {
  if (!dumper_) return;
  errno = 0;
  if (pcap_dump_flush(dumper_) != 0 || std::ferror(pcap_dump_file(dumper_))) fail(errno);
  // pcap_dump_close's fclose has nothing left to write after the flush; its own result is
  // not reported (a file system that fails only at close, such as NFS over quota, goes
  // unseen here).
  release();
}

void PcapWriter::publish() {
  close();
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) {
    std::filesystem::remove(tmp_, ec);
    throw InputError(fmt::format("{}: cannot write the pcap file: {}", path_, ec.message()));
  }
  published_ = true;
}

void PcapWriter::on_frame(const fabric::Port& port, const fabric::Packet& p, bool egress) {
  // The sender's MAC (PFC frames carry it): 02:fc, node id, port index.
  const fabric::Port& from = egress ? port : *port.peer();
  const std::uint32_t node = from.owner().id();
  const std::uint8_t mac[6] = {0x02,
                               0xfc,
                               static_cast<std::uint8_t>(node >> 8),
                               static_cast<std::uint8_t>(node),
                               static_cast<std::uint8_t>(from.index() >> 8),
                               static_cast<std::uint8_t>(from.index())};
  std::size_t n = 0;
  if (o_.psn_offset != 0 && p.opcode != fabric::Opcode::pfc) {
    fabric::Packet shifted = p;
    shifted.psn = (p.psn + o_.psn_offset) & fabric::kPsnMask;
    n = fabric::encode_frame(shifted, mac, buf_.data(), port.int_header(p));
  } else {
    n = fabric::encode_frame(p, mac, buf_.data(), port.int_header(p));
  }
  if (o_.fcs) n = fabric::append_fcs(buf_.data(), n);
  const std::int64_t ns = sim_.now().ps() / 1000;
  pcap_pkthdr h{};
  h.ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  h.ts.tv_usec = static_cast<suseconds_t>(ns % 1'000'000'000);  // nanoseconds in a NANO capture
  h.caplen = h.len = static_cast<bpf_u_int32>(n);
  pcap_dump(reinterpret_cast<u_char*>(dumper_), &h, buf_.data());
  // stdio keeps a write error (a full disk); checked at once, errno still says why.
  ++frames_;
  if (std::ferror(pcap_dump_file(dumper_))) fail(errno);
}

}  // namespace fabriclab::scenario
