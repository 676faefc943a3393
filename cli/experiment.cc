#include "cli/experiment.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <set>
#include <tuple>
#include <type_traits>

#include "cli/progress.h"
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
  RunProbeSink(ResultsWriter& writer, std::int64_t run_id) : writer_(writer), run_id_(run_id) {}
  // `recorded`: whether this step's values are kept (probe_every). A series' first value is
  // kept whatever the step: some are recorded once (a declared q, the frozen variance).
  void At(std::int64_t step, std::string_view probe, bool recorded) {
    step_ = step;
    probe_ = probe;
    recorded_ = recorded;
  }
  void Record(std::string_view series, int worker, double value) override {
    // Looked up without copying the names; a new series' names are copied once.
    const bool first = !seen_.contains(std::tuple{probe_, series, worker});
    if (first) seen_.emplace(std::string(probe_), std::string(series), worker);
    if (!recorded_ && !first) return;
    writer_.AddProbe(run_id_, step_, probe_, series,
                     worker == kRunWide ? std::nullopt : std::optional<int>(worker), value);
  }

 private:
  ResultsWriter& writer_;
  std::int64_t run_id_;
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
};

// The per-step metrics between two records (metrics_every): sums of the counters, the mean loss
// and the largest gradient norm.
struct MetricsWindow {
  std::int64_t steps = 0;
  double loss = 0, largest_gradient = 0, bits_sent = 0, bits_received = 0, bytes_intra = 0,
         bytes_inter = 0, comm_seconds = 0;
};

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
RunReport Execute(const RunSpec& spec, PreparedRun<T>& run, const Problem<T>& problem,
                  const Evaluation& initial, std::optional<double> f_star,
                  const NetworkModel& network, const ExperimentOptions& options,
                  ResultsWriter& writer, Progress& progress) {
  RunReport report;
  RunRecord& record = report.record;
  record.label = run.spec->label;
  record.optimizer = run.optimizer;
  record.schedule = run.schedule->Describe();
  record.status = "running";
  const std::int64_t run_id = writer.AddRun(record);
  writer.AddHyperparameters(run_id, run.hyperparameters);
  report.dimension = problem.dimension();

  Vector<T> x = problem.InitialPoint();
  Cluster<T> cluster(problem, *run.algorithm, spec.comm, options.threads, options.transport,
                     fmt::format("optimizer '{}'", run.spec->label));
  RunProbeSink sink(writer, run_id);
  Observable<T>& view = run.algorithm->observable();
  for (auto& probe : run.probes) probe->Attach(view, x);
  const auto record_evaluation = [&](std::int64_t step, const Evaluation& e) {
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
  const auto evaluate = [&](std::int64_t step) {
    return record_evaluation(step, problem.Evaluate(x));
  };

  const std::int64_t steps =  // this run's last step
      options.last_step > 0 ? std::min(options.last_step, spec.steps) : spec.steps;
  if (options.trace != nullptr) options.trace->BeginRun(record.label);
  const auto start = std::chrono::steady_clock::now();
  progress.Start(record.label, steps);
  Evaluation last = record_evaluation(0, initial);
  const double initial_loss = last.loss;
  std::int64_t evaluated_at = 0, bytes_sent = 0;
  double bytes_intra = 0, bytes_inter = 0, step_seconds = 0, comm_seconds = 0;
  std::string failure;
  std::int64_t t = 1;
  const auto n = static_cast<double>(spec.workers);
  const std::int64_t metrics_every = std::max<std::int64_t>(1, spec.metrics_every);
  const std::int64_t probe_every = std::max<std::int64_t>(1, spec.probe_every);
  MetricsWindow window;
  for (; t <= steps; ++t) {
    if (options.stop != nullptr && options.stop->load()) throw Interrupted();
    const StepContext ctx{t, run.schedule->Rate(t), spec.seed, options.trace};
    const auto step_start = std::chrono::steady_clock::now();
    const StepResult& result = cluster.Step(ctx, x);
    step_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count();
    LinkBytes step_bytes = result.traffic.server.sent;
    for (const EndpointTraffic& w : result.traffic.workers) step_bytes += w.sent;
    const double projected = network.StepSeconds(result.traffic.rounds);
    bytes_intra += static_cast<double>(step_bytes.intra);
    bytes_inter += static_cast<double>(step_bytes.inter);
    comm_seconds += projected;

    double loss = 0, largest_gradient = 0;
    std::int64_t sent = 0, received = 0;
    for (std::size_t w = 0; w < result.minibatch_loss.size(); ++w) {
      loss += result.minibatch_loss[w];
      largest_gradient = std::max(largest_gradient, result.gradient_norm[w]);
      sent += result.traffic.sent(static_cast<int>(w));
      received += result.traffic.received(static_cast<int>(w));
    }
    bytes_sent += sent;
    report.observed_g = std::max(report.observed_g, largest_gradient);
    ++window.steps;
    window.loss += loss / n;
    window.largest_gradient = std::max(window.largest_gradient, largest_gradient);
    window.bits_sent += 8.0 * static_cast<double>(sent) / n;
    window.bits_received += 8.0 * static_cast<double>(received) / n;
    window.bytes_intra += static_cast<double>(step_bytes.intra);
    window.bytes_inter += static_cast<double>(step_bytes.inter);
    window.comm_seconds += projected;

    failure = FailureAfterStep(view, spec.workers, loss / n, initial_loss, x);
    const bool last_step = t == steps || !failure.empty();
    const bool evaluated = last_step || t % spec.eval_every == 0;
    if (evaluated || t % metrics_every == 0) {
      writer.AddMetric(run_id, t, "lr", std::nullopt, ctx.lr);
      writer.AddMetric(run_id, t, "minibatch_loss", std::nullopt,
                       window.loss / static_cast<double>(window.steps));
      writer.AddMetric(run_id, t, "max_grad_norm", std::nullopt, window.largest_gradient);
      writer.AddMetric(run_id, t, "bits_sent", std::nullopt, window.bits_sent);
      writer.AddMetric(run_id, t, "bits_received", std::nullopt, window.bits_received);
      writer.AddMetric(run_id, t, "bytes_intra", std::nullopt, window.bytes_intra);
      writer.AddMetric(run_id, t, "bytes_inter", std::nullopt, window.bytes_inter);
      writer.AddMetric(run_id, t, "comm_seconds", std::nullopt, window.comm_seconds);
      window = {};
    }
    if (!run.probes.empty()) {
      const std::span<const Vector<T>> consumed = view.ConsumedGradients();
      const ProbeStep<T> probe_step{t, ctx.lr, x, consumed.empty() ? cluster.gradients() : consumed,
                                    problem};
      for (auto& probe : run.probes) {
        sink.At(t, probe->name(), last_step || t % probe_every == 0);
        probe->Observe(probe_step, view, sink);
      }
    }
    if (evaluated) {
      last = evaluate(t);
      evaluated_at = t;
      if (failure.empty() && !std::isfinite(last.loss)) failure = "the training loss is not finite";
    }
    if (options.on_step) options.on_step(t, loss / n);
    if (!failure.empty()) break;
    progress.Update(t);
  }
  progress.Finish();

  record.steps_done = std::min(t, steps);
  record.dimension = problem.dimension();
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
  const auto done = static_cast<double>(std::max<std::int64_t>(1, record.steps_done));
  record.bytes_intra_per_step = bytes_intra / done;
  record.bytes_inter_per_step = bytes_inter / done;
  record.step_seconds = step_seconds / done;
  record.comm_seconds_per_step = comm_seconds / done;
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

// Builds everything the spec asks for and, unless `validate_only`, runs it.
template <typename T>
ExperimentReport RunTyped(const RunSpec& spec, const ExperimentOptions& options,
                          bool validate_only) {
  // Build and validate everything before the first step.
  DataCache::Entry data;
  if (spec.data) {
    const DataContext context{spec.seed, spec.path.parent_path()};
    if (options.data_cache != nullptr) {
      data = options.data_cache->Get(*spec.data, context);
    } else {
      data.data = std::make_shared<const Dataset>(LoadData(*spec.data, context));
      data.resolved = spec.data->Resolved();
    }
  }
  const std::unique_ptr<Problem<T>> problem =
      MakeProblem<T>(*spec.problem, {spec.workers, spec.seed, data.data.get()});
  problem->set_threads(options.threads);
  std::vector<Constant> constants = problem->Constants();
  if (spec.reference && !validate_only) {
    if constexpr (std::is_same_v<T, double>) {
      constants = ReferenceConstants(*problem, spec.seed, spec.reference_iterations, options.stop);
    } else {
      const std::unique_ptr<Problem<double>> exact =
          MakeProblem<double>(*spec.problem, {spec.workers, spec.seed, data.data.get()});
      constants = ReferenceConstants(*exact, spec.seed, spec.reference_iterations, options.stop);
    }
  }
  std::optional<double> f_star;
  if (const Constant* c = FindConstant(constants, "f_star")) f_star = c->value;
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
  const NetworkModel network = NetworkFromOptions(network_options);
  if (spec.network) spec.network->RejectUnknownKeys();
  if (options.transport != nullptr) RequireNoProbes(spec);

  const Hyperparameters setting = SettingOf(spec, data.resolved, network_options);
  std::vector<PreparedRun<T>> runs;
  std::vector<bool> probe_applied(spec.probes.size(), false);
  for (const OptimizerSpec& o : spec.optimizers) {
    PreparedRun<T> run;
    run.spec = &o;
    run.optimizer = o.options->GetString("name", "");
    run.schedule = MakeSchedule(*o.schedule, {spec.steps, spec.workers});
    try {
      run.algorithm = MakeOptimizer<T>(*o.options, optimizer_context);
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
  std::vector<std::string> unused_probes;
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

  if (validate_only) {
    ExperimentReport report;
    report.unused_probes = std::move(unused_probes);
    for (PreparedRun<T>& run : runs) {
      RunReport& r = report.runs.emplace_back();
      r.record.label = run.spec->label;
      r.record.optimizer = run.optimizer;
      r.dimension = problem->dimension();
      r.hyperparameters = std::move(run.hyperparameters);
    }
    return report;
  }
  const bool reporting = options.transport == nullptr || options.transport->reports();
  ResultsWriter writer = reporting && !options.discard_results
                             ? ResultsWriter(options.out_dir, options.database_only)
                             : ResultsWriter::Discarding();
  writer.SetMeta("lemmalab_version", Build().version);
  writer.SetMeta("commit", Build().commit);
  writer.SetMeta("build", Build().build);
  writer.SetMeta("spec_path", spec.path.string());
  writer.SetMeta("spec_text", spec.text);
  writer.SetMeta("description", spec.description);
  writer.SetMeta("seed", fmt::format("{}", spec.seed));
  writer.SetMeta("steps", fmt::format("{}", spec.steps));
  writer.SetMeta("workers", fmt::format("{}", spec.workers));
  writer.SetMeta("precision", PrecisionName(spec.precision));
  writer.SetMeta("problem", problem->Describe());
  writer.SetMeta("dimension", fmt::format("{}", problem->dimension()));
  for (const Constant& c : constants) writer.AddConstant(std::nullopt, c);
  writer.AddShards(problem->Shards());

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
      DescribeNetwork(network));
  writer.SetMeta("communication", report.communication);
  Progress progress(options.progress && reporting);
  std::vector<Eigen::VectorXd> params;
  // Every run starts from the same point: it is evaluated once.
  const Evaluation initial = problem->Evaluate(problem->InitialPoint());
  for (PreparedRun<T>& run : runs) {
    report.runs.push_back(
        Execute(spec, run, *problem, initial, f_star, network, options, writer, progress));
    params.push_back(report.runs.back().final_params);
  }
  writer.Commit(params, spec.precision);
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
