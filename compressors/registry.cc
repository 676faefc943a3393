// The compressor registry: a compressor is registered by one line in the table below (what else
// adding one takes: docs/extending.md).
#include <fmt/format.h>

#include "compressors/bernoulli.h"
#include "compressors/block_sign.h"
#include "compressors/compressor.h"
#include "compressors/half_precision.h"
#include "compressors/identity.h"
#include "compressors/natural.h"
#include "compressors/natural_dithering.h"
#include "compressors/permk.h"
#include "compressors/powersgd.h"
#include "compressors/qsgd.h"
#include "compressors/random_k.h"
#include "compressors/rank_k.h"
#include "compressors/scaled_sign.h"
#include "compressors/sign.h"
#include "compressors/stochastic_binary.h"
#include "compressors/terngrad.h"
#include "compressors/top_k.h"

namespace lemmalab {

const Registry<CompressorInfo>& Compressors() {
  static const Registry<CompressorInfo> registry(
      "compressor",
      {
          {"identity", "no compression: raw fp32/fp64 values", &IdentityFromOptions<float>,
           &IdentityFromOptions<double>},
          {"sign", "sign(x) (signSGD), zero sent as +1: 1 bit/element", &SignFromOptions<float>,
           &SignFromOptions<double>},
          {"scaled-sign", "1-bit Adam: ||x||/||sign(x)|| sign(x), one float32 scale per chunk",
           &ScaledSignFromOptions<float>, &ScaledSignFromOptions<double>},
          {"block-sign", "SPAMS Block-Sign: sign(x_B) ||x_B||_1/d_B per layer or fixed block",
           &BlockSignFromOptions<float>, &BlockSignFromOptions<double>},
          {"stochastic-binary", "Birder's Q (Eq. 5): +-1 with P(+1) = (u+1)/2, 1 bit/element",
           &StochasticBinaryFromOptions<float>, &StochasticBinaryFromOptions<double>},
          {"powersgd", "PowerSGD: rank-r P and Q per matrix layer, warm-started power iteration",
           &PowerSgdFromOptions<float>, &PowerSgdFromOptions<double>},
          {"qsgd", "QSGD: unbiased s-level stochastic quantizer of x/||x||_p, p = 2 or inf",
           &QsgdFromOptions<float>, &QsgdFromOptions<double>},
          {"terngrad",
           "TernGrad: max|x| sign(x) b, b ~ Bernoulli(|x|/max|x|); float32 + 2 bits/elem",
           &TernGradFromOptions<float>, &TernGradFromOptions<double>},
          {"natural", "natural compression: unbiased random rounding to a power of 2; 9 bits/elem",
           &NaturalFromOptions<float>, &NaturalFromOptions<double>},
          {"fp16", "IEEE half, round to nearest even, saturating at 65504: 16 bits/elem",
           &Fp16FromOptions<float>, &Fp16FromOptions<double>},
          {"bf16", "bfloat16, round to nearest even: 16 bits/elem", &Bf16FromOptions<float>,
           &Bf16FromOptions<double>},
          {"top-k", "SPAMS Top-k: the k largest |x_j| (ties: lower index), indices + values",
           &TopKFromOptions<float>, &TopKFromOptions<double>},
          {"random-k", "k uniformly random coordinates, scaled by d/k (unbiased) or not",
           &RandomKFromOptions<float>, &RandomKFromOptions<double>},
          {"permk",
           "PermK: the senders split one shared random permutation, each scaled to be unbiased",
           &PermKFromOptions<float>, &PermKFromOptions<double>},
          {"natural-dithering",
           "natural dithering: unbiased levels 0, 2^(1-s), ..., 1/2, 1 of x/||x||_p",
           &NaturalDitheringFromOptions<float>, &NaturalDitheringFromOptions<double>},
          {"bernoulli", "lazy sending: x (scaled by 1/p, or not) with probability p, else nothing",
           &BernoulliFromOptions<float>, &BernoulliFromOptions<double>},
          {"rank-k", "best rank-k approximation of each matrix layer by SVD; vectors raw",
           &RankKFromOptions<float>, &RankKFromOptions<double>},
      });
  return registry;
}

template <typename T>
CompressorMaker<T> MakeCompressorMaker(OptionTable& options) {
  const CompressorInfo& info = Compressors().Get(options);
  options.set_context(fmt::format("{} '{}'", options.context(), info.name));
  CompressorMaker<T> maker = FactoryFor<T>(info)(options);
  options.RejectUnknownKeys();
  return maker;
}

template CompressorMaker<float> MakeCompressorMaker(OptionTable&);
template CompressorMaker<double> MakeCompressorMaker(OptionTable&);

}  // namespace lemmalab
