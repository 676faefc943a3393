// The batched optimizers (batched/optimizers.h) against the CPU optimizers of the same name: fed
// the same gradients for 100 steps, they hold the same parameters and the same bits in every
// state vector a probe can observe, for every optimizer with a batched form, in several
// configurations, on the host backend (every machine) and on the GPU (where there is one).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "batched/optimizers.h"
#include "compressors/compressor.h"
#include "core/error.h"
#include "core/rng.h"
#include "tests/cuda_test_util.h"
#include "tests/optimizer_test_util.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using batched::Backend;
using testing::Int;
using testing::OptionPairs;
using testing::Real;
using testing::Str;

struct Case {
  std::string label;  // the test's name
  std::string optimizer;
  OptionPairs options;
  std::vector<Layer> layers = {};  // of the 77 coordinates; empty: one layer
};

// A name as a test's name may spell it.
std::string Label(std::string_view name) {
  std::string label(name);
  std::replace(label.begin(), label.end(), '-', '_');
  return label;
}

// The registry's compressors, each in its default configuration, and whether it is a 1-bit format.
std::vector<std::pair<std::string_view, bool>> CompressorsByFormat() {
  std::vector<std::pair<std::string_view, bool>> found;
  for (const CompressorInfo& info : Compressors().entries()) {
    OptionTable table("compressor", "");
    table.Set("name", Str(info.name));
    try {
      found.emplace_back(
          info.name, info.make_f32(table)(CompressorShape::Flat(64))->one_bit_format() != nullptr);
    } catch (const UserError&) {
      // A compressor that needs options: not part of the default configurations.
    }
  }
  return found;
}

std::vector<std::string_view> OneBitCompressors() {
  std::vector<std::string_view> names;
  for (const auto& [name, one_bit] : CompressorsByFormat()) {
    if (one_bit) names.push_back(name);
  }
  return names;
}

// A component given as a table, `{ name = "...", key = value, ... }`.
OptionValue Component(std::string_view name, const OptionPairs& options) {
  auto table = std::make_shared<OptionTable>(fmt::format("compressor '{}'", name), "");
  table->Set("name", Str(name));
  for (const auto& [key, value] : options) table->Set(key, value);
  return {table, ""};
}

