#include "problems/supervised.h"

#include <fmt/format.h>
#include <omp.h>

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "problems/minibatch_element.h"

namespace lemmalab {
namespace {

// Rows per chunk of a full-batch pass: large enough for efficient matrix products, small enough
// that a chunk's activations stay in cache-sized pieces and chunks spread over threads.
constexpr std::int64_t kChunkRows = 2048;
// Below this much work (rows x parameters) a full-batch pass runs on one thread.
constexpr double kParallelWork = 1 << 22;

// A training shard or the test set. Dense data are converted to T once, as the model takes
// them. Byte data are not copied at all: the part shares the data set's bytes (see Samples),
// names its rows, and converts a chunk or a minibatch at a time into scratch the caller owns.
template <typename T>
struct Part {
  RowMatrix<T> a;                  // dense data
  Samples bytes;                   // byte data: the whole set's; `a` is then empty
  std::vector<std::int64_t> rows;  // byte data: the part's rows of `bytes`
  Eigen::VectorXi y;               // labels

  std::int64_t size() const { return y.size(); }

  // Rows begin .. begin + count - 1 as T: a view of `a`, or the bytes converted into `scratch`
  // (grown when too small).
  Eigen::Ref<const RowMatrix<T>> Rows(std::int64_t begin, std::int64_t count,
                                      RowMatrix<T>& scratch) const {
    if (!bytes.holds_bytes()) return a.middleRows(begin, count);
    if (scratch.rows() < count) scratch.resize(count, bytes.num_features());
    bytes.GatherAs(
        std::span(rows).subspan(static_cast<std::size_t>(begin), static_cast<std::size_t>(count)),
        scratch.data());
    return scratch.topRows(count);
  }
};

template <typename T>
Part<T> Gather(const Samples& samples, const std::vector<std::int64_t>& rows) {
  Part<T> part;
  if (samples.holds_bytes()) {
    part.bytes.bytes = samples.bytes;
    part.bytes.byte_values = samples.byte_values;
    part.rows = rows;
  } else {
    part.a.resize(static_cast<Eigen::Index>(rows.size()), samples.num_features());
    samples.GatherAs(rows, part.a.data());
  }
  part.y = samples.labels(rows);
  return part;
}

// What StochasticGradient of one worker reuses from step to step, so that steps allocate nothing
// here; a worker is stepped by one thread at a time, so each worker's scratch is its own.
template <typename T>
struct MinibatchScratch {
  std::vector<std::int64_t> batch;
  RowMatrix<T> a;
  Eigen::VectorXi y;
};

template <typename T>
class SupervisedProblem final : public Problem<T>, public SupervisedSamples<T> {
 public:
  SupervisedProblem(std::unique_ptr<Model<T>> model, const Dataset& data,
                    const lemmalab::Shards& shards, const SupervisedOptions& options)
      : model_(std::move(model)),
        options_(options),
        classes_(data.classes),
        features_(data.num_features()),
        data_description_(data.description) {
    LEMMALAB_CHECK(!shards.empty(), "no shards");
    for (const auto& rows : shards) {
      LEMMALAB_CHECK(!rows.empty(), "empty shard");
      if (options_.batch_size > 0 && rows.size() > minibatch::kLargestShard) {
        throw UserError(fmt::format(
            "a shard of {} samples is larger than minibatches can be drawn from ({}); use more "
            "workers, or batch_size = 0 for the whole shard",
            rows.size(), minibatch::kLargestShard));
      }
      shards_.push_back(Gather<T>(data.train, rows));
      ShardSummary summary;
      summary.samples = static_cast<std::int64_t>(rows.size());
      summary.label_counts.assign(static_cast<std::size_t>(classes_), 0);
      for (std::int64_t k : rows)
        ++summary.label_counts[static_cast<std::size_t>(data.train.labels[k])];
      summaries_.push_back(std::move(summary));
      samples_ += static_cast<std::int64_t>(rows.size());
    }
    if (data.test) {
      std::vector<std::int64_t> all(static_cast<std::size_t>(data.test->size()));
      for (std::size_t k = 0; k < all.size(); ++k) all[k] = static_cast<std::int64_t>(k);
      test_ = Gather<T>(*data.test, all);
    }
    scratch_.resize(shards_.size());
    ComputeConstants(data, shards);
  }

