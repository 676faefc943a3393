// A step-by-step trace of a run: the vectors an algorithm computes, by the symbols of its paper,
// at chosen steps, workers and coordinates (`lemmalab trace`, the Python bindings).
//
// The trace is taken inside the real step: the optimizers, the compressed exchange and the cluster
// hand it the values they have just computed (StepContext::trace), and a traced run executes the
// same arithmetic on the same streams as an untraced one, so tracing changes no bit of a run
// (tests/trace_test.cc). Recording copies values out; it never writes back.
//
// A row is (run, step, worker, symbol, coordinate, value): worker is a worker index or kServer
// (the aggregation point and the replicas' common update); coordinate is the index into the
// parameter vector, or the index of a layer or block for per-layer and per-block values. The draw
// words of a stochastic compressor whose element j is decided by word j of its stream
// (Compressor::draws_word_per_element) are recorded as the symbol of its `words`, one 32-bit word
// per traced coordinate, so a reader can redo each stochastic decision by hand.
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/rng.h"
#include "core/types.h"

namespace lemmalab {

// A quantity of an algorithm's step as its paper names it. The strings are literals.
struct TraceSymbol {
  std::string_view name;     // "m", "Q(u)", "e_bar"
  std::string_view source;   // where the paper computes it: "birder.txt Alg. 1 line 5"
  std::string_view meaning;  // the formula, in words and ASCII
};

// What to trace. Steps are 1-based and inclusive.
struct TraceSelection {
  std::int64_t first_step = 1;
  std::int64_t last_step = 1;
  std::vector<std::int64_t> coordinates = {};  // empty: every coordinate
  std::vector<int> workers = {};               // empty: every worker; the server is always traced
};

struct TraceRow {
  int run = 0;  // index into StepTrace::runs()
  std::int64_t step = 0;
  int worker = 0;  // or kServer (optimizers/optimizer.h)
  int symbol = 0;  // index into StepTrace::symbols()
  // The coordinate of the parameter vector (by_coordinate), or the layer or block of a per-layer
  // or per-block value.
  std::int64_t coordinate = 0;
  bool by_coordinate = false;
  double value = 0;
};

// Collects the rows of the traced steps. Recording is thread-safe (workers step in parallel);
// Rows() orders them by run, step, worker (the server last), symbol (in the order the sender
// first recorded it at that step) and coordinate.
class StepTrace {
 public:
  explicit StepTrace(TraceSelection selection);

  const TraceSelection& selection() const { return selection_; }
  // Rows recorded from now on belong to the run named `label`.
  void BeginRun(std::string label);

  // Whether anything of `worker` (or kServer) at `step` is traced.
  bool Wants(std::int64_t step, int worker) const;

  std::vector<TraceRow> Rows() const;
  const std::vector<std::string>& runs() const { return runs_; }
  const std::vector<TraceSymbol>& symbols() const { return symbols_; }
  // The symbols each run recorded in `rows` (Rows()), in the order the rows first list them.
  struct SymbolUse {
    int run = 0;
    int symbol = 0;
    bool by_coordinate = false;  // its rows are indexed by coordinate, not by layer or block
  };
  static std::vector<SymbolUse> SymbolsIn(const std::vector<TraceRow>& rows);

 private:
  friend class TraceScope;  // records only what Wants selects, so these do not ask again

  // The traced coordinates of `values`, whose element 0 is coordinate `offset` of the parameter
  // vector (a server chunk's or a block's range).
  template <typename T>
  void Vector(std::int64_t step, int worker, const TraceSymbol& symbol, ConstVectorRef<T> values,
              std::int64_t offset = 0);
  // Every element of `values`, indexed by its position (per-layer and per-block scalars).
  void Indexed(std::int64_t step, int worker, const TraceSymbol& symbol,
               std::span<const double> values);
  // The words that decided the traced coordinates of [offset, offset + length): coordinate
  // offset + j was decided by word start.position() + j of `start`'s stream.
  void Words(std::int64_t step, int worker, const TraceSymbol& symbol, const PhiloxStream& start,
             std::int64_t offset, std::int64_t length);
  // Appends one row under the lock; `symbol` is registered on first use.
  void Add(std::int64_t step, int worker, const TraceSymbol& symbol, std::int64_t coordinate,
           bool by_coordinate, double value);
  // The traced coordinates in [begin, end), ascending.
  std::vector<std::int64_t> CoordinatesIn(std::int64_t begin, std::int64_t end) const;

  TraceSelection selection_;
  mutable std::mutex mutex_;
  std::vector<std::string> runs_;
  std::vector<TraceSymbol> symbols_;
  std::vector<TraceRow> rows_;
};

// One worker's (or the server's) part of one traced step, as StepContext::Trace hands it to the
// phases: false when nothing of it is traced, so that an untraced step pays one test.
class TraceScope {
 public:
  TraceScope() = default;
  TraceScope(StepTrace* trace, std::int64_t step, int worker)
      : trace_(trace), step_(step), worker_(worker) {}

  explicit operator bool() const { return trace_ != nullptr; }

  template <typename T>
  void Vector(const TraceSymbol& symbol, ConstVectorRef<T> values, std::int64_t offset = 0) const {
    trace_->Vector<T>(step_, worker_, symbol, values, offset);
  }
  void Indexed(const TraceSymbol& symbol, std::span<const double> values) const {
    trace_->Indexed(step_, worker_, symbol, values);
  }
  void Words(const TraceSymbol& symbol, const PhiloxStream& start, std::int64_t offset,
             std::int64_t length) const {
    trace_->Words(step_, worker_, symbol, start, offset, length);
  }

 private:
  StepTrace* trace_ = nullptr;
  std::int64_t step_ = 0;
  int worker_ = 0;
};

}  // namespace lemmalab
