#include "cli/experiment.h"

#include <fmt/format.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <exception>
#include <fstream>
#include <optional>
#include <set>
#include <tuple>
#include <type_traits>

#include "cli/app.h"
#include "cli/checkpoint.h"
#include "cli/progress.h"
#include "cli/result_folder.h"
#include "cli/sweep_grid.h"
#include "comm/cluster.h"
#include "comm/network.h"
#include "core/build_info.h"
#include "core/error.h"
#include "core/text.h"
#include "optimizers/optimizer.h"
#include "optimizers/schedule.h"
#include "problems/problem.h"
#include "problems/reference.h"
#include "theory/evidence.h"
#include "theory/probe.h"

namespace lemmalab {
namespace {

template <typename T>
struct PreparedRun {
  const OptimizerSpec* spec = nullptr;
  std::string optimizer;
  std::unique_ptr<Schedule> schedule;
  std::unique_ptr<DistributedOptimizer<T>> algorithm;
  Hyperparameters hyperparameters;  // what the optimizer and its schedule read, resolved
  std::vector<std::unique_ptr<Probe<T>>> probes;
};

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

// The per-step metrics between two records (metrics_every): sums of the counters, the mean loss
// and the largest gradient norm.
struct MetricsWindow {
  std::int64_t steps = 0;
  double loss = 0, largest_gradient = 0, bits_sent = 0, bits_received = 0, bytes_intra = 0,
         bytes_inter = 0, comm_seconds = 0;

  void Persist(StateArchive& archive) {
    archive("steps", steps);
    archive("loss", loss);
    archive("largest_gradient", largest_gradient);
    archive("bits_sent", bits_sent);
    archive("bits_received", bits_received);
    archive("bytes_intra", bytes_intra);
    archive("bytes_inter", bytes_inter);
    archive("comm_seconds", comm_seconds);
  }
};

void PersistEvaluation(StateArchive& archive, Evaluation& e) {
  archive("loss", e.loss);
  archive("grad_sq_norm", e.grad_sq_norm);
  archive("accuracy", e.accuracy);
  archive("test_loss", e.test_loss);
  archive("test_accuracy", e.test_accuracy);
  archive("shard_spread", e.shard_spread);
}

// What the run loop carries from one step to the next besides the parameters, the optimizer and
// the probes: the totals the run's record is made of, the last evaluation, the open metrics
// window.
struct RunProgress {
  std::int64_t run_id = 0;
  std::int64_t next_step = 1;
  double initial_loss = 0;  // f(x_0): what the blow-up limit is relative to
  Evaluation last;
  std::int64_t evaluated_at = 0;
  std::int64_t bytes_sent = 0;
  double bytes_intra = 0, bytes_inter = 0, step_seconds = 0, comm_seconds = 0;
  double observed_g = 0;       // largest stochastic gradient norm seen
  double earlier_seconds = 0;  // wall time spent on the run before the last resume
  MetricsWindow window;
  ExtentBook metrics;  // every step's (or evaluation's) value of each metric

  void Persist(StateArchive& archive) {
    archive("run_id", run_id);
    archive("next_step", next_step);
    archive("initial_loss", initial_loss);
    archive.Scope("last", [&] { PersistEvaluation(archive, last); });
    archive("evaluated_at", evaluated_at);
    archive("bytes_sent", bytes_sent);
    archive("bytes_intra", bytes_intra);
    archive("bytes_inter", bytes_inter);
    archive("step_seconds", step_seconds);
    archive("comm_seconds", comm_seconds);
    archive("observed_g", observed_g);
    archive("earlier_seconds", earlier_seconds);
    archive.Nested("window", window);
    archive.Nested("metrics", metrics);
  }
};

void PersistRecord(StateArchive& archive, RunRecord& r) {
  archive("label", r.label);
  archive("dimension", r.dimension);
  archive("optimizer", r.optimizer);
  archive("schedule", r.schedule);
  archive("status", r.status);
  archive("steps_done", r.steps_done);
  archive("final_loss", r.final_loss);
  archive("final_accuracy", r.final_accuracy);
  archive("final_grad_sq_norm", r.final_grad_sq_norm);
  archive("final_test_loss", r.final_test_loss);
  archive("final_test_accuracy", r.final_test_accuracy);
  archive("bits_sent_per_worker", r.bits_sent_per_worker);
  archive("wall_seconds", r.wall_seconds);
  archive("bytes_intra_per_step", r.bytes_intra_per_step);
  archive("bytes_inter_per_step", r.bytes_inter_per_step);
  archive("step_seconds", r.step_seconds);
  archive("comm_seconds_per_step", r.comm_seconds_per_step);
}

// A finished run's report, as the table and params.npy need it (its hyperparameters are the
// preparation's, not saved).
void PersistReport(StateArchive& archive, RunReport& report) {
  archive.Scope("record", [&] { PersistRecord(archive, report.record); });
  archive.List("probe_lines", report.probe_lines,
               [&](std::string& line) { archive("text", line); });
  archive("threads", report.threads);
  archive("observed_g", report.observed_g);
  archive("final_params", report.final_params);
}

void PersistConstants(StateArchive& archive, std::vector<Constant>& constants) {
  archive.List("constants", constants, [&](Constant& c) {
    auto certainty = static_cast<std::int32_t>(c.certainty);
    archive("name", c.name);
    archive("value", c.value);
    archive("certainty", certainty);
    archive("basis", c.basis);
    c.certainty = static_cast<Certainty>(certainty);
    bool regional = c.region.has_value();
    archive("regional", regional);
    if (!regional) {
      c.region.reset();
      return;
    }
    if (!c.region) c.region.emplace();
    archive("region_position", c.region->position);
    archive("region_radius", c.region->radius);
    archive("region", c.region->description);
  });
}

// The experiment's side of checkpoints (cli/checkpoint.h): what a checkpoint holds besides the
// run in progress (the problem's constants, the finished runs' reports), the saving of it all at
// a step, and, when resuming, the archive everything is restored from, in the same order.
class Checkpoints {
 public:
  // What a resumed experiment checks it continues: f(x_0) and ||grad f(x_0)||^2 of the problem,
  // and a checksum of its data.
  struct Identity {
    Evaluation initial;
    std::uint32_t data_checksum = 0;
  };
  // Which process of which job wrote a state file, and the sizes everything in it has: compared
  // before anything else is restored, so that another rank's file, or one of another job, is
  // refused with its reason instead of restoring state of the wrong shape.
  struct Origin {
    std::int64_t processes = 1, rank = 0, dimension = 0, workers = 0;
  };

