// Option tables: typed reads, rules with clear messages, unknown keys with suggestions.
#include "core/options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "core/text.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using ::testing::HasSubstr;
using testing::UserErrorOf;

OptionTable Table() {
  OptionTable t("optimizer 'birder'", "spec.toml:3:1");
  t.Set("beta", {0.9, "spec.toml:4:8"});
  t.Set("steps", {std::int64_t{10}, "spec.toml:5:9"});
  t.Set("name", {std::string("birder"), "spec.toml:6:8"});
  t.Set("flag", {true, "spec.toml:7:8"});
  return t;
}

TEST(OptionTable, ReadsTypedValuesAndFallbacks) {
  OptionTable t = Table();
  EXPECT_EQ(t.GetDouble("beta", 0.5), 0.9);
  EXPECT_EQ(t.GetDouble("steps", 0.5), 10.0);  // an integer is accepted as a number
  EXPECT_EQ(t.GetInt("steps", 1), 10);
  EXPECT_EQ(t.GetString("name", ""), "birder");
  EXPECT_TRUE(t.GetBool("flag", false));
  EXPECT_EQ(t.GetDouble("absent", 0.25), 0.25);
  EXPECT_NO_THROW(t.RejectUnknownKeys());
}

TEST(OptionTable, RuleViolationsNameKeyValueRuleAndLocation) {
  OptionTable t = Table();
  EXPECT_EQ(UserErrorOf([&] { t.GetDouble("beta", 0, Interval::ClosedOpen(0, 0.5)); }),
            "spec.toml:4:8: optimizer 'birder': beta must be in [0, 0.5), got 0.9");
  EXPECT_EQ(UserErrorOf([&] { t.GetInt("steps", 0, 20); }),
            "spec.toml:5:9: optimizer 'birder': steps must be >= 20, got 10");
  EXPECT_THAT(UserErrorOf([&] { t.GetInt("beta", 0); }),
              HasSubstr("beta must be an integer, got a number 0.9"));
  EXPECT_THAT(UserErrorOf([&] { t.GetDouble("name", 0); }),
              HasSubstr("name must be a number, got a string 'birder'"));
  EXPECT_THAT(UserErrorOf([&] { t.RequireDouble("lr", Interval::Positive()); }),
              HasSubstr("spec.toml:3:1: optimizer 'birder': missing required key 'lr'"));
  static const std::vector<std::string> kChoices = {"clip", "rescale"};
  t.Set("domain", {std::string("clipp"), "spec.toml:8:10"});
  EXPECT_EQ(UserErrorOf([&] { t.GetChoice("domain", "clip", kChoices); }),
            "spec.toml:8:10: optimizer 'birder': domain must be one of clip, rescale; got "
            "'clipp' (did you mean 'clip'?)");
}

TEST(OptionTable, NaNAndInfinityAreOutsideEveryInterval) {
  for (const double bad : {std::nan(""), HUGE_VAL, -HUGE_VAL}) {
    OptionTable t("x", "");
    t.Set("v", {bad, ""});
    EXPECT_THROW(t.GetDouble("v", 0, Interval::Any()), UserError) << bad;
    EXPECT_THROW(t.GetDouble("v", 0, Interval::NonNegative()), UserError) << bad;
  }
  OptionTable t("[schedule]", "");
  t.Set("lr", {HUGE_VAL, "s.toml:3:1"});
  EXPECT_EQ(UserErrorOf([&] { t.RequireDouble("lr", Interval::Positive()); }),
            "s.toml:3:1: [schedule]: lr must be > 0, got inf");
}

TEST(OptionTable, UnknownKeySuggestsTheClosestKnownKey) {
  OptionTable t = Table();
  t.Set("bta", {0.5, "spec.toml:9:1"});
  t.GetDouble("beta", 0);
  t.GetInt("steps", 0);
  t.GetString("name", "");
  t.GetBool("flag", false);
  EXPECT_EQ(UserErrorOf([&] { t.RejectUnknownKeys(); }),
            "spec.toml:9:1: optimizer 'birder': unknown key 'bta' (did you mean 'beta'?)");
}

TEST(OptionTable, UnknownKeyWithNothingCloseListsTheKnownKeys) {
  OptionTable t("x", "f:1:1");
  t.Set("zzzzzz", {1.0, "f:2:1"});
  t.GetDouble("beta", 0);
  EXPECT_EQ(UserErrorOf([&] { t.RejectUnknownKeys(); }),
            "f:2:1: x: unknown key 'zzzzzz' (known: beta)");
}

// A required key given misspelt is named where it is asked for: the unknown-key check would
// come only after every required key.
TEST(OptionTable, MissingKeyNamesAMisspeltOneGiven) {
  OptionTable t("[schedule]", "spec.toml:3:1");
  t.Set("rl", {0.1, "spec.toml:4:1"});
  EXPECT_EQ(UserErrorOf([&] { t.RequireDouble("lr", Interval::Positive()); }),
            "spec.toml:4:1: [schedule]: missing required key 'lr' ('rl' is not a key here: did "
            "you mean 'lr'?)");
  // A key some getter read is not a misspelling of another.
  OptionTable u("x", "f:1:1");
  u.Set("lrr", {0.1, "f:2:1"});
  u.GetDouble("lrr", 0);
  EXPECT_EQ(UserErrorOf([&] { u.RequireDouble("lr", Interval::Positive()); }),
            "f:1:1: x: missing required key 'lr'");
}

TEST(OptionTable, ComponentGivenAsNameOrTable) {
  OptionTable t("optimizer 'birder'", "f:1:1");
  t.Set("compressor", {std::string("identity"), "f:2:14"});
  auto c = t.GetComponent("compressor", "stochastic-binary");
  EXPECT_EQ(c->GetString("name", ""), "identity");
  EXPECT_EQ(c->context(), "optimizer 'birder': compressor");

  OptionTable u("optimizer 'birder'", "f:1:1");
  EXPECT_EQ(u.GetComponent("compressor", "stochastic-binary")->GetString("name", ""),
            "stochastic-binary");

  auto inner = std::make_shared<OptionTable>("inline", "f:3:14");
  inner->Set("domain", {std::string("rescale"), "f:3:30"});
  OptionTable v("optimizer 'birder'", "f:1:1");
  v.Set("compressor", {inner, "f:3:14"});
  EXPECT_THAT(UserErrorOf([&] { v.GetComponent("compressor", "x"); }),
              HasSubstr("missing required key 'name'"));
}

TEST(Text, EditDistanceAndSuggestions) {
  EXPECT_EQ(EditDistance("beta", "beta"), 0);
  EXPECT_EQ(EditDistance("bta", "beta"), 1);
  EXPECT_EQ(EditDistance("btea", "beta"), 1);  // transposition
  EXPECT_EQ(EditDistance("", "abc"), 3);
  const std::vector<std::string> names = {"adam", "birder", "sgd"};
  EXPECT_EQ(UnknownName("optimizer", "bider", names),
            "unknown optimizer 'bider' (did you mean 'birder'?)");
  EXPECT_EQ(UnknownName("optimizer", "lamb", names),
            "unknown optimizer 'lamb' (known: adam, birder, sgd)");
}

}  // namespace
}  // namespace lemmalab