// Every optimizer with a batched form in its default configuration, and the options that choose
// another path through its batched code.
std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (const std::string_view name : batched::BatchedOptimizerNames()) {
    cases.push_back({Label(name), std::string(name), {}});
  }
  // Every 1-bit compressor of the registry, on both sides of Birder's exchange.
  for (const std::string_view name : OneBitCompressors()) {
    cases.push_back({"birder_with_" + Label(name), "birder", {{"compressor", Str(name)}}});
  }
  cases.push_back(
      {"adam_eps_inside_no_bias_correction",
       "adam",
       {{"eps_placement", Str("inside")}, {"bias_correction", {false, ""}}, {"beta1", Real(0.5)}}});
  cases.push_back({"birder_max_rule_sign",
                   "birder",
                   {{"t0", Int(20)}, {"compressor", Str("sign")}, {"beta", Real(0.8)}}});
  cases.push_back({"birder_rescale_block_sign_server",
                   "birder",
                   {{"compressor", Component("stochastic-binary", {{"domain", Str("rescale")}})},
                    {"server_compressor", Str("block-sign")}}});
  cases.push_back({"birder_block_sign_by_layers",
                   "birder",
                   {{"compressor", Str("block-sign")}},
                   {Layer{"w", 0, 5, 5}, Layer{"b", 25, 52, 1}}});
  cases.push_back({"dist_spams_block_sign_by_layers",
                   "dist-spams",
                   {{"beta1", Real(0.5)}, {"eps", Real(1e-4)}},
                   {Layer{"w", 0, 5, 5}, Layer{"b", 25, 52, 1}}});
  cases.push_back({"dist_spams_stochastic_binary_no_feedback",
                   "dist-spams",
                   {{"compressor", Str("stochastic-binary")}, {"worker_feedback", Str("none")}}});
  cases.push_back({"ef21_full_init_stochastic_binary_rescale",
                   "ef21",
                   {{"init", Str("full")},
                    {"compressor", Component("stochastic-binary", {{"domain", Str("rescale")}})}}});
  cases.push_back(
      {"ef21_sgdm_compressed_init_block_sign",
       "ef21-sgdm",
       {{"init", Str("compressed")}, {"eta", Real(0.3)}, {"compressor", Str("block-sign")}},
       {Layer{"w", 0, 5, 5}, Layer{"b", 25, 52, 1}}});
  cases.push_back({"onebit_adam_compressing", "onebit-adam", {{"warmup_steps", Int(10)}}});
  cases.push_back({"onebit_adam_own_momentum_eps_inside_scaled_sign_chunks",
                   "onebit-adam",
                   {{"warmup_steps", Int(7)},
                    {"local_momentum", Str("own")},
                    {"eps_placement", Str("inside")},
                    {"compressor", Component("scaled-sign", {{"chunk", Int(16)}})}}});
  cases.push_back({"lamb_bias_correction_zero_norm_one_by_layers",
                   "lamb",
                   {{"bias_correction", {true, ""}}, {"zero_norm", Str("one")}, {"c_max", Real(2)}},
                   {Layer{"w", 0, 5, 5}, Layer{"b", 25, 52, 1}}});
  cases.push_back({"onebit_lamb_compressing_by_layers",
                   "onebit-lamb",
                   {{"warmup_steps", Int(10)}, {"r_threshold", Real(0.5)}},
                   {Layer{"w", 0, 5, 5}, Layer{"b", 25, 52, 1}}});
  cases.push_back({"onebit_lamb_own_momentum_denominator_ratio_unscaled_block_sign",
                   "onebit-lamb",
                   {{"warmup_steps", Int(7)},
                    {"local_momentum", Str("own")},
                    {"ratio", Str("denominator")},
                    {"momentum_scaling", {false, ""}},
                    {"zero_norm", Str("one")},
                    {"compressor", Str("block-sign")}},
                   {Layer{"w", 0, 5, 5}, Layer{"b", 25, 52, 1}}});
  cases.push_back({"onebit_lamb_without_warmup_stochastic_binary",
                   "onebit-lamb",
                   {{"warmup_steps", Int(0)}, {"compressor", Str("stochastic-binary")}}});
  cases.push_back({"zero_one_adam_local_steps_block_sign",
                   "zero-one-adam",
                   {{"var_freeze_step", Int(20)},
                    {"var_update_scaler", Int(2)},
                    {"local_step_scaler", Int(2)},
                    {"local_step_clipper", Int(8)},
                    {"compressor", Str("block-sign")}},
                   {Layer{"w", 0, 5, 5}, Layer{"b", 25, 52, 1}}});
  cases.push_back({"zero_one_adam_one_bit_variance_sync_eps_inside",
                   "zero-one-adam",
                   {{"variance_sync", Str("one-bit")},
                    {"eps_placement", Str("inside")},
                    {"var_freeze_step", Int(30)},
                    {"var_update_scaler", Int(1)},
                    {"local_step_scaler", Int(1)},
                    {"local_step_clipper", Int(4)}}});
  // The sparse and raw compressors: top-k (Birder's step-1 input m / (b + eps) is +-1 nearly
  // everywhere, so its selection meets ties), random-k scaled and not, the identity.
  const OptionValue top_k = Component("top-k", {{"fraction", Real(0.1)}});
  const OptionValue random_k = Component("random-k", {{"k", Int(9)}});
  cases.push_back({"birder_top_k_workers_random_k_server",
                   "birder",
                   {{"compressor", top_k}, {"server_compressor", random_k}}});
  cases.push_back({"ef21_top_k_most_coordinates",
                   "ef21",
                   {{"compressor", Component("top-k", {{"fraction", Real(0.97)}})}}});
  cases.push_back(
      {"ef21_sgdm_unscaled_random_k",
       "ef21-sgdm",
       {{"compressor", Component("random-k", {{"k", Int(20)}, {"scaled", {false, ""}}})},
        {"eta", Real(0.4)}}});
  cases.push_back({"onebit_adam_identity_both_sides",
                   "onebit-adam",
                   {{"warmup_steps", Int(5)}, {"compressor", Str("identity")}}});
  cases.push_back({"dist_spams_random_k_without_feedback",
                   "dist-spams",
                   {{"compressor", random_k}, {"worker_feedback", Str("none")}}});
  cases.push_back({"zero_one_adam_top_k",
                   "zero-one-adam",
                   {{"var_freeze_step", Int(12)}, {"compressor", top_k}}});
  cases.push_back(
      {"onebit_lamb_top_k_worker_identity_server",
       "onebit-lamb",
       {{"warmup_steps", Int(6)}, {"compressor", top_k}, {"server_compressor", Str("identity")}},
       {Layer{"w", 0, 5, 5}, Layer{"b", 25, 52, 1}}});
  cases.push_back(
      {"birder_no_feedback",
       "birder",
       {{"worker_feedback", Str("none")}, {"server_feedback", Str("none")}, {"eps", Real(0.0)}}});
  return cases;
}