  Checkpoints(Checkpointer& checkpointer, std::vector<Constant>& constants,
              std::vector<RunReport>& finished, Identity& identity, Origin origin)
      : checkpointer_(checkpointer),
        constants_(constants),
        finished_(finished),
        identity_(identity),
        origin_(origin) {}

  // Restores the constants and the finished runs from the checkpoint `mark`; the run in
  // progress restores itself from restoring() (ResumeRun), then Finish checks nothing was left.
  void Resume(const CheckpointMark& mark) {
    mark_ = mark;
    snapshot_ = checkpointer_.Load(mark);
    restoring_.emplace(snapshot_, checkpointer_.StateFile(mark).string());
    PersistExperiment(*restoring_);
  }
  // The run (0-based) a resumed experiment continues, if it resumes.
  std::optional<std::int64_t> resumed_run() const {
    return restoring_ ? std::optional(mark_.run) : std::nullopt;
  }
  // Restores the run in progress through `persist_run` and releases the snapshot.
  template <typename F>
  void ResumeRun(F&& persist_run) {
    restoring_->Scope("run", [&] { persist_run(*restoring_); });
    restoring_->Finish();
    restoring_.reset();
    snapshot_.clear();
  }

  bool Due(std::int64_t t, std::int64_t steps) const { return checkpointer_.Due(t, steps); }
  // Saves everything at step `step` of run `run`, the run in progress through `persist_run`.
  template <typename F>
  void Save(std::int64_t run, std::int64_t step, F&& persist_run) {
    SavingArchive archive;
    PersistExperiment(archive);
    archive.Scope("run", [&] { persist_run(archive); });
    checkpointer_.Save({run, step}, archive.snapshot());
  }

 private:
  void PersistExperiment(StateArchive& archive) {
    Origin saved = origin_;
    archive.Scope("origin", [&] {
      archive("processes", saved.processes);
      archive("rank", saved.rank);
      archive("dimension", saved.dimension);
      archive("workers", saved.workers);
    });
    if (archive.restoring()) RequireOrigin(saved);
    archive.Scope("initial", [&] { PersistEvaluation(archive, identity_.initial); });
    archive("data_checksum", identity_.data_checksum);
    PersistConstants(archive, constants_);
    archive.List("finished", finished_, [&](RunReport& report) {
      // A finished run's parameters are the run's d, whatever the file says.
      if (archive.restoring()) {
        report.dimension = origin_.dimension;
        report.final_params.resize(origin_.dimension);
      }
      PersistReport(archive, report);
    });
  }

  void RequireOrigin(const Origin& saved) const {
    const auto require = [&](std::string_view what, std::int64_t then, std::int64_t now) {
      if (then == now) return;
      throw UserError(fmt::format(
          "{}: the state file was written with {} = {}, but this process has {} = {}; a "
          "checkpoint resumes only in the job that wrote it (is the file another rank's, or "
          "another run's?)",
          checkpointer_.StateFile(mark_).string(), what, then, what, now));
    };
    require("processes", saved.processes, origin_.processes);
    require("rank", saved.rank, origin_.rank);
    require("dimension", saved.dimension, origin_.dimension);
    require("workers", saved.workers, origin_.workers);
  }

  Checkpointer& checkpointer_;
  std::vector<Constant>& constants_;
  std::vector<RunReport>& finished_;
  Identity& identity_;
  Origin origin_;
  CheckpointMark mark_;
  StateSnapshot snapshot_;
  std::optional<RestoringArchive> restoring_;
};

// A CRC-32 (zlib) of a data set's samples: features, labels, test set.
std::uint32_t DataChecksum(const Dataset& data) {
  std::uint32_t crc = 0;
  for (const std::span<const std::byte> buffer : data.Buffers()) crc = Crc32(crc, buffer);
  return crc;
}

}  // namespace

double ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  double size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<double>(sysconf(_SC_PAGESIZE));
}

void RequireResidentWithin(const MemoryLimit& limit, std::int64_t t) {
  const double resident = ResidentBytes();
  if (resident <= 1.1 * limit.bytes) return;
  throw UserError(fmt::format(
      "the run holds {} at step {}, more than {} allows ({}) by over 10%; its estimate before the "
      "first step fell short (please report the spec): no results written",
      FormatBytes(resident), t, limit.source, FormatBytes(limit.bytes)));
}

