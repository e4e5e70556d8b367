#include "scenario/parameters.h"

#include <gtest/gtest.h>

#include "error_message.h"

#include "core/error.h"

namespace fabriclab::scenario {
namespace {

ParamRegistry registry() {
  ParamRegistry r;
  r.declare({"link.delay", ParamKind::time, "1us", "propagation delay", "0ps", "1s", {}});
  r.declare({"link.rate", ParamKind::rate, "100Gbps", "line rate", "25Gbps", "800Gbps", {}});
  r.declare({"switch.buffer", ParamKind::bytes, "32MiB", "shared buffer", "", "", {}});
  r.declare({"switch.pfc", ParamKind::boolean, "true", "PFC on the RoCE priority", "", "", {}});
  r.declare({"traffic.senders", ParamKind::integer, "16", "incast fan-in", "1", "4096", {}});
  r.declare({"ecn.pmax", ParamKind::real, "0.2", "marking probability at Kmax", "0", "1", {}});
  r.declare({"routing.mode", ParamKind::choice, "ecmp", "path selection", "", "", {"ecmp", "spray"}});
  return r;
}

std::string error_of(const std::string& toml, const std::vector<std::string>& sets = {}) {
  return fabriclab::testing::input_error_of([&] { resolve_text(registry(), toml, "s.toml", sets); });
}

TEST(Parameters, DefaultsFileAndOverridesInThatOrder) {
  const Config c = resolve_text(registry(), R"(
[link]
delay = "500ns"
[switch]
buffer = "9KiB"
pfc = false
[traffic]
senders = 8
)", "s.toml", {"traffic.senders=4", "routing.mode=spray"});
  EXPECT_EQ(c.time("link.delay"), ns(500));
  EXPECT_EQ(c.rate("link.rate"), Gbps(100));     // default
  EXPECT_EQ(c.bytes("switch.buffer"), KiB(9));
  EXPECT_FALSE(c.boolean("switch.pfc"));
  EXPECT_EQ(c.integer("traffic.senders"), 4);    // --set wins over the file
  EXPECT_DOUBLE_EQ(c.real("ecn.pmax"), 0.2);
  EXPECT_EQ(c.text("routing.mode"), "spray");
  EXPECT_EQ(c.origin("link.delay"), "s.toml:3:9");
  EXPECT_EQ(c.origin("link.rate"), "default");
  EXPECT_EQ(c.origin("traffic.senders"), "--set");
  EXPECT_EQ(c.echo()["link.delay"], "500ns");
  EXPECT_EQ(c.echo().size(), 7u);
}

TEST(Parameters, UnknownKeysNameFileLineAndASuggestion) {
  EXPECT_EQ(error_of("[link]\ndelya = \"1us\"\n"),
            "s.toml:2:9: unknown key 'link.delya' (did you mean 'link.delay'?)");
  EXPECT_EQ(error_of("colour = 3\n"), "s.toml:1:10: unknown key 'colour'");
  EXPECT_EQ(error_of("", {"link.rat=10Gbps"}),
            "--set: unknown key 'link.rat' (did you mean 'link.rate'?)");
}

TEST(Parameters, WrongUnitsAndRangesNameTheKey) {
  EXPECT_EQ(error_of("[link]\ndelay = \"10 furlongs\"\n"),
            "s.toml:2:9: key 'link.delay': '10 furlongs' is not a time: unknown unit 'furlongs' "
            "(expected a number and one of: ps, ns, us, ms, s; e.g. 10ns)");
  EXPECT_EQ(error_of("[link]\ndelay = 10\n"),
            "s.toml:2:9: key 'link.delay': a bare number has no unit; write a time such as 10us "
            "as a string");
  EXPECT_EQ(error_of("[link]\nrate = \"10Gbps\"\n"),
            "s.toml:2:8: key 'link.rate': 10Gbps is below the minimum 25Gbps");
  EXPECT_EQ(error_of("", {"ecn.pmax=1.5"}), "--set: key 'ecn.pmax': 1.5 is above the maximum 1");
  EXPECT_EQ(error_of("", {"routing.mode=random"}),
            "--set: key 'routing.mode': 'random' is not one of: ecmp, spray");
  EXPECT_EQ(error_of("", {"switch.pfc=yes"}), "--set: key 'switch.pfc': 'yes' is not true or false");
  // toml++'s own description after our file:line:column.
  EXPECT_EQ(error_of("[link\n"),
            "s.toml:1:6: malformed TOML: Error while parsing table header: expected ']', saw '\\n'");
}

TEST(Parameters, DeclarationsAreCheckedOnce) {
  ParamRegistry r;
  r.declare({"a", ParamKind::integer, "1", "", "", "", {}});
  EXPECT_THROW(r.declare({"a", ParamKind::integer, "1", "", "", "", {}}), std::logic_error);
  EXPECT_THROW(r.declare({"b", ParamKind::integer, "9", "", "0", "5", {}}), InputError);
}

}  // namespace
}  // namespace fabriclab::scenario

namespace fabriclab::scenario {
namespace {

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
