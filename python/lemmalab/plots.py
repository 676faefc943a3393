"""Figures of a lemmalab results database: PNG files, each with a vector PDF beside it.

    python3 -m lemmalab.plots RESULTS OUT_DIR [--html FILE]   # prints the written paths

- summary-<axis>.png, per swept axis with numeric values: each final quantity against it, one
  line per configuration of the other axes, the mean over the seeds that completed with its 95%
  Student-t interval (summary.csv's numbers);
- paired-<axis>.png and paired.csv, where seeds pair runs: each configuration minus the one
  with the axis' first value and the same other settings, seed by seed;
- the curves (loss against steps, bits and projected time; test accuracy; each probe series):
  one panel per value of the first axis, one line per combination of the others. A positive
  quantity spanning more than a decade is drawn on a log axis, its line the geometric mean over
  the seeds and its band the t-interval of the mean log; otherwise the mean and its t-interval
  (min-max with 2 seeds, none with 1). Diverged runs are drawn alone up to their end and never
  set the scale; a bound a paper proves for a probe series is drawn only on the lines whose
  runs it is about;
- on a `lemmalab check` folder (check.json beside the results), one figure per verdict with
  the evidence it judged: its statistic for the runs the claim covered, its bound, and the step
  of a violation or of a failed premise.

Configurations are named as the report names them (lemmalab.results). With --html, the
self-contained page report.html is written too (lemmalab.report_page).

Exit status: 0 drawn; 2 RESULTS missing or not a results database; 3 matplotlib (or pandas)
missing. `lemmalab report` runs exactly this command.
"""

from __future__ import annotations

import argparse
import functools
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
    from matplotlib import pyplot as plt
    from matplotlib import ticker
except ImportError as error:
    _MISSING = _MISSING or ("matplotlib is missing: install Debian's python3-matplotlib "
                            f"(scripts/install-deps does)\n({type(error).__name__}: {error})")


class Bound(NamedTuple):
    value: float
    per_dimension: bool  # the bound holds for the series divided by d (and is d otherwise)
    label: str
    # The hyperparameter and value of the runs the bound is about (Lemma 1 is about Birder's
    # quantizer): the line is drawn only on the lines all of whose runs have it.
    covers: tuple[str, str]


# Bounds the papers prove for a probe series; drawn as a horizontal line where the series is
# shown on the bound's scale. q-domain fractions have none (they are diagnostics).
_LEMMA1 = r"bound $E\|e\|^2/d \leq 1$ (Birder Lemma 1)"
KNOWN_BOUNDS = {
    ("ef-norm", "worker_sq_norm"): Bound(1.0, True, _LEMMA1, ("compressor.name", "stochastic-binary")),
    ("ef-norm", "server_sq_norm"): Bound(1.0, True, _LEMMA1, ("compressor.name", "stochastic-binary")),
}


@functools.lru_cache(maxsize=None)
def t975(df: int) -> float:
    """The 0.975 quantile of Student's t with DF degrees of freedom, as theory/rate_fit.cc's
    StudentTQuantile gives it (the report's intervals; a test compares the two): the density is
    integrated with Simpson's rule (error far below the digits shown) and the quantile found by
    bisection. Debian's python3 here has no scipy."""
    nu = float(df)
    scale = math.exp(math.lgamma((nu + 1) / 2) - math.lgamma(nu / 2)) / math.sqrt(nu * math.pi)

    def cdf(x: float) -> float:  # P(T <= x) for x >= 0
        grid = np.linspace(0.0, x, 4001)
        f = scale * (1 + grid * grid / nu) ** (-(nu + 1) / 2)
        h = x / 4000
        return 0.5 + h / 3 * (f[0] + f[-1] + 4 * f[1:-1:2].sum() + 2 * f[2:-1:2].sum())

    lo, hi = 0.0, 1.0
    while cdf(hi) < 0.975:
        lo, hi = hi, 2 * hi
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < 0.975 else (lo, mid)
    return (lo + hi) / 2


