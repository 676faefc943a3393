"""Read a lemmalab results database (written by `lemmalab run`, `sweep` or `check`) into pandas.

    r = load("out/sweep")                  # a results.sqlite, its folder, or a check folder
    axes(r)                                # ['beta', 'compressor.name']: what varies, not seed
    configurations(r)                      # one row per axis combination, its run_ids and seeds
    series(r, "train_loss")                # tidy: run_id, step, value, cumulative_bits, ...
    probe_frame(r, "ef-norm", "worker_sq_norm")   # mean over workers, / d where per_dimension
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import pandas as pd

DATABASE = "results.sqlite"

# The runs table's fixed columns (engine/results.h: RunColumns, from RunRecord's one field list;
# tests/python/test_session.py compares them with a database); every other column is a
# hyperparameter.
RUN_COLUMNS = (
    "run_id", "point", "label", "optimizer", "schedule", "status", "steps_done", "dimension",
    "final_loss", "final_accuracy", "final_grad_sq_norm", "final_test_loss",
    "final_test_accuracy", "bits_sent_per_worker", "wall_seconds", "bytes_intra_per_step",
    "bytes_inter_per_step", "step_seconds", "comm_seconds_per_step", "version", "commit", "build",
)

# The per-step counters hold sums over the window since the previous recorded step, so their
# cumulative sum over recorded steps is the running total.
_COUNTERS = {"bits_sent": "cumulative_bits", "comm_seconds": "cumulative_comm_seconds"}

# A `lemmalab check` sweep writes one experiment per subfolder named like this (cli/check.cc).
_CHECK_FOLDER = re.compile(r"^seed-(-?\d+)-workers-(\d+)$")


class NotResultsError(ValueError):
    """The path is missing, or is not a lemmalab results database; the message names it."""


class SeriesInfo(NamedTuple):
    meaning: str
    per_dimension: bool  # the summary shows the series divided by the dimension d


@dataclass
class Results:
    runs: pd.DataFrame
    metrics: pd.DataFrame  # run_id, step, name, worker, value
    probes: pd.DataFrame  # run_id, step, probe, series, worker, value
    hyperparameters: pd.DataFrame  # run_id, key, value, type
    meta: dict
    probe_series: pd.DataFrame  # probe, series, meaning, per_dimension (empty in old databases)
    sources: list = field(default_factory=list)  # the database files read


def _databases(path: Path) -> list[Path]:
    """The database files behind PATH: itself, its folder's own, or one per subfolder (check)."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise NotResultsError(f"{path}: no such file or folder")
    if (path / DATABASE).is_file():
        return [path / DATABASE]
    found = sorted(p for p in path.glob(f"*/{DATABASE}") if p.is_file())
    if not found:
        raise NotResultsError(
            f"{path}: no {DATABASE} there or in its subfolders (results are written when a run, "
            "a check or a sweep point finishes)")
    return found


# Fixed dtypes, so that an empty table (a run still going) reads as numbers, not objects.
# worker is float: NULL (run-wide) becomes NaN, -1 is the server.
_DTYPES = {"run_id": "int64", "step": "int64", "worker": "float64", "value": "float64"}


