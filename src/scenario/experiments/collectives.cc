// The collectives experiment: offloaded collectives on the packet-level fabric -- which
// algorithm, on which fabric, with how many counters, next to what traffic.
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

// The algorithms compared, as (collective, algorithm, short name).
struct Algo {
  const char *collective, *algorithm, *tag;
};
constexpr Algo kAlgos[] = {{"allreduce", "ring", "ar-ring"},
                           {"allreduce", "recursive_doubling", "ar-rd"},
                           {"allreduce", "rabenseifner", "ar-rabenseifner"},
                           {"alltoall", "pairwise", "a2a-pairwise"},
                           {"alltoall", "all_at_once", "a2a-all-at-once"}};
constexpr const char* kSizes[] = {"64KiB", "1MiB", "64MiB"};
constexpr std::int64_t kSizeBytes[] = {64 << 10, 1 << 20, 64 << 20};
constexpr const char* kUnlimited = "nic.counters=1000000";
// The counter budgets of the counters group (besides unlimited).
constexpr int kBudgets[] = {8, 32};
// The counters group's stream: recursive doubling (6 counters per NIC at 64 ranks), 8 at once.
constexpr int kStream = 8;

struct Shape {
  std::int64_t hosts, spines, uplinks;
};
Shape shape(const Config& base) {
  return {base.integer("topology.leaves") * base.integer("topology.hosts_per_leaf"), base.integer("topology.spines"),
          base.integer("topology.uplinks")};
}

// One collective of `size` nccl-tests bytes: the planner's alltoall bytes is a block per
// destination.
std::vector<std::string> collective_sets(const Algo& a, std::int64_t size, std::int64_t hosts) {
  const std::int64_t bytes = std::string(a.collective) == "alltoall" ? size / hosts : size;
  return {fmt::format("collective.0.collective={}", a.collective),
          fmt::format("collective.0.algorithm={}", a.algorithm),
          fmt::format("collective.0.bytes={}B", std::max<std::int64_t>(bytes, 1))};
}

std::vector<Variant> variants(const Config& base) {
  if (base.text("topology.kind") != "leaf_spine")
    throw InputError("experiment collectives: the scenario must have topology.kind = \"leaf_spine\"");
  const Shape s = shape(base);
  const std::int64_t links = s.spines * s.uplinks;
  if (links % 4 != 0)
    throw InputError("experiment collectives: topology.spines x topology.uplinks must be a multiple of 4 (the 4:1 "
                     "fabric keeps a quarter of the uplinks)");
  const std::int64_t hpl = base.integer("topology.hosts_per_leaf");
  const std::string ratio = fmt::format("{}:{}", hpl, links);
  const std::string oversub = fmt::format("{}:{}", hpl, links / 4);
  const std::vector<std::string> single = {"collective.0.iterations=1", "collective.0.in_flight=1", kUnlimited,
                                           "nic.slots=100000000"};
  std::vector<Variant> v;
  // Where the fabric limits: every algorithm and size alone, on the full and a 4:1 fabric.
  for (const bool thin : {false, true})
    for (const Algo& a : kAlgos)
      for (std::size_t k = 0; k < std::size(kSizes); ++k) {
        Variant x{fmt::format("{}-{}-{}", thin ? "4to1" : "full", a.tag, kSizes[k]),
                  fmt::format("{} {} of {} alone, uplinks {} (down:up)", a.collective, a.algorithm, kSizes[k],
                              thin ? oversub : ratio),
                  single};
        x.sets.push_back("traffic.pattern=none");
        for (auto& set : collective_sets(a, kSizeBytes[k], s.hosts)) x.sets.push_back(std::move(set));
        if (thin) x.sets.insert(x.sets.end(), {"topology.spines=" + std::to_string(links / 4), "topology.uplinks=1"});
        v.push_back(std::move(x));
      }
  // Where counters limit: a stream of 8 recursive-doubling allreduces of 1 MiB at once.
  for (const int budget : {kBudgets[0], kBudgets[1], 0})
    for (const char* policy : {"stall", "fallback"}) {
      const std::string b = budget ? std::to_string(budget) : "unlimited";
      Variant x{fmt::format("counters-{}-{}", b, policy),
                fmt::format("{} recursive-doubling allreduces of 1 MiB at once, {} counters per NIC, policy {}",
                            kStream, b, policy),
                {"traffic.pattern=none", fmt::format("collective.0.iterations={}", kStream),
                 fmt::format("collective.0.in_flight={}", kStream), fmt::format("collective.0.policy={}", policy),
                 budget ? fmt::format("nic.counters={}", budget) : kUnlimited, "nic.slots=100000000"}};
      for (auto& set : collective_sets(kAlgos[1], 1 << 20, s.hosts)) x.sets.push_back(std::move(set));
      v.push_back(std::move(x));
    }
  // Incast on leaf 0 with and without congestion control, 1 MiB.
  for (const char* cc : {"dcqcn", "none"})
    for (const Algo& a : {kAlgos[0], kAlgos[1], kAlgos[3]}) {
      Variant x{fmt::format("incast-{}-{}", cc, a.tag),
                fmt::format("{} {} of 1 MiB beside the scenario's incast, congestion control {}", a.collective,
                            a.algorithm, cc),
                single};
      x.sets.push_back(fmt::format("nic.congestion_control={}", cc));
      for (auto& set : collective_sets(a, 1 << 20, s.hosts)) x.sets.push_back(std::move(set));
      v.push_back(std::move(x));
    }
  return v;
}