class Interval(NamedTuple):
    mean: float
    half: float  # the 95% t-interval's half-width; NaN with fewer than 2 values
    n: int


def interval95(values) -> Interval:
    """Mean and 95% Student-t half-width of the finite VALUES (summary.csv's _mean and _ci95)."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=float)
    if len(v) == 0:
        return Interval(math.nan, math.nan, 0)
    if len(v) == 1:
        return Interval(float(v[0]), math.nan, 1)
    return Interval(float(v.mean()), t975(len(v) - 1) * float(v.std(ddof=1)) / math.sqrt(len(v)),
                    len(v))


# Words for the series the figures show: (axis label, whether the quantity is positive).
_METRIC_WORDS = {
    "train_loss": "training loss (full batch)",
    "minibatch_loss": "minibatch loss (mean over the metrics window)",
    "test_accuracy": "test accuracy (fraction correct)",
    "test_loss": "test loss",
}
# The final quantities of the summary and paired figures: runs column (or derived), words.
_FINALS = [("final_loss", "final training loss"),
           ("final_accuracy", "final training accuracy"),
           ("final_test_loss", "final test loss"),
           ("final_test_accuracy", "final test accuracy"),
           ("bits_per_param_step", "bits sent / parameter / step")]


# A figure style a paper can take as is: small type, no top/right spines, TrueType fonts in the
# PDFs (editable, accepted by publishers). Set only while drawing (a notebook keeps its own).
_STYLE = {
    "font.size": 9, "axes.titlesize": 9, "axes.labelsize": 9, "legend.fontsize": 8,
    "xtick.labelsize": 8, "ytick.labelsize": 8, "axes.spines.top": False,
    "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.3, "lines.linewidth": 1.4,
    "pdf.fonttype": 42, "ps.fonttype": 42, "savefig.bbox": "tight", "figure.dpi": 100}


def provenance(meta: dict) -> str:
    """The build that wrote a results database (its meta table), in words."""
    return (f"lemmalab {meta.get('lemmalab_version', '?')}, commit {meta.get('commit', '?')}, "
            f"build: {meta.get('build', '?')}")


def _save(fig, path: Path, meta: dict) -> Path:
    """PATH (.png, 150 dpi) and the same figure as vector PDF beside it, each recording the
    build that wrote the results it shows (PNG text chunk and PDF info: Software/Creator)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150, metadata={"Software": provenance(meta)})
    fig.savefig(path.with_suffix(".pdf"), metadata={"Creator": provenance(meta)})
    plt.close(fig)  # many figures per report: keep memory flat
    return path


def _grid(n: int, width: float = 3.6, height: float = 2.8):
    """A grid of N panels sized to N: one row up to 3, else about square; unused cells hidden."""
    cols = n if n <= 3 else math.ceil(math.sqrt(n))
    rows = math.ceil(n / cols)
    fig, grid = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    for ax in grid.flat[n:]:
        ax.set_visible(False)
    return fig, grid


def _colors(names: list[str]) -> dict:
    cmap = plt.get_cmap("tab10" if len(names) <= 10 else "tab20" if len(names) <= 20
                        else "viridis")
    n = max(len(names) - 1, 1)
    pick = (lambda i: cmap(i)) if len(names) <= 20 else (lambda i: cmap(i / n))
    return {name: pick(i) for i, name in enumerate(names)}


_DIVERGED = re.compile(r"^diverged at step (\d+)")


def diverged_at(results) -> dict:
    """run_id -> the step a diverged run stopped at (its status says so)."""
    out = {}
    for run_id, status in zip(results.runs["run_id"], results.runs["status"].astype(str)):
        match = _DIVERGED.match(status)
        if match:
            out[int(run_id)] = int(match.group(1))
    return out


