#!/usr/bin/env bash
# Runs a command and checks its exit code and that its output holds a message.
#   expect_exit.sh CODE MESSAGE COMMAND...
set -uo pipefail
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
echo "OK: exit $status, message printed $count time(s)"
