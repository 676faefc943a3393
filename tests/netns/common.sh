# shellcheck shell=bash
# Sourced by the tests of scripts/netns-cluster (tests/netns).

# choose_link CLUSTER: sets the array `link` to the link options of the tests: the 10GbE preset
# where this kernel has netem, its rate alone (tbf) where it has not, unshaped links where tc or
# tbf is missing too. Where namespaces cannot be built at all (not root, no CAP_SYS_ADMIN, no
# iproute2, no veth or bridge), prints the reason and exits 77, which ctest counts as skipped
# (SKIP_RETURN_CODE).
# shellcheck disable=SC2034  # link is the caller's
choose_link() {
  local cluster=$1 why
  if ! why=$("$cluster" --check --link none 2>&1); then
    echo "SKIP: network namespaces cannot be built here: ${why#netns-cluster: }"
    exit 77
  fi
  if why=$("$cluster" --check --link 10GbE 2>&1); then
    link=(--link 10GbE)
  elif "$cluster" --check --rate 10gbit > /dev/null 2>&1; then
    echo "note: links shaped by rate alone (10gbit, no delay): ${why#netns-cluster: }"
    link=(--rate 10gbit)
  else
    echo "note: links not shaped: ${why#netns-cluster: }"
    link=(--link none)
  fi
}

# start_time PID: field 22 of /proc/PID/stat, the start time in clock ticks since boot (with the
# pid, it names one process: pids are reused), or nothing where PID is gone or a zombie.
start_time() {
  local stat
  stat=$(cat "/proc/$1/stat" 2> /dev/null) || return 0
  stat=${stat##*) }
  # shellcheck disable=SC2086
  set -- $stat
  [[ $1 == Z || $1 == X ]] || echo "${20}"
}

# processes_in NAMESPACE...: PID:START of every process in these namespaces (mpirun, orted, the
# ranks, the launch agents), for leftovers.
processes_in() {
  local ns p
  for ns in "$@"; do
    for p in $(ip netns pids "$ns" 2> /dev/null); do
      echo "$p:$(start_time "$p")"
    done
  done
}

# leftovers PREFIX [PID:START...]: what remains of the netns-cluster invocation whose names start
# with PREFIX (llab<pid>), one line per thing: its namespaces, their mounts, interfaces and qdiscs
# named with it (in the root namespace and every named one), the processes PID:START (see
# processes_in) still running, processes with PREFIX in their command line (the watcher, the
# launch agent), and its temporary folders. Nothing printed: nothing left.
leftovers() {
  local prefix=$1
  shift
  local named="${prefix}(-|\\.|n[0-9]|s[0-9]|br)" p
  ip netns list 2> /dev/null | grep -E "^$named" | sed 's/^/namespace: /'
  grep -E "/$named" /proc/self/mountinfo | sed 's/^/mount: /'
  { ip -o link show; ip -all netns exec ip -o link show; } 2> /dev/null |
    grep -E "$named" | sed 's/^/interface: /'
  { tc qdisc show; ip -all netns exec tc qdisc show; } 2> /dev/null |
    grep -E "$named" | sed 's/^/qdisc: /'
  for p in "$@"; do
    if [[ -n ${p#*:} && $(start_time "${p%%:*}") == "${p#*:}" ]]; then
      echo "process: ${p%%:*} $(tr '\0' ' ' 2> /dev/null < "/proc/${p%%:*}/cmdline")"
    fi
  done
  for p in /proc/[0-9]*; do
    if tr '\0' ' ' 2> /dev/null < "$p/cmdline" | grep -qE "(^|[^0-9a-z])${prefix}([^0-9]|$)"; then
      echo "process: ${p#/proc/} $(tr '\0' ' ' 2> /dev/null < "$p/cmdline")"
    fi
  done
  for p in "${TMPDIR:-/tmp}/$prefix".* /dev/shm/"$prefix".*; do
    if [[ -e $p ]]; then
      echo "folder: $p"
    fi
  done
  return 0
}