def _over_seeds(frame: pd.DataFrame, x: str, log: bool) -> tuple[pd.DataFrame, str | None]:
    """Per step over the seeds: the line (the mean, or where LOG the geometric mean: the mean of
    log values) with a band, and the band's words, or None for one seed. Two seeds: their
    min-max; three or more: the 95% t-interval of the mean, of the log values where LOG (so
    that a positive quantity's band stays positive)."""
    seeds = frame["run_id"].nunique()
    data = frame.assign(v=np.log(frame["value"]) if log else frame["value"])
    stats = data.groupby("step").agg(x=(x, "mean"), mean=("v", "mean"), n=("v", "size"),
                                     lo=("value", "min"), hi=("value", "max"),
                                     sd=("v", "std")).reset_index()
    if seeds >= 3:
        # Per step, since a diverged seed stops contributing; fewer than 2 values: no band.
        half = np.array([t975(n - 1) * sd / math.sqrt(n) if n >= 2 else math.nan
                         for n, sd in zip(stats["n"], stats["sd"])])
        stats["lo"], stats["hi"] = stats["mean"] - half, stats["mean"] + half
    if log:
        for c in ("mean", *(("lo", "hi") if seeds >= 3 else ())):
            stats[c] = np.exp(stats[c])
    if seeds >= 3:
        return stats, ("95% t-interval of the geometric mean over seeds" if log
                       else "95% t-interval of the mean over seeds")
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


class Figure(NamedTuple):
    path: Path
    caption: str  # what the figure shows, in words (the HTML report prints it below)


def _split(keys: list[str]) -> tuple[str | None, list[str]]:
    """The axis that facets the curves (the first) and those that name the lines."""
    return (keys[0], keys[1:]) if len(keys) >= 2 else (None, keys)


def _curves(results, frame: pd.DataFrame, x: str, title: str, xlabel: str, ylabel: str,
            path: Path, caption: str, once: set, bound: Bound | None = None,
            cumulative: bool = False) -> Figure | None:
    """Draw FRAME (run_id, step, value, X, axis columns) faceted by the first axis, one line per
    combination of the others; None when there are not two finite x values to draw.

    Positive values that span more than a decade get a log axis and log-space bands. The scale
    is set by the runs that completed: a diverged run is drawn up to its last finite value and
    marked there (▼ on the panel's edge where it left the scale)."""
    finite = np.isfinite(frame["value"].astype(float)) & np.isfinite(frame[x].astype(float))
    # ONCE: the runs to draw, one per seed of each configuration (a run another point repeated
    # with the same seed, sgd beside a compressor axis, is the same computation).
    frame = frame[finite & frame["run_id"].isin(once)].copy()
    # A running total (bits, time) that spans decades goes on a log axis, without its 0 at
    # step 0: otherwise the cheapest optimizer's whole curve sits against the y axis.
    sent = frame[x][frame[x] > 0]
    log_x = cumulative and len(sent) and sent.max() / sent.min() > 100
    if log_x:
        frame = frame[frame[x] > 0]
    if frame[x].nunique() < 2:  # e.g. no per-step counters: only step 0's zero bits
        return None
    stopped = diverged_at(results)
    healthy = frame[~frame["run_id"].isin(stopped)]
    values = (healthy if len(healthy) else frame)["value"].astype(float)
    positive = bool((frame["value"] > 0).all())
    log = positive and values.max() / values.min() > 10

    facet, line_keys = _split(lr.axes(results))
    frame["panel"] = [lr.describe({facet: v}) for v in frame[facet]] if facet else ""
    frame["line"] = ([lr.describe(dict(zip(line_keys, row)))
                      for row in frame[line_keys].itertuples(index=False)]
                     if line_keys else lr.describe({}))
    panels, lines = list(pd.unique(frame["panel"])), list(pd.unique(frame["line"]))
    colors = _colors(lines)
    fig, grid = _grid(len(panels))
    handles, marks, bands = {}, {}, set()  # marks: the bound and divergence, listed last
    covered = _covered_lines(results, frame, bound)
    for ax, panel in zip(grid.flat, panels):
        for line in lines:
            data = frame[(frame["panel"] == panel) & (frame["line"] == line)]
            if data.empty:
                continue
            seeds = data["run_id"].nunique()
            diverged = sorted(set(data["run_id"]) & set(stopped))
            if diverged:
                # No mean over runs some of which diverged: each run alone, up to its end.
                label = f"{line} ({len(diverged)} of {seeds} runs diverged)"
                for run_id, run in data.groupby("run_id"):
                    run = run.sort_values("step")
                    (handles[label],) = ax.plot(run[x], run["value"], color=colors[line],
                                                lw=0.9, alpha=0.8)
                    if run_id in stopped:
                        last = run.iloc[-1]
                        marks["diverged run: its last finite value"] = ax.plot(
                            last[x], last["value"], "x", color=colors[line], ms=7, mew=2)[0]
            else:
                stats, band = _over_seeds(data, x, log and positive)
                label = f"{line} ({seeds} seeds)" if seeds > 1 else line
                (handles[label],) = ax.plot(stats["x"], stats["mean"], color=colors[line])
                if band:
                    bands.add(band)
                    ax.fill_between(stats["x"], stats["lo"], stats["hi"], color=colors[line],
                                    alpha=0.2, lw=0)
        # The bound once, in black, where it is about every line of the panel; otherwise in
        # the colour of each line it is about, and on no other.
        about = [line for line in lines if (panel, line) in covered]
        panel_lines = set(frame.loc[frame["panel"] == panel, "line"])
        if about and set(about) == panel_lines:
            marks[bound.label] = ax.axhline(bound.value, color="black", ls="--", lw=1)
        elif about:
            for line in about:
                marks[f"{bound.label}, for the line in its colour"] = ax.axhline(
                    bound.value, color=colors[line], ls="--", lw=1)
        if facet:
            ax.set_title(panel)
        ax.set_xlabel(xlabel)
        if log_x:
            ax.set_xscale("log")
        _set_y_scale(ax, values, log)
        _mark_off_scale(ax, frame[frame["panel"] == panel], stopped, x, colors, marks)
    for ax in grid[:, 0]:
        ax.set_ylabel(ylabel)
    fig.suptitle(title)
    legend_title = None
    if frame.groupby("line")["run_id"].nunique().max() > 1:
        legend_title = "\n".join(["line: " + ("geometric mean over seeds" if log and positive
                                             else "mean over seeds"), *sorted(bands)])
    handles.update(marks)
    fig.legend(list(handles.values()), list(handles.keys()), loc="center left",
               bbox_to_anchor=(1.0, 0.5), title=legend_title, title_fontsize=8, frameon=False)
    fig.tight_layout()
    return Figure(_save(fig, path, results.meta), caption)