  std::int64_t dimension() const override { return model_->dimension(); }
  int num_workers() const override { return static_cast<int>(shards_.size()); }

  // Per worker its minibatch in T; per thread the model's activations for a minibatch or a
  // chunk (z, h and dh: three buffers as wide as the layers' outputs) and a chunk converted from
  // bytes; per chunk of a full pass its gradient.
  void AddWorkingMemory(int local_workers, int threads, MemoryEstimate& estimate) const override {
    const auto t = static_cast<double>(sizeof(T));
    std::int64_t largest_shard = 0, chunks = 0;
    for (const Part<T>& shard : shards_) {
      largest_shard = std::max(largest_shard, shard.size());
      chunks += (shard.size() + kChunkRows - 1) / kChunkRows;
    }
    if (test_) chunks += (test_->size() + kChunkRows - 1) / kChunkRows;
    const std::int64_t batch = options_.batch_size > 0 ? options_.batch_size : largest_shard;
    const auto outputs = static_cast<double>(model_->OutputsPerSample());
    const auto features = static_cast<double>(features_);
    // A chunk is as long as the longest part a pass goes through, up to kChunkRows: 11 samples
    // were estimated as 2048 rows, and refused as needing gigabytes they never used.
    const std::int64_t longest_part = std::max(largest_shard, test_ ? test_->size() : 0);
    const auto chunk = static_cast<double>(std::min(kChunkRows, longest_part));
    const double rows = std::max<double>(static_cast<double>(batch), chunk);
    estimate.Add("the minibatches", local_workers * static_cast<double>(batch) * features * t,
                 fmt::format("{} workers x batch_size = {} x {} features x {} bytes", local_workers,
                             batch, features_, t));
    estimate.Add("the model's activations", threads * (3 * rows * outputs + chunk * features) * t,
                 fmt::format("{} threads x {} rows x 3 x {:.0f} layer outputs ({})", threads, rows,
                             outputs, model_->Describe()));
    estimate.Add("the full-batch passes' gradients",
                 static_cast<double>(chunks) * static_cast<double>(dimension()) * t,
                 fmt::format("{} chunks of {} samples x d = {} x {} bytes", chunks, kChunkRows,
                             dimension(), t));
  }
  Vector<T> InitialPoint() const override { return model_->InitialPoint(options_.seed); }
  std::vector<Layer> Layers() const override { return model_->Layers(); }
  std::vector<Constant> Constants() const override { return constants_; }
  std::vector<ShardSummary> Shards() const override { return summaries_; }
  void set_threads(int threads) override { threads_ = threads; }