// A variant's collectives, read back from its collectives.csv.
struct Measured {
  std::size_t instances = 0, done = 0, offloaded = 0, software = 0;
  double makespan_us = 0, completion_us = 0, busbw_GBps = 0, stall_us = 0;  // means over those done
  double pfc_frames = 0, ecn_marks = 0, cnps = 0, incast_fct_max_us = 0;
};

Measured measure(const Ran& run) {
  Measured m;
  const CsvTable c = read_csv(run.dir / "collectives.csv");
  m.instances = c.rows();
  double first_issue = 1e300, last_done = 0;
  for (std::size_t r = 0; r < c.rows(); ++r) {
    first_issue = std::min(first_issue, c.number(r, "issue_ns"));
    if (c.text(r, "done_ns").empty()) continue;
    ++m.done;
    (c.text(r, "path") == "offloaded" ? m.offloaded : m.software)++;
    last_done = std::max(last_done, c.number(r, "done_ns"));
    m.completion_us += c.number(r, "completion_ns") / 1000;
    m.stall_us += c.number(r, "stall_ns") / 1000;
    m.busbw_GBps += c.number(r, "busbw_GBps");
  }
  if (m.done > 0) {
    m.completion_us /= static_cast<double>(m.done);
    m.stall_us /= static_cast<double>(m.done);
    m.busbw_GBps /= static_cast<double>(m.done);
    m.makespan_us = (last_done - first_issue) / 1000;
  }
  const auto& s = run.summary;
  m.pfc_frames = s.at("totals").at("pfc_pause_frames").get<double>();
  m.ecn_marks = s.at("totals").at("ecn_marks").get<double>();
  m.cnps = s.at("congestion_control").at("cnps_sent").get<double>();
  if (s.at("flows").at("count").get<double>() > 0) m.incast_fct_max_us = metric(s, "flows", "fct_ns_max") / 1000;
  return m;
}

std::string done_text(const Measured& m) {
  return m.done == m.instances ? "" : fmt::format(" ({} of {} done)", m.done, m.instances);
}

