#include "problems/logistic_regression.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/random/uniform_int_distribution.hpp>
#include <cmath>

#include "core/error.h"

namespace lemmalab {
namespace {

// log(1 + exp(z)) without overflow.
double Softplus(double z) { return z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z)); }

template <typename T>
T Sigmoid(T z) {
  if (z >= 0) return T(1) / (T(1) + std::exp(-z));
  const T e = std::exp(z);
  return e / (T(1) + e);
}

template <typename T>
class LogisticRegression final : public Problem<T> {
 public:
  LogisticRegression(const Dataset& data, const LogisticRegressionOptions& options,
                     const Shards& shards)
      : options_(options),
        dimension_(data.num_features() + (options.intercept ? 1 : 0)),
        samples_(data.train.size()),
        data_description_(data.description) {
    for (const auto& indices : shards) {
      Shard shard;
      const auto rows = static_cast<Eigen::Index>(indices.size());
      shard.a.resize(rows, dimension_);
      shard.y.resize(rows);
      for (Eigen::Index r = 0; r < rows; ++r) {
        const std::int64_t k = indices[static_cast<std::size_t>(r)];
        shard.a.row(r).head(data.num_features()) = data.train.features.row(k).template cast<T>();
        if (options.intercept) shard.a(r, dimension_ - 1) = T(1);
        shard.y[r] = static_cast<T>(data.train.labels[k]);
      }
      shards_.push_back(std::move(shard));
    }
  }

  std::int64_t dimension() const override { return dimension_; }
  int num_workers() const override { return static_cast<int>(shards_.size()); }
  Vector<T> InitialPoint() const override { return Vector<T>::Zero(dimension_); }

  double StochasticGradient(int worker, ConstVectorRef<T> x, PhiloxStream& stream,
                            VectorRef<T> g) const override {
    const Shard& shard = shards_[static_cast<std::size_t>(worker)];
    if (options_.batch_size == 0) return ShardLossAndGradient(shard.a, shard.y, x, g);
    std::vector<Eigen::Index> batch(static_cast<std::size_t>(options_.batch_size));
    boost::random::uniform_int_distribution<Eigen::Index> pick(0, shard.a.rows() - 1);
    for (auto& k : batch) k = pick(stream);
    const RowMatrix<T> a = shard.a(batch, Eigen::all);
    const Vector<T> y = shard.y(batch);
    return ShardLossAndGradient(a, y, x, g);
  }

  double Objective(ConstVectorRef<T> x, Vector<T>* gradient) const override {
    Vector<T> g(dimension_);
    double loss = 0;
    if (gradient != nullptr) gradient->setZero(dimension_);
    for (const Shard& shard : shards_) {
      loss += ShardLossAndGradient(shard.a, shard.y, x, g);
      if (gradient != nullptr) *gradient += g;
    }
    const auto n = static_cast<double>(shards_.size());
    if (gradient != nullptr) *gradient /= static_cast<T>(n);
    return loss / n;
  }

  Evaluation Evaluate(ConstVectorRef<T> x) const override {
    Vector<T> gradient;
    Evaluation e;
    e.loss = Objective(x, &gradient);
    e.grad_sq_norm = gradient.template cast<double>().squaredNorm();
    std::int64_t correct = 0;
    for (const Shard& shard : shards_) {
      const Vector<T> z = shard.a * x;
      for (Eigen::Index k = 0; k < z.size(); ++k) correct += (z[k] >= 0) == (shard.y[k] == T(1));
    }
    e.accuracy = static_cast<double>(correct) / static_cast<double>(samples_);
    return e;
  }

  std::string Describe() const override {
    std::size_t smallest = shards_.front().y.size(), largest = smallest;
    for (const Shard& s : shards_) {
      smallest = std::min<std::size_t>(smallest, s.y.size());
      largest = std::max<std::size_t>(largest, s.y.size());
    }
    const std::string sizes =
        smallest == largest ? fmt::format("{}", smallest) : fmt::format("{}-{}", smallest, largest);
    const std::string batch = options_.batch_size == 0
                                  ? std::string("full shard")
                                  : fmt::format("batch {}", options_.batch_size);
    return fmt::format("logistic regression on {}: d = {}{}, l2 = {}, {} iid shards of {}, {}",
                       data_description_, dimension_, options_.intercept ? " (with intercept)" : "",
                       options_.l2, shards_.size(), sizes, batch);
  }

 private:
  struct Shard {
    RowMatrix<T> a;
    Vector<T> y;
  };

  // Mean loss over the rows of (a, y) plus the penalty, and the gradient into g.
  double ShardLossAndGradient(const RowMatrix<T>& a, const Vector<T>& y, ConstVectorRef<T> x,
                              VectorRef<T> g) const {
    const Vector<T> z = a * x;
    Vector<T> residual(z.size());
    double loss = 0;
    for (Eigen::Index k = 0; k < z.size(); ++k) {
      loss += Softplus(static_cast<double>(z[k])) -
              static_cast<double>(y[k]) * static_cast<double>(z[k]);
      residual[k] = Sigmoid(z[k]) - y[k];
    }
    const auto rows = static_cast<T>(z.size());
    g.noalias() = a.transpose() * residual;
    g /= rows;
    loss /= static_cast<double>(z.size());
    if (options_.l2 > 0) {
      g += static_cast<T>(options_.l2) * x;
      loss += 0.5 * options_.l2 * x.template cast<double>().squaredNorm();
    }
    return loss;
  }

  LogisticRegressionOptions options_;
  std::int64_t dimension_;
  std::int64_t samples_;
  std::string data_description_;
  std::vector<Shard> shards_;
};

}  // namespace

template <typename T>
std::unique_ptr<Problem<T>> MakeLogisticRegression(const Dataset& data,
                                                   const LogisticRegressionOptions& options,
                                                   const Shards& shards) {
  return std::make_unique<LogisticRegression<T>>(data, options, shards);
}

template std::unique_ptr<Problem<float>> MakeLogisticRegression(const Dataset&,
                                                                const LogisticRegressionOptions&,
                                                                const Shards&);
template std::unique_ptr<Problem<double>> MakeLogisticRegression(const Dataset&,
                                                                 const LogisticRegressionOptions&,
                                                                 const Shards&);

}  // namespace lemmalab
