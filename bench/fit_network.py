#!/usr/bin/python3
"""Fits the network model's latency and bandwidth to measured exchanges, and reports its error.

Reads comm_bench's JSON output (--benchmark_out=FILE --benchmark_out_format=json) from a run across
links shaped to a preset (bench/run_netns_bench.sh runs it), and for every scheme and size compares
the measured time of the step's rounds (exchange_s) with
  - the shipped preset's projection (model_s: comm/network.h, computed by comm_bench), and
  - the model fitted here: per step, inter_rounds x latency + inter_round_B / bandwidth, which is
    the model's RoundSeconds summed over rounds when only inter-node links carry traffic (one
    rank per node). Rows with intra-node traffic, and the parameter server (the model gives it a
    node of its own; under mpirun it shares rank 0's), are reported but not fitted.
The fit minimises the squared relative error (every size counts alike, 1M as much as 64M).
Prints a Markdown table, the errors, and the [network] overrides that use the fitted link.

    /usr/bin/python3 bench/fit_network.py RESULT.json [RESULT.json ...] [--min-size N]
"""

import argparse
import json
import sys

import numpy as np


def why_not(label, b):
    """Why a row cannot test the model, or "" when it can."""
    if label.startswith("parameter-server"):
        # The model gives the server a node of its own; under mpirun it runs on rank 0's.
        return "the server shares rank 0's node"
    if abs(b["inter_B/rank"] - b["sent_B/rank"]) > 1e-9 * b["sent_B/rank"]:
        return "intra-node traffic"
    return ""


def rows(paths, min_size):
    """One row per case and size: with --benchmark_repetitions, the median repetition."""
    out = []
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        runs = {}
        for b in data["benchmarks"]:
            if "exchange_s" in b and not b.get("error_occurred") and b.get("run_type") != "aggregate":
                runs.setdefault(b["name"].split("/iterations")[0], []).append(b)
        for name, repetitions in runs.items():
            b = sorted(repetitions, key=lambda r: r["exchange_s"])[len(repetitions) // 2]
            label, size = name.rsplit("/", 1)
            if int(size) < min_size:
                continue
            out.append({
                "case": label,
                "size": int(size),
                "ranks": int(data["context"].get("ranks", 0)),
                "measured": b["exchange_s"],
                "model": b["model_s"],
                "rounds": b["inter_rounds"],
                "busiest": b["inter_round_B"],
                "why_not": why_not(label, b),
                "step": b["real_time"] / 1e3 if b.get("time_unit") == "ms" else b["real_time"],
            })
    return out


def fit(points, latency=None):
    """Latency (s) and bandwidth (bytes/s) minimising the squared relative error, latency >= 0.

    With `latency` given, the bandwidth alone. A negative latency fits nothing physical (small
    messages leaving faster than the rate, a shaper's burst); the best fit with none is taken."""
    a = np.array([[p["rounds"] / p["measured"], p["busiest"] / p["measured"]] for p in points])
    ones = np.ones(len(points))
    if latency is None:
        (latency, _), *_ = np.linalg.lstsq(a, ones, rcond=None)
        latency = max(latency, 0.0)
    (inverse_bandwidth,), *_ = np.linalg.lstsq(a[:, 1:], ones - latency * a[:, 0], rcond=None)
    return latency, 1.0 / inverse_bandwidth


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", nargs="+")
    parser.add_argument("--min-size", type=int, default=0, help="leave out smaller d")
    parser.add_argument("--latency-us", type=float,
                        help="fix the latency (where the sizes measured do not resolve it)")
    args = parser.parse_args()
    points = rows(args.results, args.min_size)
    fitted = [p for p in points if not p["why_not"]]
    if len(fitted) < 2:
        sys.exit("fit_network.py: fewer than two rows with inter-node traffic only")
    latency, bandwidth = fit(fitted, None if args.latency_us is None else args.latency_us / 1e6)
    print("| ranks | case | d | measured ms | shipped model ms | error | fitted model ms | error |")
    print("|---|---|---|---|---|---|---|---|")
    worst_shipped = worst_fitted = 0.0
    for p in points:
        projected = p["rounds"] * latency + p["busiest"] / bandwidth
        shipped_error = p["model"] / p["measured"] - 1
        fitted_error = projected / p["measured"] - 1
        mark = f" (not fitted: {p['why_not']})" if p["why_not"] else ""
        if not p["why_not"]:
            worst_shipped = max(worst_shipped, abs(shipped_error))
            worst_fitted = max(worst_fitted, abs(fitted_error))
        print(f"| {p['ranks']} | {p['case']}{mark} | {p['size']} | {1e3 * p['measured']:.1f} | "
              f"{1e3 * p['model']:.1f} | {100 * shipped_error:+.0f}% | {1e3 * projected:.1f} | "
              f"{100 * fitted_error:+.0f}% |")
    print()
    print(f"fitted: latency {1e6 * latency:.1f} us, bandwidth {8 * bandwidth / 1e9:.3f} Gbit/s "
          f"({len(fitted)} rows)")
    print(f"largest error over the fitted rows: shipped preset {100 * worst_shipped:.0f}%, "
          f"fitted {100 * worst_fitted:.0f}%")
    print()
    print("[network]")
    print(f"inter_latency_us = {1e6 * latency:.1f}")
    print(f"inter_bandwidth_gbps = {8 * bandwidth / 1e9:.4f}")


if __name__ == "__main__":
    main()