const Case& CaseNamed(const std::string& label) {
  static const std::vector<Case> cases = Cases();
  return *std::find_if(cases.begin(), cases.end(), [&](const Case& c) { return c.label == label; });
}

OptionTable TableOf(const Case& c) {
  OptionTable table("optimizer '" + c.optimizer + "'", "");
  table.Set("name", Str(c.optimizer));
  for (const auto& [key, value] : c.options) table.Set(key, value);
  return table;
}

// Step t's gradients, rows of n workers: values in [-2, 2) from a Philox stream, every 13th
// exactly zero (sign and Birder's |g| meet their ties) and, now and then, one large (Birder's
// error feedback takes u outside [-1, 1]).
std::vector<float> Gradients(int workers, std::int64_t d, std::int64_t t) {
  std::vector<std::uint32_t> words(static_cast<std::size_t>(workers * d));
  PhiloxStream({7, Purpose::kDataSynthesis, 0, static_cast<std::uint64_t>(t)}).Fill(words);
  std::vector<float> g(words.size());
  for (std::size_t k = 0; k < g.size(); ++k) {
    g[k] = 4.0f * (static_cast<float>(words[k] >> 8) * 0x1p-24f) - 2.0f;
    if (k % 13 == 0) g[k] = 0.0f;
    if (k % 97 == static_cast<std::size_t>(t % 97)) g[k] *= 1000.0f;
  }
  return g;
}

bool SameBits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

class BatchedAgainstCpu : public ::testing::TestWithParam<std::tuple<std::string, Backend>> {};
class BatchedAgainstCpuOnBackend : public ::testing::TestWithParam<Backend> {};