def _set_y_scale(ax, values: pd.Series, log: bool):
    """Limits from VALUES (the completed runs'); on a log axis spanning few decades, ticks at
    1, 2 and 5 times each power of ten, written as plain numbers."""
    low, high = float(values.min()), float(values.max())
    if log:
        ax.set_yscale("log")
        pad = (high / low) ** 0.05
        ax.set_ylim(low / pad, high * pad)
        if high / low < 1000:
            ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.yaxis.set_minor_formatter(ticker.NullFormatter())
    else:
        pad = 0.05 * (high - low) or 0.05 * abs(high) or 0.05
        ax.set_ylim(low - pad, high + pad)


def _mark_off_scale(ax, frame, stopped, x, colors, marks):
    """▼ at the top edge, at the last step a diverged run stayed on the scale, where it left."""
    top = ax.get_ylim()[1]
    for run_id, run in frame[frame["run_id"].isin(stopped)].groupby("run_id"):
        above = run[run["value"] > top].sort_values("step")
        if len(above):
            first = above.iloc[0]
            marks["diverged run: left the scale here"] = ax.plot(
                first[x], top, "v", color=colors[first["line"]], ms=7, clip_on=False)[0]


def _covered_lines(results, frame: pd.DataFrame, bound: Bound | None) -> set:
    """The (panel, line) pairs all of whose runs the bound is about."""
    if bound is None:
        return set()
    return {key for key, group in frame.groupby(["panel", "line"])
            if _all_covered(results, group["run_id"].unique(), bound.covers)}


