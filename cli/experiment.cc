#include "cli/experiment.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <type_traits>

#include "cli/progress.h"
#include "comm/simulated_cluster.h"
#include "core/error.h"
#include "core/text.h"
#include "optimizers/optimizer.h"
#include "optimizers/schedule.h"
#include "problems/problem.h"
#include "problems/reference.h"
#include "theory/probe.h"

namespace lemmalab {
namespace {

constexpr std::string_view kVersion = "0.1.0";

template <typename T>
struct PreparedRun {
  const OptimizerSpec* spec = nullptr;
  std::string optimizer;
  std::unique_ptr<Schedule> schedule;
  std::unique_ptr<DistributedOptimizer<T>> algorithm;
  std::vector<std::unique_ptr<Probe<T>>> probes;
};

class RunProbeSink final : public ProbeSink {
 public:
  RunProbeSink(ResultsWriter& writer, std::int64_t run_id) : writer_(writer), run_id_(run_id) {}
  void At(std::int64_t step, std::string_view probe) {
    step_ = step;
    probe_ = probe;
  }
  void Record(std::string_view series, int worker, double value) override {
    writer_.AddProbe(run_id_, step_, probe_, series, worker, value);
  }

 private:
  ResultsWriter& writer_;
  std::int64_t run_id_;
  std::int64_t step_ = 0;
  std::string_view probe_;
};

// Why the run cannot go on after this step, or "" when everything is finite.
template <typename T>
std::string FailureAfterStep(const DistributedOptimizer<T>& algorithm, int workers,
                             double minibatch_loss, const Vector<T>& x) {
  for (int w = kServer; w < workers; ++w) {
    const EncodeStats* stats = algorithm.LastEncode(w);
    if (stats != nullptr && stats->non_finite > 0) {
      return fmt::format(
          "{} of {} inputs to {} compressor are NaN or infinite", stats->non_finite,
          stats->elements,
          w == kServer ? std::string("the server's") : fmt::format("worker {}'s", w));
    }
  }
  if (!std::isfinite(minibatch_loss)) return "the minibatch loss is not finite";
  if (!x.allFinite()) return "the parameters are not finite";
  return "";
}

template <typename T>
RunReport Execute(const RunSpec& spec, PreparedRun<T>& run, const Problem<T>& problem,
                  std::optional<double> f_star, int threads, ResultsWriter& writer,
                  Progress& progress, const std::atomic<bool>* stop) {
  RunReport report;
  RunRecord& record = report.record;
  record.label = run.spec->label;
  record.optimizer = run.optimizer;
  record.schedule = run.schedule->Describe();
  record.status = "running";
  const std::int64_t run_id = writer.AddRun(record);
  report.dimension = problem.dimension();

  Vector<T> x = problem.InitialPoint();
  SimulatedCluster<T> cluster(problem, *run.algorithm, threads);
  RunProbeSink sink(writer, run_id);
  const auto evaluate = [&](std::int64_t step) {
    const Evaluation e = problem.Evaluate(x);
    writer.AddMetric(run_id, step, "train_loss", std::nullopt, e.loss);
    writer.AddMetric(run_id, step, "grad_sq_norm", std::nullopt, e.grad_sq_norm);
    if (e.accuracy) writer.AddMetric(run_id, step, "train_accuracy", std::nullopt, *e.accuracy);
    if (e.test_loss) writer.AddMetric(run_id, step, "test_loss", std::nullopt, *e.test_loss);
    if (e.test_accuracy) {
      writer.AddMetric(run_id, step, "test_accuracy", std::nullopt, *e.test_accuracy);
    }
    if (f_star) writer.AddMetric(run_id, step, "optimality_gap", std::nullopt, e.loss - *f_star);
    return e;
  };

  const auto start = std::chrono::steady_clock::now();
  progress.Start(record.label, spec.steps);
  Evaluation last = evaluate(0);
  std::int64_t evaluated_at = 0, bytes_sent = 0;
  std::string failure;
  std::int64_t t = 1;
  const auto n = static_cast<double>(spec.workers);
  for (; t <= spec.steps; ++t) {
    if (stop != nullptr && stop->load()) throw Interrupted();
    const StepContext ctx{t, run.schedule->Rate(t), spec.seed};
    const StepResult& result = cluster.Step(ctx, x);

    double loss = 0, largest_gradient = 0;
    std::int64_t sent = 0, received = 0;
    for (std::size_t w = 0; w < result.minibatch_loss.size(); ++w) {
      loss += result.minibatch_loss[w];
      largest_gradient = std::max(largest_gradient, result.gradient_norm[w]);
      sent += result.traffic.sent[w];
      received += result.traffic.received[w];
    }
    bytes_sent += sent;
    writer.AddMetric(run_id, t, "lr", std::nullopt, ctx.lr);
    writer.AddMetric(run_id, t, "minibatch_loss", std::nullopt, loss / n);
    writer.AddMetric(run_id, t, "max_grad_norm", std::nullopt, largest_gradient);
    report.observed_g = std::max(report.observed_g, largest_gradient);
    writer.AddMetric(run_id, t, "bits_sent", std::nullopt, 8.0 * static_cast<double>(sent) / n);
    writer.AddMetric(run_id, t, "bits_received", std::nullopt,
                     8.0 * static_cast<double>(received) / n);
    for (auto& probe : run.probes) {
      sink.At(t, probe->name());
      probe->Observe(t, *run.algorithm, sink);
    }
    failure = FailureAfterStep(*run.algorithm, spec.workers, loss, x);
    if (!failure.empty() || t % spec.eval_every == 0 || t == spec.steps) {
      last = evaluate(t);
      evaluated_at = t;
      if (failure.empty() && !std::isfinite(last.loss)) failure = "the training loss is not finite";
    }
    if (!failure.empty()) break;
    progress.Update(t);
  }
  progress.Finish();

  record.steps_done = std::min(t, spec.steps);
  record.status = failure.empty() ? std::string("completed")
                                  : fmt::format("diverged at step {}: {}", t, failure);
  record.final_loss = last.loss;
  record.final_accuracy = last.accuracy;
  record.final_test_loss = last.test_loss;
  record.final_test_accuracy = last.test_accuracy;
  record.final_grad_sq_norm = last.grad_sq_norm;
  record.bits_sent_per_worker = 8.0 * static_cast<double>(bytes_sent) / n;
  record.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  LEMMALAB_CHECK(evaluated_at == record.steps_done, "final evaluation at step {}, run ended at {}",
                 evaluated_at, record.steps_done);
  writer.UpdateRun(run_id, record);
  writer.AddConstant(run_id, {"G", report.observed_g, Certainty::kEstimate,
                              fmt::format("largest stochastic gradient norm seen in {} steps x {} "
                                          "workers of this run",
                                          record.steps_done, spec.workers)});
  for (const auto& probe : run.probes) {
    for (const std::string& line : probe->Summary()) {
      report.probe_lines.push_back(fmt::format("{}: {}", probe->name(), line));
    }
  }
  report.final_params = x.template cast<double>();
  report.threads = cluster.largest_team();
  return report;
}

template <typename T>
ExperimentReport RunTyped(const RunSpec& spec, const ExperimentOptions& options) {
  // Build and validate everything before the first step.
  std::optional<Dataset> data;
  if (spec.data) data = LoadData(*spec.data, {spec.seed, spec.path.parent_path()});
  const std::unique_ptr<Problem<T>> problem =
      MakeProblem<T>(*spec.problem, {spec.workers, spec.seed, data ? &*data : nullptr});
  problem->set_threads(options.threads);
  std::vector<Constant> constants = problem->Constants();
  if (spec.reference) {
    if constexpr (std::is_same_v<T, double>) {
      constants = ReferenceConstants(*problem, spec.seed, spec.reference_iterations);
    } else {
      const std::unique_ptr<Problem<double>> exact =
          MakeProblem<double>(*spec.problem, {spec.workers, spec.seed, data ? &*data : nullptr});
      constants = ReferenceConstants(*exact, spec.seed, spec.reference_iterations);
    }
  }
  std::optional<double> f_star;
  if (const Constant* c = FindConstant(constants, "f_star")) f_star = c->value;
  const OptimizerContext optimizer_context{problem->dimension(), spec.workers, problem->Layers()};
  const ProbeContext probe_context{problem->dimension(), spec.workers};

  std::vector<PreparedRun<T>> runs;
  std::vector<bool> probe_applied(spec.probes.size(), false);
  for (const OptimizerSpec& o : spec.optimizers) {
    PreparedRun<T> run;
    run.spec = &o;
    run.optimizer = o.options->GetString("name", "");
    run.schedule = MakeSchedule(*o.schedule, {spec.steps});
    run.algorithm = MakeOptimizer<T>(*o.options, optimizer_context);
    for (std::size_t k = 0; k < spec.probes.size(); ++k) {
      auto probe = FactoryFor<T>(*Probes().Find(spec.probes[k]))(probe_context);
      if (probe->AppliesTo(*run.algorithm)) {
        run.probes.push_back(std::move(probe));
        probe_applied[k] = true;
      }
    }
    runs.push_back(std::move(run));
  }
  for (std::size_t k = 0; k < spec.probes.size(); ++k) {
    if (probe_applied[k]) continue;
    std::vector<std::string> labels;
    for (const OptimizerSpec& o : spec.optimizers) labels.push_back(o.label);
    throw UserError(
        fmt::format("{}: probe '{}' applies to none of the optimizers ({}); it "
                    "measures {}",
                    spec.path.string(), spec.probes[k], JoinNames(labels),
                    Probes().Find(spec.probes[k])->summary));
  }

  ResultsWriter writer(options.out_dir);
  writer.SetMeta("lemmalab_version", kVersion);
  writer.SetMeta("spec_path", spec.path.string());
  writer.SetMeta("spec_text", spec.text);
  writer.SetMeta("description", spec.description);
  writer.SetMeta("seed", fmt::format("{}", spec.seed));
  writer.SetMeta("steps", fmt::format("{}", spec.steps));
  writer.SetMeta("workers", fmt::format("{}", spec.workers));
  writer.SetMeta("precision", PrecisionName(spec.precision));
  writer.SetMeta("problem", problem->Describe());
  for (const Constant& c : constants) writer.AddConstant(std::nullopt, c);
  writer.AddShards(problem->Shards());

  ExperimentReport report;
  report.problem = problem->Describe();
  report.constants = constants;
  report.shards = problem->Shards();
  report.workers = spec.workers;
  report.precision = spec.precision;
  Progress progress(options.progress);
  std::vector<Eigen::VectorXd> params;
  for (PreparedRun<T>& run : runs) {
    report.runs.push_back(
        Execute(spec, run, *problem, f_star, options.threads, writer, progress, options.stop));
    params.push_back(report.runs.back().final_params);
  }
  writer.Commit(params, spec.precision);
  return report;
}

}  // namespace

ExperimentReport RunExperiment(const RunSpec& spec, const ExperimentOptions& options) {
  return DispatchPrecision(spec.precision,
                           [&]<typename T>() { return RunTyped<T>(spec, options); });
}

}  // namespace lemmalab
