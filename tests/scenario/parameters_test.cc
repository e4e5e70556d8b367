#include "scenario/parameters.h"

#include <gtest/gtest.h>

#include "error_message.h"

#include "core/error.h"
#include "core/params.h"
#include "scenario/toml_input.h"

namespace fabriclab::scenario {
namespace {

enum class Mode : std::uint8_t { ecmp, spray };
inline constexpr params::EnumNames<Mode, 2> kModeNames{{{Mode::ecmp, "ecmp"}, {Mode::spray, "spray"}}};

struct Link {
  Time delay = us(1);
  BitRate rate = Gbps(100);
};
struct Sample {
  Link link;
  Bytes buffer = MiB(32);
  bool pfc = true;
  std::uint16_t senders = 16;
  double pmax = 0.2;
  Mode mode = Mode::ecmp;
  std::string profile = "none";
  std::uint32_t window = 8, burst = 4;  // set together by the profile
  BitRate step = Mbps(5);               // a device's unit: bare numbers are Mb/s
};

const params::Table<Sample>& sample_table() {
  static const auto table = [] {
    params::Table<Link> link;
    link.time("delay", &Link::delay, "propagation delay", "0ps", "1s")
        .rate("rate", &Link::rate, "line rate", "25Gbps", "800Gbps");
    params::Table<Sample> t;
    t.nest("link", &Sample::link, link)
        .bytes("switch.buffer", &Sample::buffer, "shared buffer")
        .flag("switch.pfc", &Sample::pfc, "PFC on the RoCE priority")
        .integer("traffic.senders", &Sample::senders, "incast fan-in", 1, 4096)
        .real("ecn.pmax", &Sample::pmax, "marking probability at Kmax", "0", "1")
        .choice("routing.mode", &Sample::mode, kModeNames, "path selection")
        .custom(
            {"tuning.profile", params::Kind::choice, "window and burst together", "", "", {"none", "wide"}},
            [](Sample& s, const params::Value& v) {
              s.profile = v.text;
              if (v.text == "wide") s.window = 64, s.burst = 32;
            },
            [](const Sample& s) { return s.profile; }, /*preset=*/true)
        .integer("tuning.window", &Sample::window, "packets in flight", 1, 1024)
        .custom(
            {"tuning.burst", params::Kind::integer, "packets per burst, at most the window", "1", "1024", {}},
            [](Sample& s, const params::Value& v) {
              if (v.i > 100) throw InputError("a burst over 100 packets is not supported");
              s.burst = static_cast<std::uint32_t>(v.i);
            },
            [](const Sample& s) { return std::to_string(s.burst); })
        .rate_in("Mbps", "tuning.step", &Sample::step, "Mb/s per increase", "0.001", "1000");
    return t;
  }();
  return table;
}

const Parameters<Sample>& sample() {
  static const Parameters<Sample> p(sample_table());
  return p;
}

std::string error_of(const std::string& toml, const std::vector<std::string>& sets = {}) {
  return fabriclab::testing::input_error_of([&] { sample().resolve_text(toml, "s.toml", sets); });
}

TEST(Parameters, DefaultsFileAndOverridesInThatOrderIntoTheStruct) {
  const Resolved<Sample> r = sample().resolve_text(R"(
[link]
delay = "500ns"
[switch]
buffer = "9KiB"
pfc = false
[traffic]
senders = 8
)",
                                                   "s.toml", {"traffic.senders=4", "routing.mode=spray"});
  EXPECT_EQ(r.value.link.delay, ns(500));
  EXPECT_EQ(r.value.link.rate, Gbps(100));  // default
  EXPECT_EQ(r.value.buffer, KiB(9));
  EXPECT_FALSE(r.value.pfc);
  EXPECT_EQ(r.value.senders, 4);  // --set wins over the file
  EXPECT_DOUBLE_EQ(r.value.pmax, 0.2);
  EXPECT_EQ(r.value.mode, Mode::spray);
  // The same values by key, with their origins.
  const Config& c = r.config;
  EXPECT_EQ(c.time("link.delay"), ns(500));
  EXPECT_EQ(c.integer("traffic.senders"), 4);
  EXPECT_EQ(c.text("routing.mode"), "spray");
  EXPECT_EQ(c.origin("link.delay"), "s.toml:3:9");
  EXPECT_EQ(c.origin("link.rate"), "default");
  EXPECT_EQ(c.origin("traffic.senders"), "--set");
  EXPECT_EQ(c.echo()["link.delay"], "500ns");
  EXPECT_EQ(c.echo()["switch.buffer"], "9KiB");
  EXPECT_EQ(c.echo().size(), 11u);
}

TEST(Parameters, DefaultsAreTheStructsOwn) {
  const ParamRegistry& reg = sample().registry();
  EXPECT_EQ(reg.find("link.delay")->default_value, "1us");
  EXPECT_EQ(reg.find("switch.buffer")->default_value, "32MiB");
  EXPECT_EQ(reg.find("switch.pfc")->default_value, "true");
  EXPECT_EQ(reg.find("ecn.pmax")->default_value, "0.2");
  EXPECT_EQ(reg.find("routing.mode")->default_value, "ecmp");
  EXPECT_EQ(reg.find("routing.mode")->choices, (std::vector<std::string>{"ecmp", "spray"}));
  // An integer's bounds default to its field's type: senders is a uint16.
  EXPECT_EQ(reg.find("traffic.senders")->max, "4096");
  EXPECT_EQ(sample_table().find("tuning.window")->spec.min, "1");
  params::Table<Sample> wide;
  wide.integer("w", &Sample::window, "");
  EXPECT_EQ(wide.find("w")->spec.min, "0");
  EXPECT_EQ(wide.find("w")->spec.max, "4294967295");
  EXPECT_THROW(wide.integer("s", &Sample::senders, "", 0, 70000), std::logic_error);  // beyond a uint16
}

TEST(Parameters, APresetGoesFirstAndKeysBesideItWin) {
  // The burst is set before the preset in the file, and the preset by --set after it:
  // the preset still applies first.
  const Resolved<Sample> r = sample().resolve_text("[tuning]\nburst = 8\n", "s.toml", {"tuning.profile=wide"});
  EXPECT_EQ(r.value.window, 64u);  // the preset's
  EXPECT_EQ(r.value.burst, 8u);    // set beside it
  // The echo is what the struct holds, the preset's values included.
  EXPECT_EQ(r.config.echo()["tuning.window"], "64");
  EXPECT_EQ(r.config.echo()["tuning.burst"], "8");
  EXPECT_EQ(r.config.origin("tuning.window"), "default");  // not set by a key
  // A listing says what each preset changes.
  const auto& window = sample().registry().find("tuning.window")->preset_values;
  EXPECT_EQ(window, (std::vector<std::pair<std::string, std::string>>{{"wide", "64"}}));
  EXPECT_TRUE(sample().registry().find("link.delay")->preset_values.empty());
}

TEST(Parameters, UnknownKeysNameFileLineAndASuggestion) {
  EXPECT_EQ(error_of("[link]\ndelya = \"1us\"\n"), "s.toml:2:9: unknown key 'link.delya' (did you mean 'link.delay'?)");
  EXPECT_EQ(error_of("colour = 3\n"), "s.toml:1:10: unknown key 'colour'");
  EXPECT_EQ(error_of("", {"link.rat=10Gbps"}), "--set: unknown key 'link.rat' (did you mean 'link.rate'?)");
}

// A dotted chain of n parts: "a.a.a" for n = 3.
std::string chain(std::size_t n) {
  std::string out = "a";
  for (std::size_t i = 1; i < n; ++i) out += ".a";
  return out;
}

std::string bounds_error_of(const std::string& toml) {
  return fabriclab::testing::input_error_of([&] { check_toml_bounds(toml, "s.toml"); });
}

const std::string kDeep = "a key or table header of more than 64 dotted parts (the deepest key fabriclab reads has 3)";

TEST(TomlBounds, DeepKeysAndHeadersAreRefusedWhereTheyStart) {
  // The crash of the issue: a header 100 000 parts deep (SIGSEGV in toml++ before).
  EXPECT_EQ(error_of("[" + chain(100000) + "]\n"), "s.toml:1:2: " + kDeep);
  EXPECT_EQ(error_of("x = 1\n[[" + chain(65) + "]]\n"), "s.toml:2:3: " + kDeep);
  EXPECT_EQ(error_of("[link]\n  " + chain(65) + " = 1\n"), "s.toml:2:3: " + kDeep);
  EXPECT_EQ(error_of("x = { " + chain(65) + " = 1 }\n"), "s.toml:1:7: " + kDeep);
  // Quoted parts and spaces around the dots count as TOML reads them: 2 + 63 parts.
  EXPECT_EQ(error_of("[ \"a\" . 'b.c' ." + chain(63) + "]\n"), "s.toml:1:3: " + kDeep);
  // An empty table of no key's name is refused too; one that groups keys is not.
  EXPECT_EQ(error_of("[" + chain(64) + "]\n"), "s.toml:1:1: unknown table '" + chain(64) + "'");
  EXPECT_EQ(error_of("[link]\n[switch]\n[lnk]\n"), "s.toml:3:1: unknown table 'lnk'");
  // At the bound: past the check, to the unknown key it is (63 parts of header, 1 of key).
  EXPECT_EQ(error_of("[" + chain(63) + "]\nx = 1\n"), "s.toml:2:5: unknown key '" + chain(63) + ".x'");
}

TEST(TomlBounds, LongKeysAndManyTablesAreRefused) {
  const std::string long_part(2000, 'k');
  EXPECT_EQ(error_of("\"" + long_part + "\" = 1\n"), "s.toml:1:1: a key or table header of 2002 bytes; at most 1024");
  EXPECT_EQ(error_of("[link]\n[" + long_part + "]\n"), "s.toml:2:2: a key or table header of 2000 bytes; at most 1024");
  std::string tables;
  for (int i = 0; i < 65537; ++i) tables += "[[t]]\n";
  EXPECT_EQ(bounds_error_of(tables), "s.toml:65537:1: more than 65536 tables ([name] or [[name]]) in one file");
}

// An array or inline table of 65 536 elements passes; the comma before one more is
// refused. "x = [" fills columns 1-5 and the k-th comma is at column 5 + 2k: the
// 65 536th at 131 077. Commas in strings and nested arrays are not the outer one's.
TEST(TomlBounds, ArraysAndInlineTablesPastTheElementBoundAreRefusedAtTheirComma) {
  std::string elements;
  for (int k = 1; k < 65536; ++k) elements += "0,";
  elements += "0";
  EXPECT_NO_THROW(check_toml_bounds("x = [" + elements + "]\n", "s.toml"));
  EXPECT_EQ(bounds_error_of("x = [" + elements + ",0]\n"),
            "s.toml:1:131077: an array or inline table of more than 65536 elements");
  std::string keys;
  for (int k = 0; k <= 65536; ++k) keys += (k ? ",k" : "k") + std::to_string(k) + "=0";
  EXPECT_EQ(bounds_error_of("y = {" + keys + "}\n").substr(0, 9), "s.toml:1:");
  EXPECT_NE(bounds_error_of("y = {" + keys + "}\n").find("more than 65536 elements"), std::string::npos);
  const std::string in_strings = "z = [\"" + std::string(70000, ',') + "\", [" + elements + "], [1, 2]]\n";
  EXPECT_NO_THROW(check_toml_bounds(in_strings, "s.toml"));
}

TEST(TomlBounds, ValuesOfAnySizeAndStringsPassTheCheck) {
  // Long strings, floats, dates, arrays that start lines, and keys or headers inside
  // strings and comments are no keys: nothing here is refused by the bounds.
  const std::string big(100000, 'x');
  const std::string deep_text = "[" + chain(1000) + "]";
  const std::string ok = "s = \"" + big + "\"\nl = '" + big + "'\nf = 1.5e3\nd = 1979-05-27T07:32:00.999Z\n" +
                         "n = [\n  [\"" + big + "\"],\n  [1.5, 2.5],\n]\n" + "m = \"\"\"\n" + deep_text + "\n\"\"\"\n" +
                         "q = '''\n" + deep_text + "\n'''\n" + "e = \"\\\"" + deep_text + "\"\n# " + deep_text + "\n";
  EXPECT_NO_THROW(check_toml_bounds(ok, "s.toml"));
  // ... and toml++ reads that text as TOML (the scan's picture of strings is TOML's).
  EXPECT_NO_THROW(parse_toml(ok, "s.toml"));
  // A key after a multi-line string is still seen, on its own line.
  EXPECT_EQ(bounds_error_of("m = \"\"\"\na\nb\n\"\"\"\n" + chain(65) + " = 1\n"), "s.toml:5:1: " + kDeep);
}

TEST(Parameters, WrongUnitsAndRangesNameTheKey) {
  EXPECT_EQ(error_of("[link]\ndelay = \"10 furlongs\"\n"),
            "s.toml:2:9: key 'link.delay': '10 furlongs' is not a time: unknown unit 'furlongs' "
            "(expected a number and one of: ps, ns, us, ms, s; e.g. 10ns)");
  EXPECT_EQ(error_of("[link]\ndelay = 10\n"),
            "s.toml:2:9: key 'link.delay': a bare number has no unit; write a time such as 10us "
            "as a string");
  EXPECT_EQ(error_of("[link]\nrate = \"10Gbps\"\n"), "s.toml:2:8: key 'link.rate': 10Gbps is below the minimum 25Gbps");
  EXPECT_EQ(error_of("", {"ecn.pmax=1.5"}), "--set: key 'ecn.pmax': 1.5 is above the maximum 1");
  // NaN compares false with every bound: refused as such, from --set or TOML's own nan/inf.
  EXPECT_EQ(error_of("", {"ecn.pmax=nan"}), "--set: key 'ecn.pmax': 'nan' is not a finite number");
  EXPECT_EQ(error_of("[ecn]\npmax = nan\n"), "s.toml:2:8: key 'ecn.pmax': 'nan' is not a finite number");
  EXPECT_EQ(error_of("[ecn]\npmax = -inf\n"), "s.toml:2:8: key 'ecn.pmax': '-inf' is not a finite number");
  EXPECT_EQ(error_of("", {"routing.mode=random"}), "--set: key 'routing.mode': 'random' is not one of: ecmp, spray");
  EXPECT_EQ(error_of("", {"switch.pfc=yes"}), "--set: key 'switch.pfc': 'yes' is not true or false");
  EXPECT_EQ(error_of("", {"traffic.senders=5000"}), "--set: key 'traffic.senders': 5000 is above the maximum 4096");
  // A rule of the field's own, after the kind and range: named by place and key too.
  EXPECT_EQ(error_of("[tuning]\nburst = 200\n"),
            "s.toml:2:9: key 'tuning.burst': a burst over 100 packets is not supported");
  // toml++'s own description after our file:line:column.
  EXPECT_EQ(error_of("[link\n"),
            "s.toml:1:6: malformed TOML: Error while parsing table header: expected ']', saw '\\n'");
}

TEST(Parameters, AStructOutsideItsDeclarationsIsNamed) {
  Sample s;
  EXPECT_NO_THROW(params::validate(sample_table(), s));
  s.link.rate = Gbps(10);
  EXPECT_EQ(testing::input_error_of([&] { params::validate(sample_table(), s); }),
            "link.rate: 10Gbps is below the minimum 25Gbps");
}

TEST(Parameters, EnumNamesParseAndPrintFromOneTable) {
  EXPECT_EQ(params::name_of(kModeNames, Mode::spray), "spray");
  EXPECT_EQ(params::parse_enum(kModeNames, "ecmp", "mode"), Mode::ecmp);
  EXPECT_EQ(testing::input_error_of([] { params::parse_enum(kModeNames, "flowlet", "mode"); }),
            "unknown mode 'flowlet' (expected: ecmp, spray)");
}

TEST(Parameters, DeclarationsAreCheckedOnce) {
  ParamRegistry r;
  ParamSpec a;
  a.key = "a";
  a.kind = ParamKind::integer;
  a.default_value = "1";
  r.declare(a);
  EXPECT_THROW(r.declare(a), std::logic_error);
  ParamSpec b = a;
  b.key = "b";
  b.default_value = "9";
  b.min = "0";
  b.max = "5";
  EXPECT_THROW(r.declare(b), std::logic_error);
}

TEST(Parameters, RatesInADevicesUnitTakeBareNumbersAndFinerValues) {
  const auto step = [](const std::string& toml, const std::vector<std::string>& sets = {}) {
    const Resolved<Sample> r = sample().resolve_text(toml, "s.toml", sets);
    return std::pair{r.value.step.bps(), r.config.echo()["tuning.step"].get<std::string>()};
  };
  EXPECT_EQ(step(""), (std::pair<std::int64_t, std::string>{5'000'000, "5"}));  // the default, in Mb/s
  EXPECT_EQ(step("[tuning]\nstep = 40\n"), (std::pair<std::int64_t, std::string>{40'000'000, "40"}));
  // Finer than whole Mb/s: a TOML float, a bare decimal, or any rate unit.
  EXPECT_EQ(step("[tuning]\nstep = 2.5\n"), (std::pair<std::int64_t, std::string>{2'500'000, "2.5"}));
  EXPECT_EQ(step("", {"tuning.step=0.125"}), (std::pair<std::int64_t, std::string>{125'000, "0.125"}));
  EXPECT_EQ(step("[tuning]\nstep = \"1500Kbps\"\n"), (std::pair<std::int64_t, std::string>{1'500'000, "1.5"}));
  EXPECT_EQ(step("", {"tuning.step=1234567bps"}), (std::pair<std::int64_t, std::string>{1'234'567, "1.234567"}));
  EXPECT_EQ(sample().registry().find("tuning.step")->default_value, "5");
  // Ranges in the same unit; what is not a rate says so.
  EXPECT_EQ(error_of("", {"tuning.step=2000"}), "--set: key 'tuning.step': 2000 Mbps is above the maximum 1000 Mbps");
  EXPECT_EQ(error_of("", {"tuning.step=500bps"}),
            "--set: key 'tuning.step': 0.0005 Mbps is below the minimum 0.001 Mbps");
  const std::string expected = "expected a number of Mbps (e.g. 2.5) or a rate with its unit (e.g. 2500Kbps), exact "
                               "to the bps";
  EXPECT_EQ(error_of("", {"tuning.step=-1"}), "--set: key 'tuning.step': '-1' is not a rate: " + expected);
  EXPECT_EQ(error_of("", {"tuning.step=1.2.3"}), "--set: key 'tuning.step': '1.2.3' is not a rate: " + expected);
  // A TOML float in exponent form reads as its decimal: 1e-07 Mb/s is a tenth of a b/s.
  EXPECT_EQ(error_of("[tuning]\nstep = 0.0000001\n"),
            "s.toml:2:8: key 'tuning.step': '0.0000001' is not a rate: " + expected);
  EXPECT_EQ(step("[tuning]\nstep = 1.5e2\n"), (std::pair<std::int64_t, std::string>{150'000'000, "150"}));
  EXPECT_EQ(step("[tuning]\nstep = 2.5e-3\n"), (std::pair<std::int64_t, std::string>{2'500, "0.0025"}));
}

TEST(Parameters, PlainDecimalsReadBackWithoutAnExponent) {
  EXPECT_EQ(plain_decimal(2.5), "2.5");
  EXPECT_EQ(plain_decimal(0.1), "0.1");  // the shortest text that reads back, not 0.1000000000000000055...
  EXPECT_EQ(plain_decimal(1e-7), "0.0000001");
  EXPECT_EQ(plain_decimal(-1.5e-7), "-0.00000015");
  EXPECT_EQ(plain_decimal(1.5e20), "150000000000000000000");
  EXPECT_EQ(plain_decimal(40), "40");
}

TEST(Parameters, ListsAndIntegers) {
  EXPECT_EQ(split_list(" 3, 4 ,,5 "), (std::vector<std::string>{"3", "4", "5"}));
  EXPECT_EQ(split_list("2|3", '|'), (std::vector<std::string>{"2", "3"}));
  EXPECT_TRUE(split_list("").empty());
  EXPECT_EQ(parse_integer("-12"), -12);
  EXPECT_FALSE(parse_integer("12x"));
  EXPECT_FALSE(parse_integer(""));
  EXPECT_FALSE(parse_integer(" 1"));
}

}  // namespace
}  // namespace fabriclab::scenario
