#!/usr/bin/env bash
# Sends SIGTERM to rank 1 alone of a running mpirun job. Every rank must stop after the same
# step, the job print one message and exit with 143, no rank abort it, and no staged results be
# left behind (issue 21, finding 7: the signalled rank aborted the job, leaving rank 0's
# results.sqlite.partial).
#   term_one_rank.sh LEMMALAB MPIEXEC SPEC WORKDIR
set -uo pipefail
lemmalab=$1 mpiexec=$2 spec=$3 work=$4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
rm -rf "$work" && mkdir -p "$work"
out=$work/out
"$mpiexec" -np 2 --oversubscribe --mca btl_vader_single_copy_mechanism none \
  "$lemmalab" run "$spec" --set checkpoint_every=1000000 --out "$out" > "$work/log" 2>&1 &
job=$!
deadline=$((SECONDS + 60))
until [[ -e $out/.results/next/results.sqlite ]]; do
  if ((SECONDS > deadline)) || ! kill -0 "$job" 2> /dev/null; then
    echo "FAIL: the run did not start its steps"
    cat "$work/log"
    exit 1
  fi
  sleep 0.01
done
# Rank 1, once it catches SIGTERM (bit 15 of SigCgt in /proc/PID/status): a signal sent before
# lemmalab installs its handler would end the rank by the default action, which is not what this
# test is about (under load, rank 0 can be writing results while rank 1 is still starting).
catches_sigterm() {
  local mask
  mask=$(sed -n 's/^SigCgt:[[:space:]]*//p' "/proc/$1/status" 2> /dev/null) || return 1
  [[ -n $mask ]] && (((16#$mask >> 14) & 1))
}
rank1=
until [[ -n $rank1 ]] && catches_sigterm "$rank1"; do
  if ((SECONDS > deadline)) || ! kill -0 "$job" 2> /dev/null; then
    echo "FAIL: rank 1 not found, or it never installed its SIGTERM handler (rank1='$rank1')"
    cat "$work/log"
    exit 1
  fi
  for p in $(pgrep -f -- "--out $out"); do
    if tr '\0' '\n' < "/proc/$p/environ" 2> /dev/null | grep -qx OMPI_COMM_WORLD_RANK=1; then
      rank1=$p
    fi
  done
  sleep 0.01
done
kill -TERM "$rank1"
wait "$job"
status=$?
cat "$work/log"
if [[ $status -ne 143 ]]; then
  echo "FAIL: exit code $status, expected 143 (128 + SIGTERM)"
  exit 1
fi
count=$(grep -c "interrupted (Terminated)" "$work/log")
if [[ $count -ne 1 ]]; then
  echo "FAIL: the interruption is reported $count times, expected once"
  exit 1
fi
if grep -q "MPI_ABORT" "$work/log"; then
  echo "FAIL: a rank aborted the job"
  exit 1
fi
if [[ -e $out/.results/next || -e $out/metrics.csv ]]; then
  echo "FAIL: the stopped run left staged or published results:"
  find "$out"
  exit 1
fi
echo "OK: SIGTERM to rank 1 stopped both ranks, reported once, exit 143, nothing left behind"
