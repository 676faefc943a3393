// The optimizer registry: an optimizer is registered by one line in the table below (what else
// adding one takes: docs/extending.md).
#include <fmt/format.h>

#include "optimizers/adam.h"
#include "optimizers/birder.h"
#include "optimizers/diana.h"
#include "optimizers/ef21.h"
#include "optimizers/ef_sgd.h"
#include "optimizers/lamb.h"
#include "optimizers/local_sgd.h"
#include "optimizers/marina.h"
#include "optimizers/one_bit_adam.h"
#include "optimizers/optimizer.h"
#include "optimizers/sgd.h"
#include "optimizers/sign_sgd.h"
#include "optimizers/spams.h"
#include "optimizers/weight_decay.h"
#include "optimizers/zero_one_adam.h"

namespace lemmalab {

const Registry<OptimizerInfo>& Optimizers() {
  static const Registry<OptimizerInfo> registry(
      "optimizer",
      {
          {"adam", "Adam on the averaged fp gradient; bias correction option",
           "Kingma & Ba, ICLR 2015, Algorithm 1", &AdamFromOptions<float>,
           &AdamFromOptions<double>},
          {"adam-1bit-naive", "Adam (1-bit naive): Adam on the EF-compressed gradient",
           "onebit-adam.txt Sec. 3.2, 4.2, 7.2", &AdamOneBitNaiveFromOptions<float>,
           &AdamOneBitNaiveFromOptions<double>},
          {"adamw", "AdamW: Adam with decoupled weight decay (default 0.01, as PyTorch's)",
           "Loshchilov & Hutter, ICLR 2019, Algorithm 2", &AdamFromOptions<float>,
           &AdamFromOptions<double>, 0.01},
          {"amsgrad", "AMSGrad: Adam dividing by the running max of v",
           "Reddi, Kale & Kumar, ICLR 2018, Algorithm 2; PyTorch's amsgrad formula",
           &AmsgradFromOptions<float>, &AmsgradFromOptions<double>},
          {"birder", "Birder: 1-bit Q(m/b) with worker and server EF",
           "birder.txt Algorithm 1 (lines 1-17), Eq. 4-5, footnote 5", &BirderFromOptions<float>,
           &BirderFromOptions<double>},
          {"diana", "DIANA: C(g - h_i) with learned shifts h_i += a C(...); fp mean back",
           "Mishchenko, Gorbunov, Takac & Richtarik 2019, Algorithm 1 (no prox, beta = 0)",
           &DianaFromOptions<float>, &DianaFromOptions<double>},
          {"dist-spams",
           "distributed SPAMS: workers send C(g + e) with EF, the server runs AMSGrad",
           "spams.txt Algorithm 2 (lines 1-17); docs/conventions.md §6",
           &DistSpamsFromOptions<float>, &DistSpamsFromOptions<double>},
          {"double-squeeze", "DoubleSqueeze: C(g + e), worker and server EF",
           "Tang et al., ICML 2019; onebit-adam-icml App. 10 item 1",
           &DoubleSqueezeFromOptions<float>, &DoubleSqueezeFromOptions<double>},
          {"ef-sgd", "EF-SGD: C(g + e), worker EF; fp mean back",
           "Karimireddy et al., ICML 2019 EF-SGD; Stich et al., NeurIPS 2018",
           &EfSgdFromOptions<float>, &EfSgdFromOptions<double>},
          {"ef-sgdm", "EF momentum SGD: each worker's m sent as C(m + e)",
           "Zheng et al., NeurIPS 2019; onebit-adam-icml App. 10 item 3", &EfSgdmFromOptions<float>,
           &EfSgdmFromOptions<double>},
          {"ef-signsgd", "EF-signSGD: block-sign ||p_B||_1/d_B sign(p_B)",
           "Karimireddy et al., ICML 2019, Algorithm EF-SIGNSGD", &EfSignSgdFromOptions<float>,
           &EfSignSgdFromOptions<double>},
          {"ef21", "EF21: C(g - g_i), g_i += C(...); replicas g += mean, x -= lr g",
           "Richtarik, Sokolov & Fatkhullin, NeurIPS 2021, Algorithm 1", &Ef21FromOptions<float>,
           &Ef21FromOptions<double>},
          {"ef21-sgdm", "EF21-SGDM: EF21 on each worker's momentum v_i = (1-eta) v_i + eta g",
           "Fatkhullin, Tyurin & Richtarik, NeurIPS 2023, Algorithm 1 (EF21-SGDM)",
           &Ef21SgdmFromOptions<float>, &Ef21SgdmFromOptions<double>},
          {"lamb", "LAMB: m/(sqrt(v) + eta) scaled per layer by a clipped ||x||/||u||",
           "onebit-lamb.txt Eq. (1), footnote 3; You et al., ICLR 2020", &LambFromOptions<float>,
           &LambFromOptions<double>},
          {"local-sgd", "local SGD: replicas averaged every tau steps",
           "Stich, ICLR 2019; onebit-adam-icml App. 10 item 4", &LocalSgdFromOptions<float>,
           &LocalSgdFromOptions<double>},
          {"local-sgdm", "local SGD with momentum: x^(i) and m^(i) averaged every tau steps",
           "Lin et al., ICLR 2020; onebit-adam-icml App. 10 item 5", &LocalSgdmFromOptions<float>,
           &LocalSgdmFromOptions<double>},
          {"marina", "MARINA: shared coin; full g (fp) w.p. p, else C(g - g_prev) and g += mean",
           "Gorbunov, Burlachenko, Li & Richtarik, ICML 2021, Algorithm 1",
           &MarinaFromOptions<float>, &MarinaFromOptions<double>},
          {"onebit-adam", "1-bit Adam: Adam warmup, then frozen v and compressed momentum with EF",
           "onebit-adam.txt Algorithm 1 (lines 1-15), Sec. 4.3; ICML version Alg. 1",
           &OneBitAdamFromOptions<float>, &OneBitAdamFromOptions<double>},
          {"onebit-adam-fp32", "1-bit Adam (32-bits): the same schedule, momentum uncompressed",
           "onebit-adam.txt Sec. 7.2", &OneBitAdamFp32FromOptions<float>,
           &OneBitAdamFp32FromOptions<double>},
          {"onebit-lamb", "1-bit LAMB: LAMB warmup, then 1-bit momentum, c = r c_avg",
           "onebit-lamb.txt Algorithm 1, Sec. 4, App. A.5.1-A.5.2", &OneBitLambFromOptions<float>,
           &OneBitLambFromOptions<double>},
          {"sgd", "SGD on the averaged fp gradient", "Robbins & Monro 1951", &SgdFromOptions<float>,
           &SgdFromOptions<double>},
          {"sgdm", "m = beta m + (1-beta) g on the averaged fp gradient",
           "onebit-adam-icml App. 10 item 2; docs/conventions.md §9", &SgdmFromOptions<float>,
           &SgdmFromOptions<double>},
          {"sgdm-torch", "PyTorch SGD momentum: first buf = g; nesterov",
           "torch.optim.SGD; docs/conventions.md §9", &SgdmTorchFromOptions<float>,
           &SgdmTorchFromOptions<double>},
          {"signsgd", "signSGD reference: true sign in fp; mean or majority",
           "Bernstein et al., ICML 2018 (signSGD, majority vote)", &SignSgdFromOptions<float>,
           &SignSgdFromOptions<double>},
          {"softsign-sgd",
           "SoftSignSGD: Birder without quantization, m/(b + eps) in full precision",
           "birder.txt App. B (the uncompressed Birder), Eq. 4", &SoftSignSgdFromOptions<float>,
           &SoftSignSgdFromOptions<double>},
          {"spams", "single-machine SPAMS: EF compression of the (averaged) gradient, then AMSGrad",
           "spams.txt Algorithm 3 (lines 1-11); n workers: on the averaged gradient",
           &SpamsFromOptions<float>, &SpamsFromOptions<double>},
          {"zero-one-adam",
           "0/1 Adam: v updated on T_v (fp), 1-bit sync of u on T_u, local steps in between",
           "Lu et al., ICLR 2023 (arXiv 2202.06009) Algorithm 1; DeepSpeed zoadam.py policies",
           &ZeroOneAdamFromOptions<float>, &ZeroOneAdamFromOptions<double>},
      });
  return registry;
}

namespace {

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> Build(const OptimizerInfo& info, OptionTable& options,
                                               const OptimizerContext& context) {
  std::unique_ptr<DistributedOptimizer<T>> optimizer = FactoryFor<T>(info)(options, context);
  optimizer->set_weight_decay(WeightDecayFromOptions(options, info.weight_decay));
  return optimizer;
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
