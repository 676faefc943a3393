#!/usr/bin/env bash
# Runs bench/comm_bench (built beforehand: cmake --build --preset release --target comm_bench)
# under mpirun with 2 and then 4 ranks and prints both tables. Builds nothing.
#
#   bench/run_comm_bench.sh                       # every case
#   bench/run_comm_bench.sh --benchmark_filter=/16777216   # extra arguments go to comm_bench
#   COMM_BENCH=path/to/comm_bench bench/run_comm_bench.sh
#
# --oversubscribe lets 4 ranks share fewer cores; the vader BTL's single-copy mechanism (CMA)
# is unavailable in many containers, so it is turned off (as in tests/mpi/CMakeLists.txt).
# Running as root (containers) needs Open MPI's two ALLOW_RUN_AS_ROOT variables. One OpenMP
# thread per rank: each rank runs one worker, and the ranks already fill the cores.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bench="${COMM_BENCH:-$root/build/release/bench/comm_bench}"
if [[ ! -x "$bench" ]]; then
  echo "run_comm_bench.sh: $bench not found; build it first:" >&2
  echo "  cmake --preset release && cmake --build --preset release --target comm_bench" >&2
  exit 1
fi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
for np in 2 4; do
  echo "== comm_bench, mpirun -np $np =="
  mpirun -np "$np" --oversubscribe --mca btl_vader_single_copy_mechanism none \
    "$bench" --benchmark_counters_tabular=true --benchmark_color=false "$@"
  echo
done
