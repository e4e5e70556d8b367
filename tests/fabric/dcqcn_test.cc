// DCQCN's reaction point on its own: a Simulator for its timers and CNPs delivered by
// hand, every rate worked out by hand from the rules in fabric/dcqcn.h.
#include "fabric/cc/dcqcn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "error_message.h"
#include "fabric/rate_recorder.h"
#include "fabric/host.h"
#include "fabric/port.h"

namespace fabriclab::fabric {
namespace {

constexpr std::int64_t G = 1'000'000'000, M = 1'000'000;

// Runs the simulator up to `t` (timers fire on the way), then delivers a CNP at `t`.
struct Bench {
  Simulator sim;
  RateRecorder rec;
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

TEST(Dcqcn, RatesFinerThanWholeMbps) {
  // R_AI = 2.5 Mb/s (a model's rate in b/s, not a ConnectX's whole Mb/s).
  DcqcnParams p = frozen_half_alpha(DcqcnParams::paper());
  p.rpg_threshold = 1;
  p.rpg_byte_reset = 0;
  p.rpg_ai_rate = bps(2'500'000);
  Bench b(p);
  b.cnp_at(us(0));      // Rc 75G, Rt 100G
  b.cnp_at(us(1));      // Rt = 75G, Rc = 56.25G
  b.until(us(1 + 55));  // T = 1 = F: additive
  EXPECT_EQ(b.rt(), 75'002'500'000);
  EXPECT_EQ(b.rc(), 65'626'250'000);  // (75 002 500 000 + 56 250 000 000) / 2
  b.until(us(1 + 110));
  EXPECT_EQ(b.rt(), 75'005'000'000);
  EXPECT_EQ(b.rc(), 70'315'625'000);  // (75 005 000 000 + 65 626 250 000) / 2
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
  q.rpg_min_rate = Gbps(30);
  Bench c(q);
  c.cnp_at(us(0));  // 100G x (1 - 1023/2048) = 50.05G
  EXPECT_EQ(c.rc(), 100 * G - 100 * G * 1023 / 2048);
  c.cnp_at(us(1));
  c.cnp_at(us(2));
  EXPECT_EQ(c.rc(), 30 * G);
}

TEST(Dcqcn, FirstCnpCanSetTheRate) {
  DcqcnParams p = DcqcnParams::nvidia();
  p.rate_to_set_on_first_cnp = Gbps(20);
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

// The reaction-point variants (roce_rp.stage_compare, increase_stages, hyper_increase,
// alpha_after_recovery, cut_grid, cut_alpha), each against a sequence worked by hand.

// Two CNPs leave Rt = 75G, Rc = 56.25G, T = 0 (paper: cut at the CNP, Rt = Rc first; alpha
// frozen at 1/2 so every cut is Rc/4); then the timer (55 us) raises the rate at 56, 111,
// 166, 221, 276 us. F = 2, the timer alone.
std::unique_ptr<Bench> timer_staged(StageCompare compare, HyperIncrease hyper) {
  DcqcnParams p = frozen_half_alpha(DcqcnParams::paper());
  p.rpg_threshold = 2;
  p.rpg_byte_reset = 0;
  p.increase_stages = IncreaseStages::timer;
  p.stage_compare = compare;
  p.hyper_increase = hyper;
  auto b = std::make_unique<Bench>(p);
  b->cnp_at(us(0));
  b->cnp_at(us(1));
  EXPECT_EQ(b->rt(), 75 * G);
  EXPECT_EQ(b->rc(), 56'250'000'000);
  return b;
}

TEST(DcqcnVariants, ComparedBeforeTheIncrementFTimesFastRecovery) {
  // Stage 0, 1 < F: fast recovery twice; stage 2 = F: additive (+40 Mb/s); stage 3, 4 > F:
  // hyper by (stage - F) x 200 Mb/s.
  const auto bench = timer_staged(StageCompare::before_increment, HyperIncrease::growing);
  Bench& b = *bench;
  b.until(us(56));
  EXPECT_EQ(b.rc(), 65'625'000'000);  // (75 + 56.25) / 2
  b.until(us(111));
  EXPECT_EQ(b.rt(), 75 * G);
  EXPECT_EQ(b.rc(), 70'312'500'000);
  b.until(us(166));
  EXPECT_EQ(b.rt(), 75'040'000'000);
  EXPECT_EQ(b.rc(), 72'676'250'000);
  b.until(us(221));
  EXPECT_EQ(b.rt(), 75'240'000'000);
  EXPECT_EQ(b.rc(), 73'958'125'000);
  b.until(us(276));
  EXPECT_EQ(b.rt(), 75'640'000'000);
  EXPECT_EQ(b.rc(), 74'799'062'500);
}

TEST(DcqcnVariants, ComparedAfterTheIncrementFMinusOneFastRecoveries) {
  // T = 1 < F: fast recovery once; T = 2 = F: additive; T = 3 > F: hyper by 1 x 200 Mb/s.
  const auto bench = timer_staged(StageCompare::after_increment, HyperIncrease::growing);
  Bench& b = *bench;
  b.until(us(56));
  EXPECT_EQ(b.rc(), 65'625'000'000);
  b.until(us(111));
  EXPECT_EQ(b.rt(), 75'040'000'000);
  EXPECT_EQ(b.rc(), 70'332'500'000);  // (75.04 + 65.625) / 2
  b.until(us(166));
  EXPECT_EQ(b.rt(), 75'240'000'000);
  EXPECT_EQ(b.rc(), 72'786'250'000);
}

TEST(DcqcnVariants, ConstantHyperIncreaseAddsRhaiEachTime) {
  const auto bench = timer_staged(StageCompare::before_increment, HyperIncrease::constant);
  Bench& b = *bench;
  b.until(us(221));
  EXPECT_EQ(b.rt(), 75'240'000'000);  // stage 3: + 200 Mb/s
  b.until(us(276));
  EXPECT_EQ(b.rt(), 75'440'000'000);  // stage 4: + 200 Mb/s again, not 2 x 200
}

TEST(DcqcnVariants, ByTheTimerAloneNeedsTheByteCounterOff) {
  DcqcnParams p = DcqcnParams::nvidia();  // rpg_byte_reset = 32767
  p.increase_stages = IncreaseStages::timer;
  EXPECT_EQ(testing::input_error_of([&] { p.validate(); }),
            "roce_rp.increase_stages = timer: expected rpg_byte_reset = 0 (the phases are read off the timer alone, "
            "so the byte counter must be off)");
  p.rpg_byte_reset = 0;
  EXPECT_NO_THROW(p.validate());
}

// Paper, alpha 512/1024 (a first cut of a quarter), g = 1020, the increase timer every
// `time_reset` us.
DcqcnParams paper_half_alpha(std::uint32_t time_reset) {
  DcqcnParams p = DcqcnParams::paper();
  p.initial_alpha_value = 512;
  p.rpg_time_reset = time_reset;
  return p;
}

TEST(DcqcnVariants, ExactAlphaCutsByAlphaAsItIs) {
  // Paper, alpha 512/1024, g = 1020, no timer in the way. The CNP at 0 cuts by alpha = 1/2
  // (75G) and moves alpha to (1020 x 512 + 4 x 1024) / 1024^2 = 514/1024; one quiet period
  // (55 us) later it is 514 x 1020 / 1024^2 = 511.9921875 / 1024. The CNP at 56 us (Rt =
  // Rc = 75G first) cuts 75G x 511 / 2048 quantized, 75G x 511.9921875 / 2048 exact.
  for (CutAlpha mode : {CutAlpha::quantized, CutAlpha::exact}) {
    DcqcnParams p = paper_half_alpha(1'000'000);  // no timer in the way
    p.cut_alpha = mode;
    Bench b(p);
    b.cnp_at(us(0));
    EXPECT_EQ(b.rc(), 75 * G);
    b.cnp_at(us(56));
    EXPECT_EQ(b.rc(), mode == CutAlpha::quantized ? 75 * G - 18'713'378'906 : 75 * G - 18'749'713'897);
  }
}

TEST(DcqcnVariants, CuttingAtEachCnpOnItsOwnClockTheFirstCnpIsNoUpdate) {
  // As ExactAlphaCutsByAlphaAsItIs, with the QP's own clock: the CNP at 0 sets alpha to
  // 512/1024 and does not also move it to 514/1024, so after one quiet period it is
  // 512 x 1020 / 1024 = 510 (/1024): the cut at 56 us is 75G x 510 / 2048.
  DcqcnParams p = paper_half_alpha(1'000'000);
  p.cut_grid = CutGrid::first_cnp;
  Bench b(p);
  b.cnp_at(us(0));
  EXPECT_EQ(b.rc(), 75 * G);
  b.cnp_at(us(56));
  EXPECT_EQ(b.rc(), 75 * G - 18'676'757'812);
}

TEST(DcqcnVariants, AlphaKeptFromTheFirstCnpOrResetAfterARecovery) {
  // Paper, alpha 512/1024, g = 1020, a 1 us timer: the CNP at 0 cuts to 75G (alpha then
  // 514/1024) and the QP is back at line rate within 40 us. At 1000 us a CNP at full rate:
  // "reset" sets alpha = 512/1024 again and cuts a quarter; "keep" cuts by the alpha decayed
  // over floor(1000/55) = 18 quiet periods, 514 x (1020/1024)^18 = 479.03 / 1024:
  // 100G x 479 / 2048 = 23 388 671 875.
  for (AlphaAfterRecovery mode : {AlphaAfterRecovery::reset, AlphaAfterRecovery::keep}) {
    DcqcnParams p = paper_half_alpha(1);
    p.alpha_after_recovery = mode;
    Bench b(p);
    b.cnp_at(us(0));
    EXPECT_EQ(b.rc(), 75 * G);
    b.until(us(999));
    EXPECT_EQ(b.rc(), 100 * G);
    EXPECT_EQ(b.sim.pending(), 0u);  // recovered: timers stopped
    b.cnp_at(us(1000));
    EXPECT_EQ(b.rc(), mode == AlphaAfterRecovery::reset ? 75 * G : 100 * G - 23'388'671'875);
  }
}

TEST(DcqcnVariants, RateChecksOnTheQpsOwnGridFromItsFirstCnp) {
  // NVIDIA, alpha frozen at 1/2 (cuts of a quarter), 4 us monitor period, CNPs at 1.5 us
  // and 6 us. Global grid: cuts at 4 and 8 us. The QP's grid: checks at 1.5 us + 1 ns +
  // k x 4 us, so cuts at 5.501 and 9.501 us.
  for (CutGrid grid : {CutGrid::global, CutGrid::first_cnp}) {
    DcqcnParams p = frozen_half_alpha(DcqcnParams::nvidia());
    p.cut_grid = grid;
    Bench b(p);
    b.cnp_at(ns(1500));
    const Time first = grid == CutGrid::global ? us(4) : ns(5501);
    b.until(first - ns(1));
    EXPECT_EQ(b.rc(), 100 * G);
    b.until(first);
    EXPECT_EQ(b.rc(), 75 * G);
    b.cnp_at(us(6));
    const Time second = grid == CutGrid::global ? us(8) : ns(9501);
    b.until(second - ns(1));
    EXPECT_EQ(b.rc(), 75 * G);
    b.until(second);
    EXPECT_EQ(b.rc(), 56'250'000'000);
  }
}

TEST(DcqcnVariants, AlphaPeriodsFromTheFirstCnpWhichIsNotASample) {
  // NVIDIA, alpha set to 1024/1024 = 1 by the first CNP (at 1.5 us), g = 1020, 1 us periods.
  // QP's own clock: four quiet periods by the check at 5.501 us: alpha = (1020/1024)^4 =
  // 1008.09/1024, cut 100G x 1008 / 2048. Global: periods from 0; the CNP counts in
  // [1, 2) us (alpha stays 1), then two quiet ones by the check at 4 us: (1020/1024)^2 =
  // 1016.02/1024, cut 100G x 1016 / 2048.
  for (CutGrid grid : {CutGrid::global, CutGrid::first_cnp}) {
    DcqcnParams p = DcqcnParams::nvidia();
    p.initial_alpha_value = 1024;
    p.dce_tcp_g = 1020;
    p.cut_grid = grid;
    Bench b(p);
    b.cnp_at(ns(1500));
    b.until(us(6));
    EXPECT_EQ(b.rc(), grid == CutGrid::first_cnp ? 100 * G - 49'218'750'000 : 100 * G - 49'609'375'000);
  }
}

// The ns3-mlx preset, step by step against the rules of ns-3's RDMA model (rdma-hw.cc,
// CC_MODE 1), worked out with them by a separate script: alpha = 1 at the first CNP
// (10 us), updated every 1 us with g = 1/256 from there; rate checks at 10 us + 1 ns +
// k x 4 us; cut Rc (1 - alpha/2), exact; the 300 us timer compares its stage with F = 1
// before raising it (fast recovery once, then additive once, then hyper by a constant
// 200 Mb/s); Rt = Rc at a cut only after the timer has fired.
TEST(DcqcnVariants, Ns3MlxPresetStepByStep) {
  Bench b(DcqcnParams::ns3_mlx());
  b.cnp_at(us(10));
  b.until(ns(14'000));
  EXPECT_EQ(b.rc(), 100 * G);
  b.until(ns(14'001));  // four quiet alpha periods: alpha = (255/256)^4 = 0.98447
  EXPECT_EQ(b.rc(), 50'776'684'273);
  EXPECT_EQ(b.rt(), 100 * G);  // stage 0: no clamp
  b.until(ns(314'001));        // stage 0 < F: fast recovery
  EXPECT_EQ(b.rc(), 75'388'342'137);
  b.cnp_at(us(400));  // checked at 10.001 + 98 x 4 = 402.001 us; alpha then 0.21951
  b.until(ns(402'001));
  EXPECT_EQ(b.rt(), 75'388'342'137);  // stage 1: Rt = Rc first
  EXPECT_EQ(b.rc(), 67'114'145'500);
  b.until(ns(702'001));  // stage 0: fast recovery
  EXPECT_EQ(b.rc(), 71'251'243'819);
  b.until(ns(1'002'001));  // stage 1 = F: additive, Rt + 20 Mb/s
  EXPECT_EQ(b.rt(), 75'408'342'137);
  EXPECT_EQ(b.rc(), 73'329'792'978);
  b.until(ns(1'302'001));  // stage 2 > F: hyper, Rt + 200 Mb/s
  EXPECT_EQ(b.rt(), 75'608'342'137);
  EXPECT_EQ(b.rc(), 74'469'067'558);
  b.until(ns(1'602'001));  // stage 3: the same 200 Mb/s again
  EXPECT_EQ(b.rt(), 75'808'342'137);
  EXPECT_EQ(b.rc(), 75'138'704'848);
  EXPECT_EQ(b.cc->cuts(), 2u);
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
  EXPECT_NO_THROW(DcqcnParams::ns3_mlx().validate());
}

}  // namespace
}  // namespace fabriclab::fabric

namespace fabriclab::fabric {
namespace {

TEST(CongestionControl, PoliciesAreMadeByNameWithTheNicsParameters) {
  Simulator sim;
  RateRecorder rec;
  NicConfig nic;
  nic.dcqcn.rpg_max_rate = Gbps(40);  // below the 100 Gb/s line, so the instance must read it
  const CcContext ctx{sim, Gbps(100), Time(), 4096, &rec, 7};
  const auto none = make_congestion_control("none", ctx, nic);
  EXPECT_STREQ(none->name(), "none");
  EXPECT_EQ(none->rate(), Gbps(100));
  const auto dcqcn = make_congestion_control("dcqcn", ctx, nic);
  EXPECT_STREQ(dcqcn->name(), "dcqcn");
  EXPECT_EQ(dcqcn->rate(), Gbps(40));  // starts at rpg_max_rate, from the NIC's parameters
  nic.dctcp.window = CcWindow::off;
  EXPECT_EQ(make_congestion_control("dctcp", ctx, nic)->window(), 0u);  // reads nic.dctcp
  EXPECT_STREQ(make_congestion_control("timely", ctx, nic)->name(), "timely");
  EXPECT_EQ(testing::input_error_of([&] { make_congestion_control("reno", ctx, nic); }),
            "unknown congestion control 'reno' (expected: none, dcqcn, dctcp, hpcc, nscc, swift, timely)");
  nic.dcqcn.rpg_gd = 0;  // outside its declared 1..20
  EXPECT_THROW(cc_policy("dcqcn").check(nic), InputError);
  EXPECT_NO_THROW(cc_policy("none").check(nic));
}

}  // namespace
}  // namespace fabriclab::fabric
