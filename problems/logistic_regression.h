// Binary logistic regression with optional L2 regularisation.
//
//   f_i(x) = (1/N_i) sum_{k in shard i} [ log(1 + exp(a_k.x)) - y_k a_k.x ] + (l2/2) ||x||^2,
//   grad f_i(x) = (1/N_i) A_i^T (sigmoid(A_i x) - y_i) + l2 x,
// with y in {0, 1} and, when `intercept` is on, a constant 1 appended to every a_k (the penalty
// covers the intercept too, so f is l2-strongly convex). Stochastic gradients average B samples
// drawn uniformly with replacement from the worker's shard (as in Birder's experiments, App. B.1);
// batch_size = 0 uses the whole shard.
#pragma once

#include "problems/problem.h"
#include "problems/sharding.h"

namespace lemmalab {

struct LogisticRegressionOptions {
  double l2 = 0.0;  // >= 0
  bool intercept = true;
  std::int64_t batch_size = 32;  // >= 0; 0 = full shard
};

template <typename T>
std::unique_ptr<Problem<T>> MakeLogisticRegression(const Dataset& data,
                                                   const LogisticRegressionOptions& options,
                                                   const Shards& shards);

}  // namespace lemmalab
