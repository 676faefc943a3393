// The models behind the supervised problems: binary logistic regression and the fully connected
// network with softmax cross-entropy (multinomial logistic regression when it has no hidden
// layer). Both work on a whole batch at once with Eigen matrix products; nothing loops over
// samples except the per-row softmax of the logits.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <boost/random/uniform_real_distribution.hpp>
#include <cmath>
#include <numeric>

#include "core/blas.h"
#include "core/error.h"
#include "problems/model_element.h"
#include "problems/supervised.h"

namespace lemmalab {
namespace {

using model::Sigmoid;
using model::Softplus;

template <typename T>
class LogisticModel final : public Model<T> {
 public:
  LogisticModel(std::int64_t features, bool intercept)
      : features_(features), intercept_(intercept) {}

  std::int64_t dimension() const override { return features_ + (intercept_ ? 1 : 0); }

  std::int64_t OutputsPerSample() const override { return 1; }
  std::vector<Layer> Layers() const override {
    std::vector<Layer> layers = {{"weight", 0, features_, 1}};
    if (intercept_) layers.push_back({"bias", features_, 1, 1});
    return layers;
  }

  Vector<T> InitialPoint(std::uint64_t /*seed*/) const override {
    return Vector<T>::Zero(dimension());
  }

  double Sum(Eigen::Ref<const RowMatrix<T>> a, Eigen::Ref<const Eigen::VectorXi> y,
             ConstVectorRef<T> x, T* gradient, std::int64_t* correct) const override {
    Vector<T> z = a * x.head(features_);
    if (intercept_) z.array() += x[features_];
    Vector<T> residual(z.size());
    double loss = 0;
    for (Eigen::Index k = 0; k < z.size(); ++k) {
      const auto label = static_cast<T>(y[k]);
      loss += Softplus(static_cast<double>(z[k])) - static_cast<double>(label * z[k]);
      residual[k] = Sigmoid(z[k]) - label;
      // Class 1 only when z > 0: a tie goes to the lower class, as softmax's argmax does.
      if (correct != nullptr) *correct += (z[k] > 0) == (y[k] == 1);
    }
    if (gradient != nullptr) {
      Eigen::Map<Vector<T>> g(gradient, dimension());
      g.head(features_).noalias() = a.transpose() * residual;
      if (intercept_) g[features_] = residual.sum();
    }
    return loss;
  }

  std::optional<LinearModelBounds> Bounds() const override {
    // sigmoid' <= 1/4, and |sigmoid(z) - y| <= 1.
    return LinearModelBounds{0.25, 1.0, intercept_};
  }

  std::string Describe() const override {
    return intercept_ ? "logistic regression (with intercept)" : "logistic regression";
  }
  ModelForm Form() const override {
    return {.logistic = true, .widths = {features_}, .intercept = intercept_};
  }

 private:
  std::int64_t features_;
  bool intercept_;
};

template <typename T>
class Mlp final : public Model<T> {
 public:
  Mlp(std::int64_t features, const std::vector<std::int64_t>& hidden, int classes,
      Activation activation)
      : activation_(activation) {
    widths_.push_back(features);
    widths_.insert(widths_.end(), hidden.begin(), hidden.end());
    widths_.push_back(classes);
    std::int64_t offset = 0;
    for (std::size_t l = 0; l + 1 < widths_.size(); ++l) {
      const std::int64_t in = widths_[l], out = widths_[l + 1];
      layers_.push_back({fmt::format("fc{}.weight", l + 1), offset, out, in});
      offset += out * in;
      layers_.push_back({fmt::format("fc{}.bias", l + 1), offset, out, 1});
      offset += out;
    }
    dimension_ = offset;
  }

  std::int64_t OutputsPerSample() const override {
    return std::accumulate(widths_.begin() + 1, widths_.end(), std::int64_t{0});
  }
  std::int64_t dimension() const override { return dimension_; }
  std::vector<Layer> Layers() const override { return layers_; }

