// Checkpoint state (core/state.h): the archive itself, and the contract every registered
// optimizer, compressor and probe must meet: restored from the state another instance saved after
// some steps, a fresh instance continues exactly as the original does, bit for bit. A member
// missing from a Persist method fails here for the component that has it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "comm/cluster.h"
#include "compressors/compressor.h"
#include "core/error.h"
#include "core/state.h"
#include "engine/spec.h"
#include "problems/quadratic.h"
#include "tests/test_util.h"
#include "tests/theory_doubles.h"
#include "theory/probe.h"

namespace lemmalab {
namespace {

using ::testing::HasSubstr;
using testing::UserErrorOf;

// State as a component holds it: sized before the first step as the run sizes it, and state
// sized at a later step (empty until then, 4 values after).
struct Sample {
  Eigen::VectorXf v = Eigen::VectorXf::Zero(3);
  Eigen::MatrixXd m = Eigen::MatrixXd::Zero(2, 3);
  std::vector<std::uint32_t> words = std::vector<std::uint32_t>(2);
  std::vector<Eigen::ArrayXd> per_worker = {Eigen::ArrayXd::Zero(2), Eigen::ArrayXd()};
  Eigen::VectorXd later;
  std::vector<Eigen::ArrayXd> later_per_worker = std::vector<Eigen::ArrayXd>(2);
  double x = 0;
  std::int64_t t = 0;
  bool flag = false;
  std::optional<double> maybe;
  std::string text;