namespace {

// This process's rank: the worker it runs under MPI (one per rank), 0 in one process.
int ProcessRank(const ExperimentOptions& options) {
  if (options.transport == nullptr) return 0;
  for (int w = 0; w < options.transport->workers(); ++w) {
    if (options.transport->Runs(w)) return w;
  }
  return 0;
}

// The number of processes of the job: one per worker under MPI, 1 in one process.
std::int64_t ProcessCount(const ExperimentOptions& options) {
  return options.transport == nullptr ? 1 : options.transport->workers();
}

// Throws Interrupted when any process was asked to stop: decided together, so that every rank
// stops after the same step, with the signal of the lowest rank that received one.
void StopIfRequested(const ExperimentOptions& options) {
  const bool stop = options.stop != nullptr && options.stop->load();
  const int signal = stop && options.stop_signal != nullptr ? options.stop_signal->load() : 0;
  if (options.transport == nullptr) {
    if (stop) throw Interrupted(signal);
    return;
  }
  // Per rank: 0, or 1 + its signal.
  std::vector<std::int64_t> ranks(static_cast<std::size_t>(options.transport->workers()), 0);
  ranks[static_cast<std::size_t>(ProcessRank(options))] = stop ? 1 + signal : 0;
  options.transport->Sum(ranks);
  for (const std::int64_t r : ranks) {
    if (r != 0) throw Interrupted(static_cast<int>(r - 1));
  }
}

std::string DescribeLink(const std::string& name, const LinkCost& cost) {
  return fmt::format("{} ({:g} us, {:g} Gbit/s)", name, cost.latency_s * 1e6,
                     cost.bandwidth_bytes_per_s * 8e-9);
}

std::string DescribeNetwork(const NetworkModel& network) {
  return fmt::format("intra-node {}, inter-node {}",
                     DescribeLink(network.intra_name, network.intra),
                     DescribeLink(network.inter_name, network.inter));
}

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

template <typename T>
RunReport Execute(const RunSpec& spec, std::int64_t run_index, PreparedRun<T>& run,
                  const Problem<T>& problem, const Evaluation& initial,
                  std::optional<double> f_star, const NetworkModel& network,
                  const ExperimentOptions& options, ResultsWriter& writer, Progress& progress,
                  Checkpoints& checkpoints) {
  RunReport report;
  RunRecord& record = report.record;
  record.label = run.spec->label;
  record.optimizer = run.optimizer;
  record.schedule = run.schedule->Describe();
  record.status = "running";
  report.dimension = problem.dimension();

  RunProgress p;
  Vector<T> x = problem.InitialPoint();
  Cluster<T> cluster(problem, *run.algorithm, spec.comm, options.threads, options.transport,
                     fmt::format("optimizer '{}'", run.spec->label));
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
    metric(step, "train_loss", e.loss, true);
    metric(step, "grad_sq_norm", e.grad_sq_norm, true);
    if (e.accuracy) metric(step, "train_accuracy", *e.accuracy, true);
    if (e.test_loss) metric(step, "test_loss", *e.test_loss, true);
    if (e.test_accuracy) metric(step, "test_accuracy", *e.test_accuracy, true);
    if (e.shard_spread) metric(step, "shard_spread", *e.shard_spread, true);
    if (f_star) metric(step, "optimality_gap", e.loss - *f_star, true);
    return e;
  };
  // Where x_t lies, in the positions the regions of the problem's constants are measured in.
  const auto record_position = [&](std::int64_t step, bool recorded) {
    for (const auto& [name, value] : problem.Positions(x)) metric(step, name, value, recorded);
  };
  if (checkpoints.resumed_run() == run_index) {
    checkpoints.ResumeRun(persist_run);
  } else {
    p.run_id = writer.AddRun(record);
    writer.AddHyperparameters(p.run_id, run.hyperparameters);
    p.initial_loss = initial.loss;
    p.last = record_evaluation(0, initial);
    record_position(0, true);
  }
  sink.set_run_id(p.run_id);

