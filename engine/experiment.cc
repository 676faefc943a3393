#include "engine/experiment.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <optional>
#include <type_traits>

#include "batched/device_optimizer.h"
#include "comm/cluster.h"
#include "comm/network.h"
#include "core/build_info.h"
#include "core/error.h"
#include "core/text.h"
#include "engine/checkpoint.h"
#include "engine/estimates.h"
#include "engine/job.h"
#include "engine/prepared.h"
#include "engine/progress.h"
#include "engine/result_folder.h"
#include "engine/resume.h"
#include "engine/run_loop.h"
#include "problems/reference.h"
#include "problems/supervised.h"

// An experiment runs in four phases, each reading what the one before it made:
//   Prepare        the spec in, a PreparedExperiment out (engine/prepared.h): every component
//                  built, every option and estimate checked, the results folder taken;
//   StartOrResume  the problem's constants and the results' metadata recorded, or the
//                  checkpoint restored;
//   RunLoop        each run, from x_0 or the checkpoint (engine/run_loop.h);
//   Commit         the results made visible, all at once.
namespace lemmalab {
namespace {

std::string DescribeLink(const std::string& name, const LinkCost& cost) {
  return fmt::format("{} ({:g} us, {:g} Gbit/s)", name, cost.latency_s * 1e6,
                     cost.bandwidth_bytes_per_s * 8e-9);
}

std::string DescribeNetwork(const NetworkModel& network) {
  return fmt::format("intra-node {}, inter-node {}",
                     DescribeLink(network.intra_name, network.intra),
                     DescribeLink(network.inter_name, network.inter));
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
  setting.Set("device", std::string(DeviceName(spec.device)));
  setting.Merge("problem", spec.problem->Resolved());
  if (spec.data) setting.Merge("data", data);
  setting.Set("communication.scheme", std::string(SchemeName(spec.comm.scheme)));
  setting.Set("communication.nodes", std::int64_t{spec.comm.topology.nodes});
  setting.Set("communication.workers_per_node", std::int64_t{spec.comm.topology.workers_per_node});
  setting.Merge("network", network.Resolved());
  return setting;
}

// Phase 1: everything before the first step, on every process alike (under MPI its failures are
// agreed, so that the job prints each once): data, problem, optimizers, probes, estimates and,
// unless `validate_only`, the results folder, checked against the checkpoint when resuming.
template <typename T>
PreparedExperiment<T> Prepare(const RunSpec& spec, const ExperimentOptions& options, const Job& job,
                              bool validate_only) {
  // A run that writes nothing (a trace) has nothing to checkpoint and ignores the key.
  if (!validate_only && spec.checkpoint_every > 0 && !options.checkpoints &&
      !options.discard_results) {
    throw UserError(fmt::format(
        "{}: checkpoint_every = {}: only lemmalab run saves checkpoints (and lemmalab run "
        "--resume continues them); remove it for check, sweep and Python runs",
        spec.path.string(), spec.checkpoint_every));
  }
  PreparedExperiment<T> e;
  e.plan = {options.last_step > 0 ? std::min(options.last_step, spec.steps) : spec.steps,
            spec.eval_every,
            std::max<std::int64_t>(1, spec.metrics_every),
            std::max<std::int64_t>(1, spec.probe_every),
            spec.workers,
            spec.seed,
            spec.comm};
  e.precision = spec.precision;
  e.checkpoint_every = spec.checkpoint_every;
  const MemoryLimit memory = options.max_memory.value_or(MemoryLimit::Machine());
  job.Agreed([&] {
    // Every option that does not depend on the data, checked before they load (real data sets
    // take seconds and hundreds of MB): the device's, the problem's, the schedules' and the
    // optimizers', the latter measured for the memory estimate at the same time.
    RequireDeviceFits(spec, options.device_backend, job.transport() != nullptr,
                      options.trace != nullptr);
    MakeProblem<T>(*spec.problem->Clone(), {spec.workers, spec.seed, nullptr, true});
    std::vector<Footprint> footprints;
    for (const OptimizerSpec& o : spec.optimizers) {
      MakeSchedule(*o.schedule->Clone(), {spec.steps, spec.workers});
      footprints.push_back(MeasureFootprint<T>(o));
    }
    DataCache::Entry data;
    if (spec.data) {
      const DataContext context{spec.seed, spec.path.parent_path(), memory};
      if (options.data_cache != nullptr) {
        data = options.data_cache->Get(*spec.data, context);
      } else {
        data.data = std::make_shared<const Dataset>(LoadData(*spec.data, context));
        data.resolved = spec.data->Resolved();
      }
    }
    e.data = data.data;
    e.problem =
        MakeProblem<T>(*spec.problem, {spec.workers, spec.seed, data.data.get(), false, memory});
    Problem<T>& problem = *e.problem;
    problem.set_threads(options.threads);
    e.constants = problem.Constants();
    const int local_workers = job.transport() == nullptr ? spec.workers : 1;
    const int threads = options.threads > 0 ? options.threads : omp_get_max_threads();
    const bool gradients_on_device = spec.device == Device::kCuda && options.device_gradients &&
                                     dynamic_cast<const SupervisedSamples<T>*>(&problem) != nullptr;
    RequireWithin(memory,
                  EstimateMemory(spec, problem, data.data.get(), footprints, local_workers, threads,
                                 options.shares_process ? 0 : ResidentBytes(), gradients_on_device),
                  spec.path.string(), "memory");
    OptimizerContext optimizer_context{problem.dimension(), spec.workers, problem.Layers(),
                                       LayoutFor(spec.comm, problem.dimension())};
    if (job.transport() != nullptr) {
      for (int i = 0; i < spec.workers; ++i) {
        if (job.Runs(i)) optimizer_context.local_workers.push_back(i);
      }
    }
    const ProbeContext run_probe_context{problem.dimension(), spec.workers, spec.seed};
    OptionTable no_network("[network]", spec.path.string());
    OptionTable& network_options = spec.network ? *spec.network : no_network;
    e.network = NetworkFromOptions(network_options);
    if (spec.network) spec.network->RejectUnknownKeys();
    if (job.transport() != nullptr) RequireNoProbes(spec);

    if (spec.device == Device::kCuda) {
      if (const auto limit = DeviceMemoryLimit(options.device_memory, options.device_backend)) {
        RequireWithin(
            *limit,
            EstimateDeviceMemory<T>(spec, problem, optimizer_context, options.device_gradients),
            spec.path.string(), "GPU memory");
      }
    }
    // The training samples on the device once, for every run's gradients.
    const std::shared_ptr<const batched::DeviceSamples<T>> device_samples =
        spec.device == Device::kCuda && options.device_gradients
            ? batched::DeviceSamples<T>::Of(problem, options.device_backend)
            : nullptr;
    const Hyperparameters setting = SettingOf(spec, data.resolved, network_options);
    std::vector<bool> probe_applied(spec.probes.size(), false);
    for (const OptimizerSpec& o : spec.optimizers) {
      PreparedRun<T> run;
      run.label = o.label;
      run.optimizer = o.options->GetString("name", "");
      run.schedule = MakeSchedule(*o.schedule, {spec.steps, spec.workers});
      try {
        run.algorithm =
            spec.device == Device::kCuda
                ? batched::MakeDeviceOptimizer<T>(*o.options, optimizer_context,
                                                  options.device_backend, device_samples)
                : MakeOptimizer<T>(*o.options, optimizer_context);
        RequireSchemeFits(spec.comm, *run.algorithm, "it");
      } catch (const UserError& error) {
        // A refusal that did not come from reading an option (a chunked scheme's, say) is given
        // the optimizer's table, so that every message names the file and line it is about.
        if (std::string_view(error.what()).starts_with(spec.path.string())) throw;
        throw UserError(
            fmt::format("{}: {}: {}", o.options->where(), o.options->context(), error.what()));
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
      e.runs.push_back(std::move(run));
    }
    for (std::size_t k = 0; k < spec.probes.size(); ++k) {
      if (probe_applied[k]) continue;
      if (options.probes_may_not_apply) {
        e.unused_probes.push_back(spec.probes[k]);
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
    std::size_t probes = 0;
    for (const PreparedRun<T>& run : e.runs) probes += run.probes.size();
    const MemoryEstimate results = EstimateResults(spec, e.runs.size(), probes);
    e.result_values = results.total() / kBytesPerResultRow;
    if (validate_only) return;

    e.communication = fmt::format(
        "scheme {}, {} node{} x {} worker{}, {}; network: {}", SchemeName(spec.comm.scheme),
        spec.comm.topology.nodes, spec.comm.topology.nodes == 1 ? "" : "s",
        spec.comm.topology.workers_per_node, spec.comm.topology.workers_per_node == 1 ? "" : "s",
        job.transport() == nullptr ? "in-process" : job.transport()->name(),
        DescribeNetwork(*e.network));
    const BuildInfo& build = Build();
    e.meta = {{"kind", std::string(KindOfCommand(options.command))},
              {"lemmalab_version", build.version},
              {"commit", build.commit},
              {"build", build.build},
              {"spec_path", spec.path.string()},
              {"spec_text", spec.text},
              {"settings", JoinNames(spec.settings)},
              {"description", spec.description},
              {"seed", fmt::format("{}", spec.seed)},
              {"steps", fmt::format("{}", spec.steps)},
              {"workers", fmt::format("{}", spec.workers)},
              {"processes", fmt::format("{}", job.processes())},
              {"precision", std::string(PrecisionName(spec.precision))},
              {"device", DescribeDevice(spec.device, options.device_backend)},
              {"problem", problem.Describe()},
              {"dimension", fmt::format("{}", problem.dimension())}};
    if (spec.reference && !options.resume) {
      e.reference_iterations = spec.reference_iterations;
      if constexpr (!std::is_same_v<T, double>) {
        e.exact = MakeProblem<double>(*spec.problem,
                                      {spec.workers, spec.seed, data.data.get(), false, memory});
      }
    }

    const bool writes = job.reports() && !options.discard_results;
    if (writes) {
      RequireWithin(options.max_results.value_or(FreeSpaceFor(options.out_dir)), results,
                    spec.path.string(), "results size");
    }
    using Mode = ResultsWriter::Mode;
    const Mode mode = options.resume              ? Mode::kResume
                      : spec.checkpoint_every > 0 ? Mode::kCheckpointed
                                                  : Mode::kFresh;
    e.writer.emplace(
        writes ? ResultsWriter(options.out_dir, options.database_only, mode, options.command)
               : ResultsWriter::Discarding());
    if (options.resume && job.reports()) RequireSameRun(e.meta, *e.writer, options.out_dir);
  });
  return e;
}

// What ValidateExperiment reports of a prepared experiment.
template <typename T>
ExperimentReport Validated(PreparedExperiment<T> e) {
  ExperimentReport report;
  report.unused_probes = std::move(e.unused_probes);
  report.result_values = e.result_values;
  for (PreparedRun<T>& run : e.runs) {
    RunReport& r = report.runs.emplace_back();
    r.record.label = run.label;
    r.record.optimizer = run.optimizer;
    r.dimension = e.problem->dimension();
    r.hyperparameters = std::move(run.hyperparameters);
  }
  return report;
}

// Phase 2: a fresh experiment records the problem's constants (with the reference's, when the
// spec asks for them) and its metadata; a resumed one restores the checkpoint instead, after
// checking it continues this run.
template <typename T>
void StartOrResume(PreparedExperiment<T>& e, Checkpointer& checkpointer, Checkpoints& checkpoints,
                   const ExperimentOptions& options, const Job& job) {
  if (options.resume) {
    const CheckpointMark mark = checkpointer.SharedMark();
    job.Agreed([&] { checkpoints.Resume(mark, options.out_dir); });
    return;
  }
  job.Agreed([&] {
    if (e.reference_iterations) {
      if constexpr (std::is_same_v<T, double>) {
        e.constants =
            ReferenceConstants(*e.problem, e.plan.seed, *e.reference_iterations, options.stop);
      } else {
        e.constants =
            ReferenceConstants(*e.exact, e.plan.seed, *e.reference_iterations, options.stop);
        e.exact.reset();
      }
    }
    for (const auto& [key, value] : e.meta) e.writer->SetMeta(key, value);
    for (const Constant& c : e.constants) e.writer->AddConstant(std::nullopt, c);
    e.writer->AddShards(e.problem->Shards());
  });
  e.writer->SetMeta("communication", e.communication);
}

// Phases 2 to 4 of an experiment that runs.
template <typename T>
ExperimentReport Run(const RunSpec& spec, const ExperimentOptions& options) {
  const Job job(options.transport, options.stop, options.stop_signal);
  PreparedExperiment<T> e = Prepare<T>(spec, options, job, false);

  // Every run starts from the same point: it is evaluated once.
  const Evaluation initial = e.problem->Evaluate(e.problem->InitialPoint());
  std::vector<RunReport> finished;
  // What a resumed run checks it continues (a checksum of the data only where checkpoints are
  // on: it reads every byte of them).
  const Checkpoints::Identity identity{
      initial, e.checkpoint_every > 0 && e.data ? DataChecksum(*e.data) : std::uint32_t{0}};
  Checkpointer checkpointer(*e.writer, ResultFolder(options.out_dir).staging(), e.checkpoint_every,
                            job.transport(), job.rank());
  Checkpoints checkpoints(checkpointer, e.constants, finished, identity,
                          {job.processes(), job.rank(), e.problem->dimension(), e.plan.workers});
  StartOrResume(e, checkpointer, checkpoints, options, job);

  // Phase 3: the runs. A checkpoint of run k saves the runs before it as finished: k joins them
  // afterwards.
  Progress progress(options.progress && job.reports());
  const std::size_t first = finished.size();
  for (std::size_t k = 0; k < e.runs.size(); ++k) {
    if (k >= first) {
      finished.push_back(
          RunLoop(e, static_cast<std::int64_t>(k), initial, options, job, progress, checkpoints));
    }
    finished[k].hyperparameters = e.runs[k].hyperparameters;
  }

  // Phase 4: commit.
  std::vector<Eigen::VectorXd> params;
  for (const RunReport& r : finished) params.push_back(r.final_params);
  e.writer->Commit(params, e.precision);

  ExperimentReport report;
  report.problem = e.problem->Describe();
  report.constants = e.constants;
  report.shards = e.problem->Shards();
  report.workers = e.plan.workers;
  report.precision = e.precision;
  report.communication = e.communication;
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
  return DispatchPrecision(spec.precision, [&]<typename T>() { return Run<T>(spec, options); });
}

ExperimentReport ValidateExperiment(const RunSpec& spec, DataCache* data_cache,
                                    bool probes_may_not_apply) {
  ExperimentOptions options;
  options.data_cache = data_cache;
  options.probes_may_not_apply = probes_may_not_apply;
  return DispatchPrecision(spec.precision, [&]<typename T>() {
    return Validated(Prepare<T>(spec, options, Job(nullptr, nullptr, nullptr), true));
  });
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
