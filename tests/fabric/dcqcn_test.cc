// DCQCN's reaction point on its own: a Simulator for its timers and CNPs delivered by
// hand, every rate worked out by hand from the rules in fabric/dcqcn.h.
#include "fabric/cc/dcqcn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "error_message.h"
#include "fabric/host.h"
#include "fabric/port.h"

namespace fabriclab::fabric {
namespace {

constexpr std::int64_t G = 1'000'000'000, M = 1'000'000;

struct Recorder : RateListener {
  std::vector<std::uint32_t> raised;
  void rate_raised(std::uint32_t qp) override { raised.push_back(qp); }
};

// Runs the simulator up to `t` (timers fire on the way), then delivers a CNP at `t`.
struct Bench {
  Simulator sim;
  Recorder rec;
  DcqcnParams p;
  std::unique_ptr<Dcqcn> cc;
  explicit Bench(DcqcnParams params, BitRate line = Gbps(100)) : p(std::move(params)) {
    cc = std::make_unique<Dcqcn>(p, sim, line, &rec, 7);
  }
  void until(Time t) { sim.run(t); }
  void cnp_at(Time t) {
    sim.run(t);
    cc->on_cnp(t);
  }
  std::int64_t rc() const { return cc->rate().bps(); }
  std::int64_t rt() const { return cc->target_rate().bps(); }
};

// alpha frozen at 1/2 (dce_tcp_g = 1024 keeps the old alpha whole): every cut is Rc/4.
DcqcnParams frozen_half_alpha(DcqcnParams p) {
  p.initial_alpha_value = 512;
  p.dce_tcp_g = 1024;
  return p;
}

TEST(Dcqcn, StartsAtLineRate) {
  Bench b(DcqcnParams::nvidia());
  EXPECT_EQ(b.rc(), 100 * G);
  EXPECT_EQ(b.rt(), 100 * G);
  EXPECT_STREQ(b.cc->name(), "dcqcn");
}

TEST(Dcqcn, PaperCutsAtTheCnpAndRecoversByTheTimer) {
  DcqcnParams p = frozen_half_alpha(DcqcnParams::paper());
  Bench b(p);
  b.cnp_at(us(1));
  // Rt = Rc = 100G, then Rc -= Rc * 512 / 2^11.
  EXPECT_EQ(b.rt(), 100 * G);
  EXPECT_EQ(b.rc(), 75 * G);
  // Fast recovery every 55 us (F = 5): Rc = ceil((Rt + Rc) / 2).
  b.until(us(55));
  EXPECT_EQ(b.rc(), 75 * G);
  b.until(us(56));
  EXPECT_EQ(b.rc(), 87'500'000'000);
  EXPECT_EQ(b.cc->timer_stage(), 1u);
  EXPECT_EQ(b.rec.raised, (std::vector<std::uint32_t>{7}));
  // A second CNP clamps Rt to the current rate first, then cuts a quarter.
  b.cnp_at(us(60));
  EXPECT_EQ(b.rt(), 87'500'000'000);
  EXPECT_EQ(b.rc(), 65'625'000'000);
  EXPECT_EQ(b.cc->timer_stage(), 0u);
  // The cut restarted the timer: nothing at 60 + 54 us, recovery at 60 + 55 us.
  b.until(us(114));
  EXPECT_EQ(b.rc(), 65'625'000'000);
  b.until(us(115));
  EXPECT_EQ(b.rc(), 76'562'500'000);
}

TEST(Dcqcn, AdditiveThenHyperIncrease) {
  DcqcnParams p = frozen_half_alpha(DcqcnParams::paper());
  p.rpg_threshold = 2;
  p.rpg_byte_reset = 0;  // the timer alone: BC stays 0, so min(T, BC) never passes F
  Bench b(p);
  b.cnp_at(us(0));  // Rc 75G, Rt 100G
  // T = 1: fast recovery; T = 2, 3, ...: additive (max(T, BC) >= F, min(T, BC) = 0 <= F).
  b.until(us(55));
  EXPECT_EQ(b.rc(), 87'500'000'000);
  b.cnp_at(us(56));  // Rt = 87.5G, Rc = 65.625G
  b.until(us(56 + 55));
  EXPECT_EQ(b.rt(), 87'500'000'000);
  EXPECT_EQ(b.rc(), 76'562'500'000);  // T = 1 < F: fast recovery
  b.until(us(56 + 110));
  EXPECT_EQ(b.rt(), 87'540'000'000);  // T = 2 = F: additive, Rt += 40 Mb/s
  EXPECT_EQ(b.rc(), 82'051'250'000);

  // Both counters past F: hyper increase by (min(T, BC) - F) x R_HAI. The byte counter
  // (one stage per 64 bytes here) moves BC; the timer moves T.
  DcqcnParams h = frozen_half_alpha(DcqcnParams::paper());
  h.rpg_threshold = 1;
  h.rpg_byte_reset = 1;  // 64 bytes per stage
  Bench c(h);
  c.cnp_at(us(0));  // Rc 75G, Rt 100G (capped: Rt cannot rise)
  c.cnp_at(us(1));  // Rt = 75G, Rc = 56.25G, T = BC = 0
  EXPECT_EQ(c.rt(), 75 * G);
  EXPECT_EQ(c.rc(), 56'250'000'000);
  c.until(us(1 + 110));  // T = 1, 2: max(T, BC) >= F = 1, min(T, BC) = 0: additive twice
  EXPECT_EQ(c.cc->timer_stage(), 2u);
  const std::int64_t rt0 = c.rt(), rc0 = c.rc();
  EXPECT_EQ(rt0, 75'080'000'000);
  c.cc->on_sent(us(112), 64);  // BC = 1: min(T, BC) = 1 = F: additive
  EXPECT_EQ(c.rt(), rt0 + 40 * M);
  c.cc->on_sent(us(112), 64);  // BC = 2: min = 2 > F: hyper, Rt += 1 x 200 Mb/s
  EXPECT_EQ(c.rt(), rt0 + 40 * M + 200 * M);
  EXPECT_EQ(c.cc->byte_stage(), 2u);
  EXPECT_GT(c.rc(), rc0);
}

TEST(Dcqcn, NvidiaCutsAtTheMonitorPeriodOncePerPeriod) {
  Bench b(frozen_half_alpha(DcqcnParams::nvidia()));
  b.cnp_at(us(1));
  b.cnp_at(us(2));
  b.cnp_at(us(3));
  EXPECT_EQ(b.rc(), 100 * G);  // noted, not yet acted on
  b.until(us(4));
  EXPECT_EQ(b.rc(), 75 * G);   // one cut for the three CNPs of the period
  EXPECT_EQ(b.rt(), 100 * G);  // T = 0: clamp_tgt_rate_after_time_inc leaves Rt
  EXPECT_EQ(b.cc->cuts(), 1u);
  EXPECT_EQ(b.cc->cnps(), 3u);
  b.until(us(12));
  EXPECT_EQ(b.rc(), 75 * G);  // no CNP since: no cut
  b.cnp_at(us(13));
  b.until(us(16));
  EXPECT_EQ(b.rc(), 56'250'000'000);
  // The increase timer (300 us) restarted at the cut at 16 us.
  b.until(us(315));
  EXPECT_EQ(b.rc(), 56'250'000'000);
  b.until(us(316));
  EXPECT_EQ(b.rc(), 78'125'000'000);  // T = 1 = F: additive, Rt capped at 100G; Rc halfway
}

TEST(Dcqcn, CutIsCappedByMinDecFacAndFlooredByMinRate) {
  DcqcnParams p = DcqcnParams::paper();  // alpha about 1: an uncapped cut halves Rc
  p.rpg_min_dec_fac = 80;                // keep at least 80 %
  Bench b(p);
  b.cnp_at(us(0));
  EXPECT_EQ(b.rc(), 80 * G);

  DcqcnParams q = DcqcnParams::paper();
  q.rpg_min_rate = 30'000;  // 30 Gb/s
  Bench c(q);
  c.cnp_at(us(0));  // 100G x (1 - 1023/2048) = 50.05G
  EXPECT_EQ(c.rc(), 100 * G - 100 * G * 1023 / 2048);
  c.cnp_at(us(1));
  c.cnp_at(us(2));
  EXPECT_EQ(c.rc(), 30 * G);
}

TEST(Dcqcn, FirstCnpCanSetTheRate) {
  DcqcnParams p = DcqcnParams::nvidia();
  p.rate_to_set_on_first_cnp = 20'000;  // Mb/s
  Bench b(p);
  b.cnp_at(us(1));
  EXPECT_EQ(b.rc(), 20 * G);  // at once, no monitor period
  b.until(us(4));
  EXPECT_EQ(b.rc(), 20 * G);  // that CNP is spent: no cut at the boundary
}

// Alpha after n update periods without a CNP is alpha0 (g/1024)^n: the time constant is
// -period / ln(g/1024) -- 14.05 ms for the paper's 55 us and 1020, 204.3 us for NVIDIA's
// 1 us and 1019. Measured here from the alpha series sampled every period.
double decay_time_constant(const DcqcnParams& p) {
  Simulator sim;
  Dcqcn cc(p, sim, Gbps(100), nullptr, 0);
  cc.on_cnp(Time());
  const Time period = Time::from_ps(std::int64_t{p.dce_tcp_rtt} * 1'000'000);
  // Let the CNP's own update (and the nvidia monitor cut) happen, then sample.
  Time t = Time::from_ps(8 * period.ps() + 8'000'000);
  const double a0 = cc.alpha(t);
  const double target = a0 / std::exp(1.0);
  for (Time u = t;; u += period)
    if (cc.alpha(u) <= target) return static_cast<double>((u - t).ps()) / 1e6;  // us
}

TEST(Dcqcn, PresetsHaveTheirAlphaTimeConstants) {
  const double paper = decay_time_constant(DcqcnParams::paper());
  const double nvidia = decay_time_constant(DcqcnParams::nvidia());
  EXPECT_NEAR(paper, -55.0 / std::log(1020.0 / 1024.0), 55.0);  // 14052 us, to one period
  EXPECT_NEAR(nvidia, -1.0 / std::log(1019.0 / 1024.0), 1.0);   // 204.3 us
  EXPECT_GT(paper / nvidia, 60.0);
}

TEST(Dcqcn, AlphaRisesWithCnpsByTheWeightOfNewSamples) {
  DcqcnParams p = DcqcnParams::nvidia();
  p.initial_alpha_value = 0;
  Simulator sim;
  Dcqcn cc(p, sim, Gbps(100), nullptr, 0);
  cc.on_cnp(ns(500));  // first CNP: alpha = 0/1024; the period [0, 1us) saw a CNP
  EXPECT_DOUBLE_EQ(cc.alpha(ns(999)), 0.0);
  EXPECT_DOUBLE_EQ(cc.alpha(us(1)), 5.0 / 1024.0);                      // (1019 x 0 + 5) / 1024
  EXPECT_DOUBLE_EQ(cc.alpha(us(2)), (1019.0 * 5.0 / 1024.0) / 1024.0);  // then a quiet period
}

TEST(Dcqcn, RecoversToLineRateAndStopsItsTimers) {
  DcqcnParams p = frozen_half_alpha(DcqcnParams::nvidia());
  p.rpg_byte_reset = 0;
  Bench b(p);
  b.cnp_at(us(1));
  b.until(us(4));
  EXPECT_EQ(b.rc(), 75 * G);
  b.sim.run();  // the timer runs until Rc = Rt = line rate, then stops: the queue empties
  EXPECT_EQ(b.rc(), 100 * G);
  EXPECT_EQ(b.sim.pending(), 0u);
}

TEST(Dcqcn, ParametersAreValidated) {
  DcqcnParams p;
  p.dce_tcp_rtt = 0;
  EXPECT_THROW(p.validate(), InputError);
  p = DcqcnParams{};
  p.rpg_min_dec_fac = 101;
  EXPECT_THROW(p.validate(), InputError);
  EXPECT_THROW(DcqcnParams::preset_named("mellanox"), InputError);
  EXPECT_NO_THROW(DcqcnParams::paper().validate());
  EXPECT_NO_THROW(DcqcnParams::nvidia().validate());
}

}  // namespace
}  // namespace fabriclab::fabric

namespace fabriclab::fabric {
namespace {

TEST(CongestionControl, PoliciesAreMadeByNameWithTheNicsParameters) {
  Simulator sim;
  Recorder rec;
  NicConfig nic;
  nic.dcqcn.rpg_max_rate = 40'000;  // Mb/s: below the 100 Gb/s line, so the instance must read it
  const CcContext ctx{sim, Gbps(100), &rec, 7};
  const auto none = make_congestion_control("none", ctx, nic);
  EXPECT_STREQ(none->name(), "none");
  EXPECT_EQ(none->rate(), Gbps(100));
  const auto dcqcn = make_congestion_control("dcqcn", ctx, nic);
  EXPECT_STREQ(dcqcn->name(), "dcqcn");
  EXPECT_EQ(dcqcn->rate(), Gbps(40));  // starts at rpg_max_rate, from the NIC's parameters
  EXPECT_EQ(testing::input_error_of([&] { make_congestion_control("hpcc", ctx, nic); }),
            "unknown congestion control 'hpcc' (expected: none, dcqcn)");
  nic.dcqcn.rpg_gd = 0;  // outside its declared 1..20
  EXPECT_THROW(cc_policy("dcqcn").check(nic), InputError);
  EXPECT_NO_THROW(cc_policy("none").check(nic));
}

}  // namespace
}  // namespace fabriclab::fabric
