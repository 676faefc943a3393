// A run's optimizer options, as the optimizer's own reader (optimizers/*.h) reads them from the
// options the run recorded (core/hyperparameters.h): how probes and assertions read them.
//
// The recorded hyperparameters are what the reader returned when the run was made, defaults
// filled in, so the same reader applied to them gives the options the run had, as the struct the
// optimizer itself uses: each key stays spelled once, with its rule and default, in the
// optimizer's code. Each function below takes the run's optimizer (its registry name:
// RunEvidence::optimizer, or OptimizerName for a probe, which sees no RunEvidence) and returns
// nullopt when that optimizer is not one of those named beside it. Those are every optimizer that
// reads the options in question, so nullopt means what a missing key meant: the run's optimizer
// has no such option.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/hyperparameters.h"
#include "core/options.h"
#include "optimizers/birder.h"
#include "optimizers/diana.h"
#include "optimizers/ef21.h"
#include "optimizers/lamb.h"
#include "optimizers/marina.h"
#include "optimizers/one_bit_adam.h"
#include "optimizers/zero_one_adam.h"

namespace lemmalab {

// The table the optimizer's reader reads: the top-level entries of `hyperparameters`, its own
// options beside the run's seed, workers, steps and precision (the dotted entries are its
// components', its schedule's and the problem's). The readers never reject unknown keys, so the
// entries that are not the optimizer's are left alone. A recorded value the reader's rule refuses
// (a record made under a looser rule) is an OptionError naming `optimizer`.
OptionTable RecordedOptionTable(std::string_view optimizer, const Hyperparameters& hyperparameters);

// The registry name of the optimizer whose options `hyperparameters` records (its `name`; empty
// when there is none).
std::string OptimizerName(const Hyperparameters& hyperparameters);

// birder (t0 included) and softsign-sgd.
std::optional<BirderOptions> BirderOptionsOf(std::string_view optimizer, const Hyperparameters& h);
// onebit-adam and onebit-adam-fp32 (which has no local_momentum).
std::optional<OneBitAdamOptions> OneBitAdamOptionsOf(std::string_view optimizer,
                                                     const Hyperparameters& h);
// lamb, and onebit-lamb's warmup LAMB.
std::optional<LambOptions> LambOptionsOf(std::string_view optimizer, const Hyperparameters& h);
// onebit-lamb.
std::optional<OneBitLambOptions> OneBitLambOptionsOf(std::string_view optimizer,
                                                     const Hyperparameters& h);
// zero-one-adam.
std::optional<ZeroOneAdamOptions> ZeroOneAdamOptionsOf(std::string_view optimizer,
                                                       const Hyperparameters& h);
// ef21 (no eta) and ef21-sgdm.
std::optional<Ef21Options> Ef21OptionsOf(std::string_view optimizer, const Hyperparameters& h);
// diana and marina. Their default (1 / (omega + 1)) comes from the compressor the factory builds;
// a record always holds the value it resolved, and one without it is refused (an OptionError), as
// a spec without it would be by a compressor that declares no omega.
std::optional<DianaOptions> DianaOptionsOf(std::string_view optimizer, const Hyperparameters& h);
std::optional<MarinaOptions> MarinaOptionsOf(std::string_view optimizer, const Hyperparameters& h);

// What the Adam-type optimizers share: the moments' decays and the denominator's constant.
struct MomentOptions {
  double beta1 = 0;
  double beta2 = 0;
  double eps = 0;
};
// adam, adamw, amsgrad, adam-1bit-naive, onebit-adam, onebit-adam-fp32, lamb, onebit-lamb, spams,
// dist-spams and zero-one-adam.
std::optional<MomentOptions> MomentOptionsOf(std::string_view optimizer, const Hyperparameters& h);

// T_w of onebit-adam, onebit-adam-fp32 and onebit-lamb.
std::optional<std::int64_t> WarmupStepsOf(std::string_view optimizer, const Hyperparameters& h);

}  // namespace lemmalab
