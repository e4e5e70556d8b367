#include "scenario/batch/tune.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "scenario/batch/tune_report.h"

namespace fabriclab::scenario {
namespace {

TuneParam real(std::string key, double lo, double hi, TuneParam::Scale scale = TuneParam::Scale::linear) {
  TuneParam p;
  p.key = std::move(key);
  p.kind = params::Kind::real;
  p.scale = scale;
  p.lo = lo;
  p.hi = hi;
  return p;
}

// f(x, y, z) = -(x - 0.3)^2 - (log10 y - 2)^2 - [z != b], with the constraint x >= 0.5:
// the constrained optimum is x = 0.5 (on the constraint), y = 100, z = b, f = -0.04.
struct Synthetic {
  std::vector<TuneParam> space{real("x", 0, 1), real("y", 1, 1000, TuneParam::Scale::log), [] {
                                 TuneParam z;
                                 z.key = "z";
                                 z.kind = params::Kind::choice;
                                 z.scale = TuneParam::Scale::choice;
                                 z.choices = {"a", "b", "c"};
                                 return z;
                               }()};
  std::size_t calls = 0;
  TrialResult operator()(std::size_t, const std::vector<std::string>& v) {
    ++calls;
    const double x = std::stod(v[0]), y = std::stod(v[1]);
    TrialResult r;
    r.objective = -(x - 0.3) * (x - 0.3) - (std::log10(y) - 2) * (std::log10(y) - 2) - (v[2] == "b" ? 0 : 1);
    r.excess = {0.5 - x};
    return r;
  }
};

TEST(Tune, FindsTheConstrainedOptimumOfASyntheticObjective) {
  Synthetic f;
  const auto trials = search(f.space, 1, 300, 7, [&](std::size_t i, const auto& v) { return f(i, v); });
  EXPECT_EQ(trials.size(), 300u);
  EXPECT_EQ(f.calls, 300u);  // each distinct point evaluated once
  const long b = best_trial(trials);
  ASSERT_GE(b, 0);
  const Trial& t = trials[static_cast<std::size_t>(b)];
  const double x = std::stod(t.values[0]), y = std::stod(t.values[1]);
  EXPECT_GE(x, 0.5);  // the constraint holds
  EXPECT_LT(x, 0.6) << t.values[0];
  EXPECT_NEAR(std::log10(y), 2.0, 0.3) << t.values[1];
  EXPECT_EQ(t.values[2], "b");
  EXPECT_GT(t.result.objective, -0.04 - 0.12);
  // Infeasible trials were tried (the unconstrained optimum lies outside) and never win.
  std::size_t infeasible = 0;
  for (const Trial& u : trials) {
    EXPECT_EQ(u.feasible(), std::stod(u.values[0]) >= 0.5);
    infeasible += !u.feasible();
  }
  EXPECT_GT(infeasible, 0u);
}

TEST(Tune, SameSeedSameTrials) {
  Synthetic f, g, h;
  const auto a = search(f.space, 1, 40, 3, [&](std::size_t i, const auto& v) { return f(i, v); });
  const auto b = search(g.space, 1, 40, 3, [&](std::size_t i, const auto& v) { return g(i, v); });
  const auto c = search(h.space, 1, 40, 4, [&](std::size_t i, const auto& v) { return h(i, v); });
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].values, b[i].values) << i;
  bool differs = false;
  for (std::size_t i = 0; i < std::min(a.size(), c.size()); ++i) differs |= a[i].values != c[i].values;
  EXPECT_TRUE(differs);
}

TEST(Tune, AnEvaluationErrorStopsTheSearchAndIsRethrown) {
  Synthetic f;
  EXPECT_THROW(search(f.space, 1, 40, 1,
                      [&](std::size_t i, const auto& v) {
                        if (i == 5) throw InputError("run 5 failed");
                        return f(i, v);
                      }),
               InputError);
  EXPECT_EQ(f.calls, 5u);
}

