#include "theory/optimizer_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <variant>

#include "optimizers/adam.h"
#include "optimizers/spams.h"

namespace lemmalab {
namespace {

bool OneOf(std::string_view optimizer, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), optimizer) != names.end();
}

// The compressor DianaOptionsOf and MarinaOptionsOf hand the reader: one that declares no omega,
// so that the reader takes the recorded value and fills in no default of its own.
UnbiasedCompressor RecordedCompressor(const Hyperparameters& h) {
  return {h.Text("compressor.name").value_or(""), std::nullopt};
}

template <typename Options>
MomentOptions Moments(const Options& o) {
  return {o.beta1, o.beta2, o.eps};
}

}  // namespace

OptionTable RecordedOptionTable(std::string_view optimizer,
                                const Hyperparameters& hyperparameters) {
  OptionTable table(fmt::format("optimizer '{}', as its run recorded it", optimizer), "");
  for (const auto& [key, value] : hyperparameters.entries()) {
    if (key.find('.') != std::string::npos) continue;
    OptionValue item;
    std::visit([&](const auto& v) { item.data = v; }, value);
    table.Set(key, std::move(item));
  }
  return table;
}

std::string OptimizerName(const Hyperparameters& hyperparameters) {
  return hyperparameters.Text("name").value_or("");
}

std::optional<BirderOptions> BirderOptionsOf(std::string_view optimizer, const Hyperparameters& h) {
  if (!OneOf(optimizer, {"birder", "softsign-sgd"})) return std::nullopt;
  OptionTable table = RecordedOptionTable(optimizer, h);
  return ReadBirderOptions(table, /*read_t0=*/optimizer == "birder");
}

std::optional<OneBitAdamOptions> OneBitAdamOptionsOf(std::string_view optimizer,
                                                     const Hyperparameters& h) {
  if (!OneOf(optimizer, {"onebit-adam", "onebit-adam-fp32"})) return std::nullopt;
  OptionTable table = RecordedOptionTable(optimizer, h);
  return ReadOneBitAdamOptions(table, /*read_local_momentum=*/optimizer == "onebit-adam");
}

std::optional<LambOptions> LambOptionsOf(std::string_view optimizer, const Hyperparameters& h) {
  if (optimizer == "onebit-lamb") return OneBitLambOptionsOf(optimizer, h)->lamb;
  if (optimizer != "lamb") return std::nullopt;
  OptionTable table = RecordedOptionTable(optimizer, h);
  return ReadLambOptions(table, /*read_bias_correction=*/true);
}

std::optional<OneBitLambOptions> OneBitLambOptionsOf(std::string_view optimizer,
                                                     const Hyperparameters& h) {
  if (optimizer != "onebit-lamb") return std::nullopt;
  OptionTable table = RecordedOptionTable(optimizer, h);
  return ReadOneBitLambOptions(table);
}

std::optional<ZeroOneAdamOptions> ZeroOneAdamOptionsOf(std::string_view optimizer,
                                                       const Hyperparameters& h) {
  if (optimizer != "zero-one-adam") return std::nullopt;
  OptionTable table = RecordedOptionTable(optimizer, h);
  return ReadZeroOneAdamOptions(table);
}

std::optional<Ef21Options> Ef21OptionsOf(std::string_view optimizer, const Hyperparameters& h) {
  if (!OneOf(optimizer, {"ef21", "ef21-sgdm"})) return std::nullopt;
  OptionTable table = RecordedOptionTable(optimizer, h);
  return ReadEf21Options(table, /*momentum=*/optimizer == "ef21-sgdm");
}

std::optional<DianaOptions> DianaOptionsOf(std::string_view optimizer, const Hyperparameters& h) {
  if (optimizer != "diana") return std::nullopt;
  OptionTable table = RecordedOptionTable(optimizer, h);
  return ReadDianaOptions(table, RecordedCompressor(h));
}

std::optional<MarinaOptions> MarinaOptionsOf(std::string_view optimizer, const Hyperparameters& h) {
  if (optimizer != "marina") return std::nullopt;
  OptionTable table = RecordedOptionTable(optimizer, h);
  return ReadMarinaOptions(table, RecordedCompressor(h));
}

std::optional<MomentOptions> MomentOptionsOf(std::string_view optimizer, const Hyperparameters& h) {
  if (const auto o = OneBitAdamOptionsOf(optimizer, h)) return Moments(*o);
  if (const auto o = LambOptionsOf(optimizer, h)) return Moments(*o);
  if (const auto o = ZeroOneAdamOptionsOf(optimizer, h)) return Moments(*o);
  if (OneOf(optimizer, {"adam", "adamw", "amsgrad"})) {
    OptionTable table = RecordedOptionTable(optimizer, h);
    return Moments(ReadAdamOptions(table, AdamOptions{}));
  }
  if (optimizer == "adam-1bit-naive") {
    OptionTable table = RecordedOptionTable(optimizer, h);
    return Moments(ReadAdamOneBitNaiveOptions(table));
  }
  if (OneOf(optimizer, {"spams", "dist-spams"})) {
    OptionTable table = RecordedOptionTable(optimizer, h);
    return Moments(ReadSpamsOptions(table));
  }
  return std::nullopt;
}

std::optional<std::int64_t> WarmupStepsOf(std::string_view optimizer, const Hyperparameters& h) {
  if (const auto o = OneBitAdamOptionsOf(optimizer, h)) return o->warmup_steps;
  if (const auto o = OneBitLambOptionsOf(optimizer, h)) return o->warmup_steps;
  return std::nullopt;
}

}  // namespace lemmalab
