// The problem registry: adding a problem is one file and one line in the table below.
#include <fmt/format.h>

#include "problems/logistic_regression.h"
#include "problems/problem.h"

namespace lemmalab {
namespace {

template <typename T>
std::unique_ptr<Problem<T>> LogisticRegressionFromOptions(OptionTable& options,
                                                          const ProblemContext& context) {
  LogisticRegressionOptions o;
  o.l2 = options.GetDouble("l2", o.l2, Interval::NonNegative());
  o.intercept = options.GetBool("intercept", o.intercept);
  o.batch_size = options.GetInt("batch_size", o.batch_size, 0, 1 << 24);
  const Dataset& data = *context.data;
  if (data.train.size() < context.workers) {
    options.Fail("name", fmt::format("{} samples cannot be split across {} workers",
                                     data.train.size(), context.workers));
  }
  return MakeLogisticRegression<T>(data, o,
                                   IidShards(data.train.size(), context.workers, context.seed));
}

}  // namespace

const Registry<ProblemInfo>& Problems() {
  static const Registry<ProblemInfo> registry(
      "problem",
      {
          {"logreg", "binary logistic regression with optional L2, exact gradients, iid shards",
           true, &LogisticRegressionFromOptions<float>, &LogisticRegressionFromOptions<double>},
      });
  return registry;
}

template <typename T>
std::unique_ptr<Problem<T>> MakeProblem(OptionTable& options, const ProblemContext& context) {
  const ProblemInfo& info = Problems().Get(options);
  options.set_context(fmt::format("problem '{}'", info.name));
  if (info.needs_data && context.data == nullptr) {
    options.Fail("name",
                 fmt::format("problem '{}' learns from data: add a [data] table", info.name));
  }
  std::unique_ptr<Problem<T>> problem = FactoryFor<T>(info)(options, context);
  options.RejectUnknownKeys();
  return problem;
}

template std::unique_ptr<Problem<float>> MakeProblem(OptionTable&, const ProblemContext&);
template std::unique_ptr<Problem<double>> MakeProblem(OptionTable&, const ProblemContext&);

}  // namespace lemmalab