// Run ahead a generation at a time, the search asks the same points in the same order as
// one at a time, with the same results; every point run in a batch is one of its trials
// (ISRES draws a generation before it ranks it, so a batch is a generation's new points),
// numbered in the order the search asks them; the first batch is the whole first
// generation (the population: limit / 4 within n + 2 .. 20 (n + 1), here n = 3).
TEST(Tune, BatchesOfAGenerationGiveTheTrialsOfOneAtATime) {
  for (const std::size_t limit : {7u, 40u, 300u}) {
    Synthetic f, g;
    const auto one = search(f.space, 1, limit, 5, [&](std::size_t i, const auto& v) { return f(i, v); });
    std::vector<std::vector<TrialRequest>> batches;
    const auto many = search(
        g.space, 1, limit, 5,
        [&](const std::vector<TrialRequest>& b) {
          batches.push_back(b);
          std::vector<TrialResult> r;
          for (const TrialRequest& q : b) r.push_back(g(q.index, q.values));
          return r;
        },
        true);
    ASSERT_EQ(one.size(), limit);
    ASSERT_EQ(many.size(), limit);
    for (std::size_t i = 0; i < limit; ++i) {
      EXPECT_EQ(many[i].values, one[i].values) << limit << " " << i;
      EXPECT_EQ(many[i].result.objective, one[i].result.objective) << i;
      EXPECT_EQ(many[i].result.excess, one[i].result.excess) << i;
    }
    EXPECT_EQ(g.calls, limit);  // nothing run for nothing
    const std::size_t population = std::clamp<std::size_t>(limit / 4, 5, 80);
    ASSERT_FALSE(batches.empty());
    EXPECT_EQ(batches[0].size(), std::min(population, limit));
    std::size_t next = 0;
    for (const auto& b : batches) {
      EXPECT_LE(b.size(), population);
      for (const TrialRequest& q : b) {
        EXPECT_EQ(q.index, next);
        if (q.index < many.size()) {
          EXPECT_EQ(q.values, many[q.index].values);
        }
        ++next;
      }
    }
    EXPECT_GE(batches.size(), (limit + population - 1) / population);
  }
}

TEST(Tune, AnErrorInABatchStopsTheSearchAndIsRethrown) {
  Synthetic f;
  std::size_t batches = 0;
  EXPECT_THROW(search(
                   f.space, 1, 40, 1,
                   [&](const std::vector<TrialRequest>&) -> std::vector<TrialResult> {
                     ++batches;
                     throw InputError("a run failed");
                   },
                   true),
               InputError);
  EXPECT_EQ(batches, 1u);
}