  void Persist(StateArchive& archive) {
    archive("v", v);
    archive("m", m);
    archive("words", words);
    archive("per_worker", per_worker);
    archive.Later("later", later, 4);
    archive.Later("later_per_worker", later_per_worker, 4);
    archive.Scope("scalars", [&] {
      archive("x", x);
      archive("t", t);
      archive("flag", flag);
      archive("maybe", maybe);
    });
    archive("text", text);
  }
};

TEST(StateArchive, RestoresEveryKindBitForBit) {
  Sample a;
  a.v << 1.5f, -0.0f, std::numeric_limits<float>::quiet_NaN();
  a.m << 1, 2, 3, 4, 5, 6;
  a.words = {7, 0xffffffffu};
  a.per_worker[0] = Eigen::ArrayXd::Constant(2, 0.25);
  a.later = Eigen::VectorXd::LinSpaced(4, 1, 4);
  a.later_per_worker[1] = Eigen::ArrayXd::Constant(4, -1);
  a.x = std::numeric_limits<double>::denorm_min();
  a.t = -42;
  a.flag = true;
  a.maybe = 3.0;
  a.text = "line one\nline two";
  const StateSnapshot snapshot = SaveState(a);
  EXPECT_TRUE(snapshot.contains("scalars/maybe?"));
  EXPECT_TRUE(snapshot.contains("m/rows"));

  Sample b;
  RestoreState(snapshot, b);
  EXPECT_EQ(std::memcmp(a.v.data(), b.v.data(), sizeof(float) * 3), 0);  // NaN and -0 too
  EXPECT_EQ(b.m, a.m);
  EXPECT_EQ(b.words, a.words);
  EXPECT_TRUE((b.per_worker[0] == a.per_worker[0]).all());
  EXPECT_EQ(b.per_worker[1].size(), 0);
  EXPECT_EQ(b.later, a.later);
  EXPECT_EQ(b.later_per_worker[0].size(), 0);
  EXPECT_TRUE((b.later_per_worker[1] == a.later_per_worker[1]).all());
  EXPECT_EQ(b.x, a.x);
  EXPECT_EQ(b.t, -42);
  EXPECT_TRUE(b.flag);
  EXPECT_EQ(b.maybe, 3.0);
  EXPECT_EQ(b.text, a.text);

  // State sized later that was still empty is restored empty.
  a.maybe.reset();
  a.later.resize(0);
  Sample c;
  c.maybe = 1.0;
  c.later = Eigen::VectorXd::Ones(4);
  RestoreState(SaveState(a), c);
  EXPECT_FALSE(c.maybe.has_value());
  EXPECT_EQ(c.later.size(), 0);
}

// Sizes come from the run: an array of any other length, a matrix of other rows (with the same
// number of elements), state sized later at a length other than the one it will have, and a
// vector of other count, are each refused by name.
TEST(StateArchive, RefusesEveryShapeButTheRunsOwn) {
  Sample a;
  a.later = Eigen::VectorXd::Ones(4);
  const StateSnapshot saved = SaveState(a);
  const auto refusal = [&](const std::function<void(StateSnapshot&)>& edit) {
    StateSnapshot edited = saved;
    edit(edited);
    Sample b;
    return UserErrorOf([&] { RestoreState(edited, b, "DIR/state.sqlite"); });
  };
  const auto resize = [](std::string_view path, std::size_t bytes) {
    return [path = std::string(path), bytes](StateSnapshot& s) { s.at(path).bytes.resize(bytes); };
  };
  EXPECT_EQ(refusal([](StateSnapshot&) {}), "(no error)");
  EXPECT_THAT(refusal(resize("v", 4 * 4)),
              HasSubstr("state item 'v': expected 3 elements (as this run has), but it holds 4"));
  EXPECT_THAT(refusal(resize("v", 0)), HasSubstr("expected 3 elements"));
  EXPECT_THAT(refusal(resize("words", 3 * 4)), HasSubstr("'words': expected 2 elements"));
  EXPECT_THAT(refusal(resize("per_worker/1", 8)), HasSubstr("'per_worker/1': expected 0"));
  EXPECT_THAT(refusal([](StateSnapshot& s) {
                const std::int64_t rows = 3;
                std::memcpy(s.at("m/rows").bytes.data(), &rows, sizeof(rows));
              }),
              HasSubstr("'m': expected 2 rows (as this run has), but it holds 3"));
  EXPECT_THAT(refusal(resize("later", 3 * 8)),
              HasSubstr("'later': expected none or 4 elements (as this run has), but it holds 3"));
  EXPECT_EQ(refusal(resize("later", 0)), "(no error)");
  EXPECT_THAT(refusal(resize("later_per_worker/0", 5 * 8)),
              HasSubstr("'later_per_worker/0': expected none or 4"));
  EXPECT_THAT(refusal([](StateSnapshot& s) {
                const std::uint64_t count = 3;
                std::memcpy(s.at("per_worker/count").bytes.data(), &count, sizeof(count));
              }),
              HasSubstr("'per_worker/count': expected 2 (as this run has), but it says 3"));
  EXPECT_THAT(refusal(resize("v", 5)), HasSubstr("a whole number of elements"));
}

TEST(StateArchive, RefusesASnapshotThatIsNotExactlyTheState) {
  Sample a;
  StateSnapshot missing = SaveState(a);
  missing.erase("scalars/t");
  Sample b;
  EXPECT_THROW(
      {
        try {
          RestoreState(missing, b, "DIR/state.sqlite");
        } catch (const UserError& e) {
          EXPECT_NE(std::string(e.what()).find("DIR/state.sqlite: state item 'scalars/t'"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      UserError);

  StateSnapshot extra = SaveState(a);
  extra["scalars/unknown"] = StateItem{StateKind::kF64, std::vector<std::byte>(8)};
  EXPECT_THROW(RestoreState(extra, b), UserError);

  StateSnapshot wrong_kind = SaveState(a);
  wrong_kind["scalars/t"].kind = StateKind::kF64;
  EXPECT_THROW(RestoreState(wrong_kind, b), UserError);
}

// The runs below: a noisy quadratic over 3 workers whose 16 parameters the optimizers see as a
// 4 x 3 matrix layer and a 4-vector (so per-layer and low-rank state is exercised), with a
// learning rate that changes every step (so scaled error feedback's previous rate matters).
constexpr std::int64_t kDimension = 16;
constexpr int kWorkers = 3;
constexpr std::int64_t kSteps = 12;
constexpr std::int64_t kSaveAfter = 5;

OptimizerContext Context() { return {kDimension, kWorkers, {{"w", 0, 4, 3}, {"b", 12, 4, 1}}}; }

double Rate(std::int64_t t) { return 0.05 / std::sqrt(static_cast<double>(t)); }

template <typename T>
std::unique_ptr<Problem<T>> Quadratic() {
  QuadraticOptions q;
  q.spectrum.dimension = kDimension;
  q.noise.sigma = 0.1;
  return MakeQuadratic<T>(BuildQuadraticModel(q, kWorkers, 5));
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> Build(const std::string& toml) {
  auto table = ParseOptionTable(toml, "optimizer", "test.toml");
  return MakeOptimizer<T>(*table, Context());
}

// Everything a probe or the run loop can see of an optimizer after a step, as doubles: x, every
// observable quantity of every worker and the server, and the last encode statistics.
template <typename T>
std::vector<double> Visible(const DistributedOptimizer<T>& optimizer, const Vector<T>& x) {
  std::vector<double> out(x.data(), x.data() + x.size());
  const Observable<T>& view = optimizer.observable();
  for (int w = kServer; w < kWorkers; ++w) {
    for (int q = 0; q <= static_cast<int>(Quantity::kShift); ++q) {
      if (const Vector<T>* v = view.Observe(static_cast<Quantity>(q), w)) {
        out.insert(out.end(), v->data(), v->data() + v->size());
      }
    }
    if (const EncodeStats* s = view.LastEncode(w)) {
      out.push_back(static_cast<double>(s->elements));
      out.push_back(static_cast<double>(s->out_of_domain));
      out.push_back(static_cast<double>(s->non_finite));
    }
    if (const Vector<T>* local = w == kServer ? nullptr : optimizer.LocalParameters(w)) {
      out.insert(out.end(), local->data(), local->data() + local->size());
    }
  }
  return out;
}

// A compressor by name as an inline table, with the options it cannot default.
std::string CompressorTable(std::string_view name) {
  const bool sparse = name == "top-k" || name == "random-k";
  return fmt::format("{{ name = '{}'{} }}", name, sparse ? ", fraction = 0.25" : "");
}

// The optimizer configurations to resume: its defaults, and settings that switch on the state
// the defaults leave idle (a warmup that ends within the run, line 7's max rule, scaled error
// feedback, a stateful compressor, l2 weight decay).
std::vector<std::string> Configurations(std::string_view name) {
  const std::string bare = fmt::format("name = '{}'", name);
  std::vector<std::string> configs = {bare,
                                      bare + "\nweight_decay = 0.01\nweight_decay_mode = 'l2'"};
  const auto add = [&](std::string_view extra) {
    configs.push_back(bare + "\n" + std::string(extra));
  };
  if (name == "birder") {
    add("t0 = 3\nworker_feedback = 'scaled'\nserver_feedback = 'scaled-as-printed'");
  }
  if (name == "onebit-adam") {
    add("warmup_steps = 3");
    add("warmup_steps = 3\nlocal_momentum = 'own'\nwarmup_compressor = 'fp16'");
  }
  if (name == "onebit-adam-fp32") add("warmup_steps = 3");
  if (name == "onebit-lamb") {
    add("warmup_steps = 3");
    add("warmup_steps = 3\nlocal_momentum = 'own'\nmomentum_scaling = false");
  }
  if (name == "local-sgd" || name == "local-sgdm") add("tau = 3");
  // Local steps between synchronisations from step 3 on, and the literal variance steps.
  if (name == "zero-one-adam") {
    add("var_freeze_step = 3\nlocal_step_scaler = 1\nlocal_step_clipper = 4");
    add("var_freeze_step = 3\nlocal_step_scaler = 1\nlocal_step_clipper = 4\n"
        "variance_sync = 'one-bit'");
  }
  // EF21 from full gradients, EF21-SGDM from a compressed start; MARINA with rare full rounds.
  if (name == "ef21") add("init = 'full'");
  if (name == "ef21-sgdm") add("init = 'compressed'");
  if (name == "marina") add("p = 0.1");
  if (name == "ef-sgd") {
    for (const CompressorInfo& c : Compressors().entries()) {
      add(fmt::format("compressor = {}\nserver_compressor = {}\nserver_feedback = 'classic'",
                      CompressorTable(c.name), CompressorTable(c.name)));
    }
  }
  return configs;
}

class EveryOptimizerCheckpoint : public ::testing::TestWithParam<std::string> {};

template <typename T>
void ExpectResumesExactly(const std::string& toml) {
  SCOPED_TRACE(toml);
  const auto problem = Quadratic<T>();
  auto original = Build<T>(toml);
  Cluster<T> cluster(*problem, *original);
  Vector<T> x = problem->InitialPoint();
  std::vector<std::vector<double>> expected;
  StateSnapshot saved;
  Vector<T> x_saved;
  for (std::int64_t t = 1; t <= kSteps; ++t) {
    cluster.Step({t, Rate(t), 11}, x);
    expected.push_back(Visible(*original, x));
    if (t == kSaveAfter) {
      saved = SaveState(*original);
      x_saved = x;
    }
  }
  auto resumed = Build<T>(toml);
  RestoreState(saved, *resumed);
  Cluster<T> resumed_cluster(*problem, *resumed);
  for (std::int64_t t = kSaveAfter + 1; t <= kSteps; ++t) {
    resumed_cluster.Step({t, Rate(t), 11}, x_saved);
    ASSERT_EQ(Visible(*resumed, x_saved), expected[static_cast<std::size_t>(t - 1)])
        << "step " << t << " after resuming from step " << kSaveAfter;
  }
}

TEST_P(EveryOptimizerCheckpoint, ContinuesFromItsSavedStateBitForBit) {
  for (const std::string& toml : Configurations(GetParam())) {
    ExpectResumesExactly<float>(toml);
    ExpectResumesExactly<double>(toml);
  }
}

// Issue 33: restore sizes nothing by the file. Every number array of `saved`, one element longer
// or shorter than the run has it, is refused by its length (a longer parameter vector crashed
// Birder::Apply), whether the run sized it before its first step or declares the length it will
// have (StateArchive::Later); every container count at 5e7 is refused before anything is sized
// by it. `restore` restores into a fresh instance.
void ExpectEveryOtherLengthRefused(const StateSnapshot& saved,
                                   const std::function<void(const StateSnapshot&)>& restore) {
  for (const auto& [path, item] : saved) {
    const std::size_t element = item.kind == StateKind::kF32   ? 4
                                : item.kind == StateKind::kF64 ? 8
                                : item.kind == StateKind::kU64 ? 8
                                                               : 0;
    if (element == 0 || item.bytes.size() < 2 * element) continue;
    for (const bool longer : {true, false}) {
      SCOPED_TRACE(fmt::format("{}, one element {}", path, longer ? "more" : "fewer"));
      StateSnapshot edited = saved;
      auto& bytes = edited.at(path).bytes;
      bytes.resize(longer ? bytes.size() + element : bytes.size() - element);
      EXPECT_THAT(UserErrorOf([&] { restore(edited); }), HasSubstr("(as this run has)"));
    }
  }
  for (const auto& [path, item] : saved) {
    // A container's count (its elements follow as .../0, ...), not a scalar named count.
    const std::string first = path.substr(0, path.size() - 5) + "0";
    const auto next = saved.lower_bound(first);
    if (!path.ends_with("/count") || next == saved.end() || !next->first.starts_with(first)) {
      continue;
    }
    SCOPED_TRACE(path);
    StateSnapshot edited = saved;
    const std::uint64_t huge = 50'000'000;
    std::memcpy(edited.at(path).bytes.data(), &huge, sizeof(huge));
    EXPECT_THAT(
        UserErrorOf([&] { restore(edited); }),
        ::testing::AnyOf(HasSubstr("but it says 50000000"), HasSubstr("(as this run has)")));
  }
  EXPECT_EQ(UserErrorOf([&] { restore(saved); }), "(no error)");
}

template <typename T>
void ExpectRefusesEveryOtherLength(const std::string& toml) {
  SCOPED_TRACE(toml);
  const auto problem = Quadratic<T>();
  auto original = Build<T>(toml);
  Cluster<T> cluster(*problem, *original);
  Vector<T> x = problem->InitialPoint();
  for (std::int64_t t = 1; t <= kSaveAfter; ++t) cluster.Step({t, Rate(t), 11}, x);
  ExpectEveryOtherLengthRefused(SaveState(*original), [&](const StateSnapshot& edited) {
    auto fresh = Build<T>(toml);
    Cluster<T> fresh_cluster(*problem, *fresh);
    RestoreState(edited, *fresh);
  });
}

TEST_P(EveryOptimizerCheckpoint, RefusesStateOfAnyOtherLength) {
  for (const std::string& toml : Configurations(GetParam())) {
    ExpectRefusesEveryOtherLength<float>(toml);
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryOptimizerCheckpoint,
                         ::testing::ValuesIn(Optimizers().names()), testing::RegistryTestName);

// Every probe on every optimizer it applies to: restored after step kSaveAfter (optimizer and
// probe, the probe attached first as a run does), it records the same series and ends with the
// same summary as the probe that ran throughout; and it refuses state of any other length.
TEST(EveryProbeCheckpoint, ContinuesFromItsSavedStateOnEveryOptimizer) {
  int pairs = 0;
  for (const OptimizerInfo& info : Optimizers().entries()) {
    for (const ProbeInfo& probe : Probes().entries()) {
      std::string toml = fmt::format("name = '{}'", info.name);
      if (info.name == "onebit-adam" || info.name == "onebit-lamb") toml += "\nwarmup_steps = 3";
      SCOPED_TRACE(fmt::format("{} on {}", probe.name, toml));
      const auto problem = Quadratic<double>();
      auto table = ParseOptionTable(toml, "optimizer", "test.toml");
      ProbeContext context{kDimension, kWorkers, 7};
      auto optimizer = MakeOptimizer<double>(*table, Context());
      context.hyperparameters = table->Resolved();
      const auto run = [&](DistributedOptimizer<double>& opt, Probe<double>& instance,
                           Eigen::VectorXd& x, std::int64_t first, std::int64_t last,
                           RunEvidence& evidence) {
        Cluster<double> cluster(*problem, opt);
        testing::EvidenceSink sink;
        sink.run = &evidence;
        sink.probe = std::string(probe.name);
        for (std::int64_t t = first; t <= last; ++t) {
          cluster.Step({t, Rate(t), 11}, x);
          sink.step = t;
          instance.Observe({t, Rate(t), x, cluster.consumed_gradients(), *problem},
                           opt.observable(), sink);
        }
      };
      auto original = FactoryFor<double>(probe)(context);
      if (!original->AppliesTo(optimizer->observable())) continue;
      ++pairs;
      Eigen::VectorXd x = problem->InitialPoint();
      original->Attach(optimizer->observable(), x);
      RunEvidence before, after, resumed_after;
      run(*optimizer, *original, x, 1, kSaveAfter, before);
      const StateSnapshot optimizer_state = SaveState(*optimizer);
      const StateSnapshot probe_state = SaveState(*original);
      Eigen::VectorXd x_saved = x;
      run(*optimizer, *original, x, kSaveAfter + 1, kSteps, after);

      auto fresh_table = ParseOptionTable(toml, "optimizer", "test.toml");
      auto fresh = MakeOptimizer<double>(*fresh_table, Context());
      auto resumed = FactoryFor<double>(probe)(context);
      resumed->Attach(fresh->observable(), problem->InitialPoint());
      RestoreState(optimizer_state, *fresh);
      RestoreState(probe_state, *resumed);
      ExpectEveryOtherLengthRefused(probe_state, [&](const StateSnapshot& edited) {
        auto other = FactoryFor<double>(probe)(context);
        other->Attach(fresh->observable(), problem->InitialPoint());
        RestoreState(edited, *other);
      });
      run(*fresh, *resumed, x_saved, kSaveAfter + 1, kSteps, resumed_after);
      EXPECT_EQ(x_saved, x);
      EXPECT_EQ(resumed->Summary(), original->Summary());
      ASSERT_EQ(resumed_after.probes.size(), after.probes.size());
      for (const auto& [key, series] : after.probes) {
        const auto it = resumed_after.probes.find(key);
        ASSERT_NE(it, resumed_after.probes.end()) << key;
        const auto& got = it->second.points();
        const auto& want = series.points();
        ASSERT_EQ(got.size(), want.size()) << key;
        for (std::size_t k = 0; k < want.size(); ++k) {
          EXPECT_EQ(got[k].step, want[k].step) << key;
          EXPECT_EQ(got[k].worker, want[k].worker) << key;
          EXPECT_TRUE(got[k].value == want[k].value ||
                      (std::isnan(got[k].value) && std::isnan(want[k].value)))
              << key << " at step " << want[k].step << ": " << got[k].value << " vs "
              << want[k].value;
        }
      }
    }
  }
  EXPECT_GE(pairs, static_cast<int>(Probes().entries().size()));
}

// Every registered compressor: an instance restored from another's state after some encodes
// encodes the next inputs into the same bytes (PowerSGD's warm start is such state), and state
// of any other length is refused.
TEST(EveryCompressorCheckpoint, ContinuesFromItsSavedStateBitForBit) {
  const CompressorShape shape{kDimension, Context().layers};
  for (const CompressorInfo& info : Compressors().entries()) {
    SCOPED_TRACE(info.name);
    auto table = ParseOptionTable(fmt::format("c = {}", CompressorTable(info.name)), "spec");
    table = table->GetComponent("c", "");
    const CompressorMaker<float> maker = MakeCompressorMaker<float>(*table);
    auto original = maker(shape);
    const auto input = [](std::int64_t t) {
      Eigen::VectorXf x(kDimension);
      for (Eigen::Index j = 0; j < x.size(); ++j) {
        x[j] =
            static_cast<float>(std::sin(0.7 * static_cast<double>(j + 1) * static_cast<double>(t)));
      }
      return x;
    };
    StateSnapshot saved;
    std::vector<std::vector<std::uint8_t>> expected;
    for (std::int64_t t = 1; t <= 6; ++t) {
      PhiloxStream stream({3, Purpose::kWorkerCompression, 0, static_cast<std::uint64_t>(t)});
      Message m;
      original->Encode(input(t), stream, m);
      expected.push_back(m.bytes);
      if (t == 3) saved = SaveState(*original);
    }
    ExpectEveryOtherLengthRefused(
        saved, [&](const StateSnapshot& edited) { RestoreState(edited, *maker(shape)); });
    auto resumed = maker(shape);
    RestoreState(saved, *resumed);
    for (std::int64_t t = 4; t <= 6; ++t) {
      PhiloxStream stream({3, Purpose::kWorkerCompression, 0, static_cast<std::uint64_t>(t)});
      Message m;
      resumed->Encode(input(t), stream, m);
      EXPECT_EQ(m.bytes, expected[static_cast<std::size_t>(t - 1)]) << "encode " << t;
    }
  }
}

}  // namespace
}  // namespace lemmalab
