#include "batched/gradients.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>

namespace lemmalab::batched {

template <typename T>
std::shared_ptr<const DeviceSamples<T>> DeviceSamples<T>::Of(const Problem<T>& problem,
                                                             Backend backend) {
  const auto* supervised = dynamic_cast<const SupervisedSamples<T>*>(&problem);
  if (supervised == nullptr) return nullptr;
  return std::make_shared<const DeviceSamples<T>>(*supervised, problem.num_workers(), backend);
}

template <typename T>
DeviceSamples<T>::DeviceSamples(const SupervisedSamples<T>& problem, int workers, Backend backend)
    : problem_(problem), form_(problem.model().Form()), backend_(backend) {
  std::vector<RowMatrix<T>> shards(static_cast<std::size_t>(workers));
  std::vector<Eigen::VectorXi> labels(shards.size());
  std::int64_t total = 0;
  for (int w = 0; w < workers; ++w) {
    const auto k = static_cast<std::size_t>(w);
    problem.ShardSamples(w, shards[k], labels[k]);
    offsets_.push_back(total);
    sizes_.push_back(labels[k].size());
    total += labels[k].size();
    features_ = shards[k].cols();
  }
  device_offsets_ = Buffer<std::int64_t>(backend, offsets_.size());
  device_offsets_.Upload(offsets_);
  device_sizes_ = Buffer<std::int64_t>(backend, sizes_.size());
  device_sizes_.Upload(sizes_);
  samples_ = Buffer<T>(backend, static_cast<std::size_t>(total * features_));
  labels_ = Buffer<int>(backend, static_cast<std::size_t>(total));
  for (std::size_t k = 0; k < shards.size(); ++k) {
    samples_.Upload({shards[k].data(), static_cast<std::size_t>(shards[k].size())},
                    static_cast<std::size_t>(offsets_[k] * features_));
    labels_.Upload({labels[k].data(), static_cast<std::size_t>(labels[k].size())},
                   static_cast<std::size_t>(offsets_[k]));
  }
}

template <typename T>
BatchedGradients<T>::BatchedGradients(std::shared_ptr<const DeviceSamples<T>> samples,
                                      std::int64_t dimension)
    : samples_(std::move(samples)),
      d_(dimension),
      n_(samples_->workers()),
      layers_(samples_->layers()) {
  const Backend backend = samples_->backend();
  const std::int64_t batch_size = samples_->problem().options().batch_size;
  rows_ = batch_size;
  std::vector<std::int64_t> counts(static_cast<std::size_t>(n_), batch_size);
  if (batch_size == 0) {  // the whole shard: worker w's rows are its shard, every step
    for (int w = 0; w < n_; ++w) {
      counts[static_cast<std::size_t>(w)] = samples_->size(w);
      rows_ = std::max(rows_, samples_->size(w));
    }
  }
  const auto cells = static_cast<std::size_t>(n_ * rows_);
  index_ = Buffer<std::int64_t>(backend, cells);
  counts_ = Buffer<std::int64_t>(backend, counts.size());
  counts_.Upload(counts);
  sample_losses_ = Buffer<double>(backend, cells);
  const ModelForm& form = samples_->form();
  if (form.logistic) {
    residual_ = Buffer<T>(backend, cells);
  } else {
    if (const std::string why = ProductsUnavailable(backend); !why.empty()) {
      throw UserError(fmt::format("device = \"{}\": the network's products cannot run: {}",
                                  BackendName(backend), why));
    }
    const std::size_t depth = form.widths.size() - 1;
    for (std::size_t l = 0; l < depth; ++l) {
      z_.emplace_back(backend, cells * static_cast<std::size_t>(form.widths[l + 1]));
      h_.emplace_back(backend, cells * static_cast<std::size_t>(form.widths[l]));
    }
  }
  loss_ = Buffer<double>(backend, static_cast<std::size_t>(n_));
  norm_ = Buffer<double>(backend, static_cast<std::size_t>(n_));
  if (batch_size == 0) {  // worker w's rows are its shard, every step (the rest is padding)
    std::vector<std::int64_t> index(cells, 0);
    for (int w = 0; w < n_; ++w) {
      for (std::int64_t r = 0; r < samples_->size(w); ++r) {
        index[static_cast<std::size_t>(w * rows_ + r)] = samples_->offset(w) + r;
      }
    }
    index_.Upload(index);
    GatherSamples();
  }
}

template <typename T>
void BatchedGradients<T>::GatherSamples() {
  if (h_.empty()) return;  // logistic regression reads the samples through the index
  ForEach(samples_->backend(), n_ * rows_ * samples_->features(),
          GatherRows<T>{Samples(), h_[0].data()});
}

template <typename T>
void BatchedGradients<T>::DrawMinibatches(const StepContext& ctx) {
  if (samples_->problem().options().batch_size == 0) return;  // the shards, set once
  ForEach(samples_->backend(), n_,
          DrawMinibatch{
              StepStreams(ctx.seed, ctx.t, static_cast<std::uint32_t>(Purpose::kMinibatch), 0),
              samples_->offsets(), samples_->sizes(), rows_, index_.data()});
  GatherSamples();
}

template <typename T>
MinibatchRows<T> BatchedGradients<T>::Samples() const {
  return {samples_->samples(), batch(), samples_->features()};
}

template <typename T>
void BatchedGradients<T>::NetworkGradient(WorkerParameters<T> x, Buffer<T>& g) {
  const Backend backend = samples_->backend();
  const ModelForm& form = samples_->form();
  const int depth = static_cast<int>(form.widths.size()) - 1;
  const auto at = [](auto& buffers, int l) { return buffers[static_cast<std::size_t>(l)].data(); };
  const auto width = [&](int l) { return form.widths[static_cast<std::size_t>(l)]; };
  // Layer l's weights (out x in, row-major) and bias in x_w, and the per-worker strides of its
  // input and output activations.
  const auto weights = [&](int l, bool transposed) {
    return Operand<T>{x.x + layers_[static_cast<std::size_t>(2 * l)].offset, x.stride, transposed};
  };
  const auto bias = [&](int l) { return layers_[static_cast<std::size_t>(2 * l + 1)].offset; };
  const auto in = [&](int l) { return rows_ * width(l); };
  const auto out = [&](int l) { return rows_ * width(l + 1); };
  const std::int64_t cells = n_ * rows_;
  const bool relu = form.activation == Activation::kRelu;
  for (int l = 0; l < depth; ++l) {  // z_l = h_l W_l^T + b_l, h_{l+1} = act(z_l)
    BatchedProduct(backend, n_, rows_, width(l + 1), width(l), Operand<T>{at(h_, l), in(l)},
                   weights(l, true), at(z_, l), out(l));
    ForEach(backend, cells * width(l + 1),
            BiasActivate<T>{x, bias(l), width(l + 1), batch(), relu, at(z_, l),
                            l + 1 < depth ? at(h_, l + 1) : nullptr});
  }
  ForEach(backend, cells,  // the last z become p - onehot(y)
          SoftmaxCrossEntropy<T>{at(z_, depth - 1), samples_->labels(), batch(), width(depth),
                                 sample_losses_.data()});
  for (int l = depth - 1; l >= 0; --l) {  // dz_l is in z_l; dz_{l-1} overwrites z_{l-1}
    const Operand<T> dz{at(z_, l), out(l)};
    // dW_l = dz_l^T h_l, into worker w's gradient row
    BatchedProduct(backend, n_, width(l + 1), width(l), rows_, Operand<T>{dz.data, dz.stride, true},
                   Operand<T>{at(h_, l), in(l)},
                   g.data() + layers_[static_cast<std::size_t>(2 * l)].offset, d_);
    ForEach(backend, n_ * width(l + 1),
            BiasGradient<T>{dz.data, batch(), width(l + 1), bias(l), d_, g.data()});
    if (l == 0) break;
    // dh_l = dz_l W_l, then through the activation that made h_l
    BatchedProduct(backend, n_, rows_, width(l), width(l + 1), dz, weights(l, false), at(z_, l - 1),
                   in(l));
    ForEach(backend, cells * width(l), ActivationBackward<T>{at(h_, l), relu, at(z_, l - 1)});
  }
}

template <typename T>
void BatchedGradients<T>::Compute(const StepContext& ctx, WorkerParameters<T> x, Buffer<T>& g,
                                  std::span<double> losses, std::span<double> norms) {
  DrawMinibatches(ctx);
  const Backend backend = samples_->backend();
  if (samples_->form().logistic) {
    ForEach(backend, n_ * rows_,
            LogisticForward<T>{Samples(), samples_->labels(), x, samples_->form().intercept,
                               residual_.data(), sample_losses_.data()});
    ForEach(backend, n_ * d_, LogisticGradient<T>{Samples(), residual_.data(), d_, g.data()});
  } else {
    NetworkGradient(x, g);
  }
  const SupervisedOptions& options = samples_->problem().options();
  ForEach(backend, n_ * d_,
          FinishGradient<T>{x, counts_.data(), d_, static_cast<T>(options.l2),
                            static_cast<T>(options.nonconvex), g.data()});
  ForEach(backend, n_,
          WorkerSummaries<T>{sample_losses_.data(), batch(), x, g.data(), d_, options.l2,
                             options.nonconvex, loss_.data(), norm_.data()});
  loss_.Download(losses.first(static_cast<std::size_t>(n_)));
  norm_.Download(norms.first(static_cast<std::size_t>(n_)));
}

template class DeviceSamples<float>;
template class DeviceSamples<double>;
template class BatchedGradients<float>;
template class BatchedGradients<double>;

}  // namespace lemmalab::batched