TEST(Tune, MapsTheUnitIntervalOntoEachScale) {
  // Integer: 1 + 0.5 x 99 = 50.5, rounded half away from zero.
  const TuneParam ai = parse_tune_param("nic.roce_rp.rpg_ai_rate=1..100");
  EXPECT_EQ(ai.scale, TuneParam::Scale::integer);
  EXPECT_EQ(ai.value_at(0), "1");
  EXPECT_EQ(ai.value_at(0.5), "51");
  EXPECT_EQ(ai.value_at(1), "100");
  // A DCQCN rate is searched in whole Mb/s, its bounds in any rate unit: 1 Mb/s..1 Gb/s on
  // a log scale at 0.5 is sqrt(1000) = 31.6 Mb/s -> 32; choices may be finer.
  const TuneParam hai = parse_tune_param("nic.roce_rp.rpg_hai_rate=1Mbps..1Gbps:log");
  EXPECT_EQ(hai.lo, 1);
  EXPECT_EQ(hai.hi, 1000);
  EXPECT_EQ(hai.value_at(0.5), "32");
  EXPECT_EQ(hai.value_at(1), "1000");
  EXPECT_EQ(parse_tune_param("nic.roce_rp.rpg_ai_rate=2.5,5000Kbps").choices, (std::vector<std::string>{"2.5", "5"}));
  // Log over bytes: 10KB..1MB at 0.5 is sqrt(1e4 x 1e6) = 1e5 B = 100KB.
  const TuneParam kmin = parse_tune_param("switch.wred.green_min_threshold=10KB..1MB:log");
  EXPECT_EQ(kmin.value_at(0), "10KB");
  EXPECT_EQ(kmin.value_at(0.5), "100KB");
  EXPECT_EQ(kmin.value_at(1), "1MB");
  // Linear over time, three significant digits: 1us + 0.123456 x 9us = 2.111104us -> 2.11us.
  const TuneParam t = parse_tune_param("topology.link_delay=1us..10us");
  EXPECT_EQ(t.value_at(0.123456), "2.11us");
  // A list key's choices, separated by ';'.
  const TuneParam w = parse_tune_param("switch.dwrr.weights=1,1,1,1,1,1,1,1;1,1,1,4,1,1,1,1");
  EXPECT_EQ(w.choices, (std::vector<std::string>{"1,1,1,1,1,1,1,1", "1,1,1,4,1,1,1,1"}));
  EXPECT_EQ(w.value_at(0.9), "1,1,1,4,1,1,1,1");
  // Choices split [0, 1] evenly.
  const TuneParam c = parse_tune_param("nic.congestion_control=none,dcqcn");
  EXPECT_EQ(c.value_at(0.49), "none");
  EXPECT_EQ(c.value_at(0.5), "dcqcn");
  EXPECT_EQ(c.value_at(1), "dcqcn");
}