void fabric_section(const std::map<std::string, Measured>& by, const fs::path& out, Report& r) {
  std::vector<std::vector<std::string>> table;
  std::string dat = "# algorithm full 4to1\n";
  for (const Algo& a : kAlgos)
    for (const char* size : kSizes) {
      const Measured& f = by.at(fmt::format("full-{}-{}", a.tag, size));
      const Measured& t = by.at(fmt::format("4to1-{}-{}", a.tag, size));
      table.push_back({a.tag, size, f1(f.completion_us) + done_text(f), f1(t.completion_us) + done_text(t),
                       f2(f.busbw_GBps), f2(t.busbw_GBps),
                       f.completion_us > 0 ? f2(t.completion_us / f.completion_us) : "-"});
      if (std::string(size) == kSizes[2]) dat += fmt::format("{} {:.2f} {:.2f}\n", a.tag, f.busbw_GBps, t.busbw_GBps);
    }
  // Headlines: the best algorithm at each size on the full fabric, and what 4:1 costs at the largest.
  for (std::size_t k = 0; k < std::size(kSizes); ++k) {
    std::string best_ar, best_a2a;
    double t_ar = 1e300, t_a2a = 1e300;
    for (const Algo& a : kAlgos) {
      const double t = by.at(fmt::format("full-{}-{}", a.tag, kSizes[k])).completion_us;
      const bool ar = std::string(a.collective) == "allreduce";
      double& bt = ar ? t_ar : t_a2a;
      std::string& bn = ar ? best_ar : best_a2a;
      if (t > 0 && t < bt) bt = t, bn = a.tag;
    }
    r.headlines.push_back(
        fmt::format("{}: fastest allreduce {} ({} us), fastest all-to-all {} ({} us) on the full fabric", kSizes[k],
                    best_ar, f1(t_ar), best_a2a, f1(t_a2a)));
  }
  for (const Algo& a : kAlgos) {
    const Measured& f = by.at(fmt::format("full-{}-{}", a.tag, kSizes[2]));
    const Measured& t = by.at(fmt::format("4to1-{}-{}", a.tag, kSizes[2]));
    if (f.busbw_GBps > 0)
      r.headlines.push_back(fmt::format("{} at {}: busbw {} GB/s on the full fabric, {} on 4:1 ({}x the time)", a.tag,
                                        kSizes[2], f2(f.busbw_GBps), f2(t.busbw_GBps),
                                        f2(t.completion_us / f.completion_us)));
  }
  write_file(out / "fabric.dat", dat);
  draw_plot(out, "busbw",
            histogram(fmt::format("Bus bandwidth at {} (nccl-tests convention)", kSizes[2]), "busbw (GB/s)",
                      "fabric.dat", {"full fabric", "4:1"}, std::size(kAlgos), "set xtics rotate by -20\n"));
  r.body +=
      "## Where the fabric limits\n\nEach algorithm alone, every NIC with counters to spare. Completion is "
      "issue to the host seeing it done (its poll); 4:1 / full is the slowdown of the oversubscribed fabric.\n\n" +
      markdown_table({"algorithm", "size", "completion full (us)", "completion 4:1 (us)", "busbw full (GB/s)",
                      "busbw 4:1 (GB/s)", "4:1 / full"},
                     table) +
      "\n" + plot_line("busbw.png", "bus bandwidth at the largest size") +
      "Small sizes are latency-bound: a ring of P ranks pays 2(P-1) steps of NIC processing, counter-cache "
      "misses and fabric latency, recursive doubling log2(P) rounds. Large sizes are bandwidth-bound, and "
      "what crosses the spines meets the oversubscription: recursive doubling's and the all-to-all's "
      "cross-leaf rounds go through a quarter of the uplinks, a ring's neighbour traffic mostly stays on its "
      "leaf.\n\n";
}

