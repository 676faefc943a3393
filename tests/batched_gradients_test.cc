// Every worker's stochastic gradient computed at once (batched/gradients.h) against the CPU
// problem's StochasticGradient, worker by worker, from the same minibatch streams: for each
// supervised model (binary logistic regression with and without the intercept and with both
// regularisers, multinomial logistic regression, the MLP with relu and with tanh, full-shard and
// minibatch, dense and byte data), the gradients, minibatch losses and gradient norms agree to
// the tolerance docs/gpu.md states: in fp64 to 1e-12 relative, in fp32 to 1e-4 (the products sum
// in another order than the CPU BLAS's, and exp, log and tanh may be the device's). A run with
// gradients on the device follows the CPU run's trajectory within the same tolerance.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "batched/gradients.h"
#include "core/rng.h"
#include "engine/experiment.h"
#include "engine/results_reader.h"
#include "engine/spec.h"
#include "problems/sharding.h"
#include "problems/supervised.h"
#include "tests/cuda_test_util.h"
#include "tests/optimizer_test_util.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using batched::Backend;
using testing::TempDir;

// `samples` samples of `features` Gaussian features with `classes` classes (labels from a fixed
// rule of the features, every class present); with `bytes`, the features are bytes (as IDX
// images hold them) standing for b / 255.
Dataset ClassData(std::int64_t samples, std::int64_t features, int classes, bool bytes) {
  Dataset data = MakeSyntheticLogistic(samples, features, 2.0, 17);
  if (classes > 2) {
    for (Eigen::Index i = 0; i < samples; ++i) {
      const double s = data.train.features.row(i).sum();
      data.train.labels[i] = static_cast<int>(i % classes + (s > 0 ? 1 : 0)) % classes;
    }
    data.classes = classes;
  }
  if (bytes) {
    auto matrix = std::make_shared<ByteMatrix>(samples, features);
    std::vector<std::uint32_t> words(static_cast<std::size_t>(samples * features));
    PhiloxStream({5, Purpose::kDataSynthesis, 0, 0}).Fill(words);
    for (std::size_t k = 0; k < words.size(); ++k) matrix->data()[k] = words[k] & 0xffu;
    data.train.bytes = matrix;
    data.train.features.resize(0, 0);
    for (int b = 0; b < 256; ++b) data.train.byte_values[static_cast<std::size_t>(b)] = b / 255.0;
  }
  return data;
}

struct Case {
  std::string label;
  int classes;
  std::vector<std::int64_t> hidden;  // the MLP's; empty with 2 classes: logistic regression
  Activation activation = Activation::kRelu;
  bool intercept = true;
  std::int64_t batch = 8;  // 0: the whole shard
  double l2 = 0, nonconvex = 0;
  bool bytes = false;
};

std::vector<Case> Cases() {
  return {
      {"logreg", 2, {}, Activation::kRelu, true, 8},
      {"logreg_without_intercept_full_shard_l2", 2, {}, Activation::kRelu, false, 0, 0.1},
      {"nonconvex_logreg_bytes", 2, {}, Activation::kRelu, true, 8, 0, 0.3, true},
      {"multinomial_logreg", 4, {}, Activation::kRelu, true, 8},
      {"mlp_relu", 3, {7, 5}, Activation::kRelu, true, 8, 0.01},
      {"mlp_tanh_full_shard_bytes", 3, {6}, Activation::kTanh, true, 0, 0, 0.1, true},
  };
}

template <typename T>
std::unique_ptr<Problem<T>> ProblemOf(const Case& c, const Dataset& data, int workers) {
  std::unique_ptr<Model<T>> model =
      c.classes == 2 && c.hidden.empty()
          ? MakeLogisticModel<T>(data.train.num_features(), c.intercept)
          : MakeMlpModel<T>(data.train.num_features(), c.hidden, c.classes, c.activation);
  SupervisedOptions options;
  options.batch_size = c.batch;
  options.l2 = c.l2;
  options.nonconvex = c.nonconvex;
  options.seed = 3;
  // Uneven shards: full-shard gradients have padding rows.
  Shards shards(static_cast<std::size_t>(workers));
  for (std::int64_t k = 0; k < data.train.size(); ++k) {
    shards[static_cast<std::size_t>(k % (workers + 1) % workers)].push_back(k);
  }
  return MakeSupervisedProblem<T>(std::move(model), data, shards, options);
}

// The largest |a - b| over max |b| (1 when b is all zero).
template <typename T>
double RelativeError(const Vector<T>& a, const Vector<T>& b) {
  const double scale = std::max(1e-300, static_cast<double>(b.cwiseAbs().maxCoeff()));
  return static_cast<double>((a - b).cwiseAbs().maxCoeff()) / scale;
}