  const std::int64_t steps =  // this run's last step
      options.last_step > 0 ? std::min(options.last_step, spec.steps) : spec.steps;
  if (options.trace != nullptr) options.trace->BeginRun(record.label);
  const auto start = std::chrono::steady_clock::now();
  const auto seconds = [&] {
    return p.earlier_seconds +
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  progress.Start(record.label, steps);
  std::string failure;
  std::int64_t t = p.next_step;
  const auto n = static_cast<double>(spec.workers);
  const std::int64_t metrics_every = std::max<std::int64_t>(1, spec.metrics_every);
  const std::int64_t probe_every = std::max<std::int64_t>(1, spec.probe_every);
  // What the estimate before the first step cannot foresee (a probe's buffers, a compressor's
  // scratch) is watched as the run goes: a process past a --max-memory it was given by more
  // than 10% stops with exit code 2 (cli/experiment.h), instead of exhausting the machine.
  const bool watch_memory = options.max_memory.has_value() && !options.shares_process;
  for (; t <= steps; ++t) {
    StopIfRequested(options);
    if (watch_memory && t % 16 == 0) RequireResidentWithin(*options.max_memory, t);
    // In one process a stop may abandon the step (nothing of it is kept); under MPI every rank
    // finishes it, and they stop together at the next StopIfRequested.
    const StepContext ctx{t, run.schedule->Rate(t), spec.seed, options.trace,
                          options.transport == nullptr ? options.stop : nullptr};
    const auto step_start = std::chrono::steady_clock::now();
    const StepResult& result = cluster.Step(ctx, x);
    p.step_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count();
    LinkBytes step_bytes = result.traffic.server.sent;
    for (const EndpointTraffic& w : result.traffic.workers) step_bytes += w.sent;
    const double projected = network.StepSeconds(result.traffic.rounds);
    p.bytes_intra += static_cast<double>(step_bytes.intra);
    p.bytes_inter += static_cast<double>(step_bytes.inter);
    p.comm_seconds += projected;

    double loss = 0, largest_gradient = 0;
    std::int64_t sent = 0, received = 0;
    for (std::size_t w = 0; w < result.minibatch_loss.size(); ++w) {
      loss += result.minibatch_loss[w];
      largest_gradient = std::max(largest_gradient, result.gradient_norm[w]);
      sent += result.traffic.sent(static_cast<int>(w));
      received += result.traffic.received(static_cast<int>(w));
    }
    p.bytes_sent += sent;
    p.observed_g = std::max(p.observed_g, largest_gradient);
    MetricsWindow& window = p.window;
    ++window.steps;
    window.loss += loss / n;
    window.largest_gradient = std::max(window.largest_gradient, largest_gradient);
    window.bits_sent += 8.0 * static_cast<double>(sent) / n;
    window.bits_received += 8.0 * static_cast<double>(received) / n;
    window.bytes_intra += static_cast<double>(step_bytes.intra);
    window.bytes_inter += static_cast<double>(step_bytes.inter);
    window.comm_seconds += projected;

    failure = FailureAfterStep(view, spec.workers, loss / n, p.initial_loss, x);
    const bool last_step = t == steps || !failure.empty();
    const bool evaluated = last_step || t % spec.eval_every == 0;
    // Each metric's value of this step counts into its extent; what is recorded is the window's
    // (the step's own with metrics_every = 1).
    for (const auto& [name, value] :
         {std::pair{"lr", ctx.lr}, std::pair{"minibatch_loss", loss / n},
          std::pair{"max_grad_norm", largest_gradient},
          std::pair{"bits_sent", 8.0 * static_cast<double>(sent) / n},
          std::pair{"bits_received", 8.0 * static_cast<double>(received) / n},
          std::pair{"bytes_intra", static_cast<double>(step_bytes.intra)},
          std::pair{"bytes_inter", static_cast<double>(step_bytes.inter)},
          std::pair{"comm_seconds", projected}}) {
      p.metrics.Add(name, kRunWide, t, value);
    }
    const bool metrics_recorded = evaluated || t % metrics_every == 0;
    if (metrics_recorded) {
      const std::int64_t id = p.run_id;
      writer.AddMetric(id, t, "lr", std::nullopt, ctx.lr);
      writer.AddMetric(id, t, "minibatch_loss", std::nullopt,
                       window.loss / static_cast<double>(window.steps));
      writer.AddMetric(id, t, "max_grad_norm", std::nullopt, window.largest_gradient);
      writer.AddMetric(id, t, "bits_sent", std::nullopt, window.bits_sent);
      writer.AddMetric(id, t, "bits_received", std::nullopt, window.bits_received);
      writer.AddMetric(id, t, "bytes_intra", std::nullopt, window.bytes_intra);
      writer.AddMetric(id, t, "bytes_inter", std::nullopt, window.bytes_inter);
      writer.AddMetric(id, t, "comm_seconds", std::nullopt, window.comm_seconds);
      window = {};
    }
    record_position(t, metrics_recorded);
    if (!run.probes.empty()) {
      const ProbeStep<T> probe_step{t, ctx.lr, x, cluster.consumed_gradients(), problem};
      for (auto& probe : run.probes) {
        sink.At(t, probe->name(), last_step || t % probe_every == 0);
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
    if (options.on_step) options.on_step(t, loss / n);
    if (!failure.empty()) break;
    if (checkpoints.Due(t, steps)) {
      const double earlier = p.earlier_seconds;
      p.next_step = t + 1;
      p.earlier_seconds = seconds();
      checkpoints.Save(run_index, t, persist_run);
      p.earlier_seconds = earlier;
    }
    progress.Update(t);
  }
  progress.Finish();

  record.steps_done = std::min(t, steps);
  record.dimension = problem.dimension();
  record.status = failure.empty() ? std::string("completed")
                                  : fmt::format("diverged at step {}: {}", t, failure);
  record.final_loss = p.last.loss;
  record.final_accuracy = p.last.accuracy;
  record.final_test_loss = p.last.test_loss;
  record.final_test_accuracy = p.last.test_accuracy;
  record.final_grad_sq_norm = p.last.grad_sq_norm;
  record.bits_sent_per_worker = 8.0 * static_cast<double>(p.bytes_sent) / n;
  record.wall_seconds = seconds();
  const auto done = static_cast<double>(std::max<std::int64_t>(1, record.steps_done));
  record.bytes_intra_per_step = p.bytes_intra / done;
  record.bytes_inter_per_step = p.bytes_inter / done;
  record.step_seconds = p.step_seconds / done;
  record.comm_seconds_per_step = p.comm_seconds / done;
  LEMMALAB_CHECK(p.evaluated_at == record.steps_done,
                 "final evaluation at step {}, run ended at {}", p.evaluated_at, record.steps_done);
  writer.UpdateRun(p.run_id, record);
  for (const auto& [key, extent] : p.metrics.entries()) {
    writer.AddExtent(p.run_id, "metric", key.first, key.second, extent);
  }
  sink.WriteExtents();
  writer.AddConstant(p.run_id, {"G", p.observed_g, Certainty::kEstimate,
                                fmt::format("largest stochastic gradient norm seen in {} steps x "
                                            "{} workers of this run",
                                            record.steps_done, spec.workers)});
  for (const auto& probe : run.probes) {
    for (const std::string& line : probe->Summary()) {
      report.probe_lines.push_back(fmt::format("{}: {}", probe->name(), line));
    }
  }
  report.observed_g = p.observed_g;
  report.final_params = x.template cast<double>();
  report.threads = cluster.largest_team();
  return report;
}

// The run's setting as hyperparameters: the spec's top-level values and what its problem, data,
// communication and network tables resolved to (read once their components were built).
Hyperparameters SettingOf(const RunSpec& spec, const Hyperparameters& data,
                          const OptionTable& network) {
  Hyperparameters setting;
  setting.Set("seed", static_cast<std::int64_t>(spec.seed));
  setting.Set("workers", std::int64_t{spec.workers});
  setting.Set("steps", spec.steps);
  setting.Set("precision", std::string(PrecisionName(spec.precision)));
  setting.Merge("problem", spec.problem->Resolved());
  if (spec.data) setting.Merge("data", data);
  setting.Set("communication.scheme", std::string(SchemeName(spec.comm.scheme)));
  setting.Set("communication.nodes", std::int64_t{spec.comm.topology.nodes});
  setting.Set("communication.workers_per_node", std::int64_t{spec.comm.topology.workers_per_node});
  setting.Merge("network", network.Resolved());
  return setting;
}

// Vectors of the run's scalar that an optimizer configuration keeps per process (replicas' and
// servers' state) and per worker the process runs (momentum, error feedback), measured from the
// state it saves (core/state.h) when built for one and two workers at a small dimension, so
// nothing has to be declared and kept in step with the code. It is built from a copy of its
// table, so a wrong option is reported here, before the data load (OptionError); a refusal that
// depends on the dimension (k > d) waits for the real build, and the estimate then assumes
// kUnmeasured vectors.
struct Footprint {
  double process_vectors = 0;
  double worker_vectors = 0;
};
constexpr Footprint kUnmeasured = {4, 4};

template <typename T>
Footprint MeasureFootprint(const OptimizerSpec& o) {
  constexpr std::int64_t kSmall = 4096;
  const auto saved_vectors = [&](int workers, std::int64_t dimension) {
    const std::shared_ptr<OptionTable> table = o.options->Clone();
    table->Erase("label");  // the spec's keys, read by the spec (cli/spec.h)
    table->Erase("schedule");
    const auto optimizer = MakeOptimizer<T>(*table, OptimizerContext{dimension, workers});
    double bytes = 0;
    for (const auto& [path, item] : SaveState(*optimizer)) {
      bytes += static_cast<double>(item.bytes.size());
    }
    return bytes / sizeof(T);
  };
  try {
    const double one = saved_vectors(1, kSmall);
    const double worker = (saved_vectors(2, kSmall) - one) / kSmall;
    const double process = (saved_vectors(1, 2 * kSmall) - one) / kSmall - worker;
    return {std::max(0.0, process), std::max(0.0, worker)};
  } catch (const OptionError&) {
    throw;
  } catch (const UserError&) {
    return kUnmeasured;
  }
}

// The memory a run will take, part by part: what the process holds already (`held`: its
// resident set, measured after the data and problem were built; 0 when other runs share the
// process, and the data is estimated instead), the problem's working memory, the parameters and
// the optimizers' per-process state (every optimizer of the spec is built before the first step),
// and every worker's state with its gradient and message.
template <typename T>
MemoryEstimate EstimateMemory(const RunSpec& spec, const Problem<T>& problem, const Dataset* data,
                              const std::vector<Footprint>& footprints, int local_workers,
                              int threads, double held) {
  const auto d = static_cast<double>(problem.dimension());
  const double t = sizeof(T);
  // What sets d: the problem and its size options, and the data's features.
  std::string size = fmt::format("d = {} parameters of problem '{}'", problem.dimension(),
                                 spec.problem->GetString("name", ""));
  for (const char* key : {"hidden", "dimension"}) {
    const auto it = spec.problem->entries().find(key);
    if (it == spec.problem->entries().end()) continue;
    const auto* list = std::get_if<OptionValue::Array>(&it->second.data);
    if (list == nullptr) {
      size += fmt::format(" with {} = {}", key, it->second.Show());
      continue;
    }
    std::vector<std::string> shown;  // the first few widths of a long list, and its length
    for (std::size_t i = 0; i < list->size() && i < 4; ++i) shown.push_back((*list)[i].Show());
    if (list->size() > 4) shown.push_back(fmt::format("... ({} values)", list->size()));
    size += fmt::format(" with {} = [{}]", key, JoinNames(shown));
  }
  if (data != nullptr) size += fmt::format(" on {} features", data->num_features());
  MemoryEstimate estimate;
  if (held > 0) {
    estimate.Add("what the process holds already", held,
                 "measured before the first step: the program, the data and the problem");
  } else if (data != nullptr) {
    double bytes = 0;
    for (const auto& buffer : data->Buffers()) bytes += static_cast<double>(buffer.size());
    estimate.Add("the data", bytes, "[data]");
  }
  problem.AddWorkingMemory(local_workers, threads, estimate);
  double process = 0, worker = 0;
  for (const Footprint& f : footprints) {
    process += 1 + f.process_vectors + 2;  // x, the state, the reply and its decoding
    worker += f.worker_vectors;
  }
  const auto optimizers = static_cast<double>(footprints.size());
  worker += 3 * optimizers;  // the gradient, the message and its parts, of each run's workers
  estimate.Add("the parameters and the optimizers' state kept once", process * d * t,
               fmt::format("{} x {:.3g} vectors over {} optimizers x {} bytes", size, process,
                           footprints.size(), t));
  estimate.Add("every worker's optimizer state, gradient and message",
               local_workers * worker * d * t,
               fmt::format("workers = {} x {} x {:.3g} vectors over {} optimizers x {} bytes",
                           local_workers, size, worker, footprints.size(), t));
  // Measured on a quadratic of d = 2e6 (fp32, 1 and 4 workers, SGD, Birder, EF21, 0/1 Adam): the
  // parts above left 1.01-1.22x of the peak unexplained, two vectors of doubles per process.
  estimate.Add("the final parameters and an evaluation's gradient", 2 * d * 8,
               fmt::format("2 x {} x 8 bytes", size));
  // Measured with ef-norm, q-domain and min-b on 4 workers: about half a vector per worker and
  // probe (a probe's previous values, its per-worker sums).
  const auto probes = static_cast<double>(spec.probes.size() + spec.check_probes.size());
  if (probes > 0) {
    estimate.Add("the probes' buffers", probes * (local_workers + 1) * 0.5 * d * t,
                 fmt::format("{} probes x (workers = {} + 1) x half a vector of d x {} bytes",
                             probes, local_workers, t));
  }
  if (spec.checkpoint_every > 0) {
    estimate.Add(
        "a checkpoint's copy of the state", (process + local_workers * worker) * d * t,
        fmt::format("checkpoint_every = {}: the state above, saved", spec.checkpoint_every));
  }
  return estimate;
}

// About how many bytes a row of the metrics or probes table takes in results.sqlite and
// metrics.csv together (measured on lemmalab's own runs: 86).
constexpr double kBytesPerResultRow = 100;

// The results' size on disk, estimated from the steps and how often each kind of row is
// recorded, part by part with the options that drive it.
template <typename T>
MemoryEstimate EstimateResults(const RunSpec& spec, const std::vector<PreparedRun<T>>& runs) {
  const auto steps = static_cast<double>(spec.steps);
  const auto every = [](std::int64_t k) {
    return static_cast<double>(std::max<std::int64_t>(1, k));
  };
  const double records = std::ceil(steps / every(spec.metrics_every));
  const double evaluations = std::ceil(steps / every(spec.eval_every)) + 1;
  double probes = 0;
  for (const PreparedRun<T>& run : runs) probes += static_cast<double>(run.probes.size());
  const auto n = static_cast<double>(runs.size());
  MemoryEstimate estimate;
  estimate.Add("the per-step metrics", n * records * 8 * kBytesPerResultRow,
               fmt::format("steps = {} / metrics_every = {} x 8 metrics x {} runs", spec.steps,
                           std::max<std::int64_t>(1, spec.metrics_every), runs.size()));
  estimate.Add("the evaluations", n * evaluations * 6 * kBytesPerResultRow,
               fmt::format("steps = {} / eval_every = {} x 6 metrics x {} runs", spec.steps,
                           spec.eval_every, runs.size()));
  // A probe records a few series per sender (the workers and the server) at each kept step.
  estimate.Add(
      "the probe series",
      probes * std::ceil(steps / every(spec.probe_every)) * (spec.workers + 1) * 4 *
          kBytesPerResultRow,
      fmt::format("steps = {} / probe_every = {} x {} probes x {} senders x 4 series", spec.steps,
                  std::max<std::int64_t>(1, spec.probe_every), probes, spec.workers + 1));
  return estimate;
}

// Runs `f` on every process. In one process its exceptions pass as they are. Under MPI, a
// failure on any process becomes a SharedFailure on all of them once every process has run `f`:
// the lowest rank that failed carries the message, the others an empty one, all its exit code.
// Use it around work that involves no collective, so that every process reaches the agreement.
template <typename F>
void Agreed(const ExperimentOptions& options, F&& f) {
  Transport* transport = options.transport;
  if (transport == nullptr) {
    f();
    return;
  }
  Failure failure{"", kExitOk};
  try {
    f();
  } catch (...) {
    failure = CurrentFailure(options.stop_signal != nullptr ? options.stop_signal->load() : SIGINT);
  }
  // One entry per rank (which runs one worker): its code, zeros elsewhere.
  std::vector<std::int64_t> codes(static_cast<std::size_t>(transport->workers()), 0);
  const int rank = ProcessRank(options);
  codes[static_cast<std::size_t>(rank)] = failure.exit_code;
  transport->Sum(codes);
  for (std::size_t w = 0; w < codes.size(); ++w) {
    if (codes[w] == 0) continue;
    throw SharedFailure(static_cast<int>(w) == rank ? failure.message : std::string(),
                        static_cast<int>(codes[w]));
  }
}

// What a resumed run must share with the run it continues: the spec as given (text and --set
// arguments), the build (a checkpoint restores bits, which another build need not reproduce)
// and the number of processes.
void RequireSameRun(const RunSpec& spec, ResultsWriter& writer, const std::filesystem::path& dir,
                    std::int64_t processes) {
  const auto differ = [&](std::string_view what, const std::string& then, const std::string& now) {
    return UserError(fmt::format(
        "--resume {}: the checkpoint was written by another {} ({} then, {} now); a run resumes "
        "only with the spec, --set arguments and build that started it",
        dir.string(), what, then, now));
  };
  if (writer.Meta("spec_text") != spec.text) {
    throw differ("spec", fmt::format("'{}'", writer.Meta("spec_path")),
                 fmt::format("'{}', whose text differs", spec.path.string()));
  }
  const std::string settings = JoinNames(spec.settings);
  if (writer.Meta("settings") != settings) {
    throw differ("set of --set arguments", fmt::format("'{}'", writer.Meta("settings")),
                 fmt::format("'{}'", settings));
  }
  const BuildInfo& build = Build();
  if (writer.Meta("commit") != build.commit || writer.Meta("build") != build.build) {
    throw differ("build of lemmalab",
                 fmt::format("commit {}, {}", writer.Meta("commit"), writer.Meta("build")),
                 fmt::format("commit {}, {}", build.commit, build.build));
  }
  // Each process restores its own workers' state: the job must have as many as the one that
  // wrote the checkpoint (an MPI checkpoint does not resume in one process, nor the reverse).
  const std::string then = writer.Meta("processes");
  if (then != fmt::format("{}", processes)) {
    const bool one = then == "1" || then.empty();
    throw UserError(fmt::format(
        "--resume {}: the checkpoint was written by {} and this is {}; resume it as it was "
        "started: {}lemmalab run {} --resume {}",
        dir.string(), one ? "one process" : fmt::format("mpirun with {} processes", then),
        processes == 1 ? "one process" : fmt::format("mpirun with {} processes", processes),
        one ? "" : fmt::format("mpirun -np {} ", then), spec.path.string(), dir.string()));
  }
}

// Builds everything the spec asks for and, unless `validate_only`, runs it.
template <typename T>
ExperimentReport RunTyped(const RunSpec& spec, const ExperimentOptions& options,
                          bool validate_only) {
  // A run that writes nothing (a trace) has nothing to checkpoint and ignores the key.
  if (!validate_only && spec.checkpoint_every > 0 && !options.checkpoints &&
      !options.discard_results) {
    throw UserError(fmt::format(
        "{}: checkpoint_every = {}: only lemmalab run saves checkpoints (and lemmalab run "
        "--resume continues them); remove it for check, sweep and Python runs",
        spec.path.string(), spec.checkpoint_every));
  }
  // Everything before the first step, on every process alike (under MPI its failures are
  // agreed, so that the job prints each once): data, problem, optimizers, probes, the results
  // folder and, when resuming, this process's checkpoint.
  DataCache::Entry data;
  std::unique_ptr<Problem<T>> problem;
  std::vector<Constant> constants;
  std::vector<PreparedRun<T>> runs;
  std::vector<std::string> unused_probes;
  std::optional<NetworkModel> network;
  Hyperparameters setting;
  const bool reporting = options.transport == nullptr || options.transport->reports();
  std::optional<ResultsWriter> writer;
  const MemoryLimit memory = options.max_memory.value_or(MemoryLimit::Machine());
  Agreed(options, [&] {
    // Every option that does not depend on the data, checked before they load (real data sets
    // take seconds and hundreds of MB): the problem's, the schedules' and the optimizers', the
    // latter measured for the memory estimate at the same time.
    MakeProblem<T>(*spec.problem->Clone(), {spec.workers, spec.seed, nullptr, true});
    std::vector<Footprint> footprints;
    for (const OptimizerSpec& o : spec.optimizers) {
      MakeSchedule(*o.schedule->Clone(), {spec.steps, spec.workers});
      footprints.push_back(MeasureFootprint<T>(o));
    }
    if (spec.data) {
      const DataContext context{spec.seed, spec.path.parent_path(), memory};
      if (options.data_cache != nullptr) {
        data = options.data_cache->Get(*spec.data, context);
      } else {
        data.data = std::make_shared<const Dataset>(LoadData(*spec.data, context));
        data.resolved = spec.data->Resolved();
      }
    }
    problem =
        MakeProblem<T>(*spec.problem, {spec.workers, spec.seed, data.data.get(), false, memory});
    problem->set_threads(options.threads);
    constants = problem->Constants();
    const int local_workers = options.transport == nullptr ? spec.workers : 1;
    const int threads = options.threads > 0 ? options.threads : omp_get_max_threads();
    RequireWithin(memory,
                  EstimateMemory(spec, *problem, data.data.get(), footprints, local_workers,
                                 threads, options.shares_process ? 0 : ResidentBytes()),
                  spec.path.string(), "memory");
    OptimizerContext optimizer_context{problem->dimension(), spec.workers, problem->Layers(),
                                       LayoutFor(spec.comm, problem->dimension())};
    if (options.transport != nullptr) {
      for (int i = 0; i < spec.workers; ++i) {
        if (options.transport->Runs(i)) optimizer_context.local_workers.push_back(i);
      }
    }
    const ProbeContext run_probe_context{problem->dimension(), spec.workers, spec.seed};
    OptionTable no_network("[network]", spec.path.string());
    OptionTable& network_options = spec.network ? *spec.network : no_network;
    network = NetworkFromOptions(network_options);
    if (spec.network) spec.network->RejectUnknownKeys();
    if (options.transport != nullptr) RequireNoProbes(spec);

    setting = SettingOf(spec, data.resolved, network_options);
    std::vector<bool> probe_applied(spec.probes.size(), false);
    for (const OptimizerSpec& o : spec.optimizers) {
      PreparedRun<T> run;
      run.spec = &o;
      run.optimizer = o.options->GetString("name", "");
      run.schedule = MakeSchedule(*o.schedule, {spec.steps, spec.workers});
      try {
        run.algorithm = MakeOptimizer<T>(*o.options, optimizer_context);
        RequireSchemeFits(spec.comm, *run.algorithm, "it");
      } catch (const UserError& e) {
        // A refusal that did not come from reading an option (a chunked scheme's, say) is given
        // the optimizer's table, so that every message names the file and line it is about.
        if (std::string_view(e.what()).starts_with(spec.path.string())) throw;
        throw UserError(
            fmt::format("{}: {}: {}", o.options->where(), o.options->context(), e.what()));
      }
      run.hyperparameters = o.options->Resolved();
      run.hyperparameters.Merge("schedule", o.schedule->Resolved());
      for (const auto& [key, value] : setting.entries()) run.hyperparameters.Set(key, value);
      ProbeContext probe_context = run_probe_context;
      probe_context.hyperparameters = run.hyperparameters;
      const auto attach = [&](const std::string& name) {
        auto probe = FactoryFor<T>(*Probes().Find(name))(probe_context);
        if (!probe->AppliesTo(run.algorithm->observable())) return false;
        run.probes.push_back(std::move(probe));
        return true;
      };
      for (std::size_t k = 0; k < spec.probes.size(); ++k) {
        if (attach(spec.probes[k])) probe_applied[k] = true;
      }
      for (const std::string& name : spec.check_probes) attach(name);
      runs.push_back(std::move(run));
    }
    for (std::size_t k = 0; k < spec.probes.size(); ++k) {
      if (probe_applied[k]) continue;
      if (options.probes_may_not_apply) {
        unused_probes.push_back(spec.probes[k]);
        continue;
      }
      std::vector<std::string> labels;
      for (const OptimizerSpec& o : spec.optimizers) labels.push_back(o.label);
      throw UserError(
          fmt::format("{}: probe '{}' applies to none of the optimizers ({}); it "
                      "measures {}",
                      spec.path.string(), spec.probes[k], JoinNames(labels),
                      Probes().Find(spec.probes[k])->summary));
    }
    if (validate_only) return;
    if (reporting && !options.discard_results) {
      RequireWithin(options.max_results.value_or(FreeSpaceFor(options.out_dir)),
                    EstimateResults(spec, runs), spec.path.string(), "results size");
    }
    using Mode = ResultsWriter::Mode;
    const Mode mode = options.resume              ? Mode::kResume
                      : spec.checkpoint_every > 0 ? Mode::kCheckpointed
                                                  : Mode::kFresh;
    writer.emplace(
        reporting && !options.discard_results
            ? ResultsWriter(options.out_dir, options.database_only, mode, options.command)
            : ResultsWriter::Discarding());
    if (options.resume && reporting) {
      RequireSameRun(spec, *writer, options.out_dir, ProcessCount(options));
    }
  });

  if (validate_only) {
    ExperimentReport report;
    report.unused_probes = std::move(unused_probes);
    report.result_values = EstimateResults(spec, runs).total() / kBytesPerResultRow;
    for (PreparedRun<T>& run : runs) {
      RunReport& r = report.runs.emplace_back();
      r.record.label = run.spec->label;
      r.record.optimizer = run.optimizer;
      r.dimension = problem->dimension();
      r.hyperparameters = std::move(run.hyperparameters);
    }
    return report;
  }

  // Every run starts from the same point: it is evaluated once.
  const Evaluation initial = problem->Evaluate(problem->InitialPoint());
  std::vector<RunReport> finished;
  // What a resumed run checks it continues (a checksum of the data only where checkpoints are
  // on: it reads every byte of them).
  Checkpoints::Identity identity{initial, spec.checkpoint_every > 0 && data.data
                                              ? DataChecksum(*data.data)
                                              : std::uint32_t{0}};
  const Checkpoints::Identity now = identity;
  Checkpointer checkpointer(*writer, ResultFolder(options.out_dir).staging(), spec.checkpoint_every,
                            options.transport, ProcessRank(options));
  const Checkpoints::Origin origin{ProcessCount(options), ProcessRank(options),
                                   problem->dimension(), spec.workers};
  Checkpoints checkpoints(checkpointer, constants, finished, identity, origin);
  if (options.resume) {
    const CheckpointMark mark = checkpointer.SharedMark();
    Agreed(options, [&] {
      checkpoints.Resume(mark);
      const auto differ = [&](std::string_view what, auto then, auto here) {
        return UserError(fmt::format(
            "--resume {}: the {} differ from the checkpointed run's ({} then, {} now); a run "
            "resumes only on the data and problem that started it",
            options.out_dir.string(), what, then, here));
      };
      if (identity.data_checksum != now.data_checksum) {
        throw differ("data (CRC-32 of the samples)", identity.data_checksum, now.data_checksum);
      }
      const Evaluation& then = identity.initial;
      if (std::memcmp(&then.loss, &now.initial.loss, sizeof(double)) != 0 ||
          std::memcmp(&then.grad_sq_norm, &now.initial.grad_sq_norm, sizeof(double)) != 0) {
        throw differ("problem or its data",
                     fmt::format("f(x_0) = {}, |grad f(x_0)|^2 = {}", then.loss, then.grad_sq_norm),
                     fmt::format("f(x_0) = {}, |grad f(x_0)|^2 = {}", now.initial.loss,
                                 now.initial.grad_sq_norm));
      }
    });
  } else {
    Agreed(options, [&] {
      if (spec.reference) {
        if constexpr (std::is_same_v<T, double>) {
          constants =
              ReferenceConstants(*problem, spec.seed, spec.reference_iterations, options.stop);
        } else {
          const std::unique_ptr<Problem<double>> exact = MakeProblem<double>(
              *spec.problem, {spec.workers, spec.seed, data.data.get(), false, memory});
          constants =
              ReferenceConstants(*exact, spec.seed, spec.reference_iterations, options.stop);
        }
      }
      writer->SetMeta("kind", KindOfCommand(options.command));
      writer->SetMeta("lemmalab_version", Build().version);
      writer->SetMeta("commit", Build().commit);
      writer->SetMeta("build", Build().build);
      writer->SetMeta("spec_path", spec.path.string());
      writer->SetMeta("spec_text", spec.text);
      writer->SetMeta("settings", JoinNames(spec.settings));
      writer->SetMeta("description", spec.description);
      writer->SetMeta("seed", fmt::format("{}", spec.seed));
      writer->SetMeta("steps", fmt::format("{}", spec.steps));
      writer->SetMeta("workers", fmt::format("{}", spec.workers));
      writer->SetMeta("processes", fmt::format("{}", ProcessCount(options)));
      writer->SetMeta("precision", PrecisionName(spec.precision));
      writer->SetMeta("problem", problem->Describe());
      writer->SetMeta("dimension", fmt::format("{}", problem->dimension()));
      for (const Constant& c : constants) writer->AddConstant(std::nullopt, c);
      writer->AddShards(problem->Shards());
    });
  }
  std::optional<double> f_star;
  if (const Constant* c = FindConstant(constants, "f_star")) f_star = c->value;

  ExperimentReport report;
  report.problem = problem->Describe();
  report.constants = constants;
  report.shards = problem->Shards();
  report.workers = spec.workers;
  report.precision = spec.precision;
  report.communication = fmt::format(
      "scheme {}, {} node{} x {} worker{}, {}; network: {}", SchemeName(spec.comm.scheme),
      spec.comm.topology.nodes, spec.comm.topology.nodes == 1 ? "" : "s",
      spec.comm.topology.workers_per_node, spec.comm.topology.workers_per_node == 1 ? "" : "s",
      options.transport == nullptr ? "in-process" : options.transport->name(),
      DescribeNetwork(*network));
  if (!options.resume) writer->SetMeta("communication", report.communication);
  Progress progress(options.progress && reporting);
  const std::size_t first = finished.size();
  for (std::size_t k = 0; k < runs.size(); ++k) {
    // A checkpoint of run k saves the runs before it as finished: k joins them afterwards.
    if (k >= first) {
      finished.push_back(Execute(spec, static_cast<std::int64_t>(k), runs[k], *problem, initial,
                                 f_star, *network, options, *writer, progress, checkpoints));
    }
    finished[k].hyperparameters = runs[k].hyperparameters;
  }
  std::vector<Eigen::VectorXd> params;
  for (const RunReport& r : finished) params.push_back(r.final_params);
  writer->Commit(params, spec.precision);
  report.runs = std::move(finished);
  return report;
}

}  // namespace

void RequireNoProbes(const RunSpec& spec) {
  if (spec.probes.empty() && spec.check_probes.empty()) return;
  throw UserError(fmt::format(
      "{}: probes read every worker's state, which one MPI rank does not hold; run specs with "
      "probes in one process (without mpirun)",
      spec.path.string()));
}

ExperimentReport RunExperiment(const RunSpec& spec, const ExperimentOptions& options) {
  return DispatchPrecision(spec.precision,
                           [&]<typename T>() { return RunTyped<T>(spec, options, false); });
}

ExperimentReport ValidateExperiment(const RunSpec& spec, DataCache* data_cache,
                                    bool probes_may_not_apply) {
  ExperimentOptions options;
  options.data_cache = data_cache;
  options.probes_may_not_apply = probes_may_not_apply;
  return DispatchPrecision(spec.precision,
                           [&]<typename T>() { return RunTyped<T>(spec, options, true); });
}

DataCache::Entry DataCache::Get(OptionTable& table, const DataContext& context) {
  std::string key = fmt::format("{}|{}", ShowValue({table.Clone(), ""}), context.base_dir.string());
  if (const auto it = table.entries().find("source"); it != table.entries().end()) {
    const auto* name = std::get_if<std::string>(&it->second.data);
    const DataSourceInfo* source = name == nullptr ? nullptr : DataSources().Find(*name);
    if (source != nullptr && source->uses_seed) key += fmt::format("|seed {}", context.seed);
  }
  const std::lock_guard guard(mutex_);
  if (const auto it = entries_.find(key); it != entries_.end()) return it->second;
  Entry entry{std::make_shared<const Dataset>(LoadData(table, context)), table.Resolved()};
  entries_.emplace(key, entry);
  return entry;
}

}  // namespace lemmalab
