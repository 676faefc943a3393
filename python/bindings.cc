// _lemmalab: runs a spec in this process, for python/lemmalab/session.py (`lemmalab.run`).
//
//   run(spec_text, spec_path, settings, out_dir, trace, on_step) -> dict
//
// spec_text is TOML (session.py renders a dict spec with the toml library); spec_path is where it
// is read from as far as messages and relative [data] paths are concerned; settings are --set
// arguments ("optimizer.beta=0.9"); out_dir, when not None, receives the results folder
// `lemmalab run --out` writes; trace is None or {"steps": "A-B", "coords": "...", "workers":
// "..."} as `lemmalab trace` takes them (without out_dir the run ends at the last traced step,
// as `lemmalab trace` runs it); on_step is None or called as on_step(label, step, last_step,
// minibatch_loss) after every step. The code is the CLI's (engine/experiment.h, cli/trace.h), so
// the parameters are the CLI's bit for bit.
//
// The result holds "labels", "params" (one float64 array per run: the final parameters, exact
// for fp32 runs too), "report" (what `lemmalab run` prints), "notes" (what `lemmalab trace`
// notes before its tables) and, with a trace, "trace" (columns label, step, worker, symbol,
// coordinate, value; worker -1 is the server) and "symbols" (label, symbol, index: "coordinate"
// or "block" for per-layer and per-block values, source, meaning). A spec error raises SpecError
// (a ValueError) with the message the CLI prints after "error: "; Ctrl-C raises
// KeyboardInterrupt between steps; an exception in on_step is raised once the run has stopped.

// Name the Python and C++ types in a failed conversion (a bad argument from session.py).
#define PYBIND11_DETAILED_ERROR_MESSAGES
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <exception>
#include <optional>

#include "cli/run_table.h"
#include "cli/trace.h"
#include "core/error.h"
#include "engine/experiment.h"
#include "engine/spec.h"
#include "optimizers/optimizer.h"

namespace py = pybind11;

namespace lemmalab {
namespace {

py::dict TraceColumns(const StepTrace& trace, const std::vector<TraceRow>& rows) {
  py::list label, worker, symbol;
  py::array_t<std::int64_t> step(static_cast<py::ssize_t>(rows.size()));
  py::array_t<std::int64_t> coordinate(static_cast<py::ssize_t>(rows.size()));
  py::array_t<double> value(static_cast<py::ssize_t>(rows.size()));
  auto steps = step.mutable_unchecked<1>();
  auto coordinates = coordinate.mutable_unchecked<1>();
  auto values = value.mutable_unchecked<1>();
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const TraceRow& row = rows[k];
    const auto i = static_cast<py::ssize_t>(k);
    label.append(trace.runs()[static_cast<std::size_t>(row.run)]);
    worker.append(row.worker == kServer ? -1 : row.worker);
    symbol.append(std::string(trace.symbols()[static_cast<std::size_t>(row.symbol)].name));
    steps(i) = row.step;
    coordinates(i) = row.coordinate;
    values(i) = row.value;
  }
  py::dict columns;
  columns["label"] = label;
  columns["step"] = step;
  columns["worker"] = worker;
  columns["symbol"] = symbol;
  columns["coordinate"] = coordinate;
  columns["value"] = value;
  return columns;
}

py::list SymbolRows(const StepTrace& trace, const std::vector<TraceRow>& traced) {
  py::list rows;
  for (const auto& [run, index, by_coordinate] : StepTrace::SymbolsIn(traced)) {
    const TraceSymbol& s = trace.symbols()[static_cast<std::size_t>(index)];
    rows.append(py::make_tuple(trace.runs()[static_cast<std::size_t>(run)], std::string(s.name),
                               by_coordinate ? "coordinate" : "block", std::string(s.source),
                               std::string(s.meaning)));
  }
  return rows;
}

py::dict Run(const std::string& spec_text, const std::string& spec_path,
             const std::vector<std::string>& settings, std::optional<std::string> out_dir,
             std::optional<py::dict> trace_request, std::optional<py::function> on_step) {
  const RunSpec spec = ParseSpec(spec_text, spec_path, settings);
  DataCache data;
  std::vector<std::string> labels;
  for (const OptimizerSpec& optimizer : spec.optimizers) labels.push_back(optimizer.label);

  std::optional<StepTrace> trace;
  std::vector<std::string> notes;  // defaults the trace took, runs that stopped before it ended
  if (trace_request) {
    // The request as the CLI spells it ("1-2", "0,1,5-7", "all"), checked as the CLI checks it.
    const auto text = [&](const char* key) {
      return trace_request->contains(key) ? (*trace_request)[key].cast<std::string>()
                                          : std::string();
    };
    const TraceRequest request{text("steps"), text("coords"), text("workers")};
    TraceOutcome outcome = PrepareTrace(spec, request, data);
    trace.emplace(outcome.selection);
    notes = std::move(outcome.notes);
  }

  std::atomic<bool> stop = false;
  std::exception_ptr callback_error;
  std::size_t run_index = 0;
  std::int64_t previous_step = 0;
  // A trace without results needs no step past the last traced one (as `lemmalab trace`).
  const std::int64_t last = trace && !out_dir ? trace->selection().last_step : spec.steps;
  ExperimentOptions options;
  options.progress = false;
  options.stop = &stop;
  options.data_cache = &data;
  options.trace = trace ? &*trace : nullptr;
  options.discard_results = !out_dir;
  options.last_step = last;
  if (out_dir) options.out_dir = *out_dir;
  options.on_step = [&](std::int64_t step, double loss) {
    if (step <= previous_step) ++run_index;  // the next run started
    previous_step = step;
    const py::gil_scoped_acquire gil;
    try {
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      if (on_step) (*on_step)(labels.at(run_index), step, last, loss);
    } catch (...) {
      callback_error = std::current_exception();
      stop = true;
    }
  };
  ExperimentReport report;
  try {
    const py::gil_scoped_release release;
    report = RunExperiment(spec, options);
  } catch (const Interrupted&) {
    if (callback_error) std::rethrow_exception(callback_error);
    throw;
  }
  // An error in the callback of the last step: the run had nothing left to stop.
  if (callback_error) std::rethrow_exception(callback_error);

  py::dict result;
  result["labels"] = labels;
  py::list params;
  for (const RunReport& run : report.runs) {
    const Eigen::VectorXd& x = run.final_params;
    params.append(py::array_t<double>(x.size(), x.data()));
  }
  result["params"] = params;
  result["report"] = FormatRunTable(report);
  if (trace) {
    for (std::string& gap : TraceGaps(report, trace->selection())) notes.push_back(std::move(gap));
    const std::vector<TraceRow> rows = trace->Rows();
    result["trace"] = TraceColumns(*trace, rows);
    result["symbols"] = SymbolRows(*trace, rows);
  }
  result["notes"] = notes;
  return result;
}

}  // namespace
}  // namespace lemmalab

PYBIND11_MODULE(_lemmalab, m) {
  m.doc() = "lemmalab's engine, in-process (see python/lemmalab/session.py)";
  py::register_exception<lemmalab::UserError>(m, "SpecError", PyExc_ValueError);
  m.def("run", &lemmalab::Run, py::arg("spec_text"), py::arg("spec_path"),
        py::arg("settings") = std::vector<std::string>{}, py::arg("out_dir") = py::none(),
        py::arg("trace") = py::none(), py::arg("on_step") = py::none(),
        "Runs a spec in this process; see the module's source for the result's keys");
}