void counters_section(const std::map<std::string, Measured>& by, const fs::path& out, Report& r) {
  std::vector<std::vector<std::string>> table;
  std::string dat = "# budget stall fallback\n";
  for (const int budget : {kBudgets[0], kBudgets[1], 0}) {
    const std::string b = budget ? std::to_string(budget) : "unlimited";
    std::string row = b;
    for (const char* policy : {"stall", "fallback"}) {
      const Measured& m = by.at(fmt::format("counters-{}-{}", b, policy));
      table.push_back({b, policy, fmt::format("{} / {}", m.offloaded, m.software), f1(m.stall_us), f1(m.completion_us),
                       f1(m.makespan_us) + done_text(m)});
      row += fmt::format(" {:.2f}", m.makespan_us);
    }
    dat += row + "\n";
  }
  const Measured& unl = by.at("counters-unlimited-stall");
  for (const int budget : kBudgets) {
    const Measured& st = by.at(fmt::format("counters-{}-stall", budget));
    const Measured& fb = by.at(fmt::format("counters-{}-fallback", budget));
    r.headlines.push_back(fmt::format(
        "{} counters per NIC, {} allreduces at once: stalling takes {} us for all ({} us mean stall), falling back "
        "{} us with {} of {} in software; unlimited counters {} us",
        budget, kStream, f1(st.makespan_us), f1(st.stall_us), f1(fb.makespan_us), fb.software, fb.instances,
        f1(unl.makespan_us)));
  }
  write_file(out / "counters.dat", dat);
  draw_plot(out, "counters",
            histogram(fmt::format("{} allreduces at once: time until the last is done", kStream), "makespan (us)",
                      "counters.dat", {"stall", "fallback"}, 3));
  r.body += fmt::format(
      "## Where counters limit\n\n{} recursive-doubling allreduces of 1 MiB issued at once on the full fabric. "
      "Offloaded / software counts the instances by path; stall is issue to start (waiting for counters); "
      "makespan runs from the first issue to the last completion.\n\n",
      kStream);
  r.body += markdown_table({"counters per NIC", "policy", "offloaded / software", "mean stall (us)",
                            "mean completion (us)", "makespan (us)"},
                           table) +
            "\n" + plot_line("counters.png", "makespan by counter budget and policy") +
            "Stalling keeps every instance on the NIC but serializes them as counters come back; falling back "
            "starts the rest at once on the hosts, which post every operation (host.op_time) and so take longer "
            "each.\n\n";
}

void incast_section(const std::map<std::string, Measured>& by, Report& r) {
  std::vector<std::vector<std::string>> table;
  for (const Algo& a : {kAlgos[0], kAlgos[1], kAlgos[3]}) {
    const Measured& alone = by.at(fmt::format("full-{}-1MiB", a.tag));
    const Measured& dc = by.at(fmt::format("incast-dcqcn-{}", a.tag));
    const Measured& no = by.at(fmt::format("incast-none-{}", a.tag));
    table.push_back({a.tag, f1(alone.completion_us), f1(dc.completion_us) + done_text(dc),
                     f1(no.completion_us) + done_text(no), fmt::format("{:.0f} / {:.0f}", dc.pfc_frames, no.pfc_frames),
                     fmt::format("{:.0f} / {:.0f}", dc.ecn_marks, no.ecn_marks), f1(dc.incast_fct_max_us),
                     f1(no.incast_fct_max_us)});
    if (alone.completion_us > 0)
      r.headlines.push_back(fmt::format("{} of 1 MiB beside the 8:1 incast: {}x its time alone with DCQCN, {}x "
                                        "without congestion control ({:.0f} PFC frames)",
                                        a.tag, f2(dc.completion_us / alone.completion_us),
                                        f2(no.completion_us / alone.completion_us), no.pfc_frames));
  }
  r.body += "## Incast, PFC and ECN\n\nThe scenario's incast (its `traffic.*`) beside each collective of 1 MiB, "
            "with DCQCN and with no congestion control. The incast's receiver is also a rank: every algorithm "
            "meets it.\n\n" +
            markdown_table({"algorithm", "alone (us)", "incast, DCQCN (us)", "incast, none (us)",
                            "PFC frames DCQCN / none", "ECN marks DCQCN / none", "incast FCT max DCQCN (us)",
                            "incast FCT max none (us)"},
                           table) +
            "\nA ring waits at every step for its slowest link, so the incast's receiver paces the whole ring; "
            "recursive doubling meets it in each of its log2(P) rounds; the pairwise all-to-all in the rounds that "
            "send to it. Without congestion control the incast fills the receiver's switch queue until PFC pauses "
            "the senders' links, which the collective's packets share.\n\n";
}

