#include "batched/gradients.h"

#include <algorithm>
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
  host_index_.assign(cells, 0);
  if (batch_size == 0) {
    for (int w = 0; w < n_; ++w) {
      for (std::int64_t r = 0; r < samples_->size(w); ++r) {
        host_index_[static_cast<std::size_t>(w * rows_ + r)] = samples_->offset(w) + r;
      }
    }
    index_.Upload(host_index_);
  }
  sample_losses_ = Buffer<double>(backend, cells);
  const ModelForm& form = samples_->form();
  if (form.logistic) {
    residual_ = Buffer<T>(backend, cells);
  } else {
    const std::size_t depth = form.widths.size() - 1;
    for (std::size_t l = 0; l < depth; ++l) {
      z_.emplace_back(backend, cells * static_cast<std::size_t>(form.widths[l + 1]));
      // h_[l]: layer l's input activations (none for the first layer: the samples).
      h_.emplace_back(backend, l == 0 ? 0 : cells * static_cast<std::size_t>(form.widths[l]));
    }
  }
  loss_ = Buffer<double>(backend, static_cast<std::size_t>(n_));
  norm_ = Buffer<double>(backend, static_cast<std::size_t>(n_));
}

template <typename T>
void BatchedGradients<T>::DrawMinibatches(const StepContext& ctx) {
  if (samples_->problem().options().batch_size == 0) return;  // the shards, set once
  std::vector<std::int64_t> positions(static_cast<std::size_t>(rows_));
  for (int w = 0; w < n_; ++w) {
    PhiloxStream stream = ctx.Stream(Purpose::kMinibatch, static_cast<std::uint32_t>(w));
    samples_->problem().DrawMinibatch(w, stream, positions);
    for (std::int64_t r = 0; r < rows_; ++r) {
      host_index_[static_cast<std::size_t>(w * rows_ + r)] =
          samples_->offset(w) + positions[static_cast<std::size_t>(r)];
    }
  }
  index_.Upload(host_index_);
}

template <typename T>
LayerInput<T> BatchedGradients<T>::Input(int layer) const {
  const ModelForm& form = samples_->form();
  if (layer == 0) return {samples_->samples(), nullptr, batch(), form.widths[0]};
  return {nullptr, h_[static_cast<std::size_t>(layer)].data(), batch(),
          form.widths[static_cast<std::size_t>(layer)]};
}

template <typename T>
void BatchedGradients<T>::Compute(const StepContext& ctx, WorkerParameters<T> x, Buffer<T>& g,
                                  std::span<double> losses, std::span<double> norms) {
  DrawMinibatches(ctx);
  const Backend backend = samples_->backend();
  const ModelForm& form = samples_->form();
  const std::int64_t cells = n_ * rows_;
  if (form.logistic) {
    ForEach(backend, cells,
            LogisticForward<T>{Input(0), samples_->labels(), x, form.intercept, residual_.data(),
                               sample_losses_.data()});
    ForEach(backend, n_ * d_, LogisticGradient<T>{Input(0), residual_.data(), d_, g.data()});
  } else {
    const int depth = static_cast<int>(form.widths.size()) - 1;
    const auto weights = [&](int l) { return layers_[static_cast<std::size_t>(2 * l)].offset; };
    const auto bias = [&](int l) { return layers_[static_cast<std::size_t>(2 * l + 1)].offset; };
    const auto width = [&](int l) { return form.widths[static_cast<std::size_t>(l)]; };
    const bool relu = form.activation == Activation::kRelu;
    for (int l = 0; l < depth; ++l) {  // z_l = h_l W_l^T + b_l, h_{l+1} = act(z_l)
      T* z = z_[static_cast<std::size_t>(l)].data();
      ForEach(backend, cells * width(l + 1),
              DenseForward<T>{Input(l), x, weights(l), bias(l), width(l + 1), z});
      if (l + 1 < depth) {
        ForEach(backend, cells * width(l + 1),
                Activate<T>{z, h_[static_cast<std::size_t>(l + 1)].data(), relu});
      }
    }
    ForEach(backend, cells,  // the last z become p - onehot(y)
            SoftmaxCrossEntropy<T>{z_.back().data(), samples_->labels(), batch(), width(depth),
                                   sample_losses_.data()});
    for (int l = depth - 1; l >= 0; --l) {  // dz_l overwrites z_l, dz_{l-1} overwrites z_{l-1}
      const T* dz = z_[static_cast<std::size_t>(l)].data();
      ForEach(backend, n_ * width(l + 1) * (width(l) + 1),
              DenseGradient<T>{Input(l), dz, width(l + 1), weights(l), bias(l), d_, g.data()});
      if (l == 0) break;
      ForEach(backend, cells * width(l),
              DenseBackward<T>{dz, x, weights(l), width(l + 1), width(l), rows_,
                               h_[static_cast<std::size_t>(l)].data(), relu,
                               z_[static_cast<std::size_t>(l - 1)].data()});
    }
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
