// The experiment's side of checkpoints (engine/checkpoint.h saves and finds the files): what a
// checkpoint holds besides the run in progress (the problem's constants, the finished runs'
// reports, which process of which job wrote it), the saving of it all at a step and, when
// resuming, the archive everything is restored from, in the same order, and the checks that a
// resumed run continues the run that was saved.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/state.h"
#include "engine/checkpoint.h"
#include "engine/experiment.h"
#include "problems/dataset.h"
#include "problems/problem.h"

namespace lemmalab {

void PersistEvaluation(StateArchive& archive, Evaluation& e);

// A CRC-32 (zlib) of a data set's samples: features, labels, test set.
std::uint32_t DataChecksum(const Dataset& data);

class Checkpoints {
 public:
  // What a resumed experiment checks it continues: f(x_0) and ||grad f(x_0)||^2 of the problem,
  // and a checksum of its data.
  struct Identity {
    Evaluation initial;
    std::uint32_t data_checksum = 0;
  };
  // Which process of which job wrote a state file, and the sizes everything in it has: compared
  // before anything else is restored, so that another rank's file, or one of another job, is
  // refused with its reason instead of restoring state of the wrong shape.
  struct Origin {
    std::int64_t processes = 1, rank = 0, dimension = 0, workers = 0;
  };

  Checkpoints(Checkpointer& checkpointer, std::vector<Constant>& constants,
              std::vector<RunReport>& finished, Identity identity, Origin origin)
      : checkpointer_(checkpointer),
        constants_(constants),
        finished_(finished),
        identity_(identity),
        origin_(origin) {}

  // Restores the constants and the finished runs from the checkpoint `mark`, after checking
  // that it was saved by this job on this problem and data (UserError naming `dir` otherwise);
  // the run in progress restores itself from restoring() (ResumeRun), then Finish checks nothing
  // was left.
  void Resume(const CheckpointMark& mark, const std::filesystem::path& dir);
  // The run (0-based) a resumed experiment continues, if it resumes.
  std::optional<std::int64_t> resumed_run() const {
    return restoring_ ? std::optional(mark_.run) : std::nullopt;
  }
  // Restores the run in progress through `persist_run` and releases the snapshot.
  template <typename F>
  void ResumeRun(F&& persist_run) {
    restoring_->Scope("run", [&] { persist_run(*restoring_); });
    restoring_->Finish();
    restoring_.reset();
    snapshot_.clear();
  }

  bool Due(std::int64_t t, std::int64_t steps) const { return checkpointer_.Due(t, steps); }
  // Saves everything at step `step` of run `run`, the run in progress through `persist_run`.
  template <typename F>
  void Save(std::int64_t run, std::int64_t step, F&& persist_run) {
    SavingArchive archive;
    Identity identity = identity_;
    PersistExperiment(archive, identity);
    archive.Scope("run", [&] { persist_run(archive); });
    checkpointer_.Save({run, step}, archive.snapshot());
  }

 private:
  // The origin, `identity`, the constants and the finished runs.
  void PersistExperiment(StateArchive& archive, Identity& identity);
  void RequireOrigin(const Origin& saved) const;

  Checkpointer& checkpointer_;
  std::vector<Constant>& constants_;
  std::vector<RunReport>& finished_;
  Identity identity_;  // this run's
  Origin origin_;
  CheckpointMark mark_;
  StateSnapshot snapshot_;
  std::optional<RestoringArchive> restoring_;
};

// What a resumed run must share with the run it continues: the spec as given (text and --set
// arguments), the build (a checkpoint restores bits, which another build need not reproduce)
// and the number of processes. `meta` is the run's own metadata (as its results would record
// it), compared with what `writer`'s database recorded; UserError naming `dir` when they differ.
void RequireSameRun(const std::vector<std::pair<std::string, std::string>>& meta,
                    ResultsWriter& writer, const std::filesystem::path& dir);

}  // namespace lemmalab
