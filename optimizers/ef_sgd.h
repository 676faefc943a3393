// Error-feedback SGD baselines on CompressedExchange (optimizers/compressed_exchange.h): each
// worker sends C(y^(i) + e^(i)) and keeps the error, the server averages (and, for DoubleSqueeze,
// re-compresses with its own error), and every replica steps x <- x - alpha_t * reply.
//
//   ef-sgd          y = g^(i); server sends the mean (Karimireddy et al., ICML 2019, EF-SGD;
//                   Stich et al., NeurIPS 2018, "Sparsified SGD with memory"). Default C is the
//                   scaled sign (1-bit, as the papers' EF baselines).
//   ef-signsgd      ef-sgd with C = Block-Sign, sign(p_B) ||p_B||_1 / d_B per block (Karimireddy
//                   et al., ICML 2019, Algorithm EF-SIGNSGD; its C is ||p||_1/d sign(p) on the
//                   whole vector, which is block-sign on a problem without layers).
//   double-squeeze  y = g^(i); worker EF and server EF, the server re-compresses the mean with
//                   the same compressor (Tang et al., ICML 2019, DoubleSqueeze;
//                   onebit-adam-icml-with-appendix.txt App. 10 item 1, "1-bit compression").
//   ef-sgdm         y = m^(i), each worker's own momentum m^(i) = beta m^(i) + (1 - beta) g^(i)
//                   (Zheng et al., NeurIPS 2019, dist-EF-SGDM; onebit-adam-icml App. 10 item 3,
//                   "1-bit compression"): default C the scaled sign, as there; Zheng et al.'s
//                   blockwise C is compressor = "block-sign". Their momentum is m = mu m + g
//                   (a 1/(1 - beta) rescaling of this one with positively homogeneous C), and
//                   their server also re-compresses its reply with server EF: set
//                   server_compressor and server_feedback = "classic" for that form.
//
// The lr inside the feedback. Karimireddy et al. (and Zheng et al.) compress p = alpha_t y + e
// and step x <- x - C(p). C is positively homogeneous (C(a p) = a C(p) for a > 0: sign, scaled
// sign, block-sign, top-k), so with a constant alpha that is exactly classic EF on y with the
// step alpha C(y + e) (their e is alpha times ours). With a varying alpha_t their error carries
// the units of alpha_{t-1}; restating it in alpha_t's is worker_feedback = "scaled" (the factor
// alpha_{t-1}/alpha_t of compressors/error_feedback.h). lemmalab's default is "classic", the same
// as the papers for a constant rate; "scaled" reproduces their boxes for any schedule.
//
// Options (ExchangeFromOptions): compressor, worker_feedback, server_compressor, server_feedback;
// ef-sgdm also beta.
#pragma once

#include "optimizers/compressed_exchange.h"
#include "optimizers/optimizer.h"

namespace lemmalab {

// The worker's side of error-compensated SGD as a trace names it (onebit-adam.txt Eq. 5): what
// these baselines and Adam (1-bit naive) send.
extern const SenderSymbols kErrorCompensatedGradient;

struct EfSgdmOptions {
  double beta = 0.9;  // in [0, 1); onebit-adam-icml App. 10 ("momentum beta = 0.9")
};

// ef-sgd, ef-signsgd and double-squeeze differ only in their exchange configuration.
template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeEfSgd(const ExchangeConfig<T>& exchange,
                                                   const OptimizerContext& context);
template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeEfSgdm(const EfSgdmOptions& options,
                                                    const ExchangeConfig<T>& exchange,
                                                    const OptimizerContext& context);

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> EfSgdFromOptions(OptionTable& options,
                                                          const OptimizerContext& context);
template <typename T>
std::unique_ptr<DistributedOptimizer<T>> EfSignSgdFromOptions(OptionTable& options,
                                                              const OptimizerContext& context);
template <typename T>
std::unique_ptr<DistributedOptimizer<T>> DoubleSqueezeFromOptions(OptionTable& options,
                                                                  const OptimizerContext& context);
template <typename T>
std::unique_ptr<DistributedOptimizer<T>> EfSgdmFromOptions(OptionTable& options,
                                                           const OptimizerContext& context);

}  // namespace lemmalab
