#include "engine/run_loop.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "batched/device_optimizer.h"
#include "comm/cluster.h"
#include "core/error.h"
#include "engine/estimates.h"
#include "problems/reference.h"
#include "theory/evidence.h"
#include "theory/metrics.h"

namespace lemmalab {
namespace {

class RunProbeSink final : public ProbeSink {
 public:
  explicit RunProbeSink(ResultsWriter& writer) : writer_(writer) {}
  void set_run_id(std::int64_t run_id) { run_id_ = run_id; }
  // `recorded`: whether this step's values are kept (probe_every). A series' first value is
  // kept whatever the step: some are recorded once (a declared q, the frozen variance).
  void At(std::int64_t step, std::string_view probe, bool recorded) {
    step_ = step;
    probe_ = probe;
    recorded_ = recorded;
  }
  void Record(std::string_view series, int worker, double value) override {
    // Every value counts into its series' extent, whatever is kept.
    name_.assign(probe_).append("/").append(series);
    extents_.Add(name_, worker, step_, value);
    // Looked up without copying the names; a new series' names are copied once.
    const bool first = !seen_.contains(std::tuple{probe_, series, worker});
    if (first) seen_.emplace(std::string(probe_), std::string(series), worker);
    if (!recorded_ && !first) return;
    writer_.AddProbe(run_id_, step_, probe_, series,
                     worker == kRunWide ? std::nullopt : std::optional<int>(worker), value);
  }

  // The extents of every series, into the results (when the run ends).
  void WriteExtents() {
    for (const auto& [key, extent] : extents_.entries()) {
      writer_.AddExtent(run_id_, "probe", key.first, key.second, extent);
    }
  }

  // The series seen so far (a resumed run keeps only what probe_every keeps of them) and the
  // extents of all their values.
  void Persist(StateArchive& archive) {
    std::vector<std::tuple<std::string, std::string, int>> seen(seen_.begin(), seen_.end());
    archive.List("seen", seen, [&](auto& series) {
      archive("probe", std::get<0>(series));
      archive("series", std::get<1>(series));
      archive("worker", std::get<2>(series));
    });
    seen_ = {seen.begin(), seen.end()};
    archive.Nested("extents", extents_);
  }

 private:
  ResultsWriter& writer_;
  std::int64_t run_id_ = 0;
  std::int64_t step_ = 0;
  std::string_view probe_;
  bool recorded_ = true;
  // (probe, series, worker): held as strings, looked up as string_views, compared as views.
  // std::less<> between the two tuple types compiles with GCC but not with Clang 14 against
  // libstdc++ 12, and Clang builds the ThreadSanitizer preset.
  struct SeriesLess {
    using is_transparent = void;
    using View = std::tuple<std::string_view, std::string_view, int>;
    static View Of(const auto& k) { return {std::get<0>(k), std::get<1>(k), std::get<2>(k)}; }
    bool operator()(const auto& a, const auto& b) const { return Of(a) < Of(b); }
  };
  std::set<std::tuple<std::string, std::string, int>, SeriesLess> seen_;
  ExtentBook extents_;
  std::string name_;  // "probe/series" of the value being recorded (reused)
};

// What steps measured: one step's own values, the window of steps between two records of the
// step metrics, or the whole run so far (what the run's record is made of).
struct StepCounters {
  std::int64_t steps = 0;
  double loss = 0;              // the sum over the steps of the workers' mean minibatch loss
  double largest_gradient = 0;  // the largest ||g|| of any worker's stochastic gradient
  double bits_sent = 0, bits_received = 0;  // per worker (8 x bytes / workers, step by step)
  // Bytes all workers sent, as an integer: the record's bits per worker is exact from it.
  std::int64_t bytes_sent = 0;
  double bytes_intra = 0, bytes_inter = 0;  // sent by all endpoints, over each kind of link
  double comm_seconds = 0;                  // projected by the network model
  double step_seconds = 0;                  // measured wall time of the steps

