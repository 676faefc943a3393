#include "theory/shift_probes.h"

#include <fmt/format.h>

#include "theory/tally.h"

namespace lemmalab {
namespace {

template <typename T>
class ShiftErrorProbe final : public Probe<T> {
 public:
  explicit ShiftErrorProbe(const ProbeContext& context) : workers_(context.workers) {}

  std::string_view name() const override { return "shift-error"; }

  bool AppliesTo(const Observable<T>& optimizer) const override {
    for (int i = 0; i < workers_; ++i) {
      if (optimizer.Observe(Quantity::kShift, i) != nullptr) return true;
    }
    return false;
  }

  void Observe(const ProbeStep<T>& step, const Observable<T>& optimizer, ProbeSink& sink) override {
    for (int i = 0; i < workers_; ++i) {
      const Vector<T>* shift = optimizer.Observe(Quantity::kShift, i);
      const auto index = static_cast<std::size_t>(i);
      if (shift == nullptr || shift->size() == 0 || index >= step.gradients.size() ||
          step.gradients[index].size() == 0) {
        continue;  // a worker another process runs
      }
      const Eigen::VectorXd g = step.gradients[index].template cast<double>();
      const double sq_error = (shift->template cast<double>() - g).squaredNorm();
      sink.Record("sq_error", i, sq_error);
      sink.Record("gradient_sq", i, g.squaredNorm());
      error_.Add(sq_error, step.t, i);
    }
  }

  void Persist(StateArchive& archive) override { archive.Nested("error", error_); }

  std::vector<std::string> Summary() const override {
    if (error_.count == 0) return {};
    return {fmt::format(
        "||s_i - g_i||^2, the workers' gradient estimates against their gradients (EF21's G^t, "
        "DIANA's shift error): mean {:.4g}, max {:.4g} (step {})",
        error_.mean(), error_.max, error_.max_step)};
  }

 private:
  int workers_;
  Tally error_;
};

}  // namespace

template <typename T>
std::unique_ptr<Probe<T>> MakeShiftErrorProbe(const ProbeContext& context) {
  return std::make_unique<ShiftErrorProbe<T>>(context);
}

template std::unique_ptr<Probe<float>> MakeShiftErrorProbe(const ProbeContext&);
template std::unique_ptr<Probe<double>> MakeShiftErrorProbe(const ProbeContext&);

}  // namespace lemmalab
