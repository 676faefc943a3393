// The in-process cluster: which streams the workers get, what the server sees, what crosses the
// network.
#include "comm/cluster.h"

#include <gtest/gtest.h>

#include "optimizers/sgd.h"

namespace lemmalab {
namespace {

// A problem whose gradient reveals the worker and the first word of the stream it was given.
class StreamEcho final : public Problem<double> {
 public:
  std::int64_t dimension() const override { return 2; }
  int num_workers() const override { return 3; }
  Vector<double> InitialPoint() const override { return Vector<double>::Zero(2); }
  double StochasticGradient(int worker, ConstVectorRef<double> /*x*/, PhiloxStream& stream,
                            VectorRef<double> g) const override {
    const double word = stream();
    g << worker, word;
    return word;
  }
  double Objective(ConstVectorRef<double> /*x*/, Vector<double>* /*g*/) const override { return 0; }
  Evaluation Evaluate(ConstVectorRef<double> /*x*/) const override { return {}; }
  std::string Describe() const override { return "stream echo"; }
};

TEST(Cluster, WorkerMinibatchStreamsAreKeyedBySeedWorkerAndStep) {
  const StreamEcho problem;
  OptionTable no_options("sgd", "");
  auto sgd = SgdFromOptions<double>(no_options, {2, 3});
  for (const int threads : {1, 3}) {
    Cluster<double> cluster(problem, *sgd, {}, threads);
    Eigen::VectorXd x = Eigen::VectorXd::Zero(2);
    for (std::int64_t t = 1; t <= 3; ++t) {
      const Eigen::VectorXd before = x;
      const StepResult& result = cluster.Step({t, 0.5, 77}, x);
      Eigen::VectorXd mean = Eigen::VectorXd::Zero(2);
      for (int w = 0; w < 3; ++w) {
        const double first = PhiloxStream({77, Purpose::kMinibatch, static_cast<std::uint32_t>(w),
                                           static_cast<std::uint64_t>(t)})();
        EXPECT_EQ(result.minibatch_loss[static_cast<std::size_t>(w)], first);
        mean += Eigen::Vector2d(w, first);
        // SGD sends two fp64 values each way.
        EXPECT_EQ(result.traffic.sent(w), 16);
        EXPECT_EQ(result.traffic.received(w), 16);
      }
      mean /= 3;
      EXPECT_EQ(x, (before - 0.5 * mean).eval()) << "t = " << t;
    }
    EXPECT_EQ(cluster.largest_team(), threads);
  }
}

TEST(Cluster, ChoosesOneThreadForTinySteps) {
  const StreamEcho problem;
  OptionTable no_options("sgd", "");
  auto sgd = SgdFromOptions<double>(no_options, {2, 3});
  EXPECT_EQ(Cluster<double>(problem, *sgd).threads(), 1);
  EXPECT_EQ(Cluster<double>(problem, *sgd, {}, 2).threads(), 2);
}

}  // namespace
}  // namespace lemmalab
