#!/usr/bin/env bash
# A spec run in one process and across two "hosts" (network namespaces, scripts/netns-cluster)
# of two ranks each must give the same bytes (tests/backends/compare.sh), and the run must have
# gone where it says: the inter-node messages over TCP across the shaped veth links (the links
# carried at least the inter-node bytes that lemmalab counted), the ranks of one node through
# shared memory (the nodes' loopbacks carried less than the intra-node bytes).
#   identical.sh LEMMALAB MPIEXEC CLUSTER SPEC WORKDIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lemmalab=$1 mpiexec=$2 cluster=$3 spec=$4 work=$5
# shellcheck source=common.sh
source "$here/common.sh"
choose_link "$cluster"
log=$work.cluster.log
status=0
"$here/../backends/compare.sh" "$lemmalab" "$mpiexec" 4 "$spec" "$work" \
  "$cluster" --mpirun "$mpiexec" --nodes 2 --ranks-per-node 2 "${link[@]}" -- \
  2> "$log" || status=$?
cat "$log"
if ((status != 0)); then
  echo "FAIL: the in-process run and the run across namespaces differ (or one failed)"
  exit 1
fi
links=$(sed -n 's/^netns-cluster: inter-node bytes: \([0-9]*\) .*/\1/p' "$log")
loopback=$(sed -n 's/^netns-cluster: node-local TCP bytes (loopback): \([0-9]*\)$/\1/p' "$log")
# lemmalab's own count of the run's message bytes, summed over every step of every run.
read -r inter intra < <(awk -F, '$4 == "bytes_inter" {e += $6} $4 == "bytes_intra" {a += $6}
  END {printf "%.0f %.0f\n", e, a}' "$work/mpi/metrics.csv")
echo "links: $links bytes (lemmalab's inter-node messages: $inter bytes);" \
  "loopback: $loopback bytes (lemmalab's intra-node messages: $intra bytes)"
if [[ -z $links || -z $loopback ]] || ((inter == 0 || links < inter)); then
  echo "FAIL: the links between the namespaces did not carry the inter-node messages"
  exit 1
fi
if ((loopback >= intra)); then
  echo "FAIL: the ranks of one node talked over TCP (loopback), not shared memory"
  exit 1
fi
echo "OK: identical bytes across 2 namespaces x 2 ranks (${link[*]}), the inter-node traffic" \
  "over the links"
