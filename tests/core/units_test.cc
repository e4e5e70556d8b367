#include "core/units.h"

#include <gtest/gtest.h>

#include "error_message.h"

#include <stdexcept>

#include "core/error.h"

namespace fabriclab {
namespace {

TEST(Units, FactoriesScaleToTheBaseUnit) {
  EXPECT_EQ(ns(5).ps(), 5000);
  EXPECT_EQ(us(10).ps(), 10'000'000);
  EXPECT_EQ(ms(3).ps(), 3'000'000'000);
  EXPECT_EQ(sec(2).ps(), 2'000'000'000'000);
  EXPECT_EQ((us(10) + ns(5)).ps(), 10'005'000);
  EXPECT_EQ(KiB(9).count(), 9216);
  EXPECT_EQ(KB(9).count(), 9000);
  EXPECT_EQ(GiB(1).count(), 1073741824);
  EXPECT_EQ(Gbps(100).bps(), 100'000'000'000);
  EXPECT_EQ(us(1) / ns(3), 333);
  EXPECT_LT(ns(999), us(1));
}

TEST(Units, FactoriesRejectOverflow) {
  // INT64_MAX ps is about 106 days; 200 days in seconds does not fit.
  EXPECT_THROW(sec(200 * 24 * 3600), std::overflow_error);
  EXPECT_NO_THROW(sec(100 * 24 * 3600));
  EXPECT_THROW(GiB(std::int64_t{1} << 40), std::overflow_error);
}

TEST(Units, ParsesExactDecimals) {
  EXPECT_EQ(parse_time("10us"), us(10));
  EXPECT_EQ(parse_time("2.5ns").ps(), 2500);
  EXPECT_EQ(parse_time("335.5 us").ps(), 335'500'000);
  EXPECT_EQ(parse_time("0s").ps(), 0);
  EXPECT_EQ(parse_bytes("9KiB"), KiB(9));
  EXPECT_EQ(parse_bytes("1.5KB").count(), 1500);
  EXPECT_EQ(parse_bytes("4096B").count(), 4096);
  EXPECT_EQ(parse_bit_rate("100Gbps"), Gbps(100));
  EXPECT_EQ(parse_bit_rate("2.5Gbps").bps(), 2'500'000'000);
  EXPECT_EQ(parse_bit_rate("1.6Tbps").bps(), 1'600'000'000'000);
}

TEST(Units, RejectsBadTextNamingIt) {
  EXPECT_EQ(fabriclab::testing::input_error_of([] { parse_time("10 furlongs"); }),
            "'10 furlongs' is not a time: unknown unit 'furlongs' (expected a number and one of: "
            "ps, ns, us, ms, s; e.g. 10ns)");
  EXPECT_EQ(fabriclab::testing::input_error_of([] { parse_time("0.1ps"); }),
            "'0.1ps' is not a time: not a whole number of ps (expected a number and one of: ps, "
            "ns, us, ms, s; e.g. 10ns)");
  EXPECT_EQ(fabriclab::testing::input_error_of([] { parse_bytes("KiB"); }),
            "'KiB' is not a size: no number (expected a number and one of: B, KB, MB, GB, KiB, "
            "MiB, GiB; e.g. 10KB)");
  EXPECT_EQ(fabriclab::testing::input_error_of([] { parse_bit_rate("100"); }),
            "'100' is not a bit rate: no unit (expected a number and one of: bps, Kbps, Mbps, "
            "Gbps, Tbps; e.g. 10Kbps)");
  EXPECT_EQ(fabriclab::testing::input_error_of([] { parse_time("99999999999s"); }),
            "'99999999999s' is not a time: too large (expected a number and one of: ps, ns, us, "
            "ms, s; e.g. 10ns)");
  EXPECT_NE(fabriclab::testing::input_error_of([] { parse_time("-5us"); }), "no error");
  EXPECT_NE(fabriclab::testing::input_error_of([] { parse_time("1.2.3us"); }), "no error");
}

TEST(Units, SerializationTimeByHand) {
  // 1500 B at 100 Gb/s: 12000 bits / 1e11 b/s = 120 ns exactly.
  EXPECT_EQ(serialization_time(bytes(1500), Gbps(100)).ps(), 120'000);
  // 4 KiB at 100 Gb/s: 32768 bits = 327.68 ns.
  EXPECT_EQ(serialization_time(KiB(4), Gbps(100)).ps(), 327'680);
  // 64 B at 25 Gb/s: 512 bits / 2.5e10 = 20.48 ns.
  EXPECT_EQ(serialization_time(bytes(64), Gbps(25)).ps(), 20'480);
  // 1 B at 3 Gb/s: 8 / 3e9 s = 2666.67 ps, rounded up to 2667.
  EXPECT_EQ(serialization_time(bytes(1), Gbps(3)).ps(), 2667);
  // 1 GiB at 800 Gb/s needs a 128-bit intermediate: 8589934592 bits = 10737418.24 ns.
  EXPECT_EQ(serialization_time(GiB(1), Gbps(800)).ps(), 10'737'418'240);
  EXPECT_EQ(serialization_time(bytes(0), Gbps(100)).ps(), 0);
  EXPECT_THROW(serialization_time(bytes(1), bps(0)), std::invalid_argument);
}

// Whole nanoseconds, as another simulator keeps times (wire.serialization).
// What a rate carries in a time (a cable, a BDP) and back, by hand: 100 Gb/s for 10 us is
// 10^6 bits, 125 000 bytes; 4096 bytes in 10 us are 32 768 bits / 10^-5 s = 3.2768 Gb/s;
// 25 Gb/s for 1 ns is 25 bits, 3.125 bytes, rounded down to 3; 1 byte in 3 ps is 2.666... Tb/s.
TEST(Units, BytesInATimeAndTheRateOfThem) {
  EXPECT_EQ(bytes_in(Gbps(100), us(10)).count(), 125'000);
  EXPECT_EQ(rate_of(bytes(4096), us(10)).bps(), 3'276'800'000);
  EXPECT_EQ(bytes_in(Gbps(25), Time::from_ps(1000)).count(), 3);
  EXPECT_EQ(rate_of(bytes(1), Time::from_ps(3)).bps(), 2'666'666'666'666);
  // 128-bit intermediates: 400 Gb/s for 1 s would overflow 64 bits in ps.
  EXPECT_EQ(bytes_in(Gbps(400), Time::from_ps(1'000'000'000'000)).count(), 50'000'000'000);
}

TEST(Units, SerializationTimeInWholeNanoseconds) {
  // 1000 B at 3 Gb/s: 8000 bits / 3e9 = 2666.67 ns: 2666 truncated, 2667 to the nearest.
  EXPECT_EQ(serialization_time(bytes(1000), Gbps(3), WireRounding::ps_up).ps(), 2'666'667);
  EXPECT_EQ(serialization_time(bytes(1000), Gbps(3), WireRounding::ns_down).ps(), 2'666'000);
  EXPECT_EQ(serialization_time(bytes(1000), Gbps(3), WireRounding::ns_nearest).ps(), 2'667'000);
  // 1000 B at 6 Gb/s: 1333.33 ns: 1333 both ways.
  EXPECT_EQ(serialization_time(bytes(1000), Gbps(6), WireRounding::ns_nearest).ps(), 1'333'000);
  // 1 B at 16 Gb/s: 0.5 ns exactly: half rounds up; truncated it takes no time.
  EXPECT_EQ(serialization_time(bytes(1), Gbps(16), WireRounding::ns_nearest).ps(), 1000);
  EXPECT_EQ(serialization_time(bytes(1), Gbps(16), WireRounding::ns_down).ps(), 0);
  // 4160 B at 100 Gb/s: 332.8 ns.
  EXPECT_EQ(serialization_time(bytes(4160), Gbps(100), WireRounding::ns_down).ps(), 332'000);
  EXPECT_EQ(serialization_time(bytes(4160), Gbps(100), WireRounding::ns_nearest).ps(), 333'000);
  EXPECT_THROW(serialization_time(bytes(1), bps(0), WireRounding::ns_down), std::invalid_argument);
}

TEST(Units, RatesAsDecimalsOfAUnit) {
  EXPECT_EQ(decimal_in(Mbps(40), "Mbps"), "40");
  EXPECT_EQ(decimal_in(bps(2'500'000), "Mbps"), "2.5");
  EXPECT_EQ(decimal_in(bps(1), "Mbps"), "0.000001");
  EXPECT_EQ(decimal_in(bps(1'234'567), "Kbps"), "1234.567");
  EXPECT_EQ(decimal_in(Gbps(100), "Gbps"), "100");
  EXPECT_EQ(decimal_in(bps(0), "Mbps"), "0");
  EXPECT_EQ(decimal_in(bps(-1'500'000), "Mbps"), "-1.5");
  EXPECT_THROW(decimal_in(Mbps(1), "MB/s"), std::invalid_argument);
}

TEST(Units, RendersTheShortestExactForm) {
  EXPECT_EQ(to_string(us(10)), "10us");
  EXPECT_EQ(to_string(ps(2500)), "2.5ns");
  EXPECT_EQ(to_string(ps(327'680)), "327.68ns");
  EXPECT_EQ(to_string(ps(7)), "7ps");
  EXPECT_EQ(to_string(ps(0)), "0ps");
  EXPECT_EQ(to_string(ps(1234567)), "1234.567ns");
  EXPECT_EQ(to_string(KiB(9)), "9KiB");
  EXPECT_EQ(to_string(bytes(1500)), "1.5KB");
  EXPECT_EQ(to_string(Gbps(100)), "100Gbps");
  EXPECT_EQ(to_string(ps(-2500)), "-2.5ns");
  // Largest unit with at most three decimals: 808 ps past a whole ns.
  EXPECT_EQ(to_string(Time::from_ps(INT64_MIN)), "-9223372036854775.808ns");
  // Round trip.
  for (const char* t : {"10us", "2.5ns", "335.5us", "7ps"}) EXPECT_EQ(to_string(parse_time(t)), t);
}

}  // namespace
}  // namespace fabriclab
