// The reorder experiment: generator -> spraying switch -> reorder box -> re-sequencing receiver.
#include "scenario/experiments/experiment.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "core/error.h"
#include "scenario/report/files.h"
#include "scenario/report/gnuplot.h"
#include "scenario/report/markdown.h"

namespace fabriclab::scenario::experiments {

namespace fs = std::filesystem;

namespace {

struct Receiver {
  const char* label;
  const char* what;
  std::vector<std::string> sets;
};
const std::vector<Receiver>& reorder_receivers() {
  static const std::vector<Receiver> r = {
      {"nic-go-back-n", "NIC, go-back-N (no reorder window)", {"nic.reorder_window=0"}},
      {"nic-window-32", "NIC, reorder window W = 32 packets", {"nic.reorder_window=32"}},
      {"nic-window-128", "NIC, reorder window W = 128 packets", {"nic.reorder_window=128"}},
      {"nic-window-128-timer",
       "NIC, W = 128, gives up on a gap after 10 us",
       {"nic.reorder_window=128", "nic.reorder_timeout=10us"}},
      {"switch-32",
       "switch egress re-sequencer, 32 packets, 50 us timeout; NIC go-back-N",
       {"nic.reorder_window=0", "reseq.buffer=32", "reseq.timeout=50us"}},
      {"switch-128",
       "switch egress re-sequencer, 128 packets, 50 us timeout; NIC go-back-N",
       {"nic.reorder_window=0", "reseq.buffer=128", "reseq.timeout=50us"}},
  };
  return r;
}
struct Impairment {
  std::string label, what;
  std::vector<std::string> sets;
  std::uint32_t depth = 0;  // hold by this many packets of the impaired path (0: not a depth point)
};
const std::vector<Impairment>& reorder_impairments() {
  static const std::vector<Impairment> all = [] {
    std::vector<Impairment> v;
    for (std::uint32_t k : {1u, 2u, 4u, 8u, 16u, 32u, 64u})
      v.push_back({fmt::format("hold{}", k),
                   fmt::format("1 % of the packets held for {} packets of the path", k),
                   {"impair.reorder_probability=0.01", fmt::format("impair.reorder_packets={}", k)},
                   k});
    v.push_back({"delay2us", "1 % delayed 2 us", {"impair.reorder_probability=0.01", "impair.reorder_delay=2us"}, 0});
    v.push_back(
        {"delay20us", "1 % delayed 20 us", {"impair.reorder_probability=0.01", "impair.reorder_delay=20us"}, 0});
    v.push_back({"drop1e-3", "0.1 % dropped", {"impair.drop_probability=0.001"}, 0});
    v.push_back({"corrupt1e-3", "0.1 % corrupted", {"impair.corrupt_probability=0.001"}, 0});
    return v;
  }();
  return all;
}

std::vector<Variant> reorder_variants(const Config& base) {
  const std::string at = base.text("output.reorder_metrics");
  if (at.empty() || split_list(at).size() != 1)
    throw InputError("experiment reorder: output.reorder_metrics must name the one port toward the receiver "
                     "(NODE:PORT), where re-sequencing happens and the order is measured");
  if (base.text("impair.link").empty())
    throw InputError("experiment reorder: the scenario needs a reorder box (impair.link)");
  std::vector<Variant> v;
  for (const Receiver& r : reorder_receivers())
    for (const Impairment& i : reorder_impairments()) {
      Variant x{std::string(r.label) + "_" + i.label, std::string(r.what) + "; " + i.what, r.sets};
      if (std::string(r.label).rfind("switch", 0) == 0) x.sets.push_back("reseq.link=" + at);
      // Every impairment starts from none: the scenario's own box settings are replaced.
      for (const char* k : {"impair.reorder_probability=0", "impair.reorder_delay=0ps", "impair.drop_probability=0",
                            "impair.corrupt_probability=0"})
        x.sets.push_back(k);
      x.sets.insert(x.sets.end(), i.sets.begin(), i.sets.end());
      v.push_back(std::move(x));
    }
  return v;
}

void describe(const Config& base, std::size_t runs, Report& r) {
  r.varied = fmt::format(
      "The receiver's re-sequencing ({} ways) against the impairment ({} kinds) -- {} runs. The scenario: one QP of "
      "{} from a line-rate generator, sprayed round-robin by s1 over {} links to s2; the reorder box on {} impairs "
      "one of them; re-sequencing at the NIC or at {} (the egress toward the receiver). Hold depths count packets "
      "of the impaired path, which carries every other packet of the flow: a hold of K shows as an extent of about "
      "2K.",
      reorder_receivers().size(), reorder_impairments().size(), runs, base.shown("traffic.bytes"),
      base.integer("topology.inter_switch_links"), base.text("impair.link"), base.text("output.reorder_metrics"));
  r.measured =
      "At the egress toward the receiver (what the re-sequencer, or the NIC behind it, is offered), per RFC "
      "4737/5236: received packets, reordered ratio (a packet is reordered if its PSN is below the highest seen "
      "so far + 1), the largest reordering extent (arrival index minus that of the earliest earlier packet with a "
      "larger PSN) and late time, n-reordering (in reorder.csv of each run, with the displacement and buffer-"
      "occupancy densities in reorder_density.csv). At the receiver: NAKs, give-ups, retransmitted packets, drops, "
      "goodput. **Reorder gap**: the largest extent a receiver absorbed without a NAK, a drop or a "
      "retransmission, over the hold depths; \"breaks at\": the first hold depth where it no longer did.";
}

// What the gap analysis needs of a run.
struct Cell {
  double extent = 0, goodput = 0;
  bool clean = false;
};

// Every run: results.csv, the report's table, and the cells by receiver and impairment.
struct Tables {
  std::string csv;
  std::vector<std::vector<std::string>> table;
  std::map<std::string, std::map<std::string, Cell>> grid;  // receiver -> impairment -> cell
};

// One run: its reorder.csv (one QP) at the egress, its summary at the receiver.
void add_run(const Receiver& rc, const Impairment& im, const Ran& run, Tables& t) {
  const CsvTable rt = read_csv(run.dir / "reorder.csv");
  if (rt.rows() != 1)
    throw InputError(
        fmt::format("experiment reorder: {}: expected one QP in reorder.csv, found {}", run.v.label, rt.rows()));
  const double extent = rt.number(0, "max_extent"), ratio = rt.number(0, "reordered_ratio");
  const double late = rt.number(0, "max_late_ns"), received = rt.number(0, "received");
  const auto& s = run.summary;
  const double naks = s.at("transport").at("naks_sent").get<double>();
  const double give_ups = s.at("transport").at("reorder_give_ups").get<double>() +
                          (s.contains("resequencer") ? s.at("resequencer").at("give_ups_full").get<double>() +
                                                           s.at("resequencer").at("give_ups_timeout").get<double>()
                                                     : 0.0);
  const double rtx = s.at("flows").at("retransmitted_packets").get<double>();
  const double rto = s.at("transport").at("timeouts").get<double>();
  const double drops = s.at("totals").at("drops").get<double>();
  const double goodput = run.flows.number(0, "goodput_gbps", 0);
  const bool clean = naks == 0 && rtx == 0 && drops == 0;
  t.grid[rc.label][im.label] = {extent, goodput, clean};
  t.csv += fmt::format("{},{},{},{:.0f},{:.6f},{:.0f},{:.3f},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},{:.3f},{}\n",
                       run.v.label, rc.label, im.label, received, ratio, extent, late, naks, give_ups, rto, rtx, drops,
                       goodput, clean ? 1 : 0);
  t.table.push_back({rc.label, im.label, fmt::format("{:.2f} %", 100 * ratio), fmt::format("{:.0f}", extent),
                     f1(late / 1000), fmt::format("{:.0f}", naks), fmt::format("{:.0f}", give_ups),
                     fmt::format("{:.0f}", rto), fmt::format("{:.0f}", rtx), f1(goodput), clean ? "yes" : ""});
}

// goodput.dat: a row per hold depth, a column per receiver.
std::string goodput_dat(Tables& t) {
  std::string dat = "# depth";
  for (const Receiver& rc : reorder_receivers()) dat += std::string(" ") + rc.label;
  dat += "\n";
  for (const Impairment& im : reorder_impairments()) {
    if (im.depth == 0) continue;
    dat += std::to_string(im.depth);
    for (const Receiver& rc : reorder_receivers()) dat += fmt::format(" {:.3f}", t.grid[rc.label][im.label].goodput);
    dat += "\n";
  }
  return dat;
}

// Per receiver, the reorder gap (the largest extent absorbed cleanly over the hold
// depths) and where it breaks: reorder_gap.dat, the report's table, the JSON receivers
// and the headlines.
struct Gaps {
  std::string dat = "# receiver reorder_gap\n";
  std::vector<std::vector<std::string>> table;
  nlohmann::ordered_json jv = nlohmann::ordered_json::array();
};

Gaps gaps_of(Tables& t, Report& r) {
  Gaps g;
  for (const Receiver& rc : reorder_receivers()) {
    double gap = 0;
    std::string breaks = "never (up to the deepest hold)";
    double breaks_extent = -1;
    for (const Impairment& im : reorder_impairments()) {
      if (im.depth == 0) continue;
      const Cell& c = t.grid[rc.label][im.label];
      if (c.clean) gap = std::max(gap, c.extent);
      else if (breaks_extent < 0) {
        breaks_extent = c.extent;
        breaks = fmt::format("hold {} (extent {:.0f})", im.depth, c.extent);
      }
    }
    g.dat += fmt::format("{} {:.0f}\n", rc.label, gap);
    g.table.push_back({rc.label, rc.what, fmt::format("{:.0f}", gap), breaks, f1(t.grid[rc.label]["hold64"].goodput)});
    g.jv.push_back({{"receiver", rc.label},
                    {"reorder_gap", gap},
                    {"breaks_at", breaks},
                    {"breaks_at_extent",
                     breaks_extent < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(breaks_extent)},
                    {"goodput_gbps_hold64", t.grid[rc.label]["hold64"].goodput}});
    r.headlines.push_back(fmt::format("{}: reorder gap {:.0f} packets; breaks at {}; goodput {:.1f} Gb/s at hold 64",
                                      rc.label, gap, breaks, t.grid[rc.label]["hold64"].goodput));
  }
  return g;
}

void draw_plots(const fs::path& out) {
  const auto& receivers = reorder_receivers();
  draw_plot(out, "reorder_gap",
            histogram("Reorder gap: the largest extent absorbed without NAK, drop or retransmission", "packets",
                      "reorder_gap.dat", {"reorder gap"}, receivers.size(), "set xtics rotate by -20\nset key off\n"));
  std::string lines;
  for (std::size_t i = 0; i < receivers.size(); ++i)
    lines += fmt::format("{}'goodput.dat' using 1:{} with linespoints lw 2 title '{}'", i ? ", " : "", i + 2,
                         receivers[i].label);
  draw_plot(out, "goodput",
            "set title 'Goodput against the hold depth (1 % of one path held back)'\nset xlabel 'hold depth "
            "(packets of the impaired path)'\nset ylabel 'goodput (Gb/s)'\nset logscale x 2\nset yrange [0:*]\n"
            "set grid\nset key bottom left\nplot " +
                lines);
}

void analyze_reorder(const Config& base, const std::vector<Ran>& runs, const fs::path& out, Report& r) {
  describe(base, runs.size(), r);
  Tables t;
  t.csv = "variant,receiver,impairment,received,reordered_ratio,max_extent,max_late_ns,naks,give_ups,"
          "timeouts,retransmitted_packets,drops,goodput_gbps,clean\n";
  std::size_t k = 0;
  for (const Receiver& rc : reorder_receivers())
    for (const Impairment& im : reorder_impairments()) add_run(rc, im, runs.at(k++), t);
  write_file(out / "results.csv", t.csv);
  const std::string goodput = goodput_dat(t);
  const Gaps g = gaps_of(t, r);
  write_file(out / "reorder_gap.dat", g.dat);
  write_file(out / "goodput.dat", goodput);
  r.results["receivers"] = g.jv;
  draw_plots(out);
  r.body += "## Reorder gap per receiver\n\n" +
            markdown_table({"receiver", "re-sequencing", "reorder gap (packets)", "breaks at",
                            "goodput at hold 64 (Gb/s)"},
                           g.table) +
            "\n" + plot_line("reorder_gap.png", "reorder gap per receiver") +
            plot_line("goodput.png", "goodput against hold depth") + "## Every run\n\n" +
            markdown_table({"receiver", "impairment", "reordered", "max extent", "max late (us)", "NAKs", "give-ups",
                            "timeouts", "retransmitted", "goodput (Gb/s)", "clean"},
                           t.table) +
            "\n";
}

}  // namespace

Definition reorder() {
  return {"reorder", "Reorder tolerance of re-sequencing receivers", reorder_variants, analyze_reorder};
}

}  // namespace fabriclab::scenario::experiments
