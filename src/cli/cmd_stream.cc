// fabriclab stream --out DIR [--qps N] [--bytes B] [--rules R] ...: the generator side of
// the reorder test as pcap files to replay, with the metrics to expect
// (scenario/capture/stream.h).
#include <fmt/format.h>

#include <memory>

#include "cli/commands.h"
#include "scenario/capture/stream.h"

namespace fabriclab::cli {

namespace {

struct StreamArgs {
  scenario::StreamSpec spec;
  std::string out;
  std::string rules, reorder_probability, reorder_packets;
  bool quiet = false;
};

int run_stream(StreamArgs a) {
  if (!a.rules.empty()) a.spec.sets.push_back("impair.rules=" + a.rules);
  if (!a.reorder_probability.empty()) a.spec.sets.push_back("impair.reorder_probability=" + a.reorder_probability);
  if (!a.reorder_packets.empty()) a.spec.sets.push_back("impair.reorder_packets=" + a.reorder_packets);
  a.spec.progress = !a.quiet;
  a.out = out_or_default(a.out, "stream");
  const auto r = scenario::write_stream(a.spec, a.out);
  fmt::print("stream: {} frames, largest reorder extent {}, in {}/stream.pcap; the simulated device sent {} frames, "
             "largest extent {} ({}/stream.md)\n",
             r.frames, r.max_extent, a.out, r.device_frames, r.device_max_extent, a.out);
  return 0;
}

}  // namespace

Command add_stream_command(CLI::App& app) {
  auto args = std::make_shared<StreamArgs>();
  auto* c = app.add_subcommand(
      "stream",
      "Write a line-rate RoCEv2 test stream (chosen QPs, sizes, the reorder box's rules) as pcap files to replay with "
      "tcpreplay or a tester, the metrics a capture of it shows, and what a simulated device (the switch, with "
      "reseq.* set on sw0:0) sends on");
  auto& s = args->spec;
  add_out_option(*c, args->out);
  c->add_option("--qps", s.qps, "QPs (UC RDMA WRITEs from one sender)")->capture_default_str();
  c->add_option("--bytes", s.bytes, "bytes per QP")->capture_default_str();
  c->add_option("--mtu", s.mtu, "RDMA payload per packet")->capture_default_str();
  c->add_option("--rate", s.rate, "line rate")->capture_default_str();
  c->add_option("--priority", s.priority, "802.1p priority (DSCP 8 x priority)")
      ->capture_default_str()
      ->check(CLI::Range(0, 7));
  c->add_option("--seed", s.seed, "the reorder box's random stream")->capture_default_str();
  c->add_option("--rules", args->rules, "the reorder box's rules (impair.rules: \"hold 0/100 8; drop 0/200; ...\")");
  c->add_option("--reorder-probability", args->reorder_probability, "each packet held back with this probability");
  c->add_option("--reorder-packets", args->reorder_packets, "a held packet lets this many later ones by");
  c->add_option("--first-psn", s.first_psn,
                "every QP's first PSN on the wire (0..16777215; near the top the stream crosses the PSN wrap); the "
                "rules' PSNs count from the first")
      ->capture_default_str()
      ->check(CLI::Range(0, 16777215));
  c->add_flag("--fcs", s.fcs, "end every frame with its FCS (a tester's import); tcpreplay wants it without");
  add_set_option(*c, s.sets);
  add_quiet_flag(*c, args->quiet);
  return {c, [args]() { return run_stream(*args); }};
}

}  // namespace fabriclab::cli
