#include "engine/resume.h"

#include <fmt/format.h>

#include <cstring>
#include <span>
#include <string_view>

#include "core/error.h"
#include "engine/spec.h"

namespace lemmalab {
namespace {

void PersistRecord(StateArchive& archive, RunRecord& r) {
  RunRecord::ForEachField(
      r, [&](std::string_view name, std::string_view, auto& value) { archive(name, value); });
}

// A finished run's report, as the table and params.npy need it (its hyperparameters are the
// preparation's, not saved).
void PersistReport(StateArchive& archive, RunReport& report) {
  archive.Scope("record", [&] { PersistRecord(archive, report.record); });
  archive.List("probe_lines", report.probe_lines,
               [&](std::string& line) { archive("text", line); });
  archive("threads", report.threads);
  archive("observed_g", report.observed_g);
  archive("final_params", report.final_params);
}

void PersistConstants(StateArchive& archive, std::vector<Constant>& constants) {
  archive.List("constants", constants, [&](Constant& c) {
    auto certainty = static_cast<std::int32_t>(c.certainty);
    archive("name", c.name);
    archive("value", c.value);
    archive("certainty", certainty);
    archive("basis", c.basis);
    c.certainty = static_cast<Certainty>(certainty);
    bool regional = c.region.has_value();
    archive("regional", regional);
    if (!regional) {
      c.region.reset();
      return;
    }
    if (!c.region) c.region.emplace();
    archive("region_position", c.region->position);
    archive("region_radius", c.region->radius);
    archive("region", c.region->description);
  });
}

}  // namespace

void PersistEvaluation(StateArchive& archive, Evaluation& e) {
  archive("loss", e.loss);
  archive("grad_sq_norm", e.grad_sq_norm);
  archive("accuracy", e.accuracy);
  archive("test_loss", e.test_loss);
  archive("test_accuracy", e.test_accuracy);
  archive("shard_spread", e.shard_spread);
}

std::uint32_t DataChecksum(const Dataset& data) {
  std::uint32_t crc = 0;
  for (const std::span<const std::byte> buffer : data.Buffers()) crc = Crc32(crc, buffer);
  return crc;
}

void Checkpoints::Resume(const CheckpointMark& mark, const std::filesystem::path& dir) {
  mark_ = mark;
  snapshot_ = checkpointer_.Load(mark);
  restoring_.emplace(snapshot_, checkpointer_.StateFile(mark).string());
  Identity saved;
  PersistExperiment(*restoring_, saved);
  const auto differ = [&](std::string_view what, auto then, auto here) {
    return UserError(fmt::format(
        "--resume {}: the {} differ from the checkpointed run's ({} then, {} now); a run "
        "resumes only on the data and problem that started it",
        dir.string(), what, then, here));
  };
  const Identity& now = identity_;
  if (saved.data_checksum != now.data_checksum) {
    throw differ("data (CRC-32 of the samples)", saved.data_checksum, now.data_checksum);
  }
  const Evaluation& then = saved.initial;
  if (std::memcmp(&then.loss, &now.initial.loss, sizeof(double)) != 0 ||
      std::memcmp(&then.grad_sq_norm, &now.initial.grad_sq_norm, sizeof(double)) != 0) {
    throw differ("problem or its data",
                 fmt::format("f(x_0) = {}, |grad f(x_0)|^2 = {}", then.loss, then.grad_sq_norm),
                 fmt::format("f(x_0) = {}, |grad f(x_0)|^2 = {}", now.initial.loss,
                             now.initial.grad_sq_norm));
  }
}

void Checkpoints::PersistExperiment(StateArchive& archive, Identity& identity) {
  Origin saved = origin_;
  archive.Scope("origin", [&] {
    archive("processes", saved.processes);
    archive("rank", saved.rank);
    archive("dimension", saved.dimension);
    archive("workers", saved.workers);
  });
  if (archive.restoring()) RequireOrigin(saved);
  archive.Scope("initial", [&] { PersistEvaluation(archive, identity.initial); });
  archive("data_checksum", identity.data_checksum);
  PersistConstants(archive, constants_);
  archive.List("finished", finished_, [&](RunReport& report) {
    // A finished run's parameters are the run's d, whatever the file says.
    if (archive.restoring()) {
      report.dimension = origin_.dimension;
      report.final_params.resize(origin_.dimension);
    }
    PersistReport(archive, report);
  });
}

void Checkpoints::RequireOrigin(const Origin& saved) const {
  const auto require = [&](std::string_view what, std::int64_t then, std::int64_t now) {
    if (then == now) return;
    throw UserError(fmt::format(
        "{}: the state file was written with {} = {}, but this process has {} = {}; a "
        "checkpoint resumes only in the job that wrote it (is the file another rank's, or "
        "another run's?)",
        checkpointer_.StateFile(mark_).string(), what, then, what, now));
  };
  require("processes", saved.processes, origin_.processes);
  require("rank", saved.rank, origin_.rank);
  require("dimension", saved.dimension, origin_.dimension);
  require("workers", saved.workers, origin_.workers);
}

void RequireSameRun(const std::vector<std::pair<std::string, std::string>>& meta,
                    ResultsWriter& writer, const std::filesystem::path& dir) {
  const auto own = [&](std::string_view key) {
    for (const auto& [k, value] : meta) {
      if (k == key) return value;
    }
    LEMMALAB_CHECK(false, "the run's metadata has no '{}'", key);
    return std::string();
  };
  const auto differ = [&](std::string_view what, const std::string& then, const std::string& now) {
    return UserError(fmt::format(
        "--resume {}: the checkpoint was written by another {} ({} then, {} now); a run resumes "
        "only with the spec, --set arguments and build that started it",
        dir.string(), what, then, now));
  };
  const std::string spec_path = own("spec_path");
  if (writer.Meta("spec_text") != own("spec_text")) {
    const std::vector<std::string> differences =
        SpecDifferences(writer.Meta("spec_text"), own("spec_text"));
    throw differ("spec", fmt::format("'{}'", writer.Meta("spec_path")),
                 fmt::format("'{}', whose text differs{}", spec_path,
                             differences.empty() ? "" : ": " + ListDifferences(differences)));
  }
  const std::string settings = own("settings");
  if (writer.Meta("settings") != settings) {
    throw differ("set of --set arguments", fmt::format("'{}'", writer.Meta("settings")),
                 fmt::format("'{}'", settings));
  }
  if (writer.Meta("commit") != own("commit") || writer.Meta("build") != own("build")) {
    throw differ("build of lemmalab",
                 fmt::format("commit {}, {}", writer.Meta("commit"), writer.Meta("build")),
                 fmt::format("commit {}, {}", own("commit"), own("build")));
  }
  // Each process restores its own workers' state: the job must have as many as the one that
  // wrote the checkpoint (an MPI checkpoint does not resume in one process, nor the reverse).
  const std::string then = writer.Meta("processes");
  const std::string processes = own("processes");
  if (then != processes) {
    const bool one = then == "1" || then.empty();
    throw UserError(fmt::format(
        "--resume {}: the checkpoint was written by {} and this is {}; resume it as it was "
        "started: {}lemmalab run {} --resume {}",
        dir.string(), one ? "one process" : fmt::format("mpirun with {} processes", then),
        processes == "1" ? "one process" : fmt::format("mpirun with {} processes", processes),
        one ? "" : fmt::format("mpirun -np {} ", then), spec_path, dir.string()));
  }
}

}  // namespace lemmalab
