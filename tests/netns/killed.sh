#!/usr/bin/env bash
# scripts/netns-cluster stopped by a signal while its ranks run, on two namespaces: within a few
# seconds nothing of it may be left, whether it could clean up (SIGTERM: it passes the signal to
# mpirun and must exit with 143) or not (SIGKILL: its watcher must do it). Nothing: no
# namespace, mount, veth, bridge or qdisc of it, none of the processes that ran in its
# namespaces (mpirun, orted, the ranks) nor of it (watcher, launch agent), no temporary folder.
#   killed.sh LEMMALAB MPIEXEC CLUSTER SPEC WORKDIR KILL|TERM
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lemmalab=$1 mpiexec=$2 cluster=$3 spec=$4 work=$5 signal=$6
# shellcheck source=common.sh
source "$here/common.sh"
choose_link "$cluster"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
rm -rf "$work" && mkdir -p "$work"
"$cluster" --mpirun "$mpiexec" --nodes 2 --ranks-per-node 1 "${link[@]}" -- \
  "$lemmalab" run "$spec" --set steps=1000000 --set checkpoint_every=1000000 \
  --out "$work/out" > "$work/log" 2>&1 &
pid=$!
prefix=llab$pid

fail() {
  echo "FAIL: $*"
  cat "$work/log"
  # Leave nothing behind for the next test: what a dead invocation left, its watcher gone too.
  kill -KILL "$pid" 2> /dev/null
  sleep 0.5
  "$cluster" --cleanup-stale
  exit 1
}
# A lemmalab rank running in each node's namespace.
ranks_in() {
  local p
  for p in $(ip netns pids "$1" 2> /dev/null); do
    [[ $(cat "/proc/$p/comm" 2> /dev/null) == lemmalab ]] && echo "$p"
  done
  return 0
}
deadline=$((SECONDS + 60))
until [[ -n $(ranks_in "$prefix-n0") && -n $(ranks_in "$prefix-n1") ]]; do
  ((SECONDS < deadline)) || fail "the ranks did not start in both namespaces"
  kill -0 "$pid" 2> /dev/null || fail "netns-cluster ended before its ranks ran"
  sleep 0.05
done
# shellcheck disable=SC2207  # names without spaces
namespaces=($(ip netns list | awk '{print $1}' | grep -E "^$prefix-"))
((${#namespaces[@]} == 3)) ||
  fail "expected 3 namespaces (2 nodes and the switch), found: ${namespaces[*]}"
# shellcheck disable=SC2207
processes=($(processes_in "${namespaces[@]}"))
names=
for p in "${processes[@]}"; do
  names+="${names:+, }${p%%:*} $(cat "/proc/${p%%:*}/comm" 2> /dev/null)"
done
echo "running: namespaces ${namespaces[*]}; processes in them: $names;" \
  "sending SIG$signal to netns-cluster ($pid)"

start=$(date +%s.%N)
kill -s "$signal" "$pid"
wait "$pid"
status=$?
if [[ $signal == TERM && $status -ne 143 ]]; then
  fail "netns-cluster exited with $status after SIGTERM, expected 143"
fi
# Within a few seconds (SIGTERM: mpirun's own grace, up to 5 s, is over when the script exits).
deadline=$((SECONDS + 10))
while left=$(leftovers "$prefix" "${processes[@]}") && [[ -n $left ]]; do
  if ((SECONDS >= deadline)); then
    echo "left 10 s after SIG$signal:"
    echo "$left"
    fail "netns-cluster left the above behind"
  fi
  sleep 0.1
done
cat "$work/log"
echo "OK: SIG$signal to netns-cluster: nothing left after" \
  "$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}') s" \
  "(exit code $status)"