  Vector<T> InitialPoint(std::uint64_t seed) const override {
    Vector<T> x = Vector<T>::Zero(dimension_);
    if (depth() == 1) return x;  // multinomial logistic regression: convex, start at 0
    // Weights layer by layer in row-major order from one stream; biases stay 0.
    PhiloxStream stream({seed, Purpose::kInitialization, kGlobalStream, 0});
    for (int l = 0; l < depth(); ++l) {
      const Layer& w = layers_[static_cast<std::size_t>(2 * l)];
      const auto fan_in = static_cast<double>(w.cols), fan_out = static_cast<double>(w.rows);
      const double limit = activation_ == Activation::kRelu ? std::sqrt(6.0 / fan_in)
                                                            : std::sqrt(6.0 / (fan_in + fan_out));
      boost::random::uniform_real_distribution<double> uniform(-limit, limit);
      for (std::int64_t j = 0; j < w.size(); ++j) x[w.offset + j] = static_cast<T>(uniform(stream));
    }
    return x;
  }

  double Sum(Eigen::Ref<const RowMatrix<T>> a, Eigen::Ref<const Eigen::VectorXi> y,
             ConstVectorRef<T> x, T* gradient, std::int64_t* correct) const override {
    const int depth = this->depth();
    const Eigen::Index rows = a.rows();
    Scratch& s = ScratchFor(depth);
    // Layer l's output z_l (then dz_l), its input h_l for l >= 1, and dL/dh_l, over these rows.
    const auto z = [&](int l) { return View(s.z, l, rows, widths_[l + 1]); };
    const auto h = [&](int l) { return View(s.h, l, rows, widths_[l]); };
    const auto input = [&](int l) { return l == 0 ? a : Eigen::Ref<const RowMatrix<T>>(h(l)); };

    // Forward: z_l = h_l W_l^T + b_l, h_{l+1} = act(z_l); the last z are the logits.
    for (int l = 0; l < depth; ++l) {
      Gemm<T>(input(l), false, Weight(x, l), true, z(l));
      z(l).rowwise() += Bias(x, l).transpose();
      if (l + 1 < depth) Activate(z(l), h(l + 1));
    }

    // Softmax cross-entropy per row, with the gradient p - onehot(y) in place of the logits.
    Matrix logits = z(depth - 1);
    double loss = 0;
    for (Eigen::Index k = 0; k < rows; ++k) {
      auto row = logits.row(k);
      Eigen::Index predicted = 0;
      const T top = row.maxCoeff(&predicted);
      const T log_sum = top + std::log((row.array() - top).exp().sum());
      loss += static_cast<double>(log_sum) - static_cast<double>(row[y[k]]);
      if (correct != nullptr) *correct += predicted == y[k];
      row = (row.array() - log_sum).exp().matrix();
      row[y[k]] -= T(1);
    }
    if (gradient == nullptr) return loss;

    // Backward: dW_l = dz_l^T h_l, db_l = column sums of dz_l, dz_{l-1} = (dz_l W_l) * act'; each
    // dz_l overwrites z_l, which the forward pass no longer needs.
    for (int l = depth - 1; l >= 0; --l) {
      const Matrix dz = z(l);
      Gemm<T>(dz, true, input(l), false, WeightGradient(gradient, l));
      BiasGradient(gradient, l) = dz.colwise().sum().transpose();
      if (l == 0) break;
      Matrix dh = View(s.dh, l, rows, widths_[l]);
      Gemm<T>(dz, false, Weight(x, l), false, dh);
      MultiplyByDerivative(h(l), dh, z(l - 1));
    }
    return loss;
  }

  std::optional<LinearModelBounds> Bounds() const override {
    // Without hidden layers: the softmax cross-entropy Hessian in the logits,
    // diag(p) - p p^T, has norm <= 1/2, and ||p - onehot(y)|| <= sqrt(2).
    if (depth() != 1) return std::nullopt;
    return LinearModelBounds{0.5, std::sqrt(2.0), true};
  }

  std::string Describe() const override {
    if (depth() == 1)
      return fmt::format("multinomial logistic regression ({} classes)", widths_.back());
    return fmt::format("MLP {} {}", fmt::join(widths_, "-"),
                       activation_ == Activation::kRelu ? "relu" : "tanh");
  }
  ModelForm Form() const override { return {.widths = widths_, .activation = activation_}; }

 private:
  int depth() const { return static_cast<int>(widths_.size()) - 1; }

