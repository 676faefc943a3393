// The MLP target on the real Fashion-MNIST: 784-256-10 with Adam reaches 85% test accuracy
// within 5 epochs with 8 simulated workers of batch 64. The data set comes from the Debian
// package dataset-fashion-mnist, which scripts/install-deps installs. This is the slowest test
// of the suite (about 10-20 s on 2 cores).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/experiment.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

TEST(FashionMnist, MlpWithAdamReaches85PercentTestAccuracyIn5Epochs) {
  const std::filesystem::path data = "/usr/share/datasets/fashion-mnist";
  ASSERT_TRUE(std::filesystem::is_directory(data))
      << data << " is missing: run scripts/install-deps (Debian package dataset-fashion-mnist)";
  // runs/fashion-mnist-mlp.toml without Birder and its probes, evaluated only at the start and
  // the end.
  std::string text = testing::ReadFile(testing::SourceDir() / "runs/fashion-mnist-mlp.toml");
  text = text.substr(0, text.find("[[optimizer]]\nname = \"birder\""));
  text.replace(text.find("eval_every = 117"), 16, "eval_every = 586");
  const std::size_t probes = text.find("probes = [");
  text.erase(probes, text.find('\n', probes) - probes);
  testing::TempDir dir;
  testing::WriteFile(dir / "spec.toml", text);
  const RunSpec spec = LoadSpec(dir / "spec.toml");
  ASSERT_EQ(spec.optimizers.size(), 1u);
  EXPECT_EQ(spec.steps * spec.workers * 64, 586 * 512);  // 5.0 epochs of 60000 samples
  ExperimentOptions options;
  options.out_dir = dir / "out";
  options.progress = false;
  const ExperimentReport report = RunExperiment(spec, options);
  const RunRecord& adam = report.runs.at(0).record;
  EXPECT_EQ(adam.status, "completed");
  ASSERT_TRUE(adam.final_test_accuracy.has_value());
  EXPECT_GE(*adam.final_test_accuracy, 0.85);
  EXPECT_GE(*adam.final_accuracy, 0.85);
  RecordProperty("test_accuracy", fmt::format("{:.4f}", *adam.final_test_accuracy));
  RecordProperty("wall_seconds", fmt::format("{:.2f}", adam.wall_seconds));
}

}  // namespace
}  // namespace lemmalab