def _file_name(*parts: str) -> str:
    return "-".join(re.sub(r"[^A-Za-z0-9_.]+", "-", p).strip("-") for p in parts) + ".png"


def _final(results, quantity: str) -> pd.Series:
    """QUANTITY per run (indexed like results.runs), as summary.csv computes it."""
    runs = results.runs
    if quantity == "bits_per_param_step":
        return runs["bits_sent_per_worker"] / (runs["dimension"] * runs["steps_done"])
    return runs[quantity].astype(float)


def _finals(results) -> list[tuple[str, str]]:
    return [(q, words) for q, words in _FINALS
            if np.isfinite(_final(results, q).astype(float)).any()]


def _numeric(values) -> bool:
    return all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
               and np.isfinite(v) for v in values)


def _numeric_scale(ax, values: pd.Series):
    """The x scale that spaces an axis' values apart: logit for fractions that crowd towards 1
    or 0 (beta = 0.9, 0.99, 0.999), log for positive values spanning a decade, else linear."""
    low, high = float(values.min()), float(values.max())
    if 0 < low and high < 1 and max((1 - low) / (1 - high), high / low) >= 10:
        ax.set_xscale("logit")
    elif low > 0 and high / low >= 10:
        ax.set_xscale("log")


def summary_figures(results, out: Path) -> list[Figure]:
    """Per numeric axis with two or more values: each final quantity against it, one line per
    configuration of the other axes, the mean over seeds with its 95% t-interval (the numbers
    of summary.csv: completed runs only, a repeated seed counted once)."""
    configs = lr.configurations(results)
    keys = [k for k in lr.axes(results) if k != "seed"]
    runs = results.runs.set_index("run_id")
    completed = runs["status"] == "completed"
    finals = _finals(results)
    figures = []
    for axis in keys if finals else []:
        values = configs[axis].dropna()
        if values.nunique() < 2 or not _numeric(values):
            continue
        others = [k for k in keys if k != axis]
        fig, grid = _grid(len(finals))
        lines = configs.assign(line=[lr.describe(dict(zip(others, r))) for r in
                                     configs[others].itertuples(index=False)] if others
                               else lr.describe({}))
        colors = _colors(list(pd.unique(lines["line"])))
        handles, marks = {}, {}
        for ax, (quantity, words) in zip(grid.flat, finals):
            per_run = _final(results, quantity).set_axis(results.runs["run_id"])
            for line, group in lines.groupby("line", sort=False):
                group = group.dropna(subset=[axis]).sort_values(axis)
                points = [interval95(per_run[list(ids)][completed[list(ids)]])
                          for ids in group["run_ids"]]
                mean = np.array([p.mean for p in points])
                half = np.array([p.half for p in points])
                handles[line] = ax.errorbar(group[axis], mean, yerr=np.nan_to_num(half),
                                            color=colors[line], marker="o", ms=4, capsize=3,
                                            label=line)
                # A configuration none of whose runs completed has no value: × on the top edge.
                lost = group[axis][[not np.isfinite(m) for m in mean]]
                if len(lost):
                    marks["no run completed (diverged): × on the top edge"] = ax.plot(
                        lost, [1.0] * len(lost), "x", color=colors[line], ms=8, mew=2,
                        transform=ax.get_xaxis_transform(), clip_on=False)[0]
            ax.set_xlabel(axis)
            ax.set_ylabel(words)
            _numeric_scale(ax, values)
            ax.set_xticks(sorted(values.unique()))
            ax.set_xticklabels([lr.show_value(v) for v in sorted(values.unique())],
                               rotation=45 if values.nunique() > 5 else 0)
            ax.minorticks_off()
        seeds = max(len(s) for s in configs["seeds"]) if len(configs) else 0
        fig.suptitle(f"Final quantities against {axis}")
        handles.update(marks)
        fig.legend(list(handles.values()), list(handles.keys()), loc="center left",
                   bbox_to_anchor=(1.0, 0.5), frameon=False,
                   title=f"mean ± 95% t-interval over up to {seeds} seeds", title_fontsize=8)
        fig.tight_layout()
        figures.append(Figure(
            _save(fig, out / _file_name("summary", axis), results.meta),
            f"Each final quantity against {axis}: one line per "
            + (f"value of {', '.join(others)}" if others else "sweep")
            + "; the mean over the seeds that completed with its 95% Student-t interval, the "
              "numbers of summary.csv."))
    return figures


