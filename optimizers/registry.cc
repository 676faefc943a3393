// The optimizer registry: adding an optimizer is one file and one line in the table below.
#include <fmt/format.h>

#include "optimizers/adam.h"
#include "optimizers/birder.h"
#include "optimizers/optimizer.h"
#include "optimizers/sgd.h"

namespace lemmalab {

const Registry<OptimizerInfo>& Optimizers() {
  static const Registry<OptimizerInfo> registry(
      "optimizer",
      {
          {"adam", "Adam (Kingma & Ba 2015) on the averaged fp gradient; bias correction option",
           &AdamFromOptions<float>, &AdamFromOptions<double>},
          {"birder", "Birder (birder.txt Alg. 1): 1-bit Q(m/b) with worker and server EF",
           &BirderFromOptions<float>, &BirderFromOptions<double>},
          {"sgd", "SGD on the averaged fp gradient", &SgdFromOptions<float>,
           &SgdFromOptions<double>},
      });
  return registry;
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeOptimizer(OptionTable& options,
                                                       const OptimizerContext& context) {
  const OptimizerInfo& info = Optimizers().Get(options);
  std::unique_ptr<DistributedOptimizer<T>> optimizer = FactoryFor<T>(info)(options, context);
  options.RejectUnknownKeys();
  return optimizer;
}

template std::unique_ptr<DistributedOptimizer<float>> MakeOptimizer(OptionTable&,
                                                                    const OptimizerContext&);
template std::unique_ptr<DistributedOptimizer<double>> MakeOptimizer(OptionTable&,
                                                                     const OptimizerContext&);

}  // namespace lemmalab
