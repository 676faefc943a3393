#include "optimizers/trace.h"

#include <algorithm>
#include <limits>
#include <tuple>

#include "optimizers/optimizer.h"

namespace lemmalab {

StepTrace::StepTrace(TraceSelection selection) : selection_(std::move(selection)) {
  std::sort(selection_.coordinates.begin(), selection_.coordinates.end());
  selection_.coordinates.erase(
      std::unique(selection_.coordinates.begin(), selection_.coordinates.end()),
      selection_.coordinates.end());
}

void StepTrace::BeginRun(std::string label) {
  const std::lock_guard lock(mutex_);
  runs_.push_back(std::move(label));
}

bool StepTrace::Wants(std::int64_t step, int worker) const {
  if (step < selection_.first_step || step > selection_.last_step) return false;
  if (worker == kServer || selection_.workers.empty()) return true;
  return std::find(selection_.workers.begin(), selection_.workers.end(), worker) !=
         selection_.workers.end();
}

std::vector<std::int64_t> StepTrace::CoordinatesIn(std::int64_t begin, std::int64_t end) const {
  std::vector<std::int64_t> in;
  if (selection_.coordinates.empty()) {
    for (std::int64_t j = begin; j < end; ++j) in.push_back(j);
    return in;
  }
  const auto first =
      std::lower_bound(selection_.coordinates.begin(), selection_.coordinates.end(), begin);
  for (auto it = first; it != selection_.coordinates.end() && *it < end; ++it) in.push_back(*it);
  return in;
}

template <typename T>
void StepTrace::Vector(std::int64_t step, int worker, const TraceSymbol& symbol,
                       ConstVectorRef<T> values, std::int64_t offset) {
  if (!Wants(step, worker)) return;
  for (const std::int64_t j : CoordinatesIn(offset, offset + values.size())) {
    Add(step, worker, symbol, j, true, static_cast<double>(values[j - offset]));
  }
}

void StepTrace::Indexed(std::int64_t step, int worker, const TraceSymbol& symbol,
                        std::span<const double> values) {
  if (!Wants(step, worker)) return;
  for (std::size_t k = 0; k < values.size(); ++k) {
    Add(step, worker, symbol, static_cast<std::int64_t>(k), false, values[k]);
  }
}

void StepTrace::Scalar(std::int64_t step, int worker, const TraceSymbol& symbol, double value) {
  if (!Wants(step, worker)) return;
  Add(step, worker, symbol, std::nullopt, false, value);
}

void StepTrace::Words(std::int64_t step, int worker, const TraceSymbol& symbol,
                      const PhiloxStream& start, std::int64_t offset, std::int64_t length) {
  if (!Wants(step, worker)) return;
  const std::uint64_t first = start.position();
  PhiloxStream stream = start;  // a copy: the run's stream is not touched
  for (const std::int64_t j : CoordinatesIn(offset, offset + length)) {
    stream.Seek(first + static_cast<std::uint64_t>(j - offset));
    Add(step, worker, symbol, j, true, static_cast<double>(stream()));
  }
}

void StepTrace::Add(std::int64_t step, int worker, const TraceSymbol& symbol,
                    std::optional<std::int64_t> coordinate, bool by_coordinate, double value) {
  const std::lock_guard lock(mutex_);
  const auto same = [&](const TraceSymbol& s) {
    return s.name == symbol.name && s.source == symbol.source && s.meaning == symbol.meaning;
  };
  auto it = std::find_if(symbols_.begin(), symbols_.end(), same);
  if (it == symbols_.end()) {
    symbols_.push_back(symbol);
    it = symbols_.end() - 1;
  }
  const int run = runs_.empty() ? 0 : static_cast<int>(runs_.size()) - 1;
  rows_.push_back({run, step, worker, static_cast<int>(it - symbols_.begin()), coordinate,
                   by_coordinate, value});
}

std::vector<TraceRow> StepTrace::Rows() const {
  const std::lock_guard lock(mutex_);
  std::vector<TraceRow> rows = rows_;
  // Symbols are numbered in first-recorded order; every worker records its symbols in the same
  // program order, so that order is the algorithm's whatever the threads' interleaving.
  const auto key = [](const TraceRow& r) {
    const int worker = r.worker == kServer ? std::numeric_limits<int>::max() : r.worker;
    return std::tuple(r.run, r.step, worker, r.symbol,
                      r.coordinate.value_or(std::numeric_limits<std::int64_t>::min()));
  };
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const TraceRow& a, const TraceRow& b) { return key(a) < key(b); });
  return rows;
}

std::vector<std::pair<int, int>> StepTrace::SymbolsByRun() const {
  std::vector<std::pair<int, int>> pairs;
  for (const TraceRow& row : Rows()) pairs.emplace_back(row.run, row.symbol);
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  return pairs;
}

template void StepTrace::Vector<float>(std::int64_t, int, const TraceSymbol&, ConstVectorRef<float>,
                                       std::int64_t);
template void StepTrace::Vector<double>(std::int64_t, int, const TraceSymbol&,
                                        ConstVectorRef<double>, std::int64_t);

}  // namespace lemmalab
