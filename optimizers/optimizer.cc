#include "optimizers/optimizer.h"

#include "compressors/one_bit.h"
#include "core/error.h"

namespace lemmalab {

std::vector<std::int64_t> ExchangeLayout::WorkerBounds(std::int64_t dimension) const {
  if (bounds.empty()) return {0, dimension};
  if (!hierarchical) return bounds;
  std::vector<std::int64_t> parts;
  for (int r = 0; r <= workers_per_node; ++r)
    parts.push_back(bounds[static_cast<std::size_t>(r * nodes)]);
  return parts;
}

std::vector<std::int64_t> ExchangeLayout::NodeBounds(int part) const {
  LEMMALAB_CHECK(hierarchical && 0 <= part && part < workers_per_node,
                 "node range {} of a layout with {} per node", part, workers_per_node);
  const auto first = static_cast<std::size_t>(part * nodes);
  std::vector<std::int64_t> chunks;
  for (int k = 0; k <= nodes; ++k) {
    chunks.push_back(bounds[first + static_cast<std::size_t>(k)] - bounds[first]);
  }
  return chunks;
}

std::pair<std::int64_t, std::int64_t> ExchangeLayout::Chunk(int c, std::int64_t dimension) const {
  if (bounds.empty()) return {0, dimension};
  return {bounds[static_cast<std::size_t>(c)], bounds[static_cast<std::size_t>(c) + 1]};
}

template <typename T>
double FixedOrderSquaredNorm(const Vector<T>& v) {
  return one_bit::SumSquares(one_bit::Input<T>{v.data(), nullptr, T(1)}, 0, v.size());
}

template double FixedOrderSquaredNorm(const Vector<float>&);
template double FixedOrderSquaredNorm(const Vector<double>&);

template <typename T>
void DistributedOptimizer<T>::Split(const StepContext& /*ctx*/, int /*worker*/,
                                    const Message& whole, std::vector<Message>& parts) {
  parts.assign(1, whole);
}

template <typename T>
void DistributedOptimizer<T>::NodeStep(const StepContext& /*ctx*/, int /*node*/, int /*part*/,
                                       std::span<const Message> /*received*/,
                                       std::vector<Message>& /*out*/) {
  LEMMALAB_CHECK(false, "NodeStep called on an optimizer without hierarchy support");
}

template class DistributedOptimizer<float>;
template class DistributedOptimizer<double>;

}  // namespace lemmalab
