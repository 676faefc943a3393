// The Open MPI transport: `mpirun -np N lemmalab run SPEC` runs one worker per rank.
//
// Worker i runs on rank i and the server (kServer) on rank 0, beside worker 0; rank 0 reports
// the run. A round (Transport::Exchange) sends each message as one MPI message, point to point,
// straight from its bytes, and receives each into the message it delivers (no packing, and no
// collective over all ranks but a non-blocking barrier: comm/mpi_transport.cc). The MPI
// message's source rank and tag name its endpoints and envelope tag. A message between two
// endpoints of the same rank (worker 0 and the server) is moved, never copied through MPI.
//
// Compiled only when CMake finds MPI (LEMMALAB_HAVE_MPI is then defined for every target that
// links lemmalab::comm).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "comm/scheme.h"
#include "comm/transport.h"

namespace lemmalab {

// Whether the environment says this process was started by mpirun (Open MPI sets
// OMPI_COMM_WORLD_SIZE in every rank; PMIx launchers set PMIX_RANK). Needs no MPI call, so it
// may be asked before MPI is initialised, to decide whether to initialise it.
bool LaunchedByMpirun();

// MPI for the lifetime of the object: MPI_Init_thread in the constructor, MPI_Finalize in the
// destructor. MPI_THREAD_FUNNELED: a process may run OpenMP threads, but only the thread that
// made the session calls MPI. One per process, made before any MpiTransport.
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }  // in MPI_COMM_WORLD
  int size() const { return size_; }

  // Ends every rank of the job with exit code `code` (MPI_Abort on MPI_COMM_WORLD), so that a
  // rank that hits an error does not leave the others waiting in a collective. Flushes stdout
  // and stderr first, so that the message the rank printed is not lost. Call it from the thread
  // that made the session (MPI_THREAD_FUNNELED), e.g. after the OpenMP region has ended.
  // Without an active MPI (before the session or after it) it just exits with `code`.
  [[noreturn]] static void Abort(int code);

 private:
  int rank_ = 0;
  int size_ = 1;
};

class MpiTransport final : public Transport {
 public:
  // One worker per rank of `communicator`, which must stay valid while the transport is used.
  // Collective over `communicator`, as is the destructor.
  explicit MpiTransport(MPI_Comm communicator = MPI_COMM_WORLD);
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  std::string_view name() const override { return "mpi"; }
  int workers() const override { return size_; }
  bool Runs(int endpoint) const override;
  bool reports() const override { return rank_ == 0; }
  // Leaves `outgoing` empty, as InProcessTransport does.
  void Exchange(std::vector<Envelope>& outgoing, std::vector<Envelope>& incoming) override;
  // MPI_Allreduce with MPI_SUM. x + 0.0 is x for every x but -0.0, so an entry one rank owns
  // comes back bit for bit, except that -0.0 comes back +0.0 when the others contribute +0.0
  // (contributing -0.0 instead, the additive identity of IEEE 754, keeps it).
  void Sum(std::span<double> values) override;
  void Sum(std::span<std::int64_t> values) override;

  // This process's rank in the communicator (= the worker it runs).
  int rank() const { return rank_; }
  // Every rank's MPI_Get_processor_name, indexed by rank (collective), so that a caller can tell
  // which workers share a host.
  std::vector<std::string> HostNames() const;
  // The topology the ranks' hosts give (collective): the ranks of one host form a node. The
  // hosts must hold equal, contiguous blocks of ranks; otherwise UserError naming `spec`.
  Topology HostTopology(std::string_view spec) const;

 private:
  // The rank that runs `endpoint` (a worker, or kServer).
  int RankOf(int endpoint) const;

  MPI_Comm communicator_;
  MPI_Comm rounds_[2] = {MPI_COMM_NULL, MPI_COMM_NULL};  // duplicates, used by rounds in turn
  std::int64_t round_ = 0;
  int rank_ = 0;
  int size_ = 1;
  int max_tag_ = 0;  // the largest envelope tag the MPI tag has room for
  // Reused from round to round, so that a steady run does not allocate them every step.
  std::vector<MPI_Request> sends_, receives_;
};

}  // namespace lemmalab