TEST_P(BatchedAgainstCpu, HoldsTheCpuOptimizersBitsForAHundredSteps) {
  const auto& [label, backend] = GetParam();
  if (backend == Backend::kCuda) LEMMALAB_REQUIRE_GPU();
  const Case& c = CaseNamed(label);
  // 77 coordinates: the 1-bit messages end in a partial word.
  constexpr std::int64_t d = 77;
  for (const int n : {1, 3}) {
    SCOPED_TRACE(fmt::format("{} workers", n));
    OptionTable cpu_table = TableOf(c), batched_table = TableOf(c);
    std::unique_ptr<DistributedOptimizer<float>> cpu =
        MakeOptimizer<float>(cpu_table, OptimizerContext{d, n, c.layers});
    std::unique_ptr<batched::BatchedOptimizer<float>> gpu =
        batched::MakeBatchedOptimizer<float>(batched_table, {n, d, backend, c.layers});

    Vector<float> x = Vector<float>::LinSpaced(d, -1.0f, 1.0f);
    batched::Buffer<float> x_batched(backend, d), g_batched(backend, n * d);
    x_batched.Upload(std::span<const float>(x.data(), d));
    std::vector<Message> up(static_cast<std::size_t>(n));
    Message down;
    for (std::int64_t t = 1; t <= 100; ++t) {
      const StepContext ctx{t, 0.05 / std::sqrt(static_cast<double>(t)), 42};
      const std::vector<float> g = Gradients(n, d, t);
      for (int i = 0; i < n; ++i) {
        const Eigen::Map<const Vector<float>> gi(g.data() + i * d, d);
        cpu->WorkerStep(ctx, i, x, gi, up[static_cast<std::size_t>(i)]);
      }
      cpu->ServerStep(ctx, 0, up, down);
      cpu->Apply(ctx, std::span<const Message>(&down, 1), x);
      g_batched.Upload(g);
      gpu->Step(ctx, g_batched, x_batched);
      const auto wire = gpu->Wire(t);
      ASSERT_EQ(wire.worker, up[0].bytes.size()) << "a worker's message at step " << t;
      ASSERT_EQ(wire.server, down.bytes.size()) << "the server's message at step " << t;
      ASSERT_TRUE(SameBits(x_batched.ToHost(), std::span<const float>(x.data(), d)))
          << "x after step " << t;
      // The workers' own models, where the algorithm keeps them (0/1 Adam).
      const batched::Buffer<float>* local = gpu->LocalParameters();
      for (int i = 0; i < n; ++i) {
        const Vector<float>* expected = cpu->LocalParameters(i);
        ASSERT_EQ(local != nullptr, expected != nullptr) << "worker " << i << " at step " << t;
        if (expected == nullptr) continue;
        ASSERT_TRUE(SameBits(local->ToHost(static_cast<std::size_t>(i * d), d),
                             std::span<const float>(expected->data(), d)))
            << "worker " << i << "'s x after step " << t;
      }
    }
    for (int worker = kServer; worker < n; ++worker) {
      if (worker < 0 && worker != kServer) continue;
      for (int q = 0; q <= static_cast<int>(Quantity::kShift); ++q) {
        const auto quantity = static_cast<Quantity>(q);
        SCOPED_TRACE(fmt::format("quantity {} of {}", q, worker == kServer ? -1 : worker));
        const Vector<float>* expected = cpu->Observe(quantity, worker);
        const std::optional<std::vector<float>> got = gpu->Observe(quantity, worker);
        ASSERT_EQ(got.has_value(), expected != nullptr);
        if (expected != nullptr) {
          EXPECT_TRUE(SameBits(*got, std::span<const float>(expected->data(), expected->size())));
        }
      }
      const EncodeStats* expected = cpu->LastEncode(worker);
      const std::optional<EncodeStats> got = gpu->LastEncode(worker);
      ASSERT_EQ(got.has_value(), expected != nullptr);
      if (expected != nullptr) {
        EXPECT_EQ(got->elements, expected->elements);
        EXPECT_EQ(got->out_of_domain, expected->out_of_domain);
        EXPECT_EQ(got->non_finite, expected->non_finite);
      }
    }
  }
}

std::vector<std::string> CaseLabels() {
  std::vector<std::string> labels;
  for (const Case& c : Cases()) labels.push_back(c.label);
  return labels;
}

INSTANTIATE_TEST_SUITE_P(EveryBatchedOptimizer, BatchedAgainstCpu,
                         ::testing::Combine(::testing::ValuesIn(CaseLabels()),
                                            ::testing::Values(Backend::kHost, Backend::kCuda)),
                         [](const ::testing::TestParamInfo<BatchedAgainstCpu::ParamType>& test) {
                           return std::get<0>(test.param) + "_" +
                                  std::string(batched::BackendName(std::get<1>(test.param)));
                         });