void analyze(const Config& base, const std::vector<Ran>& runs, const fs::path& out, Report& r) {
  const Shape s = shape(base);
  r.varied = fmt::format(
      "Offloaded collectives on {} GPUs of a leaf-spine ({} leaves, {} spines x {} uplinks, 100G), NICs from "
      "the scenario (`nic.*`). Three groups: each of five algorithms (allreduce ring, recursive doubling, "
      "Rabenseifner; all-to-all pairwise and all at once) alone at {}, {} and {} (nccl-tests sizes) on the full "
      "fabric and with a quarter of the uplinks (4:1); {} recursive-doubling allreduces at once with {}, {} and "
      "unlimited counters per NIC, stalling or falling back; and three of the algorithms beside the scenario's "
      "incast ({} senders x {} into host {}), with DCQCN and without congestion control.",
      s.hosts, base.integer("topology.leaves"), s.spines, s.uplinks, kSizes[0], kSizes[1], kSizes[2], kStream,
      kBudgets[0], kBudgets[1], base.integer("traffic.incast.senders"), base.shown("traffic.bytes"),
      base.integer("traffic.incast.receiver"));
  r.measured = "From each run's collectives.csv: completion (issue to the host seeing it done), busbw (nccl-tests), "
               "path (offloaded or software) and stall per instance; the makespan of a stream; from summary.json: "
               "PFC pause frames, ECN marks, CNPs, and the incast's longest flow.";
  std::map<std::string, Measured> by;
  std::string csv = "variant,instances,done,offloaded,software,completion_us,busbw_GBps,stall_us,makespan_us,"
                    "pfc_pause_frames,ecn_marks,cnps,incast_fct_max_us\n";
  nlohmann::ordered_json jv = nlohmann::ordered_json::array();
  for (const Ran& run : runs) {
    const Measured m = measure(run);
    by[run.v.label] = m;
    csv += fmt::format("{},{},{},{},{},{:.3f},{:.3f},{:.3f},{:.3f},{:.0f},{:.0f},{:.0f},{:.3f}\n", run.v.label,
                       m.instances, m.done, m.offloaded, m.software, m.completion_us, m.busbw_GBps, m.stall_us,
                       m.makespan_us, m.pfc_frames, m.ecn_marks, m.cnps, m.incast_fct_max_us);
    jv.push_back({{"variant", run.v.label},
                  {"instances", m.instances},
                  {"done", m.done},
                  {"offloaded", m.offloaded},
                  {"software", m.software},
                  {"completion_us", m.completion_us},
                  {"busbw_GBps", m.busbw_GBps},
                  {"stall_us", m.stall_us},
                  {"makespan_us", m.makespan_us},
                  {"pfc_pause_frames", m.pfc_frames},
                  {"ecn_marks", m.ecn_marks},
                  {"cnps", m.cnps},
                  {"incast_fct_max_us", m.incast_fct_max_us}});
  }
  write_file(out / "results.csv", csv);
  r.results["gpus"] = s.hosts;
  r.results["variants"] = jv;
  fabric_section(by, out, r);
  counters_section(by, out, r);
  incast_section(by, r);
}

}  // namespace

Definition collectives() {
  return {"collectives", "Offloaded collectives on the fabric: algorithms, counters and congestion", variants, analyze};
}

}  // namespace fabriclab::scenario::experiments
