// A pcap file of one port's traffic, both directions, written with libpcap: nanosecond
// timestamps (magic 0xA1B23C4D), Ethernet link type, frames synthesized by
// fabric::encode_frame (real headers, zero payload, correct ICRC), without the FCS (as
// a capture shows them) or, for frames to replay from a tester, with it. A frame is
// stamped when its last bit leaves the port (egress) or arrives at it (ingress).
//
// The frames go to PATH.tmp: close() flushes and checks that every byte was written,
// publish() renames it to PATH (a run closes all its captures, then publishes them). A run
// that fails to write (a full disk) stops with an error naming the file, and one that is
// killed or fails leaves no capture that looks complete.
//
//   PcapWriter w("out/sw0-p0.pcap", net.sim());
//   net.switch_at(0).port(0).set_tap(&w);
//   net.run(...);
//   w.close();
//   w.publish();
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/simulator.h"
#include "fabric/port.h"

struct pcap;
struct pcap_dumper;

namespace fabriclab::scenario {

class PcapWriter final : public fabric::PortTap {
 public:
  // Throws InputError naming the path when the file cannot be written.
  struct Options {
    bool fcs = false;              // every frame ends with its FCS (CRC-32, least significant byte first)
    std::uint32_t psn_offset = 0;  // added to every BTH PSN on the wire (mod 2^24), as if QPs started there
  };
  PcapWriter(const std::string& path, const Simulator& sim, Options o);
  PcapWriter(const std::string& path, const Simulator& sim) : PcapWriter(path, sim, Options{}) {}
  // Unless published: removes PATH.tmp.
  ~PcapWriter() override;
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  // Throws InputError when the file stopped taking frames (checked at every frame).
  void on_frame(const fabric::Port& port, const fabric::Packet& p, bool egress) override;
  // Flushes and closes the file; throws InputError naming the path and the reason when a
  // byte of it could not be written (and removes what it wrote).
  void close();
  // Gives the closed file its name; throws InputError when it cannot.
  void publish();
  std::uint64_t frames() const { return frames_; }
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void fail(int error);
  void release();  // the libpcap handles
  bool published_ = false;

  std::string path_, tmp_;
  const Simulator& sim_;
  pcap* pcap_ = nullptr;
  pcap_dumper* dumper_ = nullptr;
  std::vector<std::uint8_t> buf_;
  std::uint64_t frames_ = 0;
  Options o_;
};

}  // namespace fabriclab::scenario
