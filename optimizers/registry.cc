// The optimizer registry: adding an optimizer is one file and one line in the table below.
#include <fmt/format.h>

#include "optimizers/adam.h"
#include "optimizers/birder.h"
#include "optimizers/lamb.h"
#include "optimizers/optimizer.h"
#include "optimizers/sgd.h"

namespace lemmalab {

const Registry<OptimizerInfo>& Optimizers() {
  static const Registry<OptimizerInfo> registry(
      "optimizer", {
                       {"adam", "Adam on the averaged fp gradient; bias correction option",
                        "Kingma & Ba, ICLR 2015, Algorithm 1", &AdamFromOptions<float>,
                        &AdamFromOptions<double>},
                       {"birder", "Birder: 1-bit Q(m/b) with worker and server EF",
                        "birder.txt Algorithm 1 (lines 1-17), Eq. 4-5, footnote 5",
                        &BirderFromOptions<float>, &BirderFromOptions<double>},
                       {"lamb", "LAMB: m/(sqrt(v) + eta) scaled per layer by a clipped ||x||/||u||",
                        "onebit-lamb.txt Eq. (1), footnote 3; You et al., ICLR 2020",
                        &LambFromOptions<float>, &LambFromOptions<double>},
                       {"onebit-lamb", "1-bit LAMB: LAMB warmup, then 1-bit momentum, c = r c_avg",
                        "onebit-lamb.txt Algorithm 1, Sec. 4, App. A.5.1-A.5.2",
                        &OnebitLambFromOptions<float>, &OnebitLambFromOptions<double>},
                       {"sgd", "SGD on the averaged fp gradient", "Robbins & Monro 1951",
                        &SgdFromOptions<float>, &SgdFromOptions<double>},
                       {"softsign-sgd",
                        "SoftSignSGD: Birder without quantization, m/(b + eps) in full precision",
                        "birder.txt App. B (the uncompressed Birder), Eq. 4",
                        &SoftSignSgdFromOptions<float>, &SoftSignSgdFromOptions<double>},
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

std::vector<OptionTable::Use> OptimizerOptions(const OptimizerInfo& info) {
  OptionTable table(fmt::format("optimizer '{}'", info.name), "");
  table.Set("name", {std::string(info.name), ""});
  const OptimizerContext context{8, 2};
  info.make_f64(table, context);
  std::vector<OptionTable::Use> uses = table.uses();
  std::erase_if(uses, [](const OptionTable::Use& use) { return use.key == "name"; });
  return uses;
}

template std::unique_ptr<DistributedOptimizer<float>> MakeOptimizer(OptionTable&,
                                                                    const OptimizerContext&);
template std::unique_ptr<DistributedOptimizer<double>> MakeOptimizer(OptionTable&,
                                                                     const OptimizerContext&);

}  // namespace lemmalab
