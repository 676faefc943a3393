// The optimizer registry: adding an optimizer is one file and one line in the table below.
#include <fmt/format.h>

#include "optimizers/adam.h"
#include "optimizers/birder.h"
#include "optimizers/onebit_adam.h"
#include "optimizers/optimizer.h"
#include "optimizers/sgd.h"
#include "optimizers/spams.h"
#include "optimizers/weight_decay.h"

namespace lemmalab {

const Registry<OptimizerInfo>& Optimizers() {
  static const Registry<OptimizerInfo> registry(
      "optimizer",
      {
          {"adam", "Adam on the averaged fp gradient; bias correction option",
           "Kingma & Ba, ICLR 2015, Algorithm 1", &AdamFromOptions<float>,
           &AdamFromOptions<double>},
          {"adam-1bit-naive", "Adam (1-bit naive): Adam on the EF-compressed gradient",
           "onebit-adam.txt Sec. 3.2, 4.2, 7.2", &AdamOnebitNaiveFromOptions<float>,
           &AdamOnebitNaiveFromOptions<double>},
          {"adamw", "AdamW: Adam with decoupled weight decay (default 0.01, as PyTorch's)",
           "Loshchilov & Hutter, ICLR 2019, Algorithm 2", &AdamFromOptions<float>,
           &AdamFromOptions<double>, 0.01},
          {"amsgrad", "AMSGrad: Adam dividing by the running max of v",
           "Reddi, Kale & Kumar, ICLR 2018, Algorithm 2; PyTorch's amsgrad formula",
           &AmsgradFromOptions<float>, &AmsgradFromOptions<double>},
          {"birder", "Birder: 1-bit Q(m/b) with worker and server EF",
           "birder.txt Algorithm 1 (lines 1-17), Eq. 4-5, footnote 5", &BirderFromOptions<float>,
           &BirderFromOptions<double>},
          {"onebit-adam", "1-bit Adam: Adam warmup, then frozen v and compressed momentum with EF",
           "onebit-adam.txt Algorithm 1 (lines 1-15), Sec. 4.3; ICML version Alg. 1",
           &OnebitAdamFromOptions<float>, &OnebitAdamFromOptions<double>},
          {"onebit-adam-fp32", "1-bit Adam (32-bits): the same schedule, momentum uncompressed",
           "onebit-adam.txt Sec. 7.2", &OnebitAdamFp32FromOptions<float>,
           &OnebitAdamFp32FromOptions<double>},
          {"sgd", "SGD on the averaged fp gradient", "Robbins & Monro 1951", &SgdFromOptions<float>,
           &SgdFromOptions<double>},
          {"dist-spams",
           "distributed SPAMS: workers send C(g + e) with EF, the server runs AMSGrad",
           "spams.txt Algorithm 2 (lines 1-17); DOMAIN.md convention 6",
           &DistSpamsFromOptions<float>, &DistSpamsFromOptions<double>},
          {"spams", "single-machine SPAMS: EF compression of the (averaged) gradient, then AMSGrad",
           "spams.txt Algorithm 3 (lines 1-11); n workers: on the averaged gradient",
           &SpamsFromOptions<float>, &SpamsFromOptions<double>},
          {"softsign-sgd",
           "SoftSignSGD: Birder without quantization, m/(b + eps) in full precision",
           "birder.txt App. B (the uncompressed Birder), Eq. 4", &SoftSignSgdFromOptions<float>,
           &SoftSignSgdFromOptions<double>},
      });
  return registry;
}

namespace {

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> Build(const OptimizerInfo& info, OptionTable& options,
                                               const OptimizerContext& context) {
  std::unique_ptr<DistributedOptimizer<T>> optimizer = FactoryFor<T>(info)(options, context);
  const WeightDecay decay = WeightDecayFromOptions(options, info.weight_decay);
  return WithWeightDecay<T>(std::move(optimizer), decay, context);
}

}  // namespace

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeOptimizer(OptionTable& options,
                                                       const OptimizerContext& context) {
  std::unique_ptr<DistributedOptimizer<T>> optimizer =
      Build<T>(Optimizers().Get(options), options, context);
  options.RejectUnknownKeys();
  return optimizer;
}

std::vector<OptionTable::Use> OptimizerOptions(const OptimizerInfo& info) {
  OptionTable table(fmt::format("optimizer '{}'", info.name), "");
  table.Set("name", {std::string(info.name), ""});
  const OptimizerContext context{8, 2};
  Build<double>(info, table, context);
  std::vector<OptionTable::Use> uses = table.uses();
  std::erase_if(uses, [](const OptionTable::Use& use) { return use.key == "name"; });
  return uses;
}

template std::unique_ptr<DistributedOptimizer<float>> MakeOptimizer(OptionTable&,
                                                                    const OptimizerContext&);
template std::unique_ptr<DistributedOptimizer<double>> MakeOptimizer(OptionTable&,
                                                                     const OptimizerContext&);

}  // namespace lemmalab