def paired_differences(results) -> pd.DataFrame:
    """Where seeds pair runs (the same seed gives the same shards and x0): for each axis, each
    configuration against the one with the axis' first value and the same other settings (an
    axis a run does not read, sgd's compressor, matches any value), the mean difference of each
    final quantity over the seeds both completed, with its 95% t-interval. Empty where no two
    configurations share two seeds."""
    configs = lr.configurations(results)
    keys = [k for k in lr.axes(results) if k != "seed"]
    runs = results.runs.set_index("run_id")
    by_seed = {c["configuration"]: {runs.at[i, "seed"]: i for i in c["run_ids"]
                                    if runs.at[i, "status"] == "completed"}
               for _, c in configs.iterrows()}
    finals = _finals(results)
    per_run = {q: _final(results, q).set_axis(results.runs["run_id"]) for q, _ in finals}

    def unset(value) -> bool:
        return lr.show_value(value) == ""

    rows = []
    for axis in keys:
        others = [k for k in keys if k != axis]
        values = list(pd.unique(configs[axis].dropna()))
        if len(values) < 2:
            continue
        references = configs[configs[axis] == values[0]]
        for _, other in configs[configs[axis].isin(values[1:])].iterrows():
            for _, reference in references.iterrows():
                if any(not unset(other[k]) and not unset(reference[k]) and
                       lr.show_value(other[k]) != lr.show_value(reference[k]) for k in others):
                    continue
                a, b = by_seed[other["configuration"]], by_seed[reference["configuration"]]
                seeds = sorted(set(a) & set(b))
                if len(seeds) < 2:
                    continue
                at = {k: (reference[k] if unset(other[k]) else other[k]) for k in others}
                for quantity, _ in finals:
                    d = interval95([per_run[quantity][a[s]] - per_run[quantity][b[s]]
                                    for s in seeds])
                    rows.append({"quantity": quantity, "axis": axis,
                                 "value": lr.show_value(other[axis]),
                                 "reference": lr.show_value(reference[axis]),
                                 "at": lr.describe(at) if others else "",
                                 "pairs": d.n, "mean_difference": d.mean, "ci95": d.half,
                                 "configuration": other["configuration"],
                                 "reference_configuration": reference["configuration"]})
    return pd.DataFrame(rows, columns=["quantity", "axis", "value", "reference", "at", "pairs",
                                       "mean_difference", "ci95", "configuration",
                                       "reference_configuration"])


def paired_figures(results, table: pd.DataFrame, out: Path) -> list[Figure]:
    """Per axis of TABLE: each final quantity's paired differences against the reference,
    one row per compared configuration, with 95% intervals and the zero line."""
    figures = []
    for axis, rows in table.groupby("axis", sort=False):
        # A quantity the axis leaves exactly unchanged (beta and the bits sent) gets no panel;
        # paired.csv still lists it.
        changed = rows.groupby("quantity", sort=False)["mean_difference"].apply(
            lambda d: bool((d.abs() > 0).any()))
        quantities = [q for q in pd.unique(rows["quantity"]) if changed[q]]
        if not quantities:
            continue
        words = dict(_FINALS)
        pairs = list(dict.fromkeys(zip(rows["configuration"], rows["reference_configuration"])))
        fig, grid = _grid(len(quantities), width=4.2, height=0.9 + 0.28 * len(pairs))
        for ax, quantity in zip(grid.flat, quantities):
            data = (rows[rows["quantity"] == quantity]
                    .set_index(["configuration", "reference_configuration"]).loc[pairs])
            y = np.arange(len(pairs))[::-1]
            ax.errorbar(data["mean_difference"], y, xerr=np.nan_to_num(data["ci95"]), fmt="o",
                        ms=4, capsize=3, color="tab:blue")
            ax.axvline(0, color="black", lw=0.8)
            ax.set_yticks(y)
            ax.set_yticklabels([f"{v} − {r}" + (f"  ({at})" if at else "") for v, r, at in zip(
                data["value"], data["reference"], data["at"])] if ax is grid.flat[0]
                else [""] * len(y))
            ax.set_xlabel(f"difference in\n{words[quantity]}")
            ax.grid(axis="y", alpha=0)
        reference = rows["reference"].iloc[0]
        fig.suptitle(f"Paired differences in {axis} against {axis}={reference}, seed by seed")
        fig.tight_layout()
        figures.append(Figure(
            _save(fig, out / _file_name("paired", axis), results.meta),
            f"Each configuration minus the one with {axis}={reference} and the same other "
            "settings, run by run over the seeds both completed (a seed fixes the shards and "
            "x0, so the pairs share them); the mean difference with its 95% Student-t "
            "interval. An interval that excludes 0 is a difference the seeds resolve."))
    return figures


