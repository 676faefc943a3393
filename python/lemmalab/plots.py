"""Figures of a lemmalab results database, as PNG files.

    python3 -m lemmalab.plots RESULTS OUT_DIR   # prints the written paths, one per line

Each figure has one panel per value of the first axis and one line per combination of the
other axes (a single axis, e.g. a plain run's labels, gives one panel with a line per value).
A line is the mean over seeds; its band is the min-max over seeds with 2 seeds, the mean +-
t-based 95% confidence interval with 3 or more, and absent with one seed.

Exit status: 0 drawn; 2 RESULTS missing or not a results database; 3 matplotlib (or pandas)
missing. `lemmalab report` runs exactly this command.
"""

from __future__ import annotations

import argparse
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


# Bounds the papers prove for a probe series; drawn as a horizontal line where the series is
# shown on the bound's scale. q-domain fractions have none (they are diagnostics).
KNOWN_BOUNDS = {
    ("ef-norm", "worker_sq_norm"): Bound(1.0, True, r"bound $E\|e\|^2/d \leq 1$ (Birder Lemma 1)"),
    ("ef-norm", "server_sq_norm"): Bound(1.0, True, r"bound $E\|e\|^2/d \leq 1$ (Birder Lemma 1)"),
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
        title = f"Probe {probe}: {name}" + (" / d" if info.per_dimension else "")
        if info.meaning:
            recorded = ("shown divided by d; recorded: " if info.per_dimension else "recorded: ")
            title += "\n" + textwrap.fill(recorded + info.meaning, 80)
        written.append(_figure(
            results, lr.probe_frame(results, probe, name), "step", title, "step",
            f"{name}{' / d' if info.per_dimension else ''} (mean over workers)",
            out / _file_name("probe", probe, name), bound))
    return [p for p in written if p is not None]


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
    except lr.NotResultsError as e:
        print(f"lemmalab.plots: {e}", file=sys.stderr)
        return 2
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
