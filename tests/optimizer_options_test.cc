// theory/ reads a run's optimizer options as the optimizer's own options struct, made by the
// optimizer's own reader from what the run recorded (theory/optimizer_options.h), chosen by the
// optimizer's registry name. Checked over the whole registry: every optimizer that records one of
// the keys theory reads gets it back through the typed read, equal to the recorded value, at its
// defaults and at a value of its own; so an optimizer that reads beta1 but is missing from
// MomentOptionsOf's list (a new Adam variant, say) fails here instead of losing its premises.
#include "theory/optimizer_options.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "optimizers/optimizer.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using TypedRead =
    std::function<std::optional<double>(std::string_view optimizer, const Hyperparameters& h)>;

// A member of an optional options struct, as a number.
template <typename Options, typename Member>
TypedRead Field(std::optional<Options> (*read)(std::string_view, const Hyperparameters&),
                Member member) {
  return [read, member](std::string_view optimizer,
                        const Hyperparameters& h) -> std::optional<double> {
    const std::optional<Options> o = read(optimizer, h);
    if (!o) return std::nullopt;
    const auto& value = (*o).*member;
    if constexpr (requires { value.has_value(); }) {
      if (!value) return std::nullopt;
      return static_cast<double>(*value);
    } else {
      return static_cast<double>(value);
    }
  };
}

// The keys theory reads through a typed reader, each with the reads that may carry it: every
// optimizer that records the key must get it back through one of them.
struct KeyRead {
  std::string_view key;
  std::vector<TypedRead> reads;
  double other_value;  // a valid value other than any default
};

std::vector<KeyRead> KeyReads() {
  return {
      {"beta1", {Field(&MomentOptionsOf, &MomentOptions::beta1)}, 0.8},
      {"beta2", {Field(&MomentOptionsOf, &MomentOptions::beta2)}, 0.95},
      {"eps",
       {Field(&MomentOptionsOf, &MomentOptions::eps), Field(&BirderOptionsOf, &BirderOptions::eps)},
       1e-3},
      {"t0", {Field(&BirderOptionsOf, &BirderOptions::t0)}, 7},
      {"warmup_steps",
       {[](std::string_view optimizer, const Hyperparameters& h) -> std::optional<double> {
         const auto steps = WarmupStepsOf(optimizer, h);
         return steps ? std::optional<double>(static_cast<double>(*steps)) : std::nullopt;
       }},
       7},
      {"beta3", {Field(&OneBitLambOptionsOf, &OneBitLambOptions::beta3)}, 0.8},
      {"r_min", {Field(&OneBitLambOptionsOf, &OneBitLambOptions::r_min)}, 0.25},
      {"r_max", {Field(&OneBitLambOptionsOf, &OneBitLambOptions::r_max)}, 3},
      {"r_threshold", {Field(&OneBitLambOptionsOf, &OneBitLambOptions::r_threshold)}, 0.2},
      {"var_freeze_step", {Field(&ZeroOneAdamOptionsOf, &ZeroOneAdamOptions::var_freeze_step)}, 7},
      {"eta", {Field(&Ef21OptionsOf, &Ef21Options::eta)}, 0.25},
      {"a", {Field(&DianaOptionsOf, &DianaOptions::a)}, 0.25},
      {"p", {Field(&MarinaOptionsOf, &MarinaOptions::p)}, 0.25},
  };
}

// What a run of `optimizer` records: the options its table resolved, with `key` = `value` set
// when `key` is given.
Hyperparameters Recorded(std::string_view optimizer, std::string_view key, double value) {
  OptionTable table(fmt::format("optimizer '{}'", optimizer), "");
  table.Set("name", {std::string(optimizer), ""});
  if (!key.empty()) {
    const bool integer = key == "t0" || key == "warmup_steps" || key == "var_freeze_step";
    OptionValue v;
    if (integer) {
      v.data = static_cast<std::int64_t>(value);
    } else {
      v.data = value;
    }
    table.Set(std::string(key), v);
  }
  MakeOptimizer<double>(table, OptimizerContext{6, 2});
  return table.Resolved();
}

class EveryOptimizerRecord : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryOptimizerRecord, GivesTheoryEveryKeyItReadsThroughItsOwnReader) {
  const std::string& optimizer = GetParam();
  const Hyperparameters defaults = Recorded(optimizer, "", 0);
  const std::vector<OptionTable::Use> listed = OptimizerOptions(*Optimizers().Find(optimizer));
  for (const KeyRead& key : KeyReads()) {
    // Recorded at its default, or (t0) listed and recorded only when given.
    const bool reads = defaults.Has(key.key) ||
                       std::any_of(listed.begin(), listed.end(),
                                   [&](const OptionTable::Use& use) { return use.key == key.key; });
    if (!reads) continue;
    for (const bool own_value : {false, true}) {
      SCOPED_TRACE(fmt::format("{} = {}", key.key, own_value ? "its own value" : "its default"));
      const Hyperparameters h =
          own_value ? Recorded(optimizer, key.key, key.other_value) : defaults;
      const std::optional<double> recorded = h.Number(key.key);
      std::optional<double> typed;
      for (const TypedRead& read : key.reads) {
        if (!typed) typed = read(optimizer, h);
      }
      EXPECT_EQ(typed, recorded) << optimizer << " records " << key.key
                                 << "; theory's typed read does not give it back";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryOptimizerRecord, ::testing::ValuesIn(Optimizers().names()),
                         testing::RegistryTestName);

}  // namespace
}  // namespace lemmalab