// Top-k marks its kept set in chunks of kTieChunk elements per row, in parallel: with many keys
// equal to the threshold spread over several chunks (gradients of five values only), the kept set
// is still the CPU's (the lowest-indexed ties), step after step, for EF21 over 2 500 coordinates.
TEST_P(BatchedAgainstCpuOnBackend, TopKKeepsTheCpusTiesAcrossChunks) {
  const Backend backend = GetParam();
  if (backend == Backend::kCuda) LEMMALAB_REQUIRE_GPU();
  constexpr std::int64_t d = 2500;
  constexpr int n = 3;
  const Case c{"", "ef21", {{"compressor", Component("top-k", {{"fraction", Real(0.3)}})}}};
  OptionTable cpu_table = TableOf(c), batched_table = TableOf(c);
  auto cpu = MakeOptimizer<float>(cpu_table, OptimizerContext{d, n});
  auto gpu = batched::MakeBatchedOptimizer<float>(batched_table, {n, d, backend});
  Vector<float> x = Vector<float>::Zero(d);
  batched::Buffer<float> x_batched(backend, d), g_batched(backend, n * d);
  std::vector<Message> up(n);
  Message down;
  for (std::int64_t t = 1; t <= 5; ++t) {
    const StepContext ctx{t, 0.125, 42};
    std::vector<float> g = Gradients(n, d, t);
    for (float& v : g) v = std::round(2 * v) / 2;  // -2, -1.5, ..., 2: ties everywhere
    for (int i = 0; i < n; ++i) {
      cpu->WorkerStep(ctx, i, x, Eigen::Map<const Vector<float>>(g.data() + i * d, d),
                      up[static_cast<std::size_t>(i)]);
    }
    cpu->ServerStep(ctx, 0, up, down);
    cpu->Apply(ctx, std::span<const Message>(&down, 1), x);
    g_batched.Upload(g);
    gpu->Step(ctx, g_batched, x_batched);
    ASSERT_TRUE(SameBits(x_batched.ToHost(), std::span<const float>(x.data(), d)))
        << "x after step " << t;
    for (int i = 0; i < n; ++i) {
      const Vector<float>& expected = *cpu->Observe(Quantity::kShift, i);
      EXPECT_TRUE(
          SameBits(*gpu->Observe(Quantity::kShift, i), std::span<const float>(expected.data(), d)))
          << "worker " << i << "'s g_i after step " << t;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, BatchedAgainstCpuOnBackend,
                         ::testing::Values(Backend::kHost, Backend::kCuda),
                         [](const ::testing::TestParamInfo<Backend>& test) {
                           return std::string(batched::BackendName(test.param));
                         });

// The optimizers' fp32 square roots (Adam, AMSGrad, SPAMS, 1-bit Adam, 0/1 Adam, LAMB) are Eigen
// array expressions; they equal the GPU's only if every SIMD lane is correctly rounded, as the
// scalar tail is (the build sets EIGEN_FAST_MATH=0). Values across many binades, denormals too.
TEST(EigenFloatSqrt, IsCorrectlyRoundedInEveryLane) {
  std::vector<std::uint32_t> words(4099);
  PhiloxStream({3, Purpose::kDataSynthesis, 0, 0}).Fill(words);
  Eigen::ArrayXf v(static_cast<Eigen::Index>(words.size()));
  for (std::size_t k = 0; k < words.size(); ++k) {
    float value;
    const std::uint32_t bits = words[k] & 0x7fffffffu;  // every positive float, NaN and inf too
    std::memcpy(&value, &bits, sizeof value);
    v[static_cast<Eigen::Index>(k)] = value;
  }
  const Eigen::ArrayXf root = v.sqrt();
  for (Eigen::Index k = 0; k < v.size(); ++k) {
    const float expected = std::sqrt(v[k]);
    ASSERT_TRUE(std::memcmp(&root[k], &expected, sizeof expected) == 0 ||
                (std::isnan(root[k]) && std::isnan(expected)))
        << "sqrt(" << v[k] << ") = " << root[k] << ", correctly rounded " << expected;
  }
}

// Every name the batched registry lists is an optimizer of the CPU registry, and every other
// optimizer of that registry is refused by name, with the list of those that have a batched form.
TEST(BatchedOptimizers, AreCpuOptimizersAndRefuseEveryOther) {
  const auto names = batched::BatchedOptimizerNames();
  const std::string listed = fmt::format("those that have: {}", fmt::join(names, ", "));
  for (const std::string_view name : names) {
    EXPECT_NE(Optimizers().Find(name), nullptr) << name;
  }
  for (const OptimizerInfo& info : Optimizers().entries()) {
    if (std::find(names.begin(), names.end(), info.name) != names.end()) continue;
    OptionTable table = TableOf({"", std::string(info.name), {}});
    const std::string error = testing::UserErrorOf([&] {
      batched::MakeBatchedOptimizer<float>(table, {2, 8, Backend::kHost});
    });
    EXPECT_NE(error.find(fmt::format("optimizer '{}' has no batched (GPU) form yet", info.name)),
              std::string::npos)
        << error;
    EXPECT_NE(error.find(listed), std::string::npos) << error;
  }
}

// Every compressor of the registry without a batched form (neither a 1-bit format nor the
// identity, top-k or random-k) is refused on either side, by name, with the list of those that
// have one (each of which runs: BatchedAgainstCpu above).
TEST(BatchedOptimizers, RefuseEveryCompressorWithoutABatchedForm) {
  std::vector<std::string_view> batched = OneBitCompressors();
  ASSERT_GE(batched.size(), 4u);  // stochastic-binary, sign, scaled-sign, block-sign at least
  batched.insert(batched.end(), {"identity", "top-k", "random-k"});
  for (const auto& [name, is_one_bit] : CompressorsByFormat()) {
    if (is_one_bit || name == "identity") continue;
    for (const std::string key : {"compressor", "server_compressor"}) {
      OptionTable table = TableOf({"", "birder", {{key, Str(name)}}});
      const std::string error = testing::UserErrorOf([&] {
        batched::MakeBatchedOptimizer<float>(table, {2, 64, Backend::kHost});
      });
      EXPECT_NE(error.find(fmt::format("compressor '{}' has no batched (GPU) form yet", name)),
                std::string::npos)
          << key << ": " << error;
      EXPECT_NE(error.find(fmt::format("those that have: {}", fmt::join(batched, ", "))),
                std::string::npos)
          << error;
    }
  }
}

TEST(BatchedOptimizers, RefuseWhatHasNoBatchedFormByName) {
  const auto expect_refused = [](const OptionPairs& options, std::string_view reason) {
    OptionTable table = TableOf({"", "onebit-adam", options});
    const std::string error = testing::UserErrorOf([&] {
      batched::MakeBatchedOptimizer<float>(table, {2, 64, Backend::kHost});
    });
    EXPECT_NE(error.find(reason), std::string::npos) << error;
  };
  expect_refused({{"worker_feedback", Str("scaled")}},
                 "worker_feedback = \"scaled\" has no batched (GPU) form yet");
  expect_refused({{"weight_decay", Real(0.1)}}, "weight_decay has no batched (GPU) form yet");
  // Options are read as the CPU optimizer reads them: a typo or a value out of range gets the
  // same answer.
  expect_refused({{"warmup_compressor", Str("fp16")}},
                 "warmup_compressor 'fp16' has no batched (GPU) form yet");
  expect_refused({{"betta1", Real(0.5)}}, "did you mean 'beta1'");
  expect_refused({{"beta1", Real(1.0)}}, "beta1");
}

}  // namespace
}  // namespace lemmalab
