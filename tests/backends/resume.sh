#!/usr/bin/env bash
# Kills a run with SIGKILL after a checkpoint, resumes it, kills the resumed run after a later
# checkpoint, resumes it to the end, and checks that params.npy and metrics.csv are byte for
# byte those of a run that was never stopped (issue 21). In one process, or under mpirun.
#   resume.sh LEMMALAB SPEC WORKDIR [MPIEXEC NP]
set -euo pipefail
lemmalab=$1 spec=$2 work=$3
launch=("$lemmalab")
if [[ $# -ge 5 ]]; then
  launch=("$4" -np "$5" --oversubscribe --mca btl_vader_single_copy_mechanism none "$lemmalab")
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
rm -rf "$work" && mkdir -p "$work"
out=$work/killed
staging=$out/.results/next

"$lemmalab" run "$spec" --out "$work/whole" > "$work/whole.log"

# The largest step of this process's state files (0 when there is none).
latest_step() {
  local latest=0 file step
  for file in "$staging"/state-run*-step*-rank0.sqlite; do
    [[ -e $file ]] || continue
    step=${file##*-step}
    step=${step%%-rank0.sqlite}
    run=${file##*state-run}
    run=${run%%-step*}
    step=$((run * 1000000 + step))
    ((step > latest)) && latest=$step
  done
  echo "$latest"
}

# Starts `lemmalab run ARGS...` in its own process group, waits until it has written the state
# of a checkpoint at least two checkpoints past `after` (so the one before is committed), and
# kills the whole group (mpirun and its ranks) with SIGKILL.
kill_after_checkpoints() {
  local after=$1
  shift
  setsid "${launch[@]}" run "$spec" "$@" > "$work/killed.log" 2>&1 &
  local pid=$!
  local deadline=$((SECONDS + 120))
  until (($(latest_step) >= after + 2 * every)); do
    if ! kill -0 "$pid" 2> /dev/null; then
      echo "FAIL: the run ended before it could be killed after a checkpoint"
      cat "$work/killed.log"
      exit 1
    fi
    if ((SECONDS > deadline)); then
      echo "FAIL: no checkpoint after 120 s"
      exit 1
    fi
    sleep 0.01
  done
  kill -KILL -- "-$pid" 2> /dev/null || true
  pkill -KILL -f -- "--out $out" 2> /dev/null || true
  pkill -KILL -f -- "--resume $out" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
  sleep 0.2
}

every=$(sed -n 's/^checkpoint_every *= *\([0-9]*\).*/\1/p' "$spec")
kill_after_checkpoints 0 --out "$out"
first=$(latest_step)
kill_after_checkpoints "$first" --resume "$out"
# Issue 33, finding 1: a checkpoint of mpirun -np N resumed in one process crashed a rank. It is
# refused (exit 2) with the command that resumes it, and the checkpoint stays.
if [[ $# -ge 5 ]]; then
  set +e
  "$lemmalab" run "$spec" --resume "$out" > "$work/one-process.log" 2>&1
  code=$?
  set -e
  expected="resume it as it was started: mpirun -np $5 lemmalab run"
  if ((code != 2)) || ! grep -q "$expected" "$work/one-process.log"; then
    echo "FAIL: resuming an mpirun -np $5 checkpoint in one process gave exit $code, not 2 with"
    echo "'$expected':"
    cat "$work/one-process.log"
    exit 1
  fi
fi
"${launch[@]}" run "$spec" --resume "$out" > "$work/resumed.log"

for f in params.npy metrics.csv; do
  if ! cmp "$work/whole/$f" "$out/$f"; then
    echo "FAIL: $f of the run killed twice and resumed differs from the uninterrupted run's"
    exit 1
  fi
done
echo "OK: $(basename "$spec"): killed with SIGKILL after checkpoints (state files up to run/step" \
  "code $first, then later), resumed twice: params.npy and metrics.csv identical" \
  "${4:+under mpirun -np $5}"
