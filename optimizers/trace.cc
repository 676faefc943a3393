#include "optimizers/trace.h"

#include <algorithm>
#include <limits>
#include <map>
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
  for (const std::int64_t j : CoordinatesIn(offset, offset + values.size())) {
    Add(step, worker, symbol, j, true, static_cast<double>(values[j - offset]));
  }
}

void StepTrace::Indexed(std::int64_t step, int worker, const TraceSymbol& symbol,
                        std::span<const double> values) {
  for (std::size_t k = 0; k < values.size(); ++k) {
    Add(step, worker, symbol, static_cast<std::int64_t>(k), false, values[k]);
  }
}

void StepTrace::Words(std::int64_t step, int worker, const TraceSymbol& symbol,
                      const PhiloxStream& start, std::int64_t offset, std::int64_t length) {
  const std::uint64_t first = start.position();
  PhiloxStream stream = start;  // a copy: the run's stream is not touched
  for (const std::int64_t j : CoordinatesIn(offset, offset + length)) {
    stream.Seek(first + static_cast<std::uint64_t>(j - offset));
    Add(step, worker, symbol, j, true, static_cast<double>(stream()));
  }
}

void StepTrace::Add(std::int64_t step, int worker, const TraceSymbol& symbol,
                    std::int64_t coordinate, bool by_coordinate, double value) {
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
  // Within one run, step and sender, symbols come in the order they were first recorded there:
  // a sender records its symbols in program order (the server's chunks each in the same order),
  // so that is the algorithm's order whatever the threads' interleaving.
  using Group = std::tuple<int, std::int64_t, int>;
  std::map<std::pair<Group, int>, std::size_t> rank;  // (group, symbol) -> rank in the group
  std::map<Group, std::size_t> symbols_in;
  for (const TraceRow& r : rows_) {
    const Group group{r.run, r.step, r.worker};
    if (rank.emplace(std::pair{group, r.symbol}, symbols_in[group]).second) ++symbols_in[group];
  }
  const auto key = [&](const TraceRow& r) {
    const int worker = r.worker == kServer ? std::numeric_limits<int>::max() : r.worker;
    return std::tuple(r.run, r.step, worker, rank.at({Group{r.run, r.step, r.worker}, r.symbol}),
                      r.coordinate);
  };
  std::vector<TraceRow> rows = rows_;
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const TraceRow& a, const TraceRow& b) { return key(a) < key(b); });
  return rows;
}

std::vector<StepTrace::SymbolUse> StepTrace::SymbolsIn(const std::vector<TraceRow>& rows) {
  std::vector<SymbolUse> uses;
  for (const TraceRow& row : rows) {
    const auto same = [&](const SymbolUse& u) {
      return u.run == row.run && u.symbol == row.symbol;
    };
    if (std::none_of(uses.begin(), uses.end(), same)) {
      uses.push_back({row.run, row.symbol, row.by_coordinate});
    }
  }
  return uses;
}

template void StepTrace::Vector<float>(std::int64_t, int, const TraceSymbol&, ConstVectorRef<float>,
                                       std::int64_t);
template void StepTrace::Vector<double>(std::int64_t, int, const TraceSymbol&,
                                        ConstVectorRef<double>, std::int64_t);

}  // namespace lemmalab
