#include "optimizers/weight_decay.h"

#include <string>
#include <vector>

namespace lemmalab {

WeightDecay WeightDecayFromOptions(OptionTable& options, double fallback) {
  static const std::vector<std::string> kModes = {"decoupled", "l2"};
  WeightDecay decay;
  decay.lambda = options.GetDouble("weight_decay", fallback, Interval::NonNegative());
  decay.mode = options.GetChoice("weight_decay_mode", "decoupled", kModes) == "l2"
                   ? WeightDecayMode::kL2
                   : WeightDecayMode::kDecoupled;
  return decay;
}

}  // namespace lemmalab
