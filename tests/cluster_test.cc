// The in-process cluster: which streams the workers get, what the server sees, what crosses the
// network.
#include "comm/cluster.h"

#include <gtest/gtest.h>

#include <atomic>

#include "core/error.h"
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

// A problem whose worker `stop_at` asks the run to stop while computing its gradient (a SIGINT
// during the step), and which counts the gradients computed.
class StopsAtWorker final : public Problem<double> {
 public:
  StopsAtWorker(std::atomic<bool>& stop, int stop_at) : stop_(stop), stop_at_(stop_at) {}
  std::int64_t dimension() const override { return 2; }
  int num_workers() const override { return 4; }
  Vector<double> InitialPoint() const override { return Vector<double>::Ones(2); }
  double StochasticGradient(int worker, ConstVectorRef<double> /*x*/, PhiloxStream& /*stream*/,
                            VectorRef<double> g) const override {
    ++gradients;
    if (worker == stop_at_) stop_ = true;
    g.setOnes();
    return 0;
  }
  double Objective(ConstVectorRef<double> /*x*/, Vector<double>* /*g*/) const override { return 0; }
  Evaluation Evaluate(ConstVectorRef<double> /*x*/) const override { return {}; }
  std::string Describe() const override { return "stops at a worker"; }
  mutable std::atomic<int> gradients{0};

 private:
  std::atomic<bool>& stop_;
  int stop_at_;
};

// Issue 33: a stop waited for the whole step (58-78 s with 100 000 workers). The workers that
// have not started when the stop comes do not start, the step throws Interrupted and leaves x as
// it was; without ctx.stop (an MPI rank) the step runs whole.
TEST(Cluster, AStopAbandonsTheStepAtTheNextWorker) {
  OptionTable no_options("sgd", "");
  auto sgd = SgdFromOptions<double>(no_options, {2, 4});
  std::atomic<bool> stop{false};
  const StopsAtWorker problem(stop, 1);
  Cluster<double> cluster(problem, *sgd, {}, 1);
  Eigen::VectorXd x = Eigen::VectorXd::Ones(2);
  StepContext ctx{1, 0.5, 3};
  ctx.stop = &stop;
  EXPECT_THROW(cluster.Step(ctx, x), Interrupted);
  EXPECT_EQ(problem.gradients, 2);  // workers 0 and 1; 2 and 3 never started
  EXPECT_EQ(x, Eigen::VectorXd::Ones(2));

  stop = false;
  const StopsAtWorker whole_problem(stop, 1);
  auto whole_sgd = SgdFromOptions<double>(no_options, {2, 4});
  Cluster<double> whole(whole_problem, *whole_sgd, {}, 1);
  ctx.stop = nullptr;
  whole.Step(ctx, x);
  EXPECT_EQ(whole_problem.gradients, 4);
  EXPECT_EQ(x, Eigen::VectorXd::Constant(2, 0.5));
}

}  // namespace
}  // namespace lemmalab
