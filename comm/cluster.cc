#include "comm/cluster.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <tuple>

#include "core/error.h"
#include "core/parallel.h"
#include "optimizers/weight_decay.h"

namespace lemmalab {

template <typename T>
void RequireSchemeFits(const CommSpec& comm, const DistributedOptimizer<T>& optimizer,
                       std::string_view label) {
  const std::string_view scheme = SchemeName(comm.scheme);
  if (comm.scheme == Scheme::kAllreduce && !optimizer.SupportsChunks()) {
    throw UserError(
        fmt::format("{} cannot run under scheme '{}': its server phase needs the whole vector (use "
                    "\"parameter-server\" or \"allgather\")",
                    label, scheme));
  }
  if (comm.scheme == Scheme::kHierarchical && !optimizer.SupportsHierarchy()) {
    throw UserError(fmt::format(
        "{} cannot run under scheme '{}': its workers' messages cannot be averaged inside a node "
        "before they are compressed (use \"parameter-server\", \"allgather\" or \"allreduce\")",
        label, scheme));
  }
}

template <typename T>
Cluster<T>::Cluster(const Problem<T>& problem, DistributedOptimizer<T>& optimizer,
                    const CommSpec& comm, int threads, Transport* transport, std::string_view label)
    : problem_(problem),
      optimizer_(optimizer),
      comm_(comm),
      layout_(LayoutFor(comm, problem.dimension())),
      workers_(problem.num_workers()) {
  if (transport == nullptr) {
    own_transport_ = std::make_unique<InProcessTransport>(workers_);
    transport = own_transport_.get();
  }
  transport_ = transport;
  if (!comm_.topology_given) comm_.topology = {workers_, 1};  // a node per worker
  if (comm_.topology.workers() != workers_) {
    throw UserError(fmt::format("a topology of {} x {} workers for a problem of {} workers",
                                comm_.topology.nodes, comm_.topology.workers_per_node, workers_));
  }
  LEMMALAB_CHECK(transport_->workers() == workers_, "a transport of {} workers for {}",
                 transport_->workers(), workers_);
  RequireSchemeFits(comm_, optimizer_, label);
  for (int i = 0; i < workers_; ++i) {
    if (transport_->Runs(i)) local_.push_back(i);
  }
  const auto local = static_cast<std::int64_t>(local_.size());
  threads_ = threads > 0                                   ? threads
             : problem.dimension() * local < kParallelWork ? 1
                                                           : omp_get_max_threads();
  const auto n = static_cast<std::size_t>(workers_);
  gradients_.assign(n, Vector<T>());
  for (const int i : local_) gradients_[static_cast<std::size_t>(i)].resize(problem.dimension());
  decayed_ = optimizer.weight_decay().l2() ? gradients_ : std::vector<Vector<T>>(n);
  uplink_.resize(n);
  parts_.resize(n);
  node_parts_.resize(n);
  chunk_reply_.resize(static_cast<std::size_t>(layout_.chunks()));
  replies_.resize(static_cast<std::size_t>(layout_.chunks()));
  result_.minibatch_loss.resize(n);
  result_.gradient_norm.resize(n);
  result_.traffic.workers.resize(n);
}

template <typename T>
void Cluster<T>::Round(std::string_view name, std::vector<Envelope>& out,
                       std::vector<Envelope>& in) {
  RoundTraffic round{std::string(name),
                     std::vector<EndpointTraffic>(static_cast<std::size_t>(workers_) + 1)};
  const auto slot = [&](int endpoint) -> EndpointTraffic& {
    return round.endpoints[static_cast<std::size_t>(endpoint == kServer ? workers_ : endpoint)];
  };
  const auto bytes = [&](LinkBytes& b, const Envelope& e) {
    const std::int64_t size = e.message->size();
    (comm_.topology.Link(e.from, e.to) == LinkClass::kIntraNode ? b.intra : b.inter) += size;
  };
  for (const Envelope& e : out) bytes(slot(e.from).sent, e);
  transport_->Exchange(out, in);
  out.clear();
  for (const Envelope& e : in) bytes(slot(e.to).received, e);
  result_.traffic.rounds.push_back(std::move(round));
}

template <typename T>
Envelope& Cluster<T>::Find(std::vector<Envelope>& in, int to, int from, int tag) {
  const auto it = std::lower_bound(in.begin(), in.end(), std::tie(to, from, tag),
                                   [](const Envelope& e, const std::tuple<int&, int&, int&>& key) {
                                     return std::tie(e.to, e.from, e.tag) < key;
                                   });
  LEMMALAB_CHECK(it != in.end() && it->to == to && it->from == from && it->tag == tag,
                 "no message from {} to {} with tag {} in this round", from, to, tag);
  return *it;
}

template <typename T>
const StepResult& Cluster<T>::Step(const StepContext& ctx, VectorRef<T> x) {
  const bool split = comm_.scheme == Scheme::kAllreduce || comm_.scheme == Scheme::kHierarchical;
  std::fill(result_.minibatch_loss.begin(), result_.minibatch_loss.end(), 0.0);
  std::fill(result_.gradient_norm.begin(), result_.gradient_norm.end(), 0.0);
  result_.traffic.rounds.clear();
  if (source_ != nullptr) {
    source_->Compute(ctx, x, result_.minibatch_loss, result_.gradient_norm);
    source_copied_ = false;
  }
  const int team = ParallelFor(static_cast<int>(local_.size()), threads_, [&](int k) {
    // A stop need not wait for every worker of a long step (a run of 100 000 workers).
    if (ctx.stop != nullptr && ctx.stop->load(std::memory_order_relaxed)) throw Interrupted();
    const int i = local_[static_cast<std::size_t>(k)];
    const auto w = static_cast<std::size_t>(i);
    const Vector<T>* local = optimizer_.LocalParameters(i);
    const ConstVectorRef<T> x_i =
        local != nullptr ? ConstVectorRef<T>(*local) : ConstVectorRef<T>(x);
    if (source_ == nullptr) {
      PhiloxStream batch = ctx.Stream(Purpose::kMinibatch, static_cast<std::uint32_t>(i));
      result_.minibatch_loss[w] = problem_.StochasticGradient(i, x_i, batch, gradients_[w]);
      result_.gradient_norm[w] = static_cast<double>(gradients_[w].norm());
    }
    if (const TraceScope trace = ctx.Trace(i)) {
      trace.Vector<T>(optimizer_.step_symbols().gradient, gradients_[w]);
    }
    optimizer_.WorkerStep(
        ctx, i, x_i,
        ConsumedGradient<T>(optimizer_.weight_decay(), ctx, i, gradients_[w], x_i, decayed_[w]),
        uplink_[w]);
    if (split) optimizer_.Split(ctx, i, uplink_[w], parts_[w]);
  });
  largest_team_ = std::max(largest_team_, team);
  switch (comm_.scheme) {
    case Scheme::kParameterServer:
      ParameterServer(ctx);
      break;
    case Scheme::kAllgather:
      Allgather(ctx);
      break;
    case Scheme::kAllreduce:
      Allreduce(ctx);
      break;
    case Scheme::kHierarchical:
      Hierarchical(ctx);
      break;
  }
  DecayBeforeApply<T>(optimizer_.weight_decay(), ctx, x);
  optimizer_.Apply(ctx, replies_, x);
  if (const TraceScope trace = ctx.Trace(kServer)) {
    trace.Vector<T>(optimizer_.step_symbols().parameters, x);
  }
  Gather();
  return result_;
}

template <typename T>
void Cluster<T>::ParameterServer(const StepContext& ctx) {
  for (const int i : local_) {
    out_.push_back({i, kServer, 0, Share(std::move(uplink_[static_cast<std::size_t>(i)]))});
  }
  Round("gather", out_, in_);
  if (transport_->Runs(kServer)) {
    received_.resize(static_cast<std::size_t>(workers_));
    for (int i = 0; i < workers_; ++i) {
      received_[static_cast<std::size_t>(i)] = Take(Find(in_, kServer, i, 0).message);
    }
    optimizer_.ServerStep(ctx, 0, received_, chunk_reply_[0]);
    const std::shared_ptr<const Message> reply = Share(std::move(chunk_reply_[0]));
    for (int i = 0; i < workers_; ++i) out_.push_back({kServer, i, 0, reply});
  }
  Round("broadcast", out_, in_);
  replies_[0] = Take(Find(in_, local_.front(), kServer, 0).message);
}

template <typename T>
void Cluster<T>::Allgather(const StepContext& ctx) {
  const int me = local_.front();
  std::shared_ptr<const Message> mine;
  for (const int i : local_) {
    const std::shared_ptr<const Message> message =
        Share(std::move(uplink_[static_cast<std::size_t>(i)]));
    for (int j = 0; j < workers_; ++j) {
      if (j != i) out_.push_back({i, j, 0, message});
    }
    if (i == me) mine = message;
  }
  Round("allgather", out_, in_);
  // Every process runs the server phase on all n messages (the same arithmetic everywhere).
  received_.resize(static_cast<std::size_t>(workers_));
  for (int i = 0; i < workers_; ++i) {
    received_[static_cast<std::size_t>(i)] =
        i == me ? Take(mine) : Take(Find(in_, me, i, 0).message);
  }
  optimizer_.ServerStep(ctx, 0, received_, replies_[0]);
}

template <typename T>
void Cluster<T>::Allreduce(const StepContext& ctx) {
  const int chunks = layout_.chunks();
  // Reduce-scatter: part c of every worker's message goes to chunk c's server.
  for (const int i : local_) {
    for (int c = 0; c < chunks; ++c) {
      const int server = ServerOfChunk(layout_, c);
      if (server != i) {
        out_.push_back(
            {i, server, c,
             Share(std::move(parts_[static_cast<std::size_t>(i)][static_cast<std::size_t>(c)]))});
      }
    }
  }
  Round("reduce-scatter", out_, in_);
  received_.resize(static_cast<std::size_t>(workers_));
  const int me = local_.front();
  std::vector<std::shared_ptr<const Message>> mine(static_cast<std::size_t>(chunks));
  for (int c = 0; c < chunks; ++c) {
    const int server = ServerOfChunk(layout_, c);
    if (!transport_->Runs(server)) continue;
    for (int i = 0; i < workers_; ++i) {
      received_[static_cast<std::size_t>(i)] =
          i == server ? std::move(parts_[static_cast<std::size_t>(i)][static_cast<std::size_t>(c)])
                      : Take(Find(in_, server, i, c).message);
    }
    const auto cc = static_cast<std::size_t>(c);
    optimizer_.ServerStep(ctx, c, received_, chunk_reply_[cc]);
    const std::shared_ptr<const Message> reply = Share(std::move(chunk_reply_[cc]));
    for (int j = 0; j < workers_; ++j) {
      if (j != server) out_.push_back({server, j, c, reply});
    }
    if (server == me) mine[cc] = reply;
  }
  Round("allgather", out_, in2_);
  for (int c = 0; c < chunks; ++c) {
    const int server = ServerOfChunk(layout_, c);
    const auto cc = static_cast<std::size_t>(c);
    replies_[cc] = server == me ? Take(mine[cc]) : Take(Find(in2_, me, server, c).message);
  }
}

template <typename T>
void Cluster<T>::Hierarchical(const StepContext& ctx) {
  const int nodes = layout_.nodes, m = layout_.workers_per_node;
  const auto at = [](std::vector<Message>& v, int k) -> Message& {
    return v[static_cast<std::size_t>(k)];
  };
  // (i) Full-precision reduce-scatter inside each node: range r goes to local rank r.
  for (const int i : local_) {
    const int node = i / m, rank = i % m;
    for (int r = 0; r < m; ++r) {
      if (r != rank)
        out_.push_back(
            {i, node * m + r, r, Share(std::move(at(parts_[static_cast<std::size_t>(i)], r)))});
    }
  }
  Round("intra-node reduce-scatter", out_, in_);
  // (ii) Each worker compresses its range of the node's mean; (iii) all-to-all across nodes.
  std::vector<Message> inputs(static_cast<std::size_t>(m));
  for (const int i : local_) {
    const int node = i / m, rank = i % m;
    for (int r = 0; r < m; ++r) {
      const int from = node * m + r;
      at(inputs, r) = from == i ? std::move(at(parts_[static_cast<std::size_t>(i)], rank))
                                : Take(Find(in_, i, from, rank).message);
    }
    std::vector<Message>& node_out = node_parts_[static_cast<std::size_t>(i)];
    optimizer_.NodeStep(ctx, node, rank, inputs, node_out);
    for (int k = 0; k < nodes; ++k) {
      if (k != node)
        out_.push_back({i, k * m + rank, rank * nodes + k, Share(std::move(at(node_out, k)))});
    }
  }
  Round("inter-node all-to-all", out_, in_);
  // The server of chunk r N + k (node k's rank r) averages the nodes' parts and re-compresses;
  // then the 1-bit all-gather across nodes among the workers of rank r.
  std::vector<Message> node_inputs(static_cast<std::size_t>(nodes));
  // The replies of the chunks served here, kept for the all-gather inside the node.
  std::vector<std::shared_ptr<const Message>> served(static_cast<std::size_t>(nodes * m));
  for (const int i : local_) {
    const int node = i / m, rank = i % m, chunk = rank * nodes + node;
    for (int k = 0; k < nodes; ++k) {
      const int from = k * m + rank;
      at(node_inputs, k) = from == i ? std::move(at(node_parts_[static_cast<std::size_t>(i)], node))
                                     : Take(Find(in_, i, from, chunk).message);
    }
    optimizer_.ServerStep(ctx, chunk, node_inputs, at(chunk_reply_, chunk));
    const std::shared_ptr<const Message>& reply = served[static_cast<std::size_t>(chunk)] =
        Share(std::move(at(chunk_reply_, chunk)));
    for (int k = 0; k < nodes; ++k) {
      if (k != node) out_.push_back({i, k * m + rank, chunk, reply});
    }
  }
  Round("inter-node all-gather", out_, in2_);
  // Each worker now holds its range's replies; (iv) the 1-bit all-gather inside the node.
  for (const int i : local_) {
    const int node = i / m, rank = i % m;
    for (int k = 0; k < nodes; ++k) {
      const int chunk = rank * nodes + k, server = k * m + rank;
      std::shared_ptr<const Message> reply = server == i ? served[static_cast<std::size_t>(chunk)]
                                                         : Find(in2_, i, server, chunk).message;
      for (int r = 0; r < m; ++r) {
        if (r != rank) out_.push_back({i, node * m + r, chunk, reply});
      }
      if (i == local_.front()) at(replies_, chunk) = Take(reply);
    }
  }
  Round("intra-node all-gather", out_, in_);
  const int me = local_.front(), my_rank = me % m, my_node = me / m;
  for (int r = 0; r < m; ++r) {
    if (r == my_rank) continue;
    for (int k = 0; k < nodes; ++k) {
      const int chunk = r * nodes + k;
      at(replies_, chunk) = Take(Find(in_, me, my_node * m + r, chunk).message);
    }
  }
}

template <typename T>
void Cluster<T>::Gather() {
  StepTraffic& traffic = result_.traffic;
  // Flatten per-worker results and every round's counts, sum them over the processes.
  std::vector<double> doubles;
  doubles.insert(doubles.end(), result_.minibatch_loss.begin(), result_.minibatch_loss.end());
  doubles.insert(doubles.end(), result_.gradient_norm.begin(), result_.gradient_norm.end());
  transport_->Sum(doubles);
  const auto n = static_cast<std::ptrdiff_t>(workers_);
  std::copy(doubles.begin(), doubles.begin() + n, result_.minibatch_loss.begin());
  std::copy(doubles.begin() + n, doubles.end(), result_.gradient_norm.begin());
  std::vector<std::int64_t> counts;
  for (const RoundTraffic& round : traffic.rounds) {
    for (const EndpointTraffic& e : round.endpoints) {
      counts.insert(counts.end(), {e.sent.intra, e.sent.inter, e.received.intra, e.received.inter});
    }
  }
  transport_->Sum(counts);
  std::size_t k = 0;
  std::fill(traffic.workers.begin(), traffic.workers.end(), EndpointTraffic{});
  traffic.server = {};
  for (RoundTraffic& round : traffic.rounds) {
    for (std::size_t e = 0; e < round.endpoints.size(); ++e, k += 4) {
      EndpointTraffic& t = round.endpoints[e];
      t = {{counts[k], counts[k + 1]}, {counts[k + 2], counts[k + 3]}};
      (e < traffic.workers.size() ? traffic.workers[e] : traffic.server) += t;
    }
  }
}

template class Cluster<float>;
template class Cluster<double>;
template void RequireSchemeFits(const CommSpec&, const DistributedOptimizer<float>&,
                                std::string_view);
template void RequireSchemeFits(const CommSpec&, const DistributedOptimizer<double>&,
                                std::string_view);

}  // namespace lemmalab
