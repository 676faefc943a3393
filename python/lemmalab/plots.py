"""Figures of a lemmalab results database, as PNG files.

    python3 -m lemmalab.plots RESULTS OUT_DIR   # prints the written paths, one per line

Each figure has one panel per value of the first axis and one line per combination of the
other axes (a single axis, e.g. a plain run's labels, gives one panel with a line per value).
A line is the mean over seeds; its band is the min-max over seeds with 2 seeds, the mean +-
t-based 95% confidence interval with 3 or more, and absent with one seed. A bound is drawn only
where every run of the figure is one the bound is about.

On a `lemmalab check` folder (check.json beside the results), one more figure per verdict shows
the evidence it judged: the statistic its measured value comes from (the maximum over the
workers at each step where the claim is about every value, the running mean where a theorem
averages over the steps), only for the runs the claim covered, with its bound, and the step of a
violation or of a failed premise marked.

Exit status: 0 drawn; 2 RESULTS missing or not a results database; 3 matplotlib (or pandas)
missing. `lemmalab report` runs exactly this command.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import textwrap
from pathlib import Path
from typing import NamedTuple

_MISSING = None  # the message for exit status 3, when a dependency does not import
try:
    import numpy as np
    import pandas as pd

    from lemmalab import results as lr
except ImportError as error:
    _MISSING = (f"{error.name} is missing: install Debian's python3-{error.name} "
                "(scripts/install-deps does)")
try:
    import matplotlib

    matplotlib.use("Agg")  # files only: reports are drawn on headless machines and in CI
    from matplotlib import pyplot as plt
except ImportError as error:
    _MISSING = _MISSING or ("matplotlib is missing: install Debian's python3-matplotlib "
                            f"(scripts/install-deps does)\n({type(error).__name__}: {error})")


class Bound(NamedTuple):
    value: float
    per_dimension: bool  # the bound holds for the series divided by d (and is d otherwise)
    label: str
    # The hyperparameter and value of the runs the bound is about (Lemma 1 is about Birder's
    # quantizer): the line is drawn only when every run of the figure has it.
    covers: tuple[str, str]


# Bounds the papers prove for a probe series; drawn as a horizontal line where the series is
# shown on the bound's scale. q-domain fractions have none (they are diagnostics).
_LEMMA1 = r"bound $E\|e\|^2/d \leq 1$ (Birder Lemma 1)"
KNOWN_BOUNDS = {
    ("ef-norm", "worker_sq_norm"): Bound(1.0, True, _LEMMA1, ("compressor.name", "stochastic-binary")),
    ("ef-norm", "server_sq_norm"): Bound(1.0, True, _LEMMA1, ("compressor.name", "stochastic-binary")),
}

# Two-sided 95% Student t quantiles t_{0.975, df}; between rows the smaller df is used (wider,
# so conservative). Tabulated because Debian's python3 here has no scipy.
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
         9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021,
         60: 2.000, 120: 1.980}


def t975(df: int) -> float:
    """The 0.975 quantile of Student's t with DF degrees of freedom (1.96 beyond the table)."""
    if df > 120:
        return 1.960
    return _T975[max(k for k in _T975 if k <= df)]


def _over_seeds(frame: pd.DataFrame, x: str) -> tuple[pd.DataFrame, str | None]:
    """Mean over seeds per step (x averaged too: bits can differ by seed) with band low/high,
    and the band's kind, or None for one seed."""
    seeds = frame["run_id"].nunique()
    stats = frame.groupby("step").agg(x=(x, "mean"), mean=("value", "mean"), n=("value", "size"),
                                      min=("value", "min"), max=("value", "max"),
                                      sd=("value", "std")).reset_index()
    stats["lo"], stats["hi"] = stats["min"], stats["max"]
    if seeds >= 3:
        # Per step, since a diverged seed stops contributing; fewer than 2 values: no interval.
        half = [t975(n - 1) * sd / math.sqrt(n) if n >= 2 else math.nan
                for n, sd in zip(stats["n"], stats["sd"])]
        stats["lo"], stats["hi"] = stats["mean"] - half, stats["mean"] + half
        return stats, "mean ± 95% t-CI over seeds"
    return stats, ("min–max over seeds" if seeds == 2 else None)


