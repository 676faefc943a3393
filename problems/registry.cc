// The problem registry: a problem is registered by one line in the table below (what else adding
// one takes: docs/extending.md).
#include <fmt/format.h>

#include <array>

#include "problems/problem.h"
#include "problems/quadratic.h"
#include "problems/rosenbrock.h"
#include "problems/supervised.h"
#include "problems/synthetic.h"

namespace lemmalab {
namespace {

// The `shards` option of data problems: "iid" (default), "contiguous", "sorted", or
// { name = "dirichlet", alpha = 0.5 }. No shards when the context reads options only.
Shards ShardsFromOptions(OptionTable& options, const ProblemContext& context,
                         std::string& description) {
  const std::shared_ptr<OptionTable> table = options.GetComponent("shards", "iid");
  static const std::array<std::string, 4> kRules = {"iid", "contiguous", "sorted", "dirichlet"};
  const std::string rule = table->GetChoice("name", "iid", kRules);
  const double alpha =
      rule == "dirichlet" ? table->RequireDouble("alpha", Interval::Positive()) : 0.0;
  table->RejectUnknownKeys();
  if (context.options_only) return {};
  const Dataset& data = *context.data;
  const std::int64_t samples = data.train.size();
  if (samples < context.workers) {
    options.Fail("shards", fmt::format("{} training samples cannot be split across {} workers",
                                       samples, context.workers));
  }
  Shards shards;
  description = rule;
  if (rule == "iid") shards = IidShards(samples, context.workers, context.seed);
  if (rule == "contiguous") shards = ContiguousShards(samples, context.workers);
  if (rule == "sorted") {
    shards = SortedLabelShards(data.train.labels, context.workers);
    description = "label-sorted";
  }
  if (rule == "dirichlet") {
    try {
      shards =
          DirichletShards(data.train.labels, data.classes, context.workers, alpha, context.seed);
    } catch (const UserError& e) {
      table->Fail("alpha", e.what());  // names the file, line and option
    }
    description = fmt::format("Dirichlet({})", alpha);
  }
  return shards;
}

// Options every data problem shares (batch_size, l2, shards), then the model's own.
// `make_model(features, classes)` builds the model once the data are there.
template <typename T, typename MakeModel>
std::unique_ptr<Problem<T>> Supervised(OptionTable& options, const ProblemContext& context,
                                       MakeModel make_model, SupervisedOptions o) {
  o.batch_size = options.GetInt("batch_size", o.batch_size, 0, 1 << 24);
  o.l2 = options.GetDouble("l2", o.l2, Interval::NonNegative());
  o.seed = context.seed;
  const Shards shards = ShardsFromOptions(options, context, o.sharding);
  if (context.options_only) return nullptr;
  std::unique_ptr<Model<T>> model = make_model(context.data->num_features(), context.data->classes);
  return MakeSupervisedProblem<T>(std::move(model), *context.data, shards, o);
}

void RequireBinary(OptionTable& options, const ProblemContext& context, std::string_view problem) {
  if (context.options_only) return;
  const Dataset& data = *context.data;
  if (data.classes != 2) {
    options.Fail("name", fmt::format("problem '{}' is binary, but the data has {} classes; use "
                                     "multinomial-logreg or mlp",
                                     problem, data.classes));
  }
}

template <typename T>
std::unique_ptr<Problem<T>> LogregFromOptions(OptionTable& options, const ProblemContext& context) {
  RequireBinary(options, context, "logreg");
  const bool intercept = options.GetBool("intercept", true);
  return Supervised<T>(
      options, context,
      [&](std::int64_t features, int) { return MakeLogisticModel<T>(features, intercept); }, {});
}

template <typename T>
std::unique_ptr<Problem<T>> NonconvexLogregFromOptions(OptionTable& options,
                                                       const ProblemContext& context) {
  RequireBinary(options, context, "nonconvex-logreg");
  const bool intercept = options.GetBool("intercept", true);
  SupervisedOptions o;
  o.nonconvex = options.GetDouble("lambda", 0.1, Interval::Positive());
  return Supervised<T>(
      options, context,
      [&](std::int64_t features, int) { return MakeLogisticModel<T>(features, intercept); }, o);
}

template <typename T>
std::unique_ptr<Problem<T>> MultinomialFromOptions(OptionTable& options,
                                                   const ProblemContext& context) {
  return Supervised<T>(options, context,
                       [](std::int64_t features, int classes) {
                         return MakeMlpModel<T>(features, {}, classes, Activation::kRelu);
                       },
                       {});
}

template <typename T>
std::unique_ptr<Problem<T>> MlpFromOptions(OptionTable& options, const ProblemContext& context) {
  const std::vector<std::int64_t> hidden = options.GetIntList("hidden", {256}, 1, 1 << 16);
  static const std::array<std::string, 2> kActivations = {"relu", "tanh"};
  const Activation activation = options.GetChoice("activation", "relu", kActivations) == "relu"
                                    ? Activation::kRelu
                                    : Activation::kTanh;
  SupervisedOptions o;
  o.batch_size = 64;
  return Supervised<T>(
      options, context,
      [&](std::int64_t features, int classes) {
        return MakeMlpModel<T>(features, hidden, classes, activation);
      },
      o);
}

// The options of `quadratic`; `nonconvex-quadratic` adds nu.
QuadraticOptions ReadQuadraticOptions(OptionTable& options, const ProblemContext& context) {
  QuadraticOptions o;
  o.spectrum = ReadSpectrum(options);
  o.noise = ReadGradientNoise(options);
  o.heterogeneity = ReadHeterogeneity(options, context.workers);
  o.radius = ReadRadius(options);
  return o;
}

// Problem `name` from its read options: none when only the options are checked, and refused
// before anything is allocated when its rotation and workers' shifts exceed the memory limit.
template <typename T>
std::unique_ptr<Problem<T>> BuildQuadratic(const QuadraticOptions& o, std::string_view name,
                                           const OptionTable& options,
                                           const ProblemContext& context) {
  if (context.options_only) return nullptr;
  RequireWithin(context.memory, QuadraticMemory(o, context.workers, sizeof(T)), options.where(),
                fmt::format("memory of problem '{}'", name));
  const QuadraticModel model = BuildQuadraticModel(o, context.workers, context.seed);
  // G is certified on the ball ||x - x*|| <= radius; a ball without x_0 certifies nothing the
  // run starts from.
  const double start = model.minimizer.norm();  // x_0 = 0
  if (o.radius && *o.radius < start) {
    options.Fail(
        "radius",
        fmt::format("radius = {} is smaller than ||x_0 - x*|| = {:.6g} (seed {}): the ball "
                    "||x - x*|| <= radius where G holds must contain the initial point; "
                    "give radius >= {:.6g}, or leave it out (its default is "
                    "||x_0 - x*||)",
                    *o.radius, start, context.seed, start));
  }
  return MakeQuadratic<T>(model);
}

template <typename T>
std::unique_ptr<Problem<T>> QuadraticFromOptions(OptionTable& options,
                                                 const ProblemContext& context) {
  return BuildQuadratic<T>(ReadQuadraticOptions(options, context), "quadratic", options, context);
}

template <typename T>
std::unique_ptr<Problem<T>> NonconvexQuadraticFromOptions(OptionTable& options,
                                                          const ProblemContext& context) {
  QuadraticOptions o = ReadQuadraticOptions(options, context);
  // nu = L/2: the directions with lambda < L/2 are double wells, and the problem's L stays L.
  o.nu = options.GetDouble("nu", o.spectrum.l / 2, Interval::Positive());
  if (o.spectrum.mu == 0) {
    options.Fail("mu",
                 "nonconvex-quadratic needs mu > 0: along an eigenvalue 0, -nu log cosh(y) makes "
                 "f unbounded below");
  }
  return BuildQuadratic<T>(o, "nonconvex-quadratic", options, context);
}

template <typename T>
std::unique_ptr<Problem<T>> RosenbrockFromOptions(OptionTable& options,
                                                  const ProblemContext& context) {
  RosenbrockOptions o;
  o.dimension = ReadDimension(options);
  if (o.dimension < 2) {
    options.Fail("dimension",
                 fmt::format("rosenbrock needs dimension >= 2 (its terms couple x_i and x_i+1), "
                             "got {}",
                             o.dimension));
  }
  o.a = options.GetDouble("a", o.a, Interval::Positive());
  o.radius = options.GetDouble("radius", o.radius, Interval::Positive());
  // L and G are certified on the box |x_j| <= radius, which must hold x_0 = (-1.2, 1, ...).
  if (const double start = RosenbrockStartRadius(o.dimension); o.radius < start) {
    options.Fail("radius",
                 fmt::format("radius = {} leaves out the initial point x_0 = (-1.2, 1, -1.2, "
                             "...), whose largest |x_j| is {}: L and G hold on the box |x_j| <= "
                             "radius, which must contain it (give radius >= {}; default 2)",
                             o.radius, start, start));
  }
  o.noise = ReadGradientNoise(options);
  if (context.options_only) return nullptr;
  return MakeRosenbrock<T>(o, context.workers);
}

}  // namespace

const Registry<ProblemInfo>& Problems() {
  static const Registry<ProblemInfo> registry(
      "problem",
      {
          {"logreg", "binary logistic regression, optional L2 and intercept", true,
           &LogregFromOptions<float>, &LogregFromOptions<double>},
          {"nonconvex-logreg", "logistic loss + lambda sum x^2/(1+x^2), the nonconvex benchmark",
           true, &NonconvexLogregFromOptions<float>, &NonconvexLogregFromOptions<double>},
          {"multinomial-logreg", "softmax regression over the data's classes, optional L2", true,
           &MultinomialFromOptions<float>, &MultinomialFromOptions<double>},
          {"mlp", "fully connected network (hidden widths, relu/tanh), softmax cross-entropy", true,
           &MlpFromOptions<float>, &MlpFromOptions<double>},
          {"nonconvex-quadratic",
           "sum of double wells lambda/2 y^2 - nu log cosh y along rotated eigenvectors; exact "
           "L and f_star",
           false, &NonconvexQuadraticFromOptions<float>, &NonconvexQuadraticFromOptions<double>},
          {"quadratic",
           "1/2 x^T A x - (b + delta_i)^T x with a chosen spectrum; exact L, mu, f_star, sigma, "
           "sigma_g",
           false, &QuadraticFromOptions<float>, &QuadraticFromOptions<double>},
          {"rosenbrock", "d-dimensional Rosenbrock; f_star = 0, L and G bounded on a box", false,
           &RosenbrockFromOptions<float>, &RosenbrockFromOptions<double>},
      });
  return registry;
}

std::string DataMismatch(const ProblemInfo& info, bool has_data) {
  if (info.needs_data && !has_data) {
    return fmt::format("problem '{}' learns from data: add a [data] table", info.name);
  }
  if (!info.needs_data && has_data) {
    return fmt::format(
        "problem '{}' makes its own data and reads no [data] table; remove the "
        "table, or choose a problem that learns from data",
        info.name);
  }
  return "";
}

template <typename T>
std::unique_ptr<Problem<T>> MakeProblem(OptionTable& options, const ProblemContext& context) {
  const ProblemInfo& info = Problems().Get(options);
  options.set_context(fmt::format("problem '{}'", info.name));
  const bool has_data = context.options_only ? info.needs_data : context.data != nullptr;
  if (const std::string why = DataMismatch(info, has_data); !why.empty()) {
    options.Fail("name", why);
  }
  std::unique_ptr<Problem<T>> problem = FactoryFor<T>(info)(options, context);
  options.RejectUnknownKeys();
  return problem;
}

template std::unique_ptr<Problem<float>> MakeProblem(OptionTable&, const ProblemContext&);
template std::unique_ptr<Problem<double>> MakeProblem(OptionTable&, const ProblemContext&);

}  // namespace lemmalab