  Eigen::Map<const RowMatrix<T>> Weight(ConstVectorRef<T> x, int l) const {
    const Layer& w = layers_[static_cast<std::size_t>(2 * l)];
    return {x.data() + w.offset, w.rows, w.cols};
  }
  Eigen::Map<const Vector<T>> Bias(ConstVectorRef<T> x, int l) const {
    const Layer& b = layers_[static_cast<std::size_t>(2 * l + 1)];
    return {x.data() + b.offset, b.rows};
  }
  Eigen::Map<RowMatrix<T>> WeightGradient(T* g, int l) const {
    const Layer& w = layers_[static_cast<std::size_t>(2 * l)];
    return {g + w.offset, w.rows, w.cols};
  }
  Eigen::Map<Vector<T>> BiasGradient(T* g, int l) const {
    const Layer& b = layers_[static_cast<std::size_t>(2 * l + 1)];
    return {g + b.offset, b.rows};
  }

  using Matrix = Eigen::Map<RowMatrix<T>>;

  // The activations and gradients of one call, kept per thread from call to call: a worker's
  // steps and a pass's chunks reuse them instead of allocating (every entry is overwritten before
  // it is read, so what a previous call left changes nothing). The storage only grows, so calls
  // with different row counts (a minibatch, a chunk, a pass's last chunk) do not reallocate.
  // z[l] holds z_l, then dz_l; h[l] is layer l's input for l >= 1 (h[0] would be the data, never
  // copied); dh[l] is dL/dh_l.
  struct Scratch {
    std::vector<std::vector<T>> z, h, dh;
  };
  static Scratch& ScratchFor(int depth) {
    thread_local Scratch scratch;
    for (auto* v : {&scratch.z, &scratch.h, &scratch.dh})
      v->resize(static_cast<std::size_t>(depth));
    return scratch;
  }
  // Layer l's buffer of `buffers` as a rows x cols matrix.
  static Matrix View(std::vector<std::vector<T>>& buffers, int l, Eigen::Index rows,
                     std::int64_t cols) {
    std::vector<T>& storage = buffers[static_cast<std::size_t>(l)];
    const auto size = static_cast<std::size_t>(rows * cols);
    if (storage.size() < size) storage.resize(size);
    return {storage.data(), rows, cols};
  }

  void Activate(const Matrix& z, Matrix h) const {
    if (activation_ == Activation::kRelu) {
      h = z.cwiseMax(T(0));
    } else {
      h = z.array().tanh().matrix();
    }
  }
  // dz = dh * act'(z), with act' written in terms of h = act(z): relu' = [h > 0], tanh' =
  // 1 - h^2 (the factor is computed in T and multiplied, as a separate derivative matrix would).
  void MultiplyByDerivative(const Matrix& h, const Matrix& dh, Matrix dz) const {
    if (activation_ == Activation::kRelu) {
      dz = (dh.array() * (h.array() > T(0)).template cast<T>()).matrix();
    } else {
      dz = (dh.array() * (T(1) - h.array().square())).matrix();
    }
  }

  Activation activation_;
  std::vector<std::int64_t> widths_;
  std::vector<Layer> layers_;
  std::int64_t dimension_ = 0;
};

}  // namespace

template <typename T>
std::unique_ptr<Model<T>> MakeLogisticModel(std::int64_t features, bool intercept) {
  return std::make_unique<LogisticModel<T>>(features, intercept);
}

template <typename T>
std::unique_ptr<Model<T>> MakeMlpModel(std::int64_t features,
                                       const std::vector<std::int64_t>& hidden, int classes,
                                       Activation activation) {
  return std::make_unique<Mlp<T>>(features, hidden, classes, activation);
}

template std::unique_ptr<Model<float>> MakeLogisticModel(std::int64_t, bool);
template std::unique_ptr<Model<double>> MakeLogisticModel(std::int64_t, bool);
template std::unique_ptr<Model<float>> MakeMlpModel(std::int64_t, const std::vector<std::int64_t>&,
                                                    int, Activation);
template std::unique_ptr<Model<double>> MakeMlpModel(std::int64_t, const std::vector<std::int64_t>&,
                                                     int, Activation);

}  // namespace lemmalab
