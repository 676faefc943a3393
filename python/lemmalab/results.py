"""Read a lemmalab results database (written by `lemmalab run`, `sweep` or `check`) into pandas.

    r = load("out/sweep")                  # a results.sqlite, its folder, or a check folder
    axes(r)                                # ['beta', 'compressor']: what varies, not seed
    configurations(r)                      # one row per configuration, its run_ids and seeds
    r.runs["configuration"]                # each run's configuration, named as the report does
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

import numpy as np
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


def show_value(value) -> str:
    """A setting's value as the report (cli/report.cc) prints it: integral numbers without a
    fraction, others in their shortest form, NULL as ''."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (float, np.floating)):
        integral = float(value).is_integer() and abs(value) < 1e16
        return str(int(value)) if integral else repr(float(value))
    if isinstance(value, np.integer):
        return str(int(value))
    return str(value)


def _applies(run: pd.Series, path: str, labels: set) -> bool:
    """Whether RUN reads the option PATH a sweep axis sets (cli/report.cc AxisApplies): an
    optimizer option only where the run's optimizer has it, a labelled one
    (optimizer.<label>.x) only on that label's runs; any other axis applies to every run."""
    parts = path.split(".")
    if parts[0] != "optimizer" or len(parts) == 1:
        return True
    first = 1
    if len(parts) > 2 and parts[1] in labels:
        if run["label"] != parts[1]:
            return False
        first = 2
    key = ".".join(parts[first:])
    return any((c == key or c.startswith(key + ".")) and show_value(run[c]) != ""
               for c in run.index if c not in RUN_COLUMNS)