  double StochasticGradient(int worker, ConstVectorRef<T> x, PhiloxStream& stream,
                            VectorRef<T> g) const override {
    const Part<T>& shard = shards_[static_cast<std::size_t>(worker)];
    MinibatchScratch<T>& scratch = scratch_[static_cast<std::size_t>(worker)];
    double loss = 0;
    std::int64_t rows = shard.size();
    if (options_.batch_size == 0) {
      loss = model_->Sum(shard.Rows(0, rows, scratch.a), shard.y, x, g.data(), nullptr);
    } else {
      rows = options_.batch_size;
      if (scratch.batch.empty()) {
        scratch.batch.resize(static_cast<std::size_t>(rows));
        scratch.a.resize(rows, features_);
        scratch.y.resize(rows);
      }
      minibatch::DrawPositions(static_cast<std::uint64_t>(shard.size()), stream,
                               scratch.batch.data(), rows);
      for (Eigen::Index r = 0; r < rows; ++r) {
        scratch.y[r] = shard.y[scratch.batch[static_cast<std::size_t>(r)]];
      }
      if (shard.bytes.holds_bytes()) {
        // Positions in the shard to rows of the data set, in place: y is already drawn.
        for (auto& k : scratch.batch) k = shard.rows[static_cast<std::size_t>(k)];
        shard.bytes.GatherAs(scratch.batch, scratch.a.data());
      } else {
        // Row by row: each is contiguous (row-major), so this is a memcpy per sample. The rows
        // are scattered over a shard that rarely fits in cache, so the copy waits on memory;
        // prefetching a few rows ahead keeps several rows' loads in flight.
        constexpr Eigen::Index kAhead = 4;
        const auto prefetch = [&](Eigen::Index r) {
          const T* row = shard.a.row(scratch.batch[static_cast<std::size_t>(r)]).data();
          for (Eigen::Index j = 0; j < features_; j += 64 / static_cast<Eigen::Index>(sizeof(T))) {
            __builtin_prefetch(row + j);
          }
        };
        for (Eigen::Index r = 0; r < std::min(kAhead, rows); ++r) prefetch(r);
        for (Eigen::Index r = 0; r < rows; ++r) {
          if (r + kAhead < rows) prefetch(r + kAhead);
          scratch.a.row(r) = shard.a.row(scratch.batch[static_cast<std::size_t>(r)]);
        }
      }
      loss = model_->Sum(scratch.a, scratch.y, x, g.data(), nullptr);
    }
    g /= static_cast<T>(rows);
    return loss / static_cast<double>(rows) + AddRegularizer(x, g);
  }

  double Objective(ConstVectorRef<T> x, Vector<T>* gradient) const override {
    return Pass(x, gradient, nullptr);
  }

  const Model<T>& model() const override { return *model_; }
  const SupervisedOptions& options() const override { return options_; }
  void ShardSamples(int worker, RowMatrix<T>& a, Eigen::VectorXi& y) const override {
    const Part<T>& shard = shards_[static_cast<std::size_t>(worker)];
    RowMatrix<T> scratch;
    a = shard.Rows(0, shard.size(), scratch);
    y = shard.y;
  }
  Evaluation Evaluate(ConstVectorRef<T> x) const override {
    Evaluation e;
    Vector<T> gradient;
    std::int64_t correct = 0;
    double spread = 0;
    e.loss = Pass(x, &gradient, &correct, &spread);
    e.shard_spread = spread;
    e.grad_sq_norm = gradient.template cast<double>().squaredNorm();
    e.accuracy = static_cast<double>(correct) / static_cast<double>(samples_);
    if (test_) {
      std::int64_t test_correct = 0;
      const std::vector<Chunk> chunks = Chunks(*test_, -1);
      const std::vector<ChunkResult> results = SumChunks(chunks, x, false);
      double loss = 0;
      for (const ChunkResult& r : results) {
        loss += r.loss;
        test_correct += r.correct;
      }
      e.test_loss = loss / static_cast<double>(test_->size());
      e.test_accuracy = static_cast<double>(test_correct) / static_cast<double>(test_->size());
    }
    return e;
  }

  std::string Describe() const override {
    std::int64_t smallest = summaries_.front().samples, largest = smallest;
    for (const ShardSummary& s : summaries_) {
      smallest = std::min(smallest, s.samples);
      largest = std::max(largest, s.samples);
    }
    const std::string sizes =
        smallest == largest ? fmt::format("{}", smallest) : fmt::format("{}-{}", smallest, largest);
    const std::string batch = options_.batch_size == 0
                                  ? std::string("full shard")
                                  : fmt::format("batch {}", options_.batch_size);
    std::string regularizer;
    if (options_.l2 > 0) regularizer += fmt::format(", l2 = {}", options_.l2);
    if (options_.nonconvex > 0) {
      regularizer += fmt::format(", nonconvex lambda = {}", options_.nonconvex);
    }
    return fmt::format("{} on {}: d = {}{}, {} {} shards of {}, {}", model_->Describe(),
                       data_description_, dimension(), regularizer, shards_.size(),
                       options_.sharding, sizes, batch);
  }

