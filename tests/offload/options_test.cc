// The planner's options, declared once (offload/options.h): what every command and
// scenario key shows and takes comes from here.
#include "offload/options.h"

#include <gtest/gtest.h>

#include "error_message.h"

namespace fabriclab::offload {
namespace {

TEST(PlannerOptions, ShapeKeysTakeTheirTextAndCheckTheirRange) {
  const auto& t = build_options_table();
  BuildOptions b;
  // The defaults shown are BuildOptions' own: root 0, a 4-nomial tree, doubles, counted sends.
  EXPECT_EQ(t.find("root")->get(b), "0");
  EXPECT_EQ(t.find("radix")->get(b), "4");
  EXPECT_EQ(t.find("datatype")->get(b), "double");
  EXPECT_EQ(t.find("uncounted_sends")->get(b), "false");
  t.find("radix")->set(b, params::parse(t.find("radix")->spec, "8"));
  t.find("datatype")->set(b, params::parse(t.find("datatype")->spec, "float"));
  t.find("uncounted_sends")->set(b, params::parse(t.find("uncounted_sends")->spec, "true"));
  EXPECT_EQ(b.radix, 8);
  EXPECT_EQ(b.datatype, Datatype::float32);
  EXPECT_FALSE(b.count_send_completions);  // the key says what is *not* counted
  // A 1-nomial tree is no tree: refused where the value is read, not by the builder.
  EXPECT_THROW(params::parse(t.find("radix")->spec, "1"), InputError);
  EXPECT_THROW(params::parse(t.find("datatype")->spec, "int8"), InputError);
}

TEST(PlannerOptions, CollectivesAreListedFromTheRegistry) {
  EXPECT_EQ(collectives_help(), "allreduce, bcast, reduce, barrier, allgather, reduce_scatter or alltoall");
}

TEST(PlannerOptions, EachUseTakesItsStrategies) {
  EXPECT_EQ(strategy_choices(StrategyUse::build), (std::vector<std::string>{"naive", "optimized", "exact"}));
  EXPECT_EQ(strategy_choices(StrategyUse::run), (std::vector<std::string>{"naive", "optimized"}));
  EXPECT_EQ(strategy_choices(StrategyUse::compare), (std::vector<std::string>{"naive", "optimized", "exact", "all"}));
  EXPECT_EQ(strategy_default(StrategyUse::build), "optimized");
  EXPECT_EQ(strategy_default(StrategyUse::compare), "all");
  EXPECT_EQ(parse_strategy("exact", StrategyUse::build, "--strategy"), Strategy::exact);
  EXPECT_EQ(fabriclab::testing::input_error_of([] { parse_strategy("exact", StrategyUse::run, "offload.strategy"); }),
            "offload.strategy: exact is for counting, not for a run (expected naive or optimized)");
  EXPECT_EQ(fabriclab::testing::input_error_of([] { parse_strategy("all", StrategyUse::build, "--strategy"); }),
            "--strategy: unknown strategy 'all' (expected naive, optimized, exact)");
  EXPECT_TRUE(parse_strategies("all", "--strategy").all);
  EXPECT_EQ(parse_strategies("naive", "--strategy").one, Strategy::naive);
  EXPECT_EQ(fabriclab::testing::input_error_of([] { parse_strategies("best", "--strategy"); }),
            "--strategy: unknown strategy 'best' (expected naive, optimized, exact, all)");
}

}  // namespace
}  // namespace fabriclab::offload
