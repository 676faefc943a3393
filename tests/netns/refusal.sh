#!/usr/bin/env bash
# scripts/netns-cluster refuses what it cannot do in one line naming what is missing, with exit
# code 2, and leaves nothing behind: run as an unprivileged user (nobody, through setpriv, when
# the test runs as root), as root without CAP_SYS_ADMIN, with a delay on a kernel without netem,
# and with bad options.
#   refusal.sh CLUSTER
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cluster=$1
# shellcheck source=common.sh
source "$here/common.sh"
failures=0 checked=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A copy everyone may read and run (the source tree may be closed to nobody).
chmod 755 "$work"
cp "$cluster" "$work/netns-cluster"
chmod 755 "$work/netns-cluster"

# expect_refusal WHAT PATTERN COMMAND...: exit code 2, stderr one line matching PATTERN (an
# extended regex), nothing left of the invocation (its prefix is llab<pid of COMMAND>, which
# setpriv and the script exec in place).
expect_refusal() {
  local what=$1 pattern=$2 status left
  shift 2
  "$@" > "$work/out" 2> "$work/err" &
  local pid=$!
  wait "$pid"
  status=$?
  checked=$((checked + 1))
  left=$(leftovers "llab$pid")
  if ((status != 2)) || [[ $(wc -l < "$work/err") -ne 1 ]] ||
    ! grep -qE -e "$pattern" "$work/err" || [[ -s $work/out || -n $left ]]; then
    echo "FAIL: $what: exit code $status, expected 2 and one line on stderr matching /$pattern/;" \
      "stderr:"
    cat "$work/err" "$work/out"
    [[ -z $left ]] || echo "left behind: $left"
    failures=$((failures + 1))
  else
    echo "OK: $what: $(cat "$work/err")"
  fi
}

copy=$work/netns-cluster
if [[ $(id -u) != 0 ]]; then
  expect_refusal "as uid $(id -u)" "needs root" "$copy" --link none -- true
elif command -v setpriv > /dev/null; then
  expect_refusal "as nobody" "needs root .*uid 65534" \
    setpriv --reuid=65534 --regid=65534 --clear-groups "$copy" --link none -- true
  expect_refusal "as root without CAP_SYS_ADMIN" \
    "cannot create a network namespace.*CAP_SYS_ADMIN" \
    setpriv --bounding-set=-sys_admin --inh-caps=-sys_admin "$copy" --link none -- true
else
  echo "note: no setpriv: the refusals of an unprivileged user are not tried"
fi
expect_refusal "--nodes 0" "--nodes must be" "$copy" --nodes 0 --check
expect_refusal "--link 40GbE" "--link must be" "$copy" --link 40GbE --check
expect_refusal "no command" "nothing to run" "$copy" --link none
# A delay needs netem: where links can be shaped, either it works or the refusal names netem.
if [[ $(id -u) == 0 ]] && "$copy" --check --rate 1gbit > /dev/null 2>&1; then
  if "$copy" --check --rate 1gbit --delay 50us 2> "$work/err"; then
    echo "OK: this kernel has netem: --delay 50us works"
  else
    expect_refusal "--delay without netem" "netem.*CONFIG_NET_SCH_NETEM" \
      "$copy" --check --rate 1gbit --delay 50us
  fi
fi
if ((failures > 0)); then
  echo "FAIL: $failures of $checked refusals wrong"
  exit 1
fi
echo "OK: $checked refusals, each exit 2 with one line"