template <typename T>
void ExpectAgreement(const Case& c, Backend backend, double tolerance) {
  constexpr int kWorkers = 3;
  const Dataset data = ClassData(61, 5, c.classes, c.bytes);
  const auto problem = ProblemOf<T>(c, data, kWorkers);
  const std::int64_t d = problem->dimension();
  batched::BatchedGradients<T> batched(batched::DeviceSamples<T>::Of(*problem, backend), d);
  // Every worker at its own point (as 0/1 Adam's replicas), near the initial one.
  Vector<T> rows(kWorkers * d);
  const Vector<T> x0 = problem->InitialPoint();
  for (int w = 0; w < kWorkers; ++w) {
    for (std::int64_t j = 0; j < d; ++j) {
      rows[w * d + j] = x0[j] + static_cast<T>(0.1 * std::sin(1.0 + j + 7.0 * w));
    }
  }
  batched::Buffer<T> x(backend, static_cast<std::size_t>(rows.size()));
  x.Upload(std::span<const T>(rows.data(), static_cast<std::size_t>(rows.size())));
  batched::Buffer<T> g(backend, static_cast<std::size_t>(kWorkers * d));
  for (std::int64_t t = 1; t <= 3; ++t) {
    const StepContext ctx{t, 0.1, 42};
    std::vector<double> losses(kWorkers), norms(kWorkers);
    batched.Compute(ctx, {x.data(), d}, g, losses, norms);
    const std::vector<T> got = g.ToHost();
    for (int w = 0; w < kWorkers; ++w) {
      SCOPED_TRACE(fmt::format("step {}, worker {}", t, w));
      Vector<T> expected(d);
      PhiloxStream stream = ctx.Stream(Purpose::kMinibatch, static_cast<std::uint32_t>(w));
      const double loss = problem->StochasticGradient(w, rows.segment(w * d, d), stream, expected);
      const Vector<T> mine = Eigen::Map<const Vector<T>>(got.data() + w * d, d);
      EXPECT_LE(RelativeError(mine, expected), tolerance);
      EXPECT_NEAR(losses[static_cast<std::size_t>(w)], loss, tolerance * std::abs(loss));
      const double norm = static_cast<double>(expected.norm());
      EXPECT_NEAR(norms[static_cast<std::size_t>(w)], norm, tolerance * norm);
    }
  }
}

class BatchedGradientsAgainstCpu
    : public ::testing::TestWithParam<std::tuple<std::string, Backend>> {};

TEST_P(BatchedGradientsAgainstCpu, AgreeToRounding) {
  const auto& [label, backend] = GetParam();
  if (backend == Backend::kCuda) LEMMALAB_REQUIRE_GPU();
  const std::vector<Case> cases = Cases();
  const Case& c =
      *std::find_if(cases.begin(), cases.end(), [&](const Case& k) { return k.label == label; });
  {
    SCOPED_TRACE("fp64");
    ExpectAgreement<double>(c, backend, 1e-12);
  }
  {
    SCOPED_TRACE("fp32");
    ExpectAgreement<float>(c, backend, 1e-4);
  }
}

std::vector<std::string> CaseLabels() {
  std::vector<std::string> labels;
  for (const Case& c : Cases()) labels.push_back(c.label);
  return labels;
}

INSTANTIATE_TEST_SUITE_P(EveryModel, BatchedGradientsAgainstCpu,
                         ::testing::Combine(::testing::ValuesIn(CaseLabels()),
                                            ::testing::Values(Backend::kHost, Backend::kCuda)),
                         [](const auto& test) {
                           return std::get<0>(test.param) + "_" +
                                  std::string(batched::BackendName(std::get<1>(test.param)));
                         });

// Only supervised problems have a batched gradient; a GPU run of another computes its gradients
// on the CPU.
TEST(BatchedGradients, ExistForSupervisedProblemsOnly) {
  OptionTable options("[problem]", "");
  options.Set("name", testing::Str("quadratic"));
  const auto quadratic = MakeProblem<float>(options, {2, 1});
  EXPECT_EQ(batched::DeviceSamples<float>::Of(*quadratic, Backend::kHost), nullptr);
  const Dataset data = ClassData(20, 3, 2, false);
  EXPECT_NE(
      batched::DeviceSamples<float>::Of(*ProblemOf<float>(Cases()[0], data, 2), Backend::kHost),
      nullptr);
}