def _scale(values: pd.Series, units: list[tuple[float, str]]) -> tuple[pd.Series, str]:
    """VALUES in the largest unit that keeps the maximum >= 1 (e.g. Mbit instead of 1e7 bit)."""
    top = values.abs().max()
    factor, unit = units[0]
    for f, u in units:
        if top >= f:
            factor, unit = f, u
    return values / factor, unit


_BIT_UNITS = [(1, "bit"), (1e3, "kbit"), (1e6, "Mbit"), (1e9, "Gbit"), (1e12, "Tbit")]
_SECOND_UNITS = [(1e-6, "µs"), (1e-3, "ms"), (1, "s")]


def _colors(names: list[str]) -> dict:
    cmap = plt.get_cmap("tab10" if len(names) <= 10 else "tab20" if len(names) <= 20
                        else "viridis")
    n = max(len(names) - 1, 1)
    pick = (lambda i: cmap(i)) if len(names) <= 20 else (lambda i: cmap(i / n))
    return {name: pick(i) for i, name in enumerate(names)}


def _figure(results, frame: pd.DataFrame, x: str, title: str, xlabel: str, ylabel: str,
            path: Path, bound: Bound | None = None) -> Path | None:
    """Draw FRAME (run_id, step, value, X, axis columns) faceted by the first axis; None when
    there are not two finite x values to draw."""
    finite = np.isfinite(frame["value"].astype(float)) & np.isfinite(frame[x].astype(float))
    frame = frame[finite].copy()
    if frame[x].nunique() < 2:  # e.g. no per-step counters: only step 0's zero bits
        return None
    keys = lr.axes(results)
    facet, line_keys = (keys[0], keys[1:]) if len(keys) >= 2 else (None, keys)
    frame["panel"] = [lr.describe({facet: v}) for v in frame[facet]] if facet else title
    # Without axes (seeds only) there is one line; pandas yields no rows for zero columns.
    frame["line"] = ([lr.describe(dict(zip(line_keys, row)))
                      for row in frame[line_keys].itertuples(index=False)]
                     if line_keys else lr.describe({}))
    panels, lines = list(pd.unique(frame["panel"])), list(pd.unique(frame["line"]))
    colors = _colors(lines)

    cols = min(len(panels), 3)
    rows = math.ceil(len(panels) / cols)
    fig, grid = plt.subplots(rows, cols, figsize=(4.4 * cols, 3.4 * rows), sharey=True,
                             squeeze=False)
    values = frame["value"].astype(float)
    log = bool((values > 0).all() and values.max() / values.min() > 100)  # spans > 2 decades
    handles, bands = {}, set()
    for ax, panel in zip(grid.flat, panels):
        for line in lines:
            data = frame[(frame["panel"] == panel) & (frame["line"] == line)]
            if data.empty:
                continue
            stats, band = _over_seeds(data, x)
            seeds = data["run_id"].nunique()
            label = f"{line} ({seeds} seeds)" if seeds > 1 else line
            (handles[label],) = ax.plot(stats["x"], stats["mean"], color=colors[line], lw=1.4,
                                        label=label)
            if band:
                if log and (stats["lo"] <= 0).any():
                    # A t-interval can reach below 0, which a log axis cannot show.
                    stats["lo"] = stats["lo"].where(stats["lo"] > 0, stats["min"])
                    band += ", clipped to the seeds' min where ≤ 0"
                bands.add(band)
                ax.fill_between(stats["x"], stats["lo"], stats["hi"], color=colors[line],
                                alpha=0.2, lw=0)
        if bound is not None:
            handles[bound.label] = ax.axhline(bound.value, color="black", ls="--", lw=1)
        if facet:
            ax.set_title(panel, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    for ax in grid.flat[len(panels):]:
        ax.set_visible(False)
    for ax in grid[:, 0]:
        ax.set_ylabel(ylabel)

    if log:
        for ax in grid.flat:
            ax.set_yscale("log")

    fig.suptitle(title)
    legend_title = None
    if frame.groupby("line")["run_id"].nunique().max() > 1:
        legend_title = "\n".join(["line: mean over seeds",
                                  *sorted(f"band: {b}" for b in bands)])
    fig.legend(list(handles.values()), list(handles.keys()), loc="center left",
               bbox_to_anchor=(1.0, 0.5), fontsize=8, title=legend_title, title_fontsize=8,
               frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)  # many figures per report: keep memory flat
    return path


def _file_name(*parts: str) -> str:
    return "-".join(re.sub(r"[^A-Za-z0-9_.]+", "-", p).strip("-") for p in parts) + ".png"


def draw(results, out_dir) -> list[Path]:
    """Write the report's figures under OUT_DIR; RESULTS is a Results or a path to load().
    Returns the written PNG paths."""
    if _MISSING:
        raise ImportError(_MISSING)
    if not isinstance(results, lr.Results):
        results = lr.load(results)
    out = Path(out_dir)
    written = []

    loss_name = lr.loss_metric(results)
    loss = lr.series(results, loss_name)
    loss_label = ("training loss (full batch)" if loss_name == "train_loss"
                  else "minibatch loss (mean over the metrics window)")
    bits, bit_unit = _scale(loss["cumulative_bits"], _BIT_UNITS)
    seconds, second_unit = _scale(loss["cumulative_comm_seconds"], _SECOND_UNITS)
    loss = loss.assign(cumulative_bits=bits, cumulative_comm_seconds=seconds)
    written += [
        _figure(results, loss, "step", f"{loss_label[0].upper()}{loss_label[1:]} vs steps",
                "step", loss_name, out / "loss-vs-steps.png"),
        _figure(results, loss, "cumulative_bits",
                f"{loss_label[0].upper()}{loss_label[1:]} vs bits sent",
                f"cumulative bits sent per worker ({bit_unit})", loss_name,
                out / "loss-vs-bits.png"),
        _figure(results, loss, "cumulative_comm_seconds",
                f"{loss_label[0].upper()}{loss_label[1:]} vs projected communication time",
                f"cumulative projected communication time ({second_unit})",
                loss_name, out / "loss-vs-comm-time.png"),
    ]
    if lr.has_metric(results, "test_accuracy"):
        written.append(_figure(results, lr.series(results, "test_accuracy"), "step",
                               "Test accuracy vs steps", "step",
                               "test accuracy (fraction correct)",
                               out / "test-accuracy-vs-steps.png"))

    for probe, name in lr.probe_names(results):
        info = lr.series_info(results, probe, name)
        bound = KNOWN_BOUNDS.get((probe, name))
        if bound is not None and bound.per_dimension != info.per_dimension:
            bound = None  # the series is not on the bound's scale (e.g. d not divided out)
        frame = lr.probe_frame(results, probe, name)
        if bound is not None and not _all_covered(results, frame["run_id"], bound.covers):
            bound = None  # a run the bound is not about would seem to break it
        title = f"Probe {probe}: {name}" + (" / d" if info.per_dimension else "")
        if info.meaning:
            recorded = ("shown divided by d; recorded: " if info.per_dimension else "recorded: ")
            title += "\n" + textwrap.fill(recorded + info.meaning, 80)
        written.append(_figure(
            results, frame, "step", title, "step",
            f"{name}{' / d' if info.per_dimension else ''} (mean over workers)",
            out / _file_name("probe", probe, name), bound))
    return [p for p in written if p is not None]


def _all_covered(results, run_ids, covers: tuple[str, str]) -> bool:
    """Whether every run of RUN_IDS has hyperparameter COVERS[0] equal to COVERS[1]."""
    key, value = covers
    h = results.hyperparameters
    have = set(h[(h["key"] == key) & (h["value"].astype(str) == value)]["run_id"])
    return set(run_ids) <= have


def _statistic(results, label: str, series: str, reduction: str) -> pd.DataFrame:
    """SERIES ("probe q-deviate/ratio", "metric grad_sq_norm") of the runs labelled LABEL, per
    run and step: its maximum or minimum over the workers, or its running mean or sum over the
    steps so far."""
    kind, name = series.split(" ", 1)
    runs = set(results.runs[results.runs["label"] == label]["run_id"])
    if kind == "probe":
        probe, name = name.split("/", 1)
        p = results.probes
        frame = p[(p["probe"] == probe) & (p["series"] == name)]
    else:
        m = results.metrics
        frame = m[m["name"] == name]
    frame = frame[frame["run_id"].isin(runs)]
    by_step = frame.groupby(["run_id", "step"])["value"]
    per_step = (by_step.min() if reduction == "min" else by_step.max()).reset_index()
    if reduction in ("running mean", "running sum"):
        per_step = per_step.sort_values(["run_id", "step"])
        total = per_step.groupby("run_id")["value"].cumsum()
        count = per_step.groupby("run_id").cumcount() + 1
        per_step["value"] = total / count if reduction == "running mean" else total
    return per_step


def draw_evidence(check_dir, out_dir) -> list[Path]:
    """One figure per verdict of CHECK_DIR/check.json that names its statistic: the statistic of
    the runs the verdict judged, its bound, and the steps that broke the claim or a premise."""
    check = json.loads((Path(check_dir) / "check.json").read_text())
    out = Path(out_dir)
    written = []
    for k, v in enumerate(check["verdicts"], 1):
        stat = v.get("statistic")
        if not stat or not v.get("folders"):
            continue
        fig, ax = plt.subplots(figsize=(7.0, 3.8))
        drawn = False
        for folder in v["folders"]:
            try:
                results = lr.load(folder)
            except lr.NotResultsError:
                continue
            seed = results.meta.get("seed", "")
            for series in stat["series"]:
                frame = _statistic(results, v["label"], series, stat["reduction"])
                for _, run in frame.groupby("run_id"):
                    tag = f" (seed {seed})" if len(v["folders"]) > 1 else ""
                    ax.plot(run["step"], run["value"], lw=1.2,
                            label=f"{series}: {stat['reduction']}"
                            + (" over workers" if stat["reduction"] in ("max", "min") else "")
                            + tag)
                    drawn = True
        if not drawn:
            plt.close(fig)
            continue
        bound = v.get("bound_value")
        if bound is not None and math.isfinite(bound):
            if stat["bound_is_level"]:
                ax.axhline(bound, color="black", ls="--", lw=1, label=f"bound {bound:.4g}")
            elif v.get("worst_step") is not None:
                ax.plot([v["worst_step"]], [bound], "k_", ms=18, mew=2,
                        label=f"bound {bound:.4g} at step {v['worst_step']}")
        # The verdict's own value, from every value the run took (recorded or not).
        measured = v.get("measured_value")
        if measured is not None and math.isfinite(measured) and v.get("worst_step") is not None:
            ax.plot([v["worst_step"]], [measured], "x", color="tab:red", ms=8, mew=2,
                    label=f"the verdict's value {measured:.5g} at step {v['worst_step']}")
        if v["verdict"] == "violated" and v.get("worst_step") is not None:
            ax.axvline(v["worst_step"], color="tab:red", lw=1,
                       label=f"violated at step {v['worst_step']}")
        for premise in v.get("premises", []):
            if premise["status"] == "failed" and premise.get("step") is not None:
                ax.axvline(premise["step"], color="tab:orange", ls=":", lw=1.2,
                           label=textwrap.shorten(f"premise failed at step {premise['step']}: "
                                                  f"{premise['name']}", 90))
        ax.set_xlabel("step")
        ax.set_ylabel(", ".join(x.split("/")[-1].split(" ")[-1] for x in stat["series"]))
        ax.set_title(textwrap.fill(f"{v['assertion']} on {v['run']}: {v['verdict']}", 70),
                     fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
        path = out / _file_name("evidence", f"{k:02d}", v["assertion"], v["run"])
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=100, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m lemmalab.plots",
        description="Draw a lemmalab results database as PNG figures; prints their paths.")
    parser.add_argument("results", help="results.sqlite, its folder, or a lemmalab check folder")
    parser.add_argument("out_dir", help="folder to write the PNG files into (created)")
    args = parser.parse_args(argv)
    if _MISSING:
        print(_MISSING, file=sys.stderr)
        return 3
    try:
        paths = draw(lr.load(args.results), args.out_dir)
        if (Path(args.results) / "check.json").is_file():
            paths += draw_evidence(args.results, args.out_dir)
    except lr.NotResultsError as e:
        print(f"lemmalab.plots: {e}", file=sys.stderr)
        return 2
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