def draw(results, out_dir) -> list[Path]:
    """Write the report's figures under OUT_DIR; RESULTS is a Results or a path to load().
    Returns the written PNG paths (each with a vector PDF beside it)."""
    return [f.path for f in figures(results, out_dir)]


def figures(results, out_dir) -> list[Figure]:
    """The figures of draw(), with their captions; paired.csv too where seeds pair runs."""
    if _MISSING:
        raise ImportError(_MISSING)
    if not isinstance(results, lr.Results):
        results = lr.load(results)
    with plt.rc_context(_STYLE):
        return _figures(results, Path(out_dir))


def _figures(results, out: Path) -> list[Figure]:
    once = {i for ids in lr.configurations(results)["run_ids"] for i in ids}
    written = summary_figures(results, out)
    paired = paired_differences(results)
    if len(paired):
        out.mkdir(parents=True, exist_ok=True)
        paired.to_csv(out / "paired.csv", index=False)
        written += paired_figures(results, paired, out)

    loss_name = lr.loss_metric(results)
    loss = lr.series(results, loss_name)
    words = _METRIC_WORDS[loss_name]
    bits, bit_unit = _scale(loss["cumulative_bits"], _BIT_UNITS)
    seconds, second_unit = _scale(loss["cumulative_comm_seconds"], _SECOND_UNITS)
    loss = loss.assign(cumulative_bits=bits, cumulative_comm_seconds=seconds)
    band_words = ("Lines are over the seeds (the geometric mean where the quantity is positive "
                  "and drawn on a log axis); bands as the legend says. Diverged runs end in ×.")
    title = words[0].upper() + words[1:].split(" (")[0]
    written += [
        _curves(results, loss, "step", f"{title} vs steps", "step", words,
                out / "loss-vs-steps.png", f"The {words} at each evaluated step. {band_words}",
                once),
        _curves(results, loss, "cumulative_bits", f"{title} vs bits sent",
                f"bits sent per worker so far ({bit_unit})", words, out / "loss-vs-bits.png",
                f"The {words} against the bits each worker has sent. {band_words}",
                once, cumulative=True),
        _curves(results, loss, "cumulative_comm_seconds",
                f"{title} vs projected communication time",
                f"projected communication time so far ({second_unit})", words,
                out / "loss-vs-comm-time.png",
                f"The {words} against the communication time the network model projects "
                f"(not measured). {band_words}", once, cumulative=True),
    ]
    if lr.has_metric(results, "test_accuracy"):
        written.append(_curves(results, lr.series(results, "test_accuracy"), "step",
                               "Test accuracy vs steps", "step", _METRIC_WORDS["test_accuracy"],
                               out / "test-accuracy-vs-steps.png",
                               f"Test accuracy at each evaluated step. {band_words}",
                               once))

    for probe, name in lr.probe_names(results):
        info = lr.series_info(results, probe, name)
        bound = KNOWN_BOUNDS.get((probe, name))
        if bound is not None and bound.per_dimension != info.per_dimension:
            bound = None  # the series is not on the bound's scale (e.g. d not divided out)
        frame = lr.probe_frame(results, probe, name)
        shown = name.replace("_", " ") + (" / d" if info.per_dimension else "")
        caption = f"Probe {probe}, series {name}" + (", divided by the dimension d" if
                                                      info.per_dimension else "")
        if info.meaning:
            caption += f"; recorded as {info.meaning}"
        if bound is not None:
            caption += (f". The dashed line, {bound.label}, is drawn only on the lines whose "
                        f"runs all have {bound.covers[0]} = {bound.covers[1]}")
        written.append(_curves(results, frame, "step", f"Probe {probe}: {shown}", "step",
                               f"{shown} (mean over workers)",
                               out / _file_name("probe", probe, name),
                               caption + ". " + band_words, once, bound))
    return [f for f in written if f is not None]


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
    return [f.path for f in evidence_figures(check_dir, out_dir)]


