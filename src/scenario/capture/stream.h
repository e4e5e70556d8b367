// `fabriclab stream`: the generator side of the reorder test as files to replay -- a
// line-rate RoCEv2 stream of chosen QPs, sizes and priority, with the reorder box's rules
// (or probabilities) applied, as pcap files with valid ICRCs (and FCSs on request) that
// tcpreplay and hardware testers import, and the metrics a capture of it must show.
//
// The stream is made by the simulator itself, open loop: host h1 sends UC RDMA WRITEs to
// h0 through switch sw0 (ECN off, so nothing comes back), the reorder box on h1's link.
// What reaches the switch (sw0 port 1, ingress) is the stream; what h1 sent, before the
// box, the stream in order. The switch stands in for a device under test: with
// `reseq.*` set on its port to h0 (sw0:0) it re-assembles, and what it sends to h0 is
// the device's output -- the loop generate -> replay -> capture -> analyse, run whole in
// simulation.
//
//   DIR/stream.pcap           the frames as the device receives them (the rules applied)
//   DIR/stream-in-order.pcap  the frames as sent (before the box)
//   DIR/device-output.pcap    what the simulated device (sw0) sent on to h0
//   DIR/expected/             `fabriclab analyze` of stream.pcap (qps.csv, report.md, ...)
//   DIR/run/                  the simulation's own outputs (summary.json, flows.csv, ...)
//   DIR/stream.md             written last: the settings, the frames and the metrics to expect
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace fabriclab::scenario {

struct StreamSpec {
  std::uint32_t qps = 1;
  std::string bytes = "1MiB";  // per QP
  std::string mtu = "4KiB";
  std::string rate = "100Gbps";
  std::uint32_t priority = 3;
  std::uint64_t seed = 1;
  bool fcs = false;
  std::uint32_t first_psn = 0;  // every QP's first PSN on the wire (the rules count from 0)
  // Scenario keys on top (impair.*, reseq.*, nic.*, ...), as `fabriclab run --set`.
  std::vector<std::string> sets;
  bool progress = false;  // the device's run shows its progress on stderr
};

struct StreamResult {
  std::uint64_t frames = 0;             // in stream.pcap
  std::uint64_t device_frames = 0;      // in device-output.pcap
  std::uint32_t max_extent = 0;         // the stream's largest reorder extent (any QP)
  std::uint32_t device_max_extent = 0;  // the device output's
};

// InputError for a bad setting (naming the key) or an output that cannot be written.
StreamResult write_stream(const StreamSpec& spec, const std::filesystem::path& dir);

}  // namespace fabriclab::scenario
