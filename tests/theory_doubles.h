// Test doubles for the theory checks: a sink that records probe series into a RunEvidence (as a
// finished run's results would hold them), and planted faults for the compressor checks.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "cli/check.h"
#include "compressors/compressor.h"
#include "compressors/stochastic_binary.h"
#include "engine/spec.h"
#include "tests/test_util.h"
#include "theory/assertions.h"
#include "theory/evidence.h"
#include "theory/probe.h"

namespace lemmalab::testing {

// Runs `lemmalab check` on a spec written as `text` into `dir` (results in dir/out, or read from
// there with `from`).
inline CheckReport CheckSpecText(const std::string& text, const std::filesystem::path& dir,
                                 bool from = false) {
  const std::filesystem::path spec = dir / "spec.toml";
  WriteFile(spec, text);
  CheckOptions options;
  options.out_dir = dir / "out";
  options.from = from;
  options.progress = false;
  return RunCheck(LoadSpec(spec), options);
}

// The row of `assertion` on `run` (as the report labels it).
inline const CheckRow& RowOf(const CheckReport& report, std::string_view assertion,
                             std::string_view run) {
  for (const CheckRow& row : report.rows) {
    if (row.assertion == assertion && row.runs == run) return row;
  }
  throw std::runtime_error(fmt::format("no row {} / {}", assertion, run));
}

// The verdict `assertion` gives, configured by the [[assert]] keys `table` (TOML text), on
// `runs` judged together (one run for per-run assertions), as lemmalab check settles it.
inline Verdict Judge(std::string_view assertion, std::span<const RunEvidence> runs,
                     const std::string& table = "", double confidence = 0.99) {
  const auto options = ParseOptionTable(table, "[[assert]]");
  return JudgeAssertion(assertion, *options, {runs, runs, confidence});
}
inline Verdict Judge(std::string_view assertion, const RunEvidence& run,
                     const std::string& table = "", double confidence = 0.99) {
  return Judge(assertion, std::span(&run, 1), table, confidence);
}

// Records probe series into `run->probes["probe/series"]` at `step`.
struct EvidenceSink final : ProbeSink {
  RunEvidence* run = nullptr;
  std::string probe;
  std::int64_t step = 0;
  void Record(std::string_view series, int worker, double value) override {
    run->probes[probe + "/" + std::string(series)].Record({step, worker, value});
  }
};

// Forwards to a real compressor but declares constants it need not have.
class Overclaiming final : public Compressor<double> {
 public:
  struct Claims {
    std::optional<double> q = std::nullopt;
    bool unbiased = false;
    std::optional<double> omega = std::nullopt;
    std::optional<double> alpha =
        std::nullopt;  // nullopt: the 1 - q^2 the claimed q gives (Compressor's)
    bool deterministic = false;
  };
  Overclaiming(std::unique_ptr<Compressor<double>> inner, Claims claims)
      : inner_(std::move(inner)), claims_(claims) {}
  Overclaiming(std::unique_ptr<Compressor<double>> inner, std::optional<double> q, bool unbiased)
      : Overclaiming(std::move(inner), Claims{.q = q, .unbiased = unbiased}) {}
  std::string_view name() const override { return "overclaiming"; }
  // A nullopt alpha is Compressor's 1 - q^2 of the claimed q.
  CompressorClaims claims() const override {
    return {.unbiased = claims_.unbiased,
            .q = claims_.q,
            .omega = claims_.omega,
            .alpha = claims_.alpha,
            .deterministic = claims_.deterministic};
  }
  EncodeStats Encode(ConstVectorRef<double> x, PhiloxStream& s, Message& out) override {
    return inner_->Encode(x, s, out);
  }
  void Decode(const Message& in, VectorRef<double> out) const override { inner_->Decode(in, out); }
  void DecodeAdd(const Message& in, double w, VectorRef<double> acc) const override {
    inner_->DecodeAdd(in, w, acc);
  }

 private:
  std::unique_ptr<Compressor<double>> inner_;
  Claims claims_;
};

// A planted bias: Birder's quantizer applied to clamp(u + 0.1, -1, 1), so it draws +1 with
// probability p + 0.05 and leans by about +0.1 per coordinate, while claiming to be unbiased.
class LeaningBinary final : public Compressor<double> {
 public:
  explicit LeaningBinary(std::int64_t d)
      : inner_(MakeStochasticBinary<double>(QuantizerDomain::kClip, d)) {}
  std::string_view name() const override { return "leaning-binary"; }
  CompressorClaims claims() const override {
    return {.unbiased = true};  // the lie the probe must catch
  }
  EncodeStats Encode(ConstVectorRef<double> x, PhiloxStream& stream, Message& out) override {
    shifted_ = (x.array() + 0.1).min(1.0).max(-1.0);
    return inner_->Encode(shifted_, stream, out);
  }
  void Decode(const Message& in, VectorRef<double> out) const override { inner_->Decode(in, out); }
  void DecodeAdd(const Message& in, double w, VectorRef<double> acc) const override {
    inner_->DecodeAdd(in, w, acc);
  }

 private:
  std::unique_ptr<Compressor<double>> inner_;
  Eigen::VectorXd shifted_;
};

}  // namespace lemmalab::testing