def evidence_figures(check_dir, out_dir) -> list[Figure]:
    """draw_evidence()'s figures with their captions."""
    with plt.rc_context(_STYLE):
        return _evidence_figures(check_dir, out_dir)


def _evidence_figures(check_dir, out_dir) -> list[Figure]:
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
        reduction = stat["reduction"] + (" over workers" if stat["reduction"] in ("max", "min")
                                         else " over steps")
        ax.set_ylabel(f"{', '.join(x.split(' ', 1)[-1] for x in stat['series'])}\n({reduction})")
        # A positive statistic far below (or above) its bound: a log axis shows both.
        shown = np.concatenate([line.get_ydata() for line in ax.get_lines()]).astype(float)
        shown = shown[np.isfinite(shown)]
        if len(shown) and (shown > 0).all() and shown.max() / shown.min() > 10:
            ax.set_yscale("log")
        ax.set_title(textwrap.fill(f"{v['assertion']} on {v['run']}: {v['verdict']}", 70),
                     fontsize=10)
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
        path = out / _file_name("evidence", f"{k:02d}", v["assertion"], v["run"])
        written.append(Figure(_save(fig, path, check), (
            f"The evidence of verdict {k}, {v['assertion']} on {v['run']} ({v['verdict']}): "
            f"{', '.join(stat['series'])}, {stat['reduction']}, of the runs it judged only, "
            "with its bound; a violation or a failed premise is marked at its step.")))
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m lemmalab.plots",
        description="Draw a lemmalab results database as PNG figures; prints their paths.")
    parser.add_argument("results", help="results.sqlite, its folder, or a lemmalab check folder")
    parser.add_argument("out_dir", help="folder to write the figures into (created)")
    parser.add_argument("--html", metavar="FILE",
                        help="also write the self-contained report page FILE (report.html)")
    parser.add_argument("--plots-at", metavar="DIR",
                        help="where the figures will be when the page is read (default: OUT_DIR)")
    args = parser.parse_args(argv)
    if _MISSING:
        print(_MISSING, file=sys.stderr)
        return 3
    # Files only: the command draws on headless machines and in CI. (Imported into a notebook,
    # the module leaves the notebook's backend alone.)
    plt.switch_backend("Agg")
    try:
        results = lr.load(args.results)
        drawn = figures(results, args.out_dir)
        if (Path(args.results) / "check.json").is_file():
            drawn += evidence_figures(args.results, args.out_dir)
    except lr.NotResultsError as e:
        print(f"lemmalab.plots: {e}", file=sys.stderr)
        return 2
    for figure in drawn:
        print(figure.path)
        print(figure.path.with_suffix(".pdf"))
    if args.html:
        from lemmalab import report_page

        folder = Path(args.results)
        folder = folder if folder.is_dir() else folder.parent
        paired = Path(args.out_dir) / "paired.csv"
        report_page.write(folder, results, drawn,
                          pd.read_csv(paired) if paired.is_file() else None, args.html,
                          args.plots_at or args.out_dir)
        print(args.html)
    return 0


if __name__ == "__main__":
    sys.exit(main())