  // One step's counters, from what the cluster measured; `step_seconds` is its wall time.
  static StepCounters Of(const StepResult& result, const NetworkModel& network, int workers,
                         double step_seconds) {
    const auto n = static_cast<double>(workers);
    LinkBytes bytes = result.traffic.server.sent;
    for (const EndpointTraffic& w : result.traffic.workers) bytes += w.sent;
    StepCounters s;
    s.steps = 1;
    double loss = 0;
    std::int64_t received = 0;
    for (std::size_t w = 0; w < result.minibatch_loss.size(); ++w) {
      loss += result.minibatch_loss[w];
      s.largest_gradient = std::max(s.largest_gradient, result.gradient_norm[w]);
      s.bytes_sent += result.traffic.sent(static_cast<int>(w));
      received += result.traffic.received(static_cast<int>(w));
    }
    s.loss = loss / n;
    s.bits_sent = 8.0 * static_cast<double>(s.bytes_sent) / n;
    s.bits_received = 8.0 * static_cast<double>(received) / n;
    s.bytes_intra = static_cast<double>(bytes.intra);
    s.bytes_inter = static_cast<double>(bytes.inter);
    s.comm_seconds = network.StepSeconds(result.traffic.rounds);
    s.step_seconds = step_seconds;
    return s;
  }

  StepCounters& operator+=(const StepCounters& s) {
    steps += s.steps;
    loss += s.loss;
    largest_gradient = std::max(largest_gradient, s.largest_gradient);
    bits_sent += s.bits_sent;
    bits_received += s.bits_received;
    bytes_sent += s.bytes_sent;
    bytes_intra += s.bytes_intra;
    bytes_inter += s.bytes_inter;
    comm_seconds += s.comm_seconds;
    step_seconds += s.step_seconds;
    return *this;
  }

  // The step metrics (theory/metrics.h) these counters give at a step of learning rate `lr`:
  // a window's record, or with one step that step's own values.
  std::array<std::pair<std::string_view, double>, 8> Metrics(double lr) const {
    return {{{metric::kLr, lr},
             {metric::kMinibatchLoss, loss / static_cast<double>(steps)},
             {metric::kMaxGradNorm, largest_gradient},
             {metric::kBitsSent, bits_sent},
             {metric::kBitsReceived, bits_received},
             {metric::kBytesIntra, bytes_intra},
             {metric::kBytesInter, bytes_inter},
             {metric::kCommSeconds, comm_seconds}}};
  }

  void Persist(StateArchive& archive) {
    archive("steps", steps);
    archive("loss", loss);
    archive("largest_gradient", largest_gradient);
    archive("bits_sent", bits_sent);
    archive("bits_received", bits_received);
    archive("bytes_sent", bytes_sent);
    archive("bytes_intra", bytes_intra);
    archive("bytes_inter", bytes_inter);
    archive("comm_seconds", comm_seconds);
    archive("step_seconds", step_seconds);
  }
};

// What the run loop carries from one step to the next besides the parameters, the optimizer and
// the probes: the totals the run's record is made of, the open window of step metrics, the last
// evaluation and every metric's extent.
struct RunTotals {
  std::int64_t run_id = 0;
  std::int64_t next_step = 1;
  double initial_loss = 0;  // f(x_0): what the blow-up limit is relative to
  Evaluation last;
  std::int64_t evaluated_at = 0;
  StepCounters run;            // every step so far
  StepCounters window;         // the steps since the step metrics were last recorded
  double earlier_seconds = 0;  // wall time spent on the run before the last resume
  ExtentBook metrics;          // every step's (or evaluation's) value of each metric

