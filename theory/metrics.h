// The metrics a run records (engine/run_loop.cc), by name: the one place their names are
// spelled. The engine writes them, the assertions read them (theory/), `lemmalab list metrics`
// lists them, and the Python loader (python/lemmalab/results.py) is tested against that list.
//
// Step metrics are measured at every step and recorded every metrics_every steps (and at every
// evaluated step): lr is the step's, minibatch_loss the mean over the window's steps of the
// workers' mean, max_grad_norm the largest in the window, and the counters (bits, bytes,
// seconds) the window's sums, so that their running sum is the cumulative total. Evaluation
// metrics are full-batch, at step 0, every eval_every steps and at the last. Besides these, a
// problem whose constants hold only in a region records where x_t lies (Problem::Positions).
#pragma once

#include <string_view>

namespace lemmalab {
namespace metric {

// Step metrics.
inline constexpr std::string_view kLr = "lr";
inline constexpr std::string_view kMinibatchLoss = "minibatch_loss";
inline constexpr std::string_view kMaxGradNorm = "max_grad_norm";
inline constexpr std::string_view kBitsSent = "bits_sent";
inline constexpr std::string_view kBitsReceived = "bits_received";
inline constexpr std::string_view kBytesIntra = "bytes_intra";
inline constexpr std::string_view kBytesInter = "bytes_inter";
inline constexpr std::string_view kCommSeconds = "comm_seconds";

// Evaluation metrics.
inline constexpr std::string_view kTrainLoss = "train_loss";
inline constexpr std::string_view kGradSqNorm = "grad_sq_norm";
inline constexpr std::string_view kTrainAccuracy = "train_accuracy";
inline constexpr std::string_view kTestLoss = "test_loss";
inline constexpr std::string_view kTestAccuracy = "test_accuracy";
inline constexpr std::string_view kShardSpread = "shard_spread";
inline constexpr std::string_view kOptimalityGap = "optimality_gap";

}  // namespace metric

struct MetricInfo {
  std::string_view name;
  bool evaluated;  // a full-batch evaluation's (eval_every), else a step metric (metrics_every)
  std::string_view meaning;
};

inline constexpr MetricInfo kMetrics[] = {
    {metric::kLr, false, "the step's learning rate alpha_t"},
    {metric::kMinibatchLoss, false, "the workers' mean minibatch loss, averaged over the window"},
    {metric::kMaxGradNorm, false,
     "the largest ||g|| of the workers' stochastic gradients in the window"},
    {metric::kBitsSent, false, "bits each worker sent, on average over the workers"},
    {metric::kBitsReceived, false, "bits each worker received, on average over the workers"},
    {metric::kBytesIntra, false, "bytes all endpoints sent over intra-node links"},
    {metric::kBytesInter, false, "bytes all endpoints sent over inter-node links"},
    {metric::kCommSeconds, false, "communication time the [network] model projects"},
    {metric::kTrainLoss, true, "f(x_t) over the whole training set"},
    {metric::kGradSqNorm, true, "||grad f(x_t)||^2 over the whole training set"},
    {metric::kTrainAccuracy, true, "fraction of training samples classified correctly"},
    {metric::kTestLoss, true, "mean loss over the test set (no regulariser)"},
    {metric::kTestAccuracy, true, "fraction of test samples classified correctly"},
    {metric::kShardSpread, true,
     "(1/n) sum_i ||grad f_i(x_t) - grad f(x_t)||^2: how far the workers' objectives spread"},
    {metric::kOptimalityGap, true, "f(x_t) - f_star, where f_star is known or estimated"},
};

// How many metrics a recorded step or evaluation holds at most (the results estimate).
constexpr int CountMetrics(bool evaluated) {
  int count = 0;
  for (const MetricInfo& m : kMetrics) count += m.evaluated == evaluated ? 1 : 0;
  return count;
}
inline constexpr int kStepMetrics = CountMetrics(false);
inline constexpr int kEvaluationMetrics = CountMetrics(true);

}  // namespace lemmalab
