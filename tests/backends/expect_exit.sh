#!/usr/bin/env bash
# Runs a command and checks its exit code and that its output holds a message; with --once,
# that the message is printed exactly once and no process aborted the MPI job.
#   expect_exit.sh [--once] CODE MESSAGE COMMAND...
set -uo pipefail
once=0
if [[ $1 == --once ]]; then
  once=1
  shift
fi
code=$1 message=$2
shift 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
output=$("$@" 2>&1)
status=$?
echo "$output" | tail -20
if [[ $status -ne $code ]]; then
  echo "FAIL: exit code $status, expected $code"
  exit 1
fi
if ! grep -qF -- "$message" <<< "$output"; then
  echo "FAIL: the output does not contain: $message"
  exit 1
fi
count=$(grep -cF -- "$message" <<< "$output")
if [[ $once -eq 1 && $count -ne 1 ]]; then
  echo "FAIL: the message is printed $count times, expected once"
  exit 1
fi
if [[ $once -eq 1 ]] && grep -q "MPI_ABORT" <<< "$output"; then
  echo "FAIL: a rank aborted the job (MPI_ABORT) instead of every rank exiting with code $code"
  exit 1
fi
echo "OK: exit $status, message printed $count time(s)"
