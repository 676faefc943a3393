// Checkpoints of `lemmalab run` (issue 21): with `checkpoint_every = N` in the spec, the whole
// state of the experiment is saved after every N-th step of each run, and
// `lemmalab run SPEC --resume DIR` continues from the last one, bit for bit as a run that was
// never stopped would go on, in one process and under mpirun.
//
// A checkpoint is, in DIR's staging folder (engine/result_folder.h):
//   results.sqlite              the results recorded so far, committed (engine/results.h), with the
//                               checkpoint's run and step in its `checkpoint` table;
//   state-run<k>-step<t>-rank<r>.sqlite
//                               each process's state (core/state.h) as rows (path, kind, bytes):
//                               the parameters, every worker's and the server's optimizer state
//                               and error feedback, compressor state, the probes' running sums,
//                               the run loop's counters and the finished runs' reports. Each MPI
//                               rank saves its own workers' state.
// The random streams need nothing saved: every draw is keyed by (seed, purpose, worker, step).
//
// Saving is a two-phase commit whose commit point is the results database's commit:
//   1. every process writes its state file (synced, then renamed into place);
//   2. the processes meet, so that rank 0 knows every state file is in place;
//   3. rank 0 records the step in the database and commits it: the checkpoint exists;
//   4. the processes meet again and each removes its older state files.
// A process killed at any moment leaves the previous checkpoint or the new one, whole: before
// step 3 the database still names the previous step, whose state files are still there.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>

#include "comm/transport.h"
#include "core/state.h"
#include "engine/results.h"

namespace lemmalab {

// zlib's CRC-32 of `bytes` continued from `crc` (start from 0), for buffers of any length (zlib
// counts in unsigned int): the state files' checksum and the data's.
std::uint32_t Crc32(std::uint32_t crc, std::span<const std::byte> bytes);

// Writes `snapshot` to `path` (under a temporary name, synced, then renamed); UserError naming
// the file when it cannot be written.
void WriteStateFile(const std::filesystem::path& path, const StateSnapshot& snapshot);
// Reads a state file; UserError naming the file when it is missing or not a state file.
StateSnapshot ReadStateFile(const std::filesystem::path& path);

class Checkpointer {
 public:
  // Checkpoints every `every` steps (0: never) into `staging` (the results folder's staging
  // folder, engine/result_folder.h), as `rank` of the processes of `transport` (null: this process
  // alone); `writer` is the process's results writer (rank 0's commits).
  Checkpointer(ResultsWriter& writer, std::filesystem::path staging, std::int64_t every,
               Transport* transport, int rank);

  // Whether step t of a run of `steps` steps ends with a checkpoint (never the last step: the
  // results are committed right after it).
  bool Due(std::int64_t t, std::int64_t steps) const {
    return every_ > 0 && t % every_ == 0 && t < steps;
  }
  // Saves `state` (collective: every process calls it at the same step).
  void Save(const CheckpointMark& mark, const StateSnapshot& state);

  // The checkpoint rank 0's kResume writer found, told to every process (collective).
  CheckpointMark SharedMark() const;
  // This process's state at the checkpoint `mark`.
  StateSnapshot Load(const CheckpointMark& mark) const;
  std::filesystem::path StateFile(const CheckpointMark& mark) const;

 private:
  // Every process waits here for all the others (nothing in one process).
  void Meet() const;

  ResultsWriter& writer_;
  std::filesystem::path staging_;
  std::int64_t every_;
  Transport* transport_;
  int rank_;
};

}  // namespace lemmalab