// BatchedProduct against Eigen's product, item by item: either side stored transposed or not,
// the right side one matrix for every item (stride 0, as all workers' shared weights) or one per
// item, and each product written at a stride larger than itself (as a layer's weight gradient
// inside a worker's gradient row) with the gaps left as they were.
class BatchedProductOn : public ::testing::TestWithParam<Backend> {};

TEST_P(BatchedProductOn, IsEveryItemsProduct) {
  const Backend backend = GetParam();
  if (backend == Backend::kCuda) LEMMALAB_REQUIRE_GPU();
  using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  constexpr std::int64_t kItems = 3, m = 4, n = 5, k = 6, kGap = 7, kCStride = m * n + kGap;
  constexpr double kUntouched = 99;
  const auto values = [](std::int64_t count, double phase) {
    std::vector<double> v(static_cast<std::size_t>(count));
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = std::sin(phase + 0.7 * static_cast<double>(i));
    return v;
  };
  for (const bool a_transposed : {false, true}) {
    for (const bool b_transposed : {false, true}) {
      for (const bool b_shared : {false, true}) {
        SCOPED_TRACE(fmt::format("A{} B{}{}", a_transposed ? "^T" : "", b_transposed ? "^T" : "",
                                 b_shared ? " shared" : ""));
        const std::vector<double> a_host = values(kItems * m * k, 1),
                                  b_host = values((b_shared ? 1 : kItems) * k * n, 2);
        batched::Buffer<double> a(backend, a_host.size()), b(backend, b_host.size()),
            c(backend, static_cast<std::size_t>(kItems * kCStride));
        a.Upload(a_host);
        b.Upload(b_host);
        c.Upload(std::vector<double>(c.size(), kUntouched));
        batched::BatchedProduct<double>(backend, kItems, m, n, k, {a.data(), m * k, a_transposed},
                                        {b.data(), b_shared ? 0 : k * n, b_transposed}, c.data(),
                                        kCStride);
        const std::vector<double> got = c.ToHost();
        for (std::int64_t item = 0; item < kItems; ++item) {
          const Eigen::Map<const Matrix> a_stored(a_host.data() + item * m * k,
                                                  a_transposed ? k : m, a_transposed ? m : k);
          const Eigen::Map<const Matrix> b_stored(b_host.data() + (b_shared ? 0 : item * k * n),
                                                  b_transposed ? n : k, b_transposed ? k : n);
          const Matrix expected = (a_transposed ? Matrix(a_stored.transpose()) : Matrix(a_stored)) *
                                  (b_transposed ? Matrix(b_stored.transpose()) : Matrix(b_stored));
          const Eigen::Map<const Matrix> product(got.data() + item * kCStride, m, n);
          EXPECT_LE((product - expected).cwiseAbs().maxCoeff(), 1e-14) << "item " << item;
          for (std::int64_t j = m * n; j < kCStride; ++j) {
            EXPECT_EQ(got[static_cast<std::size_t>(item * kCStride + j)], kUntouched);
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryBackend, BatchedProductOn,
                         ::testing::Values(Backend::kHost, Backend::kCuda), [](const auto& test) {
                           return std::string(batched::BackendName(test.param));
                         });

// cuBLAS is opened at run time (cuda/blas.h): where its library is found, every entry point a
// run uses is found in it, and without a device the reason names cuBLAS's own refusal.
TEST(BatchedProduct, FindsEveryCuBlasEntryPointWhereTheLibraryIs) {
  const std::string why = batched::ProductsUnavailable(Backend::kCuda);
  EXPECT_EQ(batched::ProductsUnavailable(Backend::kHost), "");
  if (!batched::HaveCudaBackend()) {
    EXPECT_THAT(why, ::testing::HasSubstr("no CUDA backend"));
    return;
  }
  if (why.find("could not be loaded") != std::string::npos) {
    // Nothing to open here; on a machine meant to have a GPU that is a failure.
    if (testing::GpuRequired()) FAIL() << why;
    GTEST_SKIP() << why;
  }
  EXPECT_EQ(why.find("has no"), std::string::npos) << why;
  if (testing::MissingDevice().empty()) {
    EXPECT_EQ(why, "");
  } else {
    EXPECT_NE(why.find("cublasCreate failed"), std::string::npos) << why;
  }
}

// Every probe value of a results folder, in order.
std::vector<double> ProbeValues(const std::filesystem::path& out) {
  std::vector<double> values;
  ResultsReader(out / "results.sqlite")
      .ForEachRow("SELECT value FROM probes ORDER BY run_id, step, probe, series, worker",
                  [&](sqlite3_stmt* row) { values.push_back(sqlite3_column_double(row, 0)); });
  return values;
}

// A spec run with device = "cuda" (its gradients on the device) against the same spec on the
// CPU: every step's minibatch loss within 1e-4 relative over 30 steps of an MLP with Adam, 0/1
// Adam (whose local steps take each worker's gradient at its own x^(i)), Birder and EF21 with
// top-k, and its probes' values (shift-error reads the gradients) within 1e-3; and the
// device run stopped and resumed from a checkpoint ends as the uninterrupted one, bit for bit.
TEST(BatchedGradients, RunFollowsTheCpuTrajectory) {
  constexpr const char* kSpec = R"toml(
seed = 5
steps = 30
workers = 4
eval_every = 10
probes = ["shift-error"]
{device}

[data]
source = "synthetic-logistic"
samples = 400
features = 12

[problem]
name = "mlp"
hidden = [16]
batch_size = 16

[schedule]
lr = 0.01

[[optimizer]]
name = "adam"

[[optimizer]]
name = "zero-one-adam"
var_freeze_step = 12
local_step_scaler = 1
local_step_clipper = 4

[[optimizer]]
name = "birder"

[[optimizer]]
name = "ef21"
compressor = { name = "top-k", fraction = 0.3 }
)toml";
  const auto spec_text = [&](const std::string& device) {
    std::string text = kSpec;
    text.replace(text.find("{device}"), 8, device);
    return text;
  };
  TempDir dir;
  const auto run = [&](const std::string& device, const std::string& out) {
    ExperimentOptions options;
    options.out_dir = dir / out;
    options.progress = false;
    options.checkpoints = true;
    options.device_backend = Backend::kHost;
    std::vector<double> losses;
    options.on_step = [&](std::int64_t /*t*/, double loss) { losses.push_back(loss); };
    const ExperimentReport report =
        RunExperiment(ParseSpec(spec_text(device), out + ".toml"), options);
    EXPECT_EQ(report.runs.at(0).record.status, "completed");
    return losses;
  };
  const std::vector<double> a = run("", "cpu");
  const std::vector<double> b = run("device = \"cuda\"", "gpu");
  ASSERT_EQ(a.size(), 4 * 30u);
  ASSERT_EQ(b.size(), a.size());
  bool identical = true;
  for (std::size_t k = 0; k < a.size(); ++k) {
    EXPECT_NEAR(b[k], a[k], 1e-4 * std::abs(a[k])) << "step " << k + 1;
    identical = identical && a[k] == b[k];
  }
  // The gradients came from the device (the CPU's would give the same bits).
  EXPECT_FALSE(identical);
  // EF21's ||g_i - grad||^2 and ||grad||^2 (shift-error), which read the workers' gradients: on
  // the GPU run copied from the device at the probed steps.
  const std::vector<double> cpu_probes = ProbeValues(dir / "cpu"),
                            gpu_probes = ProbeValues(dir / "gpu");
  ASSERT_EQ(gpu_probes.size(), cpu_probes.size());
  ASSERT_GE(cpu_probes.size(), 30u * 4 * 2);
  for (std::size_t k = 0; k < cpu_probes.size(); ++k) {
    EXPECT_NEAR(gpu_probes[k], cpu_probes[k], 1e-3 * std::abs(cpu_probes[k]) + 1e-9) << k;
  }

  // Stopped after step 17 of 0/1 Adam (checkpointed at 10, between its syncs), then resumed.
  const std::string device = spec_text("device = \"cuda\"\ncheckpoint_every = 10");
  ExperimentOptions options;
  options.out_dir = dir / "stopped";
  options.progress = false;
  options.checkpoints = true;
  options.device_backend = Backend::kHost;
  std::atomic<bool> stop{false};
  options.stop = &stop;
  int current = 0;
  std::int64_t previous = 0;
  options.on_step = [&](std::int64_t t, double) {
    if (t < previous) ++current;
    previous = t;
    if (current == 1 && t == 17) stop = true;
  };
  EXPECT_THROW(RunExperiment(ParseSpec(device, "stopped.toml"), options), Interrupted);
  options.stop = nullptr;
  options.on_step = {};
  options.resume = true;
  RunExperiment(ParseSpec(device, "stopped.toml"), options);
  options = {};
  options.out_dir = dir / "whole";
  options.progress = false;
  options.checkpoints = true;
  options.device_backend = Backend::kHost;
  RunExperiment(ParseSpec(device, "whole.toml"), options);
  EXPECT_EQ(testing::ReadFile(dir / "stopped/metrics.csv"),
            testing::ReadFile(dir / "whole/metrics.csv"));
  EXPECT_EQ(testing::ReadFile(dir / "stopped/params.npy"),
            testing::ReadFile(dir / "whole/params.npy"));
}

}  // namespace
}  // namespace lemmalab
