#!/usr/bin/env bash
# The network model against the network: runs bench/comm_bench across node namespaces joined by
# links shaped to a preset (scripts/netns-cluster; needs root), then fits the model's latency and
# bandwidth to the measured exchanges (bench/fit_network.py) and prints measured beside projected.
# Builds nothing (cmake --build --preset release --target comm_bench first).
#
#   bench/run_netns_bench.sh [LINK...]        # default: 1GbE 10GbE
#   OUT=folder bench/run_netns_bench.sh       # keep the JSON results there (default: a temp folder)
#
# Per link preset:
#   model      2 nodes x 1 rank (median of 3 repetitions) and 4 nodes x 1 rank, every scheme at
#              d = 1M, 4M, 16M and 64M: all traffic crosses the shaped links, one link per
#              endpoint, as the model assumes; COMM_BENCH_INTER names the preset, so model_s is
#              the shipped preset's projection; each is fitted on its own (4 nodes on a 2-core
#              machine find its limit: the kernel moves 4 links' traffic on 2 cores)
#   claim      2 nodes x 2 ranks at d = 16M (1-bit Adam's and Birder's point: compression pays
#              when bandwidth is short): wall time and bytes per step of fp32 Adam, 1-bit Adam's
#              compressed all-reduce and Birder's hierarchical all-reduce (ranks of one node
#              share its link and talk through shared memory inside it)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bench="${COMM_BENCH:-$root/build/release/bench/comm_bench}"
if [[ ! -x "$bench" ]]; then
  echo "run_netns_bench.sh: $bench not found; build it first:" >&2
  echo "  cmake --preset release && cmake --build --preset release --target comm_bench" >&2
  exit 2
fi
out="${OUT:-$(mktemp -d)}"
mkdir -p "$out"
links=("$@")
[[ ${#links[@]} -gt 0 ]] || links=(1GbE 10GbE)

export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The preset's rate and latency; where the kernel cannot add latency (no netem), its rate alone.
shaping() {  # shaping LINK
  if "$root/scripts/netns-cluster" --link "$1" --check 2> /dev/null; then
    echo "--link $1"
  else
    case $1 in
      1GbE) echo "--rate 1gbit" ;;
      10GbE) echo "--rate 10gbit" ;;
      *) echo "run_netns_bench.sh: unknown link preset '$1'" >&2; exit 2 ;;
    esac
  fi
}
run() {  # run NAME NODES RANKS_PER_NODE LINK [comm_bench arguments...]
  local name=$1 nodes=$2 per_node=$3 link=$4
  shift 4
  local shape
  shape=$(shaping "$link")
  echo "== $name: $nodes nodes x $per_node ranks, $link ($shape) ==" >&2
  # shellcheck disable=SC2086  # $shape is two words
  COMM_BENCH_INTER=$link "$root/scripts/netns-cluster" --nodes "$nodes" \
    --ranks-per-node "$per_node" $shape -- -x COMM_BENCH_INTER -x OMP_NUM_THREADS \
    "$bench" --benchmark_counters_tabular=true --benchmark_color=false \
    --benchmark_out="$out/$name.json" --benchmark_out_format=json "$@" >&2
}

for link in "${links[@]}"; do
  run "model-$link-2x1" 2 1 "$link" --benchmark_filter='^[a-z]' --benchmark_repetitions=3
  run "model-$link-4x1" 4 1 "$link" --benchmark_filter='^[a-z]'
  for shape in 2x1 4x1; do
    echo "## $link, $shape: measured exchange against the model"
    /usr/bin/python3 "$root/bench/fit_network.py" "$out/model-$link-$shape.json"
    echo
  done
done
run claim-1GbE-2x2 2 2 1GbE \
  --benchmark_filter='^(MPI_Allreduce/fp32|allreduce/adam|compressed-allreduce/onebit-adam|hierarchical/birder)/16777216/'
echo "## 1GbE, 2 nodes x 2 ranks, d = 16M: a step of each scheme"
/usr/bin/python3 - "$out/claim-1GbE-2x2.json" <<'PY'
import json, sys
rows = [b for b in json.load(open(sys.argv[1]))["benchmarks"] if "sent_B/rank" in b]
ms = lambda b: b["real_time"] * {"ms": 1, "us": 1e-3, "s": 1e3}[b.get("time_unit", "ms")]
adam = next(b for b in rows if b["name"].startswith("allreduce/adam"))
print("| case | step ms | in the exchange ms | sent MB per rank | Adam's step / this |")
print("|---|---|---|---|---|")
for b in rows:
    exchange = f"{1e3 * b['exchange_s']:.0f}" if "exchange_s" in b else "-"
    print(f"| {b['name'].split('/iterations')[0]} | {ms(b):.0f} | {exchange} | "
          f"{b['sent_B/rank'] / 1e6:.1f} | {ms(adam) / ms(b):.1f} |")
PY
echo "results: $out"