 private:
  struct Chunk {
    const Part<T>* part;
    std::int64_t begin, rows;
    int shard;  // index of the training shard; -1 for the test set
  };
  struct ChunkResult {
    double loss = 0;
    std::int64_t correct = 0;
    Vector<T> gradient;
  };

  static std::vector<Chunk> Chunks(const Part<T>& part, int shard) {
    std::vector<Chunk> chunks;
    for (std::int64_t begin = 0; begin < part.size(); begin += kChunkRows) {
      chunks.push_back({&part, begin, std::min(kChunkRows, part.size() - begin), shard});
    }
    return chunks;
  }

  std::vector<ChunkResult> SumChunks(const std::vector<Chunk>& chunks, ConstVectorRef<T> x,
                                     bool with_gradient) const {
    std::vector<ChunkResult> results(chunks.size());
    std::int64_t rows = 0;
    for (const Chunk& c : chunks) rows += c.rows;
    const double work = static_cast<double>(rows) * static_cast<double>(dimension());
    const int threads = threads_ > 0 ? threads_ : work < kParallelWork ? 1 : omp_get_max_threads();
    // Byte data are converted chunk by chunk into one buffer per thread; a loop that opens no
    // parallel region (one thread) runs at the caller's level and uses the first.
    std::vector<RowMatrix<T>> scratch(static_cast<std::size_t>(threads));
    const int level = omp_get_level();
    ParallelFor(static_cast<int>(chunks.size()), threads, [&](int k) {
      const Chunk& c = chunks[static_cast<std::size_t>(k)];
      ChunkResult& r = results[static_cast<std::size_t>(k)];
      const int thread = omp_get_level() > level ? omp_get_thread_num() : 0;
      if (with_gradient) r.gradient.resize(dimension());
      r.loss = model_->Sum(c.part->Rows(c.begin, c.rows, scratch[static_cast<std::size_t>(thread)]),
                           c.part->y.segment(c.begin, c.rows), x,
                           with_gradient ? r.gradient.data() : nullptr, &r.correct);
    });
    return results;
  }

  // f(x) = (1/n) sum_i f_i(x) over the shards, its gradient when asked, and the number of
  // training samples classified correctly when asked.
  // f(x) over every shard, with grad f into `gradient`, the correct predictions into `correct`
  // and (1/n) sum_i ||grad f_i(x) - grad f(x)||^2 into `spread` when they are not null (the
  // regulariser, the same in every f_i, cancels from the spread).
  double Pass(ConstVectorRef<T> x, Vector<T>* gradient, std::int64_t* correct,
              double* spread = nullptr) const {
    std::vector<Chunk> chunks;
    for (std::size_t i = 0; i < shards_.size(); ++i) {
      for (const Chunk& c : Chunks(shards_[i], static_cast<int>(i))) chunks.push_back(c);
    }
    const std::vector<ChunkResult> results = SumChunks(chunks, x, gradient != nullptr);
    const auto n = static_cast<double>(shards_.size());
    std::vector<double> shard_loss(shards_.size(), 0.0);
    std::vector<Vector<T>> shard_gradient(shards_.size());
    for (std::size_t k = 0; k < chunks.size(); ++k) {
      const auto i = static_cast<std::size_t>(chunks[k].shard);
      shard_loss[i] += results[k].loss;
      if (correct != nullptr) *correct += results[k].correct;
      if (gradient == nullptr) continue;
      if (shard_gradient[i].size() == 0) {
        shard_gradient[i] = results[k].gradient;
      } else {
        shard_gradient[i] += results[k].gradient;
      }
    }
    double loss = 0;
    if (gradient != nullptr) gradient->setZero(dimension());
    for (std::size_t i = 0; i < shards_.size(); ++i) {
      const auto rows = static_cast<double>(shards_[i].size());
      loss += shard_loss[i] / rows;
      if (gradient != nullptr) *gradient += shard_gradient[i] / static_cast<T>(rows);
    }
    loss /= n;
    if (gradient != nullptr) *gradient /= static_cast<T>(n);
    if (gradient != nullptr && spread != nullptr) {
      const Eigen::VectorXd mean = gradient->template cast<double>();
      *spread = 0;
      for (std::size_t i = 0; i < shards_.size(); ++i) {
        const auto rows = static_cast<double>(shards_[i].size());
        *spread += (shard_gradient[i].template cast<double>() / rows - mean).squaredNorm() / n;
      }
    }
    if (gradient != nullptr) {
      loss += AddRegularizer(x, *gradient);
    } else {
      loss += Regularizer(x);
    }
    return loss;
  }