// --space FILE: the options' own texts, in the file's order (dotted keys and nested
// tables alike; choices that are lists joined by ';'), added after the command line's.
TEST(Tune, ReadsTheSearchFromASpaceFile) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "tune_space";
  std::filesystem::create_directories(dir);
  const auto space = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    TuneOptions o;
    o.space = (dir / name).string();
    o.params = {"nic.congestion_control=none,dcqcn"};
    o.maximize = {"goodput_gbps"};
    return with_space_file(o);
  };
  const TuneOptions o = space("good.toml", R"(maximize = "0.001*totals.data_bytes_arrived"
minimize = ["totals.drops"]
constraints = ["totals.lossless_drops<=0", "totals.pfc_pause_frames<=10"]
[param]
"switch.wred.green_min_threshold" = "5KB..100KB:log"
nic.roce_np.cnp_scope = ["port", "qp"]
[param.nic.roce_rp]
rpg_ai_rate = "5..400:log"
rate_reduce_monitor_period = [0, 4]
[param.switch.dwrr]
weights = ["1,1,1,1,1,1,1,1", "1,1,1,4,1,1,1,1"]
)");
  EXPECT_EQ(o.params, (std::vector<std::string>{"nic.congestion_control=none,dcqcn",
                                                "switch.wred.green_min_threshold=5KB..100KB:log",
                                                "nic.roce_np.cnp_scope=port,qp", "nic.roce_rp.rpg_ai_rate=5..400:log",
                                                "nic.roce_rp.rate_reduce_monitor_period=0,4",
                                                "switch.dwrr.weights=1,1,1,1,1,1,1,1;1,1,1,4,1,1,1,1"}));
  EXPECT_EQ(o.maximize, (std::vector<std::string>{"goodput_gbps", "0.001*totals.data_bytes_arrived"}));
  EXPECT_EQ(o.minimize, (std::vector<std::string>{"totals.drops"}));
  EXPECT_EQ(o.constraints, (std::vector<std::string>{"totals.lossless_drops<=0", "totals.pfc_pause_frames<=10"}));
  // Errors name the file, line and column.
  const auto error = [&](const std::string& text) {
    try {
      (void)space("bad.toml", text);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string bad = (dir / "bad.toml").string();
  EXPECT_EQ(error("[param]\nnic.roce_rp.rpg_ai_rate = \"5..5\"\n"),
            bad + ":2:27: nic.roce_rp.rpg_ai_rate: '5..5': the low end must be below the high end");
  EXPECT_EQ(error("[param]\nno.such = \"1..2\"\n"),
            bad + ":2:11: unknown key 'no.such' (fabriclab run --parameters lists them)");
  EXPECT_EQ(error("[param]\nsim.seed = 3\n"),
            bad + ":2:12: param 'sim.seed': expected \"LO..HI[:log|:int]\" or a list of choices [A, B, ...]");
  EXPECT_EQ(error("[param]\nnic.roce_np.cnp_scope = [[1]]\n"),
            bad + ":2:26: param 'nic.roce_np.cnp_scope': a choice must be a string, a number or a boolean");
  EXPECT_EQ(error("constraints = [\"drops<<3\"]\n"),
            bad + ":1:16: --constraint 'drops<<3': expected METRIC<=NUMBER or METRIC>=NUMBER");
  EXPECT_EQ(error("maximise = [\"goodput_gbps\"]\n"),
            bad + ":1:12: unknown key 'maximise' (expected param, maximize, minimize, constraints)");
  EXPECT_EQ(error("[param]\nnic.congestion_control = [\"none\", \"dcqcn\"]\n"),
            bad + ":2:26: nic.congestion_control: given by --param too");
  // Floats as decimals, never in exponent form (which no unit parser takes).
  EXPECT_EQ(space("fine.toml", "[param]\nnic.roce_rp.rpg_ai_rate = [0.00001, 5]\n").params.back(),
            "nic.roce_rp.rpg_ai_rate=0.00001,5");
  EXPECT_EQ(error("[param]\nnic.roce_rp.rpg_ai_rate = [0.0000001, 5]\n"),
            bad + ":2:27: nic.roce_rp.rpg_ai_rate: '0.0000001': '0.0000001' is not a rate: expected a number of Mbps "
                  "(e.g. 2.5) or a rate with its unit (e.g. 2500Kbps), exact to the bps");
  EXPECT_EQ(error("[param\n"), bad + ":1:7: malformed TOML: Error while parsing table header: expected ']', saw '\\n'");
  std::filesystem::remove_all(dir);
}

TEST(Tune, RefusesBadDimensionsObjectivesAndConstraints) {
  const auto message = [](auto f) {
    try {
      f();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([] { parse_tune_param("no.such.key=1..2"); }),
            "--param: unknown key 'no.such.key' (fabriclab run --parameters lists them)");
  EXPECT_EQ(message([] { parse_tune_param("nic.roce_rp.rpg_ai_rate=5..5"); }),
            "--param nic.roce_rp.rpg_ai_rate: '5..5': the low end must be below the high end");
  EXPECT_EQ(message([] { parse_tune_param("nic.roce_rp.rpg_ai_rate=1..9:cube"); }),
            "--param nic.roce_rp.rpg_ai_rate: scale 'cube': expected log or int");
  EXPECT_EQ(message([] { parse_tune_param("nic.roce_rp.rpg_ai_rate=0.4..0.6"); }),
            "--param nic.roce_rp.rpg_ai_rate: '0.4..0.6': a range of this key is searched in whole Mbps (as a NIC "
            "takes it): give whole bounds, or list finer values as choices (A,B,...)");
  EXPECT_EQ(message([] { parse_tune_param("nic.congestion_control=dcqcn,dcqcn"); }),
            "--param nic.congestion_control: choice 'dcqcn' is given twice");
  EXPECT_EQ(message([] { parse_tune_param("nic.congestion_control=dcqcn,,none"); }),
            "--param nic.congestion_control: 'dcqcn,,none': expected LO..HI[:log|:int] or at least two choices "
            "A,B,... (A;B;... when a choice is a list)");
  EXPECT_NE(message([] { parse_tune_param("switch.buffer=1MB..x"); }).find("--param switch.buffer: 'x': "),
            std::string::npos);
  EXPECT_EQ(message([] { parse_objective_term("0*goodput_gbps", 1); }),
            "--maximize '0*goodput_gbps': expected [WEIGHT*]METRIC with a weight above 0");
  EXPECT_EQ(message([] { parse_tune_constraint("totals.drops<3x"); }),
            "--constraint 'totals.drops<3x': expected METRIC<=NUMBER or METRIC>=NUMBER");
  const TuneConstraint c = parse_tune_constraint("totals.pfc_pause_frames<=0");
  EXPECT_EQ(c.metric, "totals.pfc_pause_frames");
  EXPECT_TRUE(c.at_most);
  EXPECT_EQ(c.bound, 0);
  EXPECT_EQ(parse_objective_term("2.5*flows.fct_ns_p99", -1).weight, -2.5);
}

TEST(Tune, ParetoFrontKeepsTheTrialsNoOtherBeats) {
  // (goodput, pauses): t1 beats t0 on both; t2 and t3 trade one for the other; t4 equals
  // t3 (the first is kept); t5 was not run.
  std::vector<TrialPoint> t(6);
  const double g[] = {50, 60, 90, 70, 70, 99}, f[] = {30, 20, 40, 10, 10, 0};
  for (std::size_t i = 0; i < t.size(); ++i) {
    t[i].goodput_gbps = g[i];
    t[i].pause_frames = f[i];
  }
  t[5].valid = false;
  EXPECT_EQ(pareto_front(t), (std::vector<std::size_t>{3, 2}));
}

TEST(Tune, WritesTheSettingsAsANicAndASwitchTakeThem) {
  const std::vector<TuneParam> space{parse_tune_param("nic.roce_rp.rpg_ai_rate=1..100"),
                                     parse_tune_param("nic.roce_np.min_time_between_cnps=0..50"),
                                     parse_tune_param("nic.roce_np.cnp_scope=port,qp"),
                                     parse_tune_param("switch.wred.green_min_threshold=1KB..100KB"),
                                     parse_tune_param("switch.pfc.xon_offset=1KiB..64KiB"),
                                     parse_tune_param("switch.mmu.dynamic_th=-3..3")};
  const std::vector<std::string> values{"40", "8", "qp", "12.4KB", "2KiB", "-1"};
  const std::string nic = nic_sysfs_script(space, values);
  EXPECT_NE(nic.find("echo 40 > \"/sys/class/net/$IF/ecn/roce_rp/rpg_ai_rate\"\n"), std::string::npos) << nic;
  EXPECT_NE(nic.find("echo 8 > \"/sys/class/net/$IF/ecn/roce_np/min_time_between_cnps\"\n"), std::string::npos);
  EXPECT_NE(nic.find("#   nic.roce_np.cnp_scope = qp\n"), std::string::npos);
  EXPECT_EQ(nic.find("switch"), std::string::npos);
  // The scenario's other keys, as the tuned settings leave them.
  std::map<std::string, std::string> scenario{{"switch.pfc.headroom", "auto"},
                                              {"switch.scheduler", "strict"},
                                              {"switch.dwrr.weights", "1,1,1,4,1,1,1,1"},
                                              {"switch.dwrr.strict", "6,7"}};
  const auto shown = [&](const std::string& key) { return scenario.at(key); };
  const auto db = nlohmann::json::parse(sonic_config_json(space, values, shown));
  EXPECT_EQ(db["WRED_PROFILE"]["AZURE_LOSSLESS"]["green_min_threshold"], "12400");
  EXPECT_EQ(db["WRED_PROFILE"]["AZURE_LOSSLESS"]["wred_green_enable"], "true");
  EXPECT_EQ(db["BUFFER_PROFILE"]["pg_lossless_tuned_profile"]["xon_offset"], "2048");
  EXPECT_EQ(db["BUFFER_PROFILE"]["pg_lossless_tuned_profile"]["dynamic_th"], "-1");
  // A headroom size is the profile's xoff only when the headroom is given, not computed.
  const std::vector<TuneParam> headroom{parse_tune_param("switch.pfc.headroom_size=32KiB..256KiB")};
  EXPECT_EQ(sonic_config_json(headroom, {"233KB"}, shown), "");
  scenario["switch.pfc.headroom"] = "given";
  EXPECT_EQ(nlohmann::json::parse(
                sonic_config_json(headroom, {"233KB"}, shown))["BUFFER_PROFILE"]["pg_lossless_tuned_profile"]["xoff"],
            "233000");
  // DWRR weights are scheduler profiles, one per queue (the strict ones STRICT), only
  // when the switch schedules by DWRR.
  const std::vector<TuneParam> dwrr{parse_tune_param("switch.dwrr.weights=1,1,1,1,1,1,1,1;1,1,1,4,1,1,1,1")};
  EXPECT_EQ(sonic_config_json(dwrr, {"1,1,1,4,1,1,1,1"}, shown), "");
  scenario["switch.scheduler"] = "dwrr";
  const auto sched = nlohmann::json::parse(sonic_config_json(dwrr, {"1,1,1,4,1,1,1,1"}, shown))["SCHEDULER"];
  ASSERT_EQ(sched.size(), 8u);
  EXPECT_EQ(sched["fabriclab.q3"], (nlohmann::json{{"type", "DWRR"}, {"weight", "4"}}));
  EXPECT_EQ(sched["fabriclab.q0"], (nlohmann::json{{"type", "DWRR"}, {"weight", "1"}}));
  EXPECT_EQ(sched["fabriclab.q6"], (nlohmann::json{{"type", "STRICT"}}));
  // SONiC keeps a weight in 8 bits: weights above 255 are left out, and said so.
  const std::vector<TuneParam> heavy{parse_tune_param("switch.dwrr.weights=1,1,1,1,1,1,1,1;1,1,1,300,1,1,1,1")};
  scenario["switch.dwrr.weights"] = "1,1,1,300,1,1,1,1";
  std::string left_out;
  EXPECT_EQ(sonic_config_json(heavy, {"1,1,1,300,1,1,1,1"}, shown, &left_out), "");
  EXPECT_EQ(left_out,
            "the DWRR weights 1,1,1,300,1,1,1,1 are not written as SONiC schedulers: SONiC takes weights up to 255");
  // Model variants have no sysfs file: listed, not echoed into one; nor is a rate a NIC
  // cannot take (a fraction of a Mb/s, from a list of choices).
  const std::vector<TuneParam> variants{parse_tune_param("nic.roce_rp.cut_grid=global,first_cnp"),
                                        parse_tune_param("nic.roce_np.cnp_form=frame,becn")};
  const std::string v = nic_sysfs_script(variants, {"first_cnp", "becn"});
  EXPECT_EQ(v.find("echo"), std::string::npos) << v;
  EXPECT_NE(v.find("#   nic.roce_rp.cut_grid = first_cnp\n"), std::string::npos) << v;
  EXPECT_NE(v.find("#   nic.roce_np.cnp_form = becn\n"), std::string::npos) << v;
  const std::vector<TuneParam> fine{parse_tune_param("nic.roce_rp.rpg_ai_rate=2.5,5")};
  const std::string f = nic_sysfs_script(fine, {"2.5"});
  EXPECT_EQ(f.find("echo"), std::string::npos) << f;
  EXPECT_NE(f.find("#   nic.roce_rp.rpg_ai_rate = 2.5 (Mb/s: a NIC takes whole Mb/s)\n"), std::string::npos) << f;
  EXPECT_NE(nic_sysfs_script(fine, {"5"}).find("echo 5 > \"/sys/class/net/$IF/ecn/roce_rp/rpg_ai_rate\"\n"),
            std::string::npos);
  // Nothing for a device: no files.
  const std::vector<TuneParam> other{parse_tune_param("topology.link_delay=1us..10us")};
  EXPECT_EQ(nic_sysfs_script(other, {"2us"}), "");
  EXPECT_EQ(sonic_config_json(other, {"2us"}, shown), "");
}

}  // namespace
}  // namespace fabriclab::scenario
