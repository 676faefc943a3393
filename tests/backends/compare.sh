#!/usr/bin/env bash
# Runs a spec in one process and as `mpirun -np N` processes and checks that the two give the
# same parameters (params.npy) and metrics (metrics.csv), byte for byte.
#   compare.sh LEMMALAB MPIEXEC NP SPEC WORKDIR [LAUNCHER...]
# With a LAUNCHER, a command line that starts the NP ranks itself (tests/netns:
# scripts/netns-cluster OPTIONS --), the second run is `LAUNCHER... LEMMALAB run SPEC --out ...`
# instead of `MPIEXEC -np NP ...`; its stderr passes through.
set -euo pipefail
lemmalab=$1 mpiexec=$2 np=$3 spec=$4 work=$5
shift 5
launcher=("$@") how="mpirun -np $np"
if ((${#launcher[@]} == 0)); then
  launcher=("$mpiexec" -np "$np" --oversubscribe --mca btl_vader_single_copy_mechanism none)
else
  how="$(basename "${launcher[0]}") (${np} ranks)"
fi
rm -rf "$work" && mkdir -p "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
"$lemmalab" run "$spec" --out "$work/in-process" > "$work/in-process.log"
"${launcher[@]}" "$lemmalab" run "$spec" --out "$work/mpi" > "$work/mpi.log"
for f in params.npy metrics.csv; do
  if ! cmp "$work/in-process/$f" "$work/mpi/$f"; then
    echo "FAIL: $f differs between the in-process run and $how ($spec)"
    diff <(head -c 4000 "$work/in-process/$f") <(head -c 4000 "$work/mpi/$f") | head -20 || true
    exit 1
  fi
done
rows=$(wc -l < "$work/mpi/metrics.csv")
echo "OK: $(basename "$spec"): params.npy and metrics.csv ($rows rows) identical in-process and" \
  "under $how"