  double Regularizer(ConstVectorRef<T> x) const {
    double r = 0;
    if (options_.l2 > 0) r += 0.5 * options_.l2 * x.template cast<double>().squaredNorm();
    if (options_.nonconvex > 0) {
      const Eigen::ArrayXd x2 = x.template cast<double>().array().square();
      r += options_.nonconvex * (x2 / (1 + x2)).sum();
    }
    return r;
  }

  // Adds grad R(x) to g and returns R(x).
  double AddRegularizer(ConstVectorRef<T> x, VectorRef<T> g) const {
    if (options_.l2 > 0) g += static_cast<T>(options_.l2) * x;
    if (options_.nonconvex > 0) {
      // d/dx lambda x^2 / (1 + x^2) = 2 lambda x / (1 + x^2)^2
      const auto lambda = static_cast<T>(options_.nonconvex);
      g.array() += T(2) * lambda * x.array() / (T(1) + x.array().square()).square();
    }
    return Regularizer(x);
  }

  // L, G and sigma for generalised linear models (see LinearModelBounds), from the data in
  // double. Every f_i's Hessian is at most curvature * lambda_max(A_i^T A_i / N_i) + l2 +
  // 2 lambda (the regulariser's second derivative (2 - 6x^2)/(1 + x^2)^3 lies in [-1/2, 2]);
  // per-sample gradients of the loss are at most gradient_factor * ||(a, 1)||, the regulariser's
  // at most lambda * 3 sqrt(3) / 8 per coordinate (at x = 1/sqrt(3)), and the l2 term is
  // unbounded. A minibatch of B samples drawn with replacement has variance at most
  // max ||per-sample gradient||^2 / B.
  void ComputeConstants(const Dataset& data, const lemmalab::Shards& shards) {
    const std::optional<LinearModelBounds> bounds = model_->Bounds();
    if (!bounds) return;
    const Eigen::Index features = data.num_features();
    const Eigen::Index columns = features + (bounds->intercept ? 1 : 0);
    double largest_curvature = 0, largest_row = 0;
    bool exact_eigenvalues = true;
    Eigen::RowVectorXd row(features);  // one sample's features in double, however they are held
    for (const auto& rows : shards) {
      const auto count = static_cast<Eigen::Index>(rows.size());
      double mean_sq_norm = 0;
      for (std::int64_t k : rows) {
        data.train.RowsAs(k, 1, row.data());
        const double sq = row.squaredNorm() + (bounds->intercept ? 1 : 0);
        largest_row = std::max(largest_row, std::sqrt(sq));
        mean_sq_norm += sq / static_cast<double>(count);
      }
      // lambda_max(A^T A) = lambda_max(A A^T): the smaller of the two Gram matrices (m x m,
      // m = min(N, d)) costs N d m to form and m^3 to solve, and N d + m^2 doubles. Past a
      // budget of either (a shard of 12 000 columns and few rows took minutes and gigabytes with
      // the d x d one), the trace (>= lambda_max) bounds it.
      const double m = static_cast<double>(std::min(count, columns));
      const double cells = static_cast<double>(count) * static_cast<double>(columns);
      if (cells * m + m * m * m > 2e9 || cells + m * m > 32e6) {
        exact_eigenvalues = false;
        largest_curvature = std::max(largest_curvature, mean_sq_norm);
        continue;
      }
      Eigen::MatrixXd a(count, columns);
      for (Eigen::Index r = 0; r < count; ++r) {
        data.train.RowsAs(rows[static_cast<std::size_t>(r)], 1, row.data());
        a.row(r).head(features) = row;
        if (bounds->intercept) a(r, features) = 1;
      }
      const Eigen::MatrixXd gram = (count < columns ? Eigen::MatrixXd(a * a.transpose())
                                                    : Eigen::MatrixXd(a.transpose() * a)) /
                                   static_cast<double>(count);
      const double top =
          Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(gram, Eigen::EigenvaluesOnly)
              .eigenvalues()
              .maxCoeff();
      largest_curvature = std::max(largest_curvature, top);
    }
    const double lambda = options_.nonconvex;
    std::string basis =
        fmt::format("{} * max_i {}", bounds->curvature,
                    exact_eigenvalues ? "lambda_max(A_i^T A_i / N_i)" : "trace(A_i^T A_i / N_i)");
    if (options_.l2 > 0) basis += " + l2";
    if (lambda > 0) basis += " + 2 lambda";
    constants_.push_back({"L", bounds->curvature * largest_curvature + options_.l2 + 2 * lambda,
                          Certainty::kBound, basis});
    const double per_sample = bounds->gradient_factor * largest_row;
    if (options_.l2 == 0) {
      constants_.push_back({"G",
                            per_sample + lambda * 3 * std::sqrt(3.0) / 8 *
                                             std::sqrt(static_cast<double>(dimension())),
                            Certainty::kBound,
                            fmt::format("{:.4g} * max_k ||{}||{}", bounds->gradient_factor,
                                        bounds->intercept ? "(a_k, 1)" : "a_k",
                                        lambda > 0 ? " + lambda 3 sqrt(3)/8 sqrt(d)" : "")});
    }
    if (options_.batch_size == 0) {
      constants_.push_back({"sigma", 0, Certainty::kExact, "full-shard gradients are exact"});
    } else {
      constants_.push_back({"sigma",
                            per_sample / std::sqrt(static_cast<double>(options_.batch_size)),
                            Certainty::kBound, "max per-sample gradient norm / sqrt(batch size)"});
    }
  }

  std::unique_ptr<Model<T>> model_;
  SupervisedOptions options_;
  int classes_;
  std::int64_t features_;
  std::string data_description_;
  std::vector<Part<T>> shards_;
  mutable std::vector<MinibatchScratch<T>> scratch_;  // one per worker
  std::vector<ShardSummary> summaries_;
  std::optional<Part<T>> test_;
  std::int64_t samples_ = 0;
  std::vector<Constant> constants_;
  int threads_ = 0;
};

}  // namespace

template <typename T>
std::unique_ptr<Problem<T>> MakeSupervisedProblem(std::unique_ptr<Model<T>> model,
                                                  const Dataset& data, const Shards& shards,
                                                  const SupervisedOptions& options) {
  return std::make_unique<SupervisedProblem<T>>(std::move(model), data, shards, options);
}

template std::unique_ptr<Problem<float>> MakeSupervisedProblem(std::unique_ptr<Model<float>>,
                                                               const Dataset&, const Shards&,
                                                               const SupervisedOptions&);
template std::unique_ptr<Problem<double>> MakeSupervisedProblem(std::unique_ptr<Model<double>>,
                                                                const Dataset&, const Shards&,
                                                                const SupervisedOptions&);

}  // namespace lemmalab