  void Persist(StateArchive& archive) {
    archive("run_id", run_id);
    archive("next_step", next_step);
    archive("initial_loss", initial_loss);
    archive.Scope("last", [&] { PersistEvaluation(archive, last); });
    archive("evaluated_at", evaluated_at);
    archive.Nested("run", run);
    archive.Nested("window", window);
    archive("earlier_seconds", earlier_seconds);
    archive.Nested("metrics", metrics);
  }
};

// Why the run cannot go on after this step, or "" when everything is finite and the loss has
// not blown up (BlowUpLimit of the initial loss, theory/evidence.h).
template <typename T>
std::string FailureAfterStep(const Observable<T>& algorithm, int workers, double minibatch_loss,
                             double initial_loss, const Vector<T>& x) {
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
  if (minibatch_loss > BlowUpLimit(initial_loss)) {
    return fmt::format(
        "the minibatch loss {:.4g} is more than 1000 x (1 + |f(x_0)|) with f(x_0) = {:.4g}: the "
        "run blew up",
        minibatch_loss, initial_loss);
  }
  if (!x.allFinite()) return "the parameters are not finite";
  return "";
}

}  // namespace

template <typename T>
RunReport RunLoop(PreparedExperiment<T>& experiment, std::int64_t index, const Evaluation& initial,
                  const ExperimentOptions& options, const Job& job, Progress& progress,
                  Checkpoints& checkpoints) {
  const LoopPlan& plan = experiment.plan;
  const Problem<T>& problem = *experiment.problem;
  PreparedRun<T>& run = experiment.runs[static_cast<std::size_t>(index)];
  ResultsWriter& writer = *experiment.writer;
  std::optional<double> f_star;
  if (const Constant* c = FindConstant(experiment.constants, "f_star")) f_star = c->value;

  RunReport report;
  RunRecord& record = report.record;
  record.label = run.label;
  record.optimizer = run.optimizer;
  record.schedule = run.schedule->Describe();
  record.status = "running";
  report.dimension = problem.dimension();

  RunTotals p;
  Vector<T> x = problem.InitialPoint();
  Cluster<T> cluster(problem, *run.algorithm, plan.comm, options.threads, job.transport(),
                     fmt::format("optimizer '{}'", run.label));
  cluster.set_gradient_source(batched::GradientSourceOf(*run.algorithm));
  RunProbeSink sink(writer);
  Observable<T>& view = run.algorithm->observable();
  for (auto& probe : run.probes) probe->Attach(view, x);
  // Everything the run carries between steps, for checkpoints (probes restored after Attach).
  const auto persist_run = [&](StateArchive& archive) {
    archive.Nested("progress", p);
    archive("x", x);
    archive.Nested("optimizer", *run.algorithm);
    archive.Scope("probes", [&] {
      for (auto& probe : run.probes) archive.Nested(probe->name(), *probe);
    });
    archive.Nested("sink", sink);
  };
  // A metric's value at `step`: into its extent always, into the results when `recorded`.
  const auto metric = [&](std::int64_t step, std::string_view name, double value, bool recorded) {
    p.metrics.Add(name, kRunWide, step, value);
    if (recorded) writer.AddMetric(p.run_id, step, name, std::nullopt, value);
  };
  const auto record_evaluation = [&](std::int64_t step, const Evaluation& e) {
    metric(step, metric::kTrainLoss, e.loss, true);
    metric(step, metric::kGradSqNorm, e.grad_sq_norm, true);
    if (e.accuracy) metric(step, metric::kTrainAccuracy, *e.accuracy, true);
    if (e.test_loss) metric(step, metric::kTestLoss, *e.test_loss, true);
    if (e.test_accuracy) metric(step, metric::kTestAccuracy, *e.test_accuracy, true);
    if (e.shard_spread) metric(step, metric::kShardSpread, *e.shard_spread, true);
    if (f_star) metric(step, metric::kOptimalityGap, e.loss - *f_star, true);
    return e;
  };
  // Where x_t lies, in the positions the regions of the problem's constants are measured in.
  const auto record_position = [&](std::int64_t step, bool recorded) {
    for (const auto& [name, value] : problem.Positions(x)) metric(step, name, value, recorded);
  };
  if (checkpoints.resumed_run() == index) {
    checkpoints.ResumeRun(persist_run);
  } else {
    p.run_id = writer.AddRun(record);
    writer.AddHyperparameters(p.run_id, run.hyperparameters);
    p.initial_loss = initial.loss;
    p.last = record_evaluation(0, initial);
    record_position(0, true);
  }
  sink.set_run_id(p.run_id);

  const std::int64_t steps = plan.steps;
  if (options.trace != nullptr) options.trace->BeginRun(record.label);
  const auto start = std::chrono::steady_clock::now();
  const auto seconds = [&] {
    return p.earlier_seconds +
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  progress.Start(record.label, steps);
  std::string failure;
  std::int64_t t = p.next_step;
  // What the estimate before the first step cannot foresee (a probe's buffers, a compressor's
  // scratch) is watched as the run goes: a process past a --max-memory it was given by more
  // than 10% stops with exit code 2 (engine/estimates.h), instead of exhausting the machine.
  const bool watch_memory = options.max_memory.has_value() && !options.shares_process;
  for (; t <= steps; ++t) {
    job.StopIfRequested();
    if (watch_memory && t % 16 == 0) RequireResidentWithin(*options.max_memory, t);
    const StepContext ctx{t, run.schedule->Rate(t), plan.seed, options.trace,
                          job.stop_within_step()};
    const auto step_start = std::chrono::steady_clock::now();
    const StepResult& result = cluster.Step(ctx, x);
    const StepCounters step = StepCounters::Of(
        result, *experiment.network, plan.workers,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count());
    p.run += step;
    p.window += step;

    failure = FailureAfterStep(view, plan.workers, step.loss, p.initial_loss, x);
    const bool last_step = t == steps || !failure.empty();
    const bool evaluated = last_step || t % plan.eval_every == 0;
    // Each metric's value of this step counts into its extent; what is recorded is the window's
    // (the step's own with metrics_every = 1).
    for (const auto& [name, value] : step.Metrics(ctx.lr)) p.metrics.Add(name, kRunWide, t, value);
    const bool metrics_recorded = evaluated || t % plan.metrics_every == 0;
    if (metrics_recorded) {
      for (const auto& [name, value] : p.window.Metrics(ctx.lr)) {
        writer.AddMetric(p.run_id, t, name, std::nullopt, value);
      }
      p.window = {};
    }
    record_position(t, metrics_recorded);
    if (!run.probes.empty()) {
      const ProbeStep<T> probe_step{
          t, ctx.lr, x, StepGradients<T>([&cluster] { return cluster.consumed_gradients(); }),
          problem};
      for (auto& probe : run.probes) {
        sink.At(t, probe->name(), last_step || t % plan.probe_every == 0);
        probe->Observe(probe_step, view, sink);
      }
    }
    if (evaluated) {
      p.last = record_evaluation(t, problem.Evaluate(x));
      p.evaluated_at = t;
      if (failure.empty() && !std::isfinite(p.last.loss)) {
        failure = "the training loss is not finite";
      }
    }
    if (options.on_step) options.on_step(t, step.loss);
    if (!failure.empty()) break;
    if (checkpoints.Due(t, steps)) {
      const double earlier = p.earlier_seconds;
      p.next_step = t + 1;
      p.earlier_seconds = seconds();
      checkpoints.Save(index, t, persist_run);
      p.earlier_seconds = earlier;
    }
    progress.Update(t);
  }
  progress.Finish();

  const auto n = static_cast<double>(plan.workers);
  record.steps_done = std::min(t, steps);
  record.dimension = problem.dimension();
  record.status = failure.empty() ? std::string("completed")
                                  : fmt::format("diverged at step {}: {}", t, failure);
  record.final_loss = p.last.loss;
  record.final_accuracy = p.last.accuracy;
  record.final_test_loss = p.last.test_loss;
  record.final_test_accuracy = p.last.test_accuracy;
  record.final_grad_sq_norm = p.last.grad_sq_norm;
  record.bits_sent_per_worker = 8.0 * static_cast<double>(p.run.bytes_sent) / n;
  record.wall_seconds = seconds();
  const auto done = static_cast<double>(std::max<std::int64_t>(1, record.steps_done));
  record.bytes_intra_per_step = p.run.bytes_intra / done;
  record.bytes_inter_per_step = p.run.bytes_inter / done;
  record.step_seconds = p.run.step_seconds / done;
  record.comm_seconds_per_step = p.run.comm_seconds / done;
  LEMMALAB_CHECK(p.evaluated_at == record.steps_done,
                 "final evaluation at step {}, run ended at {}", p.evaluated_at, record.steps_done);
  writer.UpdateRun(p.run_id, record);
  for (const auto& [key, extent] : p.metrics.entries()) {
    writer.AddExtent(p.run_id, "metric", key.first, key.second, extent);
  }
  sink.WriteExtents();
  writer.AddConstant(p.run_id, {"G", p.run.largest_gradient, Certainty::kEstimate,
                                fmt::format("largest stochastic gradient norm seen in {} steps x "
                                            "{} workers of this run",
                                            record.steps_done, plan.workers)});
  for (const auto& probe : run.probes) {
    for (const std::string& line : probe->Summary()) {
      report.probe_lines.push_back(fmt::format("{}: {}", probe->name(), line));
    }
  }
  report.observed_g = p.run.largest_gradient;
  report.final_params = x.template cast<double>();
  report.threads = cluster.largest_team();
  return report;
}

template RunReport RunLoop(PreparedExperiment<float>&, std::int64_t, const Evaluation&,
                           const ExperimentOptions&, const Job&, Progress&, Checkpoints&);
template RunReport RunLoop(PreparedExperiment<double>&, std::int64_t, const Evaluation&,
                           const ExperimentOptions&, const Job&, Progress&, Checkpoints&);

}  // namespace lemmalab