def _point_columns(runs: pd.DataFrame, points: dict, meta: dict) -> pd.DataFrame:
    """A sweep's runs with one column per swept axis but the seed, holding the point's value
    where the run reads the axis (NaN where not), and `sweep_configuration`: those values named
    in the axes' order ('' where none applies)."""
    names = json.loads(meta.get("sweep_axes") or "[]")
    paths = json.loads(meta.get("sweep_axis_paths") or "[]")
    labels = set(runs["label"])
    values = {name: [] for name in names if name != "seed"}
    named = []
    for _, run in runs.iterrows():
        axes = points.get(run["point"]) if isinstance(run["point"], str) else None
        parts = []
        for name, path in zip(names, paths + names[len(paths):]):
            if name == "seed":
                continue
            value = (axes or {}).get(name) if axes and _applies(run, path, labels) else None
            values[name].append(math.nan if value is None else value)
            if value is not None:
                parts.append(f"{name}={show_value(value)}")
        named.append(" ".join(parts))
    runs = runs.assign(**values)
    runs["sweep_configuration"] = named
    return runs


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

        points = (dict((p, json.loads(a)) for p, a in db.execute("SELECT point, axes FROM points"))
                  if "points" in tables else {})
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        empty_probes = "SELECT 0 AS run_id, 0 AS step, '' AS probe, '' AS series, " \
                       "0 AS worker, 0.0 AS value WHERE 0"
        return Results(
            runs=_point_columns(read("SELECT * FROM runs ORDER BY run_id"), points, meta),
            metrics=read("SELECT run_id, step, name, worker, value FROM metrics"),
            probes=read("SELECT run_id, step, probe, series, worker, value FROM probes"
                        if "probes" in tables else empty_probes),
            hyperparameters=read("SELECT run_id, key, value, type FROM hyperparameters"
                                 if "hyperparameters" in tables else
                                 "SELECT 0 AS run_id, '' AS key, '' AS value, '' AS type WHERE 0"),
            meta=meta,
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
    results = Results(
        runs=runs, metrics=concat("metrics"), probes=concat("probes"),
        hyperparameters=concat("hyperparameters"), meta=parts[0].meta,
        probe_series=concat("probe_series").drop_duplicates(["probe", "series"]),
        sources=[s for p in parts for s in p.sources])
    _name_configurations(results)
    return results


# Columns load() derives: a sweep's configuration from its point, and the run's configuration.
_DERIVED = ("sweep_configuration", "configuration")


def _swept(results: Results) -> list[str]:
    """A sweep's axes as columns (the seed aside), in meta `sweep_axes` order; none where no run
    was named by its point."""
    if not (results.runs["sweep_configuration"] != "").any():
        return []
    return [a for a in json.loads(results.meta.get("sweep_axes") or "[]")
            if a != "seed" and a in results.runs]


def hyperparameter_columns(results: Results) -> list[str]:
    """The runs columns that hold hyperparameters (everything after the fixed columns, but the
    columns load() derives)."""
    derived = {*_DERIVED, *_swept(results)}
    return [c for c in results.runs.columns if c not in RUN_COLUMNS and c not in derived]


def _varying_by_label(runs: pd.DataFrame, settings: list[str]) -> dict[str, list[str]]:
    """Per label, the settings (sorted) that differ between its runs, NULL counting as a value."""
    return {label: [c for c in sorted(settings) if group[c].map(show_value).nunique() > 1]
            for label, group in runs.groupby("label", sort=False)}


def _name_configurations(results: Results) -> None:
    """Sets runs["configuration"], the rule cli/report.cc names summary.csv's rows by (the
    Python tests check that both agree): the label where runs have several, then a sweep run's
    axes (those its optimizer reads, the seed aside), or otherwise the settings that differ
    between the runs of its label; a run with nothing else to say is named by its label."""
    runs = results.runs
    several = runs["label"].nunique() > 1
    settings = [c for c in hyperparameter_columns(results) if c != "seed"]
    plain = runs[runs["sweep_configuration"] == ""]
    varying = _varying_by_label(plain, settings) if len(plain) else {}
    names = []
    for _, run in runs.iterrows():
        parts = [run["label"]] if several else []
        if run["sweep_configuration"]:
            parts.append(run["sweep_configuration"])
        else:
            parts += [f"{c}={show_value(run[c])}" for c in varying[run["label"]]
                      if show_value(run[c]) != ""]
        names.append(" ".join(parts) or run["label"])
    runs["configuration"] = names


def axes(results: Results) -> list[str]:
    """The columns that configurations differ by, every option that varies (the seed never):
    a sweep's axes in meta `sweep_axes` order, then the settings that differ between runs of
    one label outside a sweep, then `label` (where runs have several). A sweep axis that holds
    a table (compressor = {name = "top-k", fraction = 0.05}) is one column, its values named as
    the sweep names them ("top-k(fraction=0.05)").
    """
    runs = results.runs
    found = _swept(results)
    plain = runs[runs["sweep_configuration"] == ""]
    if len(plain):
        settings = [c for c in hyperparameter_columns(results) if c != "seed"]
        for columns in _varying_by_label(plain, settings).values():
            found += [c for c in columns if c not in found]
    if runs["label"].nunique() > 1:
        found.append("label")
    # Axes every run has first: the first one facets the plots, and an option only some
    # optimizers read (1-bit Adam's warmup_steps) would put every other run in one "unset" panel.
    found.sort(key=lambda c: c != "label" and bool(runs[c].isna().any()))
    return found


def describe(values: dict) -> str:
    """Part of a configuration's name: 'beta=0.9 compressor=sign'; a label shows as itself, and
    a setting the run does not read (NULL: sgd's compressor) not at all, as in the name."""
    shown = [show_value(v) if k == "label" else f"{k}={show_value(v)}"
             for k, v in values.items() if show_value(v) != ""]
    return " ".join(shown) or "all runs"


def configurations(results: Results) -> pd.DataFrame:
    """One row per configuration (seeds pooled), in the order runs first appear: the axis
    values, `configuration` (its name, as in the report's summary.csv), `run_ids` and `seeds`
    (sorted tuples). A run that repeats another of the configuration with the same seed (sgd
    beside a Birder-only axis: the same computation) is counted once, as the report does."""
    keys = axes(results)
    rows = []
    for name, group in results.runs.groupby("configuration", sort=False):
        once = group.drop_duplicates("seed") if group["seed"].notna().all() else group
        rows.append({**{k: group[k].iloc[0] for k in keys}, "configuration": name,
                     "run_ids": tuple(sorted(once["run_id"])),
                     "seeds": tuple(sorted(once["seed"].dropna()))})
    return pd.DataFrame(rows, columns=[*keys, "configuration", "run_ids", "seeds"])


def run_keys(results: Results) -> pd.DataFrame:
    """Per run_id: its seed, axis values and configuration name (to merge into series)."""
    return results.runs[["run_id", "seed", *axes(results), "configuration"]].copy()


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