def _tables(db: sqlite3.Connection) -> set[str]:
    return {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _read_one(path: Path) -> Results:
    # Read-only through a URI: opening a wrong path must not leave an empty database behind.
    try:
        db = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    except sqlite3.Error as e:
        raise NotResultsError(f"{path}: cannot open as SQLite: {e}") from e
    try:
        try:
            tables = _tables(db)
        except sqlite3.DatabaseError as e:  # e.g. "file is not a database"
            raise NotResultsError(f"{path}: not a lemmalab results database ({e})") from e
        missing = {"meta", "runs", "metrics"} - tables
        if missing:
            raise NotResultsError(
                f"{path}: not a lemmalab results database (no {', '.join(sorted(missing))} "
                "table)")

        def read(sql: str) -> pd.DataFrame:
            frame = pd.read_sql_query(sql, db)
            return frame.astype({k: v for k, v in _DTYPES.items() if k in frame
                                 and not (k == "value" and "key" in frame)})

        empty_probes = "SELECT 0 AS run_id, 0 AS step, '' AS probe, '' AS series, " \
                       "0 AS worker, 0.0 AS value WHERE 0"
        return Results(
            runs=read("SELECT * FROM runs ORDER BY run_id"),
            metrics=read("SELECT run_id, step, name, worker, value FROM metrics"),
            probes=read("SELECT run_id, step, probe, series, worker, value FROM probes"
                        if "probes" in tables else empty_probes),
            hyperparameters=read("SELECT run_id, key, value, type FROM hyperparameters"
                                 if "hyperparameters" in tables else
                                 "SELECT 0 AS run_id, '' AS key, '' AS value, '' AS type WHERE 0"),
            meta=dict(db.execute("SELECT key, value FROM meta").fetchall()),
            # Older databases have no probe_series: every series is then shown as recorded.
            probe_series=read("SELECT probe, series, meaning, per_dimension FROM probe_series"
                              if "probe_series" in tables else
                              "SELECT '' AS probe, '' AS series, '' AS meaning, "
                              "0 AS per_dimension WHERE 0"),
            sources=[path])
    finally:
        db.close()


def load(path) -> Results:
    """Load a results.sqlite, a folder holding one, or a `lemmalab check` folder of experiments.

    A check folder's experiments are concatenated: run_ids are offset to stay unique, and the
    `seed`/`workers` columns are filled from the subfolder name where the database lacks them.
    `meta` is the first database's. Raises NotResultsError for a missing or foreign path.
    """
    parts = []
    offset = 0
    for db_path in _databases(Path(path)):
        part = _read_one(db_path)
        folder = _CHECK_FOLDER.match(db_path.parent.name)
        if folder:
            for column, value in zip(("seed", "workers"), map(int, folder.groups())):
                if column not in part.runs:
                    part.runs[column] = value
                else:
                    part.runs[column] = part.runs[column].fillna(value)
        for frame in (part.runs, part.metrics, part.probes, part.hyperparameters):
            frame["run_id"] += offset
        offset = int(part.runs["run_id"].max()) if len(part.runs) else offset
        parts.append(part)

    def concat(name: str) -> pd.DataFrame:
        return pd.concat([getattr(p, name) for p in parts], ignore_index=True)

    runs = concat("runs")
    if "seed" not in runs:  # the replicate column every helper groups by
        runs["seed"] = math.nan
    return Results(
        runs=runs, metrics=concat("metrics"), probes=concat("probes"),
        hyperparameters=concat("hyperparameters"), meta=parts[0].meta,
        probe_series=concat("probe_series").drop_duplicates(["probe", "series"]),
        sources=[s for p in parts for s in p.sources])


def hyperparameter_columns(results: Results) -> list[str]:
    """The runs columns that hold hyperparameters (everything after the fixed columns)."""
    return [c for c in results.runs.columns if c not in RUN_COLUMNS]


def axes(results: Results) -> list[str]:
    """The columns that vary across runs, in meta `sweep_axes` order first, then the other
    hyperparameters, then `label` (when several labels exist). `seed` is never an axis.

    A column varies when it holds two or more distinct non-NULL values: NULL only means the
    run's optimizer does not read the key. Outside `sweep_axes`, a column that is a function of
    the label (adam's lr vs birder's lr in a plain run) adds nothing to it and is left out.
    """
    runs = results.runs
    several_labels = runs["label"].nunique() > 1

    def varies(column: str) -> bool:
        return runs[column].nunique(dropna=True) > 1

    def follows_label(column: str) -> bool:
        return several_labels and runs.groupby("label")[column].nunique(dropna=False).max() <= 1

    swept = json.loads(results.meta.get("sweep_axes") or "[]")
    found = [a for a in swept if a in runs and a != "seed" and varies(a)]
    found += [c for c in hyperparameter_columns(results)
              if c != "seed" and c not in found and varies(c) and not follows_label(c)]
    if several_labels and "label" not in found:
        found.append("label")
    # Axes every run has first: the first one facets the plots, and an option only some
    # optimizers read (1-bit Adam's warmup_steps) would put every other run in one "unset" panel.
    found.sort(key=lambda c: c != "label" and bool(runs[c].isna().any()))
    return found


def _show(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "unset"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def describe(values: dict) -> str:
    """A configuration's name: 'beta=0.9 compressor.name=sign'; a label shows as itself."""
    shown = [_show(v) if k == "label" else f"{k}={_show(v)}" for k, v in values.items()]
    return " ".join(shown) or "all runs"


def configurations(results: Results) -> pd.DataFrame:
    """One row per combination of the axes (seeds pooled): the axis values, `configuration`
    (its name), `run_ids` and `seeds` (sorted tuples), in the order runs first appear."""
    keys = axes(results)
    runs = results.runs
    # One key is passed bare: pandas then yields scalar keys (a 1-list warns in pandas 1.5).
    by = keys[0] if len(keys) == 1 else keys
    groups = (runs.groupby(by, dropna=False, sort=False) if keys
              else [((), runs)] if len(runs) else [])
    rows = []
    for key, group in groups:
        values = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        rows.append({**values, "configuration": describe(values),
                     "run_ids": tuple(sorted(group["run_id"])),
                     "seeds": tuple(sorted(group["seed"].dropna()))})
    return pd.DataFrame(rows, columns=[*keys, "configuration", "run_ids", "seeds"])


def run_keys(results: Results) -> pd.DataFrame:
    """Per run_id: its seed, axis values and configuration name (to merge into series)."""
    keys = axes(results)
    runs = results.runs[["run_id", "seed", *keys]].copy()
    # Without axes (one configuration, seeds only) every run has the same name.
    runs["configuration"] = ([describe(dict(zip(keys, row))) for row in
                              runs[keys].itertuples(index=False)] if keys else describe({}))
    return runs


def _cumulative(results: Results) -> pd.DataFrame:
    """run_id, step, cumulative_bits, cumulative_comm_seconds at each recorded step; step 0: 0."""
    m = results.metrics
    counters = m[m["name"].isin(list(_COUNTERS))]
    # Mean over workers: bits are per worker (a run-wide row is already the per-worker mean).
    per_step = (counters.groupby(["run_id", "step", "name"])["value"].mean()
                .unstack("name").reindex(columns=list(_COUNTERS)).sort_index())
    cumulative = per_step.groupby(level="run_id").cumsum().rename(columns=_COUNTERS).reset_index()
    zero = pd.DataFrame({"run_id": results.runs["run_id"], "step": 0})
    for column in _COUNTERS.values():
        zero[column] = 0.0
    # The initial point has sent nothing; a step-0 counter row (if one was ever written) wins.
    return (pd.concat([zero, cumulative], ignore_index=True)
            .drop_duplicates(["run_id", "step"], keep="last"))


def series(results: Results, name: str) -> pd.DataFrame:
    """Metric NAME per run and step (mean over workers where recorded per worker), with
    `cumulative_bits` (bits sent per worker so far) and `cumulative_comm_seconds` (projected
    communication time so far) at that step, NaN where no per-step counters were recorded
    there, plus seed, the axes and `configuration`."""
    m = results.metrics
    values = (m[m["name"] == name].groupby(["run_id", "step"])["value"].mean()
              .reset_index())
    return (values.merge(_cumulative(results), on=["run_id", "step"], how="left")
            .merge(run_keys(results), on="run_id")
            .sort_values(["run_id", "step"], ignore_index=True))


def has_metric(results: Results, name: str) -> bool:
    m = results.metrics
    return bool(m.loc[m["name"] == name, "value"].notna().any())


def loss_metric(results: Results) -> str:
    """`train_loss` where evaluated, else the minibatch loss every run records."""
    return "train_loss" if has_metric(results, "train_loss") else "minibatch_loss"


def probe_names(results: Results) -> list[tuple[str, str]]:
    """The (probe, series) pairs recorded, sorted."""
    pairs = results.probes[["probe", "series"]].drop_duplicates()
    return sorted(map(tuple, pairs.itertuples(index=False)))


def series_info(results: Results, probe: str, name: str) -> SeriesInfo:
    """The probe_series declaration of a series; ('', False) where undeclared or absent."""
    table = results.probe_series
    row = table[(table["probe"] == probe) & (table["series"] == name)]
    if row.empty:
        return SeriesInfo("", False)
    return SeriesInfo(str(row["meaning"].iloc[0] or ""), bool(row["per_dimension"].iloc[0]))


def probe_frame(results: Results, probe: str, name: str) -> pd.DataFrame:
    """Probe series NAME of PROBE per run and step: the mean over workers, divided by the run's
    dimension d where the series is declared per_dimension (as the probe's summary shows it),
    plus seed, the axes and `configuration`."""
    p = results.probes
    selected = p[(p["probe"] == probe) & (p["series"] == name)]
    frame = selected.groupby(["run_id", "step"])["value"].mean().reset_index()
    if series_info(results, probe, name).per_dimension:
        dimension = results.runs.set_index("run_id")["dimension"].astype(float)
        frame["value"] = frame["value"] / frame["run_id"].map(dimension)
    return (frame.merge(run_keys(results), on="run_id")
            .sort_values(["run_id", "step"], ignore_index=True))
