// Loads from a distribution (workload/load.h): the CDF files read as the HPCC ns-3 model's
// traffic generator reads them, and the flows a long run generates checked against the
// target with statistics computed here, independently of the generator: the size
// distribution's mean and second moment from its points by hand, the empirical CDF at
// every point, the realised load, and the arrivals' gaps against the exponential law
// (mean and Kolmogorov-Smirnov statistic).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "core/error.h"
#include "error_message.h"
#include "workload/load.h"

namespace fabriclab::workload {
namespace {

using testing::input_error_of;

const std::string kCdfs = std::string(FABRICLAB_EXAMPLES) + "/cdf/";

// The web search CDF of the DCTCP paper, in percent (the HPCC files' convention).
const char* kWebSearch =
    "0 0\n10000 15\n20000 20\n30000 30\n50000 40\n80000 53\n200000 60\n1000000 70\n2000000 80\n5000000 90\n"
    "10000000 97\n30000000 100\n";

TEST(Cdf, TheWebSearchMeanIsTheSumOfItsTrapezoids) {
  // By hand: 750 + 750 + 2500 + 4000 + 8450 + 9800 + 60000 + 150000 + 350000 + 525000 + 600000.
  const Cdf c = Cdf::parse(kWebSearch, "ws");
  EXPECT_DOUBLE_EQ(c.mean(), 1'711'250.0);
  // The shipped file is the same distribution.
  EXPECT_DOUBLE_EQ(Cdf::read(kCdfs + "web-search.cdf").mean(), 1'711'250.0);
  // Probabilities instead of percentages, commas instead of spaces: the same.
  const Cdf p = Cdf::parse("# a comment\n0,0\n10000, 0.15\n20000\t0.2\n30000 0.3\n50000 0.4\n80000 0.53\n"
                           "200000 0.6\n1000000 0.7\n2000000 0.8\n5000000 0.9\n10000000 0.97\n30000000 1\n",
                           "ws");
  EXPECT_NEAR(p.mean(), 1'711'250.0, 1e-6);
}

TEST(Cdf, SizesAreTheInverseLinearBetweenPointsTruncated) {
  const Cdf c = Cdf::parse(kWebSearch, "ws");
  EXPECT_EQ(c.size_at(0.0), 1u);       // size 0, at least one byte
  EXPECT_EQ(c.size_at(0.15), 10000u);  // a point
  // u = 0.5 between (50000, 0.40) and (80000, 0.53): 50000 + 30000 x 0.10 / 0.13 = 73076.9
  EXPECT_EQ(c.size_at(0.5), 73076u);
  EXPECT_EQ(c.size_at(0.985), 20'000'000u);  // (10M, .97)-(30M, 1): halfway
  // A first point above 0 is a point mass; equal sizes too.
  const Cdf m = Cdf::parse("1000 0.5\n2000 0.75\n2000 1\n", "m");
  EXPECT_EQ(m.size_at(0.3), 1000u);
  EXPECT_EQ(m.size_at(0.6), 1400u);
  EXPECT_EQ(m.size_at(0.9), 2000u);
  EXPECT_DOUBLE_EQ(m.mean(), 1000 * 0.5 + 1500 * 0.25 + 2000 * 0.25);
}

TEST(Cdf, BadFilesAreNamedByLine) {
  EXPECT_EQ(input_error_of([] { Cdf::parse("0 0\n100 50\n50 60\n200 100\n", "f.cdf"); }),
            "f.cdf:3: size 50 is below the line before's (100): sizes must not decrease");
  EXPECT_EQ(input_error_of([] { Cdf::parse("0 0\n100 50\n200 40\n300 100\n", "f.cdf"); }),
            "f.cdf:3: probability 40 is below the line before's (50): a cumulative probability must not decrease");
  EXPECT_EQ(input_error_of([] { Cdf::parse("0 0\n100 0.5\n200 0.9\n", "f.cdf"); }),
            "f.cdf:3: the last probability is 0.9: a CDF ends at 1 (or at 100, in percent)");
  EXPECT_EQ(input_error_of([] { Cdf::parse("0 0\n100 0.5 7\n", "f.cdf"); }),
            "f.cdf:2: expected two numbers, a size in bytes and a cumulative probability, got '100 0.5 7'");
  EXPECT_EQ(input_error_of([] { Cdf::parse("0 0\n1e3x 1\n", "f.cdf"); }),
            "f.cdf:2: size '1e3x': expected a number of bytes, from 0 to 2^53");
  EXPECT_EQ(input_error_of([] { Cdf::parse("0 0\n100 nan\n", "f.cdf"); }),
            "f.cdf:2: probability 'nan': expected a number from 0 to 1 (or a percentage)");
  EXPECT_EQ(input_error_of([] { Cdf::parse("# only a comment\n\n", "f.cdf"); }),
            "f.cdf: no points (expected lines 'SIZE PROBABILITY')");
  EXPECT_EQ(input_error_of([] { Cdf::parse("0 0\n0 1\n", "f.cdf"); }),
            "f.cdf:2: the largest size is 0: flows carry at least one byte");
  EXPECT_NE(input_error_of([] { Cdf::read("/nonexistent/x.cdf"); }).find("/nonexistent/x.cdf"), std::string::npos);
  // Sizes of at least a byte are drawn: a mean below one would offer more than the load.
  EXPECT_EQ(input_error_of([] { Cdf::parse("0 0.5\n1 1\n", "f.cdf"); }),
            "f.cdf: the mean size is 0.25 bytes: every flow carries one byte at least, so a load drawn from it would "
            "offer more than asked");
  EXPECT_EQ(input_error_of([] { Cdf::parse("0 0\n1e17 1\n", "f.cdf"); }),
            "f.cdf:2: size '1e17': expected a number of bytes, from 0 to 2^53");
}

// The moments of a piecewise-linear CDF, by hand: a point mass at the first size, then
// each stretch uniform on [a, b]: E[X] += (a + b)/2 dp, E[X^2] += (a^2 + ab + b^2)/3 dp.
struct Moments {
  double mean = 0, second = 0;
};
Moments moments(const std::vector<std::pair<double, double>>& pts) {
  Moments m;
  m.mean = pts[0].first * pts[0].second;
  m.second = pts[0].first * pts[0].first * pts[0].second;
  for (std::size_t k = 1; k < pts.size(); ++k) {
    const double a = pts[k - 1].first, b = pts[k].first, dp = pts[k].second - pts[k - 1].second;
    m.mean += (a + b) / 2 * dp;
    m.second += (a * a + a * b + b * b) / 3 * dp;
  }
  return m;
}

// The Hadoop distribution's points (examples/cdf/hadoop.cdf) as probabilities.
const std::vector<std::pair<double, double>> kHadoop = {{0, 0},        {100, .01},      {200, .02},     {300, .05},
                                                        {350, .15},    {400, .20},      {500, .30},     {600, .40},
                                                        {700, .50},    {1000, .60},     {2000, .67},    {7000, .70},
                                                        {30000, .72},  {50000, .82},    {80000, .87},   {120000, .90},
                                                        {300000, .95}, {1000000, .975}, {2000000, .99}, {10000000, 1}};

std::vector<LoadGenerator::Resolved> one_load(const LoadSpec& spec, const std::string& cdf = "hadoop.cdf") {
  std::vector<LoadGenerator::Resolved> v(1);
  v[0].spec = spec;
  if (spec.kind == LoadKind::poisson) v[0].cdf = Cdf::read(kCdfs + cdf);
  return v;
}

std::vector<fabric::FlowSpec> all_flows(LoadGenerator& g) {
  std::vector<fabric::FlowSpec> v;
  for (fabric::FlowSpec f; g.next(f);) v.push_back(f);
  return v;
}

TEST(LoadGenerator, ALongRunMatchesItsTargetLoadAndSizes) {
  constexpr std::uint32_t kHosts = 16;
  constexpr double kLoad = 0.5, kRate = 100e9, kSeconds = 0.2;
  LoadSpec spec;
  spec.load = kLoad;
  spec.duration = ms(200);
  LoadGenerator g(one_load(spec), std::vector<BitRate>(kHosts, Gbps(100)), 7);
  const auto flows = all_flows(g);
  const Moments m = moments(kHadoop);
  ASSERT_NEAR(m.mean, 120'420.75, 1e-6);  // the file's header says so
  // Flows per host per second: load x rate / (8 x mean size).
  const double lambda = kLoad * kRate / (8 * m.mean);
  EXPECT_NEAR(g.arrival_rate(0, 3), lambda, lambda * 1e-12);
  const double expected_flows = lambda * kSeconds * kHosts;  // 166 085
  const auto n = static_cast<double>(flows.size());
  EXPECT_NEAR(n, expected_flows, 4 * std::sqrt(expected_flows));  // Poisson: variance = mean
  // The mean size, within 4 standard errors (sd from E[X^2] - E[X]^2).
  double bytes = 0;
  for (const auto& f : flows) bytes += static_cast<double>(f.bytes);
  const double sd = std::sqrt(m.second - m.mean * m.mean);
  EXPECT_NEAR(bytes / n, m.mean, 4 * sd / std::sqrt(n));
  // The realised load: a compound Poisson sum, variance lambda T E[X^2] per host.
  const double capacity = kRate / 8 * kSeconds * kHosts;
  EXPECT_NEAR(bytes / capacity, kLoad, 4 * std::sqrt(expected_flows * m.second) / capacity);
  // The empirical CDF at every point (sizes below it: truncation moves none across), within
  // the Kolmogorov-Smirnov 1 % bound.
  std::vector<std::uint64_t> sizes;
  for (const auto& f : flows) sizes.push_back(f.bytes);
  std::sort(sizes.begin(), sizes.end());
  for (const auto& [x, p] : kHadoop) {
    const auto below = std::lower_bound(sizes.begin(), sizes.end(), static_cast<std::uint64_t>(x)) - sizes.begin();
    EXPECT_NEAR(static_cast<double>(below) / n, p, 1.63 / std::sqrt(n)) << "at size " << x;
  }
}

TEST(LoadGenerator, ArrivalsArePoissonAndInStartOrder) {
  constexpr std::uint32_t kHosts = 8;
  LoadSpec spec;
  spec.load = 0.4;
  spec.start = us(100);
  spec.duration = ms(100);
  LoadGenerator g(one_load(spec), std::vector<BitRate>(kHosts, Gbps(100)), 3);
  const auto flows = all_flows(g);
  std::map<std::uint32_t, std::vector<Time>> starts;
  for (std::size_t i = 0; i < flows.size(); ++i) {
    if (i > 0) {
      ASSERT_LE(flows[i - 1].start, flows[i].start);
    }
    ASSERT_NE(flows[i].src, flows[i].dst);
    ASSERT_GE(flows[i].start, us(100));
    ASSERT_LT(flows[i].start, us(100) + ms(100));
    starts[flows[i].src].push_back(flows[i].start);
  }
  // Each host's gaps (the first from the load's start) against Exp(lambda).
  const double lambda_per_ps = 0.4 * 100e9 / (8 * moments(kHadoop).mean) / 1e12;
  std::vector<double> gaps;
  for (auto& [h, t] : starts) {
    Time last = us(100);
    for (const Time s : t) {
      gaps.push_back(static_cast<double>((s - last).ps()));
      last = s;
    }
  }
  const auto n = static_cast<double>(gaps.size());
  double sum = 0;
  for (const double x : gaps) sum += x;
  const double mean = 1 / lambda_per_ps;  // the exponential's sd equals its mean
  EXPECT_NEAR(sum / n, mean, 4 * mean / std::sqrt(n));
  std::sort(gaps.begin(), gaps.end());
  double d = 0;  // the KS statistic
  for (std::size_t i = 0; i < gaps.size(); ++i) {
    const double f = 1 - std::exp(-lambda_per_ps * gaps[i]);
    d = std::max({d, std::abs(f - static_cast<double>(i) / n), std::abs(f - static_cast<double>(i + 1) / n)});
  }
  EXPECT_LT(d, 1.63 / std::sqrt(n));  // 1 % critical value
  EXPECT_GT(n, 20000);
}

TEST(LoadGenerator, TheSameSeedGivesTheSameFlowsAndEachHostItsOwnStream) {
  LoadSpec spec;
  spec.duration = ms(2);
  const std::vector<BitRate> rates(16, Gbps(100));
  LoadGenerator a(one_load(spec), rates, 5), b(one_load(spec), rates, 5), c(one_load(spec), rates, 6);
  const auto fa = all_flows(a), fb = all_flows(b), fc = all_flows(c);
  ASSERT_EQ(fa.size(), fb.size());
  for (std::size_t i = 0; i < fa.size(); ++i) {
    EXPECT_EQ(fa[i].src, fb[i].src);
    EXPECT_EQ(fa[i].dst, fb[i].dst);
    EXPECT_EQ(fa[i].bytes, fb[i].bytes);
    EXPECT_EQ(fa[i].start, fb[i].start);
  }
  bool differs = fa.size() != fc.size();
  for (std::size_t i = 0; !differs && i < fa.size(); ++i) differs = fa[i].start != fc[i].start;
  EXPECT_TRUE(differs);
  // Host 3's flows do not depend on how many hosts there are besides it (its own stream):
  // with 32 hosts, its sizes and start times are the same.
  LoadGenerator wide(one_load(spec), std::vector<BitRate>(32, Gbps(100)), 5);
  std::vector<std::pair<Time, std::uint64_t>> h3, h3_wide;
  for (const auto& f : fa)
    if (f.src == 3) h3.emplace_back(f.start, f.bytes);
  for (const auto& f : all_flows(wide))
    if (f.src == 3) h3_wide.emplace_back(f.start, f.bytes);
  EXPECT_EQ(h3, h3_wide);
  EXPECT_FALSE(h3.empty());
}

TEST(LoadGenerator, GroupsKeepFlowsWithinOrBetween) {
  LoadSpec spec;
  spec.duration = ms(5);
  spec.groups = 4;
  spec.pairs = Pairs::within;
  LoadGenerator in(one_load(spec), std::vector<BitRate>(16, Gbps(100)), 1);
  std::size_t n = 0;
  for (const auto& f : all_flows(in)) {
    EXPECT_EQ(f.src / 4, f.dst / 4);
    EXPECT_NE(f.src, f.dst);
    ++n;
  }
  spec.pairs = Pairs::between;
  LoadGenerator out(one_load(spec), std::vector<BitRate>(16, Gbps(100)), 1);
  std::vector<int> to(16, 0);
  for (const auto& f : all_flows(out)) {
    EXPECT_NE(f.src / 4, f.dst / 4);
    ++to[f.dst];
    ++n;
  }
  EXPECT_GT(n, 1000u);
  for (int c : to) EXPECT_GT(c, 0);
  spec.groups = 5;
  EXPECT_EQ(input_error_of([&] { LoadGenerator(one_load(spec), std::vector<BitRate>(16, Gbps(100)), 1); }),
            "load.0.groups = 5: the 16 hosts do not split into equal groups");
}

TEST(LoadGenerator, AMatrixSharesTheLoadByItsWeights) {
  const auto path = std::filesystem::path(::testing::TempDir()) / "tm.csv";
  std::ofstream(path) << "src,dst,bytes\nh0,h1,3\n0,2,1\nh3,h1,2\n";
  LoadSpec spec;
  spec.pairs = Pairs::matrix;
  spec.load = 0.5;
  spec.duration = ms(100);
  auto loads = one_load(spec);
  loads[0].matrix = read_traffic_matrix(path.string(), 4);
  LoadGenerator g(std::move(loads), std::vector<BitRate>(4, Gbps(100)), 2);
  // The busiest link is h1's, in: 3 + 2 = 5 of weight, offered 50 %. So h0 sends
  // 0.5 x 100G x 4/5 and h3 0.5 x 100G x 2/5; h1 and h2 send nothing.
  const double mean = moments(kHadoop).mean;
  EXPECT_NEAR(g.arrival_rate(0, 0), 0.5 * 100e9 * 4 / 5 / (8 * mean), 1e-6);
  EXPECT_NEAR(g.arrival_rate(0, 3), 0.5 * 100e9 * 2 / 5 / (8 * mean), 1e-6);
  EXPECT_EQ(g.arrival_rate(0, 1), 0);
  std::map<std::pair<std::uint32_t, std::uint32_t>, double> count;
  double from0 = 0;
  for (const auto& f : all_flows(g)) {
    ++count[{f.src, f.dst}];
    if (f.src == 0) ++from0;
  }
  EXPECT_EQ(count.size(), 3u);
  // h0's flows go to h1 with probability 3/4 (binomial, 4 sd).
  EXPECT_NEAR(count[std::make_pair(0u, 1u)] / from0, 0.75, 4 * std::sqrt(0.75 * 0.25 / from0));
  std::ofstream(path) << "src,dst,bytes\nh0,h9,3\n";
  EXPECT_EQ(input_error_of([&] { read_traffic_matrix(path.string(), 4); }),
            path.string() + ":2: column dst: expected a host 0..3 (or h0..h3), got 'h9'");
}

TEST(LoadGenerator, ALoadOfMoreFlowsThanARunHoldsIsRefusedBeforeItIsMade) {
  // Hadoop at 100 % for 1000 s on 16 hosts: 100G / (8 x 120 420.75 B) = 103 804 flows per
  // second per host, 1.66e9 in all.
  LoadSpec spec;
  spec.load = 1;
  spec.duration = sec(1000);
  EXPECT_EQ(input_error_of([&] { LoadGenerator(one_load(spec), std::vector<BitRate>(16, Gbps(100)), 1); }),
            "the [[load]] entries would make about 1.66e+09 flows, more than a run holds (1.34e+08): shorten their "
            "duration or lower their load");
}

TEST(LoadGenerator, IncastBurstsComeEveryPeriodFromDistinctSenders) {
  LoadSpec spec;
  spec.kind = LoadKind::incast;
  spec.start = us(10);
  spec.every = us(100);
  spec.duration = us(350);  // bursts at 10, 110, 210 and 310 us
  spec.fan_in = 5;
  spec.bytes = KB(64);
  LoadGenerator g(one_load(spec), std::vector<BitRate>(8, Gbps(100)), 4);
  const auto flows = all_flows(g);
  ASSERT_EQ(flows.size(), 4u * 5);
  for (std::size_t b = 0; b < 4; ++b) {
    std::vector<std::uint32_t> senders;
    for (std::size_t k = 0; k < 5; ++k) {
      const auto& f = flows[b * 5 + k];
      EXPECT_EQ(f.start, us(10 + 100 * static_cast<std::int64_t>(b)));
      EXPECT_EQ(f.dst, flows[b * 5].dst);
      EXPECT_NE(f.src, f.dst);
      EXPECT_EQ(f.bytes, 64'000u);
      senders.push_back(f.src);
    }
    std::sort(senders.begin(), senders.end());
    EXPECT_EQ(std::unique(senders.begin(), senders.end()), senders.end());
  }
  spec.fan_in = 8;
  EXPECT_EQ(input_error_of([&] { LoadGenerator(one_load(spec), std::vector<BitRate>(8, Gbps(100)), 1); }),
            "load.0.fan_in = 8: only 7 other hosts");
}

}  // namespace
}  // namespace fabriclab::workload
