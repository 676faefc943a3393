"""Run lemmalab from Python: a spec in, its results as pandas frames out (for notebooks).

    import lemmalab
    spec = {"seed": 1, "steps": 200, "workers": 4,
            "problem": {"name": "quadratic", "dimension": 20, "sigma": 0.1},
            "schedule": {"name": "constant", "lr": 0.05},
            "optimizer": [{"name": "ef-sgd", "compressor": {"name": "top-k", "fraction": 0.1}},
                          {"name": "sgd"}]}
    r = lemmalab.run(spec)                         # or TOML text, or a path to a .toml file
    r.runs                                         # one row per [[optimizer]], hyperparameters
    r.metric("train_loss")                         # label, step, value
    r.params["sgd"]                                # final parameters (float64)
    r = lemmalab.run(spec, settings={"optimizer.beta": 0.9})     # = --set optimizer.beta=0.9
    c = lemmalab.check("runs/theory/naive-adam.toml")
    c.verdicts[["assertion", "run", "verdict", "expected"]]

Backends. Where the Python bindings were built (the extension module `_lemmalab`, from
python/bindings.cc, found on PYTHONPATH, else in the repository's `build/release/python`),
`run` executes the spec in this
process (`backend()` is "bindings"): the same code as the command line, so the same parameters
bit for bit, one pass for results and trace together, progress per step, and Ctrl-C stopping
between steps. Otherwise, and always for `check`, calls go through the `lemmalab` command line
(`backend()` is "cli"): `run` is `lemmalab run SPEC --out DIR [--set ...]`, `check` is
`lemmalab check SPEC --out DIR`, and a `trace` request adds `lemmalab trace SPEC --steps A-B ...
--out DIR/trace`. `run(..., backend="cli")` forces the command line. The command is found, at
each call, as: the environment variable LEMMALAB_CLI; else `build/release/cli/lemmalab` under the
repository root (two folders above this file); else `lemmalab` on PATH. The functions `_cli_*`
are the only code that knows about the command line, `_native_run` the only code that knows the
bindings.

Specs. `spec` is a dict (the TOML structure: top-level keys, tables as dicts, `[[optimizer]]`
and `[[assert]]` as lists of dicts), TOML text (a str with a newline), or the path of a .toml
file. A dict is written with the `toml` library (Debian's python3-toml): top-level dicts become
tables, top-level lists of dicts arrays of tables, and every dict below those an inline table
(`compressor = { name = "top-k", fraction = 0.1 }`); NumPy scalars and arrays become numbers
and lists; a key holding None is left out. A key with a dot stays one (quoted) key, as the dict
says; write nested dicts for TOML's dotted keys.

Relative paths inside a spec (`[data] path`, ...) resolve against the spec file's folder, as
the command does. A dict or a text is written to a hidden file `.lemmalab-spec-*.toml` in the
current working directory for the duration of the command, so its relative paths resolve
against the current working directory (a notebook's folder); where that folder is not
writable, the file goes to the system's temporary folder and relative paths resolve there
(give absolute paths then). Error messages name what the user gave, not that file: a dict's
key as Python indexes it (`spec['optimizer'][0]['beta']: ...`), a text's line (`the spec text,
line 12:5: ...`); `Run.spec` and `SpecError.spec` hold the text written.

Results. Without `out`, results go to a fresh temporary folder that lives as long as the
returned object (copy `r.out` elsewhere to keep them); with `out`, to that folder (replacing
results there, as `lemmalab run --out` does).

Errors. Exit code 2 of the command (a bad spec, option, data file or --set argument) raises
`SpecError`, whose message is the command's error message verbatim, without its leading
"error: "; any other failure raises `LemmalabError` (SpecError is one, and a ValueError).
`check` does not raise when a verdict differs from the one its [[assert]] expects (exit code
1; `expect` defaults to "holds", so by default a violated verdict exits 1, while one declared
with `expect = "violated"` exits 0): `Check.exit_code` and `Check.as_expected` say so.
"""

from __future__ import annotations

import json
import math
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence, Union

import numpy as np
import pandas as pd

from . import results as _results

__all__ = ["run", "check", "Run", "Check", "LemmalabError", "SpecError", "backend"]

# The repository root: python/lemmalab/session.py -> the folder two levels above python/lemmalab.
_REPOSITORY = Path(__file__).resolve().parents[2]
_DEFAULT_CLI = _REPOSITORY / "build" / "release" / "cli" / "lemmalab"

Spec = Union[Mapping[str, Any], str, os.PathLike]
Progress = Union[bool, Callable[[str], Any], None]


class LemmalabError(RuntimeError):
    """lemmalab failed, or could not be found or started. `exit_code`, `stderr` and `command`
    are set where a command ran (else None)."""

    def __init__(self, message: str, *, exit_code: Optional[int] = None, stderr: str = "",
                 command: Optional[Sequence[str]] = None, spec: Optional[str] = None):
        super().__init__(message)
        self.exit_code = exit_code
        self.stderr = stderr
        self.command = list(command) if command is not None else None
        self.spec = spec  # the TOML text the command read, where it came from a dict or text


class SpecError(LemmalabError, ValueError):
    """Bad input (exit code 2): spec, option, data file or --set argument. The message is the
    command's error message verbatim, without its leading "error: "."""


_DEFAULT_BINDINGS = _REPOSITORY / "build" / "release" / "python"


def _native():
    """The extension module _lemmalab: from PYTHONPATH, else from the repository's release build
    (as the command is found); None where it was not built."""
    try:
        import _lemmalab
    except ImportError:
        if not any(_DEFAULT_BINDINGS.glob("_lemmalab*.so")) or str(_DEFAULT_BINDINGS) in sys.path:
            return None
        sys.path.append(str(_DEFAULT_BINDINGS))
        try:
            import _lemmalab
        except ImportError:
            return None
    return _lemmalab


def backend() -> str:
    """The backend `run` uses by default: "bindings" (in-process) where the extension module was
    built, else "cli" (the lemmalab command line)."""
    return _default_backend()


def _default_backend() -> str:
    return "bindings" if _native() is not None else "cli"


# ---------------------------------------------------------------------------------------------
# Results


@dataclass(repr=False)
class Run:
    """What `run` returns. `results` is `lemmalab.results.load(out)`; `runs`, `metrics` and
    `probes` are its frames (one row per run with its resolved hyperparameters; metrics
    run_id/step/name/worker/value; probes run_id/step/probe/series/worker/value). `params` maps
    each run's label, in spec order, to its final parameters from params.npy (float64).
    `trace` (label, step, worker, symbol, coordinate, value; worker an int or "server",
    coordinate the parameter's, or the layer's or block's where `symbols` says index "block")
    and `symbols` (label, symbol, index, source, meaning) are set when
    `trace=` was given. `text` is what the command printed; `spec` the TOML text it read."""

    out: Path
    results: _results.Results
    params: dict
    text: str
    spec: str
    trace: Optional[pd.DataFrame] = None
    symbols: Optional[pd.DataFrame] = None
    _keep: Any = field(default=None, compare=False)  # the temporary folder, while it is used

    @property
    def runs(self) -> pd.DataFrame:
        return self.results.runs

    @property
    def metrics(self) -> pd.DataFrame:
        return self.results.metrics

    @property
    def probes(self) -> pd.DataFrame:
        return self.results.probes

    @property
    def labels(self) -> list:
        """The runs' labels in spec order."""
        return list(self.runs.sort_values("run_id")["label"])

    def curves(self, name: str) -> pd.DataFrame:
        """`metric(name)` as a wide frame: one row per step, one column per run label in spec
        order (ready for `.plot()`)."""
        frame = self.metric(name).pivot(index="step", columns="label", values="value")
        return frame[[label for label in self.labels if label in frame]]

    def metric(self, name: str) -> pd.DataFrame:
        """One metric as label, step, value (the mean over workers where it is recorded per
        worker), runs in spec order. NAME is a metric (`train_loss`, `bits_sent`, ...) or a
        probe series as metrics.csv names it, `probe/series` (`ef-norm/worker_sq_norm`; the
        server's value is its own series). Raises KeyError naming what exists."""
        if "/" in name:
            probe, series = name.split("/", 1)
            p = self.probes
            selected = p[(p["probe"] == probe) & (p["series"] == series)]
            known = sorted(f"{a}/{b}" for a, b in _results.probe_names(self.results))
        else:
            m = self.metrics
            selected = m[m["name"] == name]
            known = sorted(m["name"].unique())
        if selected.empty:
            raise KeyError(f"no metric {name!r} in {self.out}; recorded: {', '.join(known)}")
        values = selected.groupby(["run_id", "step"])["value"].mean().reset_index()
        order = self.runs[["run_id", "label"]]
        return (values.merge(order, on="run_id").sort_values(["run_id", "step"])
                [["label", "step", "value"]].reset_index(drop=True))

    def __repr__(self) -> str:
        runs = ", ".join(f"{r.label} ({r.status})" for r in self.runs.itertuples())
        traced = f", trace: {len(self.trace)} rows" if self.trace is not None else ""
        return f"Run(out={str(self.out)!r}, runs: {runs}{traced})"


@dataclass(repr=False)
class Check:
    """What `check` returns. `verdicts` has one row per verdict of check.json (assertion, run,
    verdict, expected, as_expected, measured_value, bound_value, measured, bound, worst_step,
    worst_worker, source, summary, status, detail, premises, other_forms); verdict is one of
    holds, vacuous, violated, inconclusive. `premises` has one row per premise of a verdict
    (verdict: the row of `verdicts`, assertion, run, premise, status met/failed/unchecked,
    detail, step, worker). `exit_code` is the command's: 0 when every verdict is the expected
    one, 1 when one is not (`as_expected` False). `text` is what it printed."""

    out: Path
    verdicts: pd.DataFrame
    premises: pd.DataFrame
    as_expected: bool
    exit_code: int
    text: str
    spec: str
    _keep: Any = field(default=None, compare=False)
    _results: Any = field(default=None, compare=False)

    @property
    def results(self) -> _results.Results:
        """The runs the check judged (every seed/workers folder), loaded on first use."""
        if self._results is None:
            self._results = _results.load(self.out)
        return self._results

    def __repr__(self) -> str:
        counts = self.verdicts["verdict"].value_counts().to_dict() if len(self.verdicts) else {}
        shown = ", ".join(f"{v} {n}" for v, n in counts.items())
        return (f"Check(out={str(self.out)!r}, {len(self.verdicts)} verdicts: {shown}; "
                f"as expected: {self.as_expected})")


# ---------------------------------------------------------------------------------------------
# The public functions


def run(spec: Spec, *, settings: Optional[Mapping[str, Any]] = None,
        trace: Optional[Mapping[str, Any]] = None, progress: Progress = False,
        out: Union[str, os.PathLike, None] = None, backend: Optional[str] = None) -> Run:
    """Run SPEC (dict, TOML text or path) and load its results.

    settings: {option path: value}, each passed as `--set path=value` with the value written as
        a TOML literal ({"optimizer.beta": 0.9, "optimizer.compressor": "sign",
        "network.inter": "100Gb-IB", "optimizer.birder.compressor": {"name": "top-k", "k": 3}}).
    trace: None, or {"steps": "1-2" or (1, 2) or 3, "coords": [0, 1] or None,
        "workers": [0, 1] or None}: also runs `lemmalab trace` over those steps.
    progress: False (quiet), True (print each line the command prints, as it prints it), or a
        callable given each line.
    out: the results folder; default a temporary folder kept while the returned Run lives.
    backend: "bindings" or "cli"; default `backend()`.
    """
    chosen = backend if backend is not None else _default_backend()
    if chosen not in ("bindings", "cli"):
        raise ValueError(f'backend must be "bindings" or "cli", not {chosen!r}')
    if chosen == "bindings" and _native() is None:
        raise LemmalabError("the Python bindings (_lemmalab) were not built or are not on "
                            "PYTHONPATH (<build>/python); use backend=\"cli\"")
    text, path = _spec_input(spec)
    set_args = _set_arguments(settings)
    trace_args = _trace_arguments(trace) if trace is not None else None
    out_dir, keep = _out_folder(out, "lemmalab-run-")
    with _spec_file(text, path) as spec_path, _named_as_given(spec, spec_path, text):
        spec_text = text if text is not None else _read_text(spec_path)
        if chosen == "bindings":
            return _native_run(spec_path, spec_text, out_dir, set_args, trace_args, progress,
                               keep)
        if trace_args is not None:
            _cli_require("trace")
        printed = _cli_run(spec_path, out_dir, set_args, progress, spec_text)
        trace_frame = symbols = None
        if trace_args is not None:
            printed += _cli_trace(spec_path, out_dir / "trace", trace_args, set_args, progress,
                                  spec_text)
            trace_frame, symbols = _read_trace(out_dir / "trace")
    loaded = _results.load(out_dir)
    return Run(out=out_dir, results=loaded, params=_read_params(out_dir, loaded),
               text=printed, spec=spec_text, trace=trace_frame, symbols=symbols, _keep=keep)


def check(spec: Spec, *, settings: Optional[Mapping[str, Any]] = None,
          out: Union[str, os.PathLike, None] = None, progress: Progress = False) -> Check:
    """Run SPEC's [[assert]] claims through `lemmalab check` and read its verdicts.

    A verdict other than the expected one is not an error (exit code 1: `exit_code`,
    `as_expected`); a bad spec raises SpecError. settings, out, progress: as for `run`.
    """
    text, path = _spec_input(spec)
    set_args = _set_arguments(settings)
    out_dir, keep = _out_folder(out, "lemmalab-check-")
    with _spec_file(text, path) as spec_path, _named_as_given(spec, spec_path, text):
        spec_text = text if text is not None else _read_text(spec_path)
        printed, code = _cli_check(spec_path, out_dir, set_args, progress, spec_text)
    verdicts, premises, as_expected = _read_check(out_dir / "check.json")
    return Check(out=out_dir, verdicts=verdicts, premises=premises, as_expected=as_expected,
                 exit_code=code, text=printed, spec=spec_text, _keep=keep)


# ---------------------------------------------------------------------------------------------
# Specs and settings as TOML


def _spec_input(spec: Spec) -> tuple:
    """(text, None) for a dict or TOML text, (None, path) for a file."""
    if isinstance(spec, Mapping):
        return _dumps(spec), None
    if isinstance(spec, str) and "\n" in spec:
        return spec, None
    if isinstance(spec, (str, os.PathLike)):
        path = Path(spec)
        if not path.is_file():
            raise FileNotFoundError(
                f"{path}: no such spec file (TOML text is recognised by its newlines)")
        return None, path
    raise TypeError(f"spec must be a dict, TOML text or a path, not {type(spec).__name__}")


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)


def _plain(value: Any) -> Any:
    """NumPy scalars and arrays, tuples and paths as the Python values TOML writes."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


def _toml_value(value: Any) -> str:
    """VALUE as a TOML literal (strings in JSON's escapes, which TOML's basic strings share)."""
    value = _plain(value)
    if isinstance(value, _Inline):
        value = value.table
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        items = [f"{_key(str(k))} = {_toml_value(v)}" for k, v in value.items() if v is not None]
        return "{ " + ", ".join(items) + " }" if items else "{}"
    if value is None:
        raise TypeError("None has no TOML form (leave the key out)")
    raise TypeError(f"no TOML form for {type(value).__name__}: {value!r}")


class _Inline:
    """A dict to be written as an inline table (the toml library would make it a section)."""

    __slots__ = ("table",)

    def __init__(self, table: Mapping):
        self.table = table


def _normalise_table(table: Mapping, top: bool) -> dict:
    """Top-level dicts become [sections] and top-level lists of dicts [[arrays of tables]];
    every dict below those is an inline table, as docs/commands.md writes specs."""
    result = {}
    for key, value in table.items():
        value = _plain(value)
        if value is None:
            continue
        key = str(key)
        if top and isinstance(value, Mapping):
            result[key] = _normalise_table(value, top=False)
        elif top and isinstance(value, list) and value and \
                all(isinstance(v, Mapping) for v in value):
            result[key] = [_normalise_table(v, top=False) for v in value]
        else:
            result[key] = _normalise_value(value)
    return result


def _normalise_value(value: Any) -> Any:
    value = _plain(value)
    if isinstance(value, Mapping):
        return _Inline({str(k): _normalise_value(v) for k, v in value.items() if v is not None})
    if isinstance(value, list):
        return [_normalise_value(v) for v in value]
    if value is None:
        raise TypeError("None inside a list has no TOML form")
    return value


def _dumps(spec: Mapping) -> str:
    """A spec dict as TOML text through the toml library, with inline tables where the library
    would otherwise fail (dicts in lists below the top level) and floats in Python's repr."""
    import toml  # Debian's python3-toml; imported here so that reading results never needs it

    class Encoder(toml.TomlEncoder):
        def __init__(self):
            super().__init__(dict)
            self.dump_funcs[_Inline] = lambda v: _toml_value(v.table)
            self.dump_funcs[float] = _toml_value
            self.dump_funcs[str] = _toml_value

    return toml.dumps(_normalise_table(spec, top=True), encoder=Encoder())


def _set_arguments(settings: Optional[Mapping[str, Any]]) -> list:
    if settings is None:
        return []
    if not isinstance(settings, Mapping):
        raise TypeError("settings must be a dict {option path: value}")
    arguments = []
    for key, value in settings.items():
        arguments += ["--set", f"{key}={_toml_value(value)}"]
    return arguments


def _trace_arguments(trace: Mapping[str, Any]) -> list:
    unknown = set(trace) - {"steps", "coords", "workers"}
    if unknown:
        raise ValueError(f"trace: unknown keys {sorted(unknown)} (steps, coords, workers)")
    if "steps" not in trace:
        raise ValueError('trace needs "steps": "A-B", (A, B) or one step')
    steps = _plain(trace["steps"])
    if isinstance(steps, str):
        steps_text = steps
    elif isinstance(steps, int):
        steps_text = f"{steps}"
    elif isinstance(steps, list) and len(steps) == 2:
        steps_text = f"{int(steps[0])}-{int(steps[1])}"
    else:
        raise ValueError(f'trace "steps" must be "A-B", (A, B) or an int, not {steps!r}')
    arguments = ["--steps", steps_text]
    for key in ("coords", "workers"):
        chosen = _plain(trace.get(key))
        if chosen is not None:
            items = chosen if isinstance(chosen, list) else [chosen]
            arguments += [f"--{key}", ",".join(str(_plain(i)) for i in items)]
    return arguments


# ---------------------------------------------------------------------------------------------
# Files


@contextmanager
def _spec_file(text: Optional[str], path: Optional[Path]) -> Iterator[Path]:
    """PATH itself, or TEXT in a hidden file of the working directory (else the temporary
    folder), removed afterwards."""
    if text is None:
        yield path
        return
    try:
        handle, name = tempfile.mkstemp(prefix=".lemmalab-spec-", suffix=".toml", dir=os.getcwd())
    except OSError:
        handle, name = tempfile.mkstemp(prefix="lemmalab-spec-", suffix=".toml")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as f:
            f.write(text)
        cwd = Path.cwd()
        shown = Path(name)
        yield shown.relative_to(cwd) if shown.parent == cwd else shown
    finally:
        try:
            os.unlink(name)
        except OSError:
            pass


@contextmanager
def _named_as_given(spec: Spec, written: Path, text: Optional[str]) -> Iterator[None]:
    """Errors that name WRITTEN, the hidden file a dict or a text went through, name what the
    user gave instead: the dict's key (spec['optimizer'][0]['beta']) or the text's line."""
    try:
        yield
    except LemmalabError as error:
        if text is None:
            raise  # a file of the user's own: its name and lines are theirs
        as_dict = isinstance(spec, Mapping)

        def rename(message: str) -> str:
            def place(match: re.Match) -> str:
                line, column = match.group(1), match.group(2)
                if line is None:
                    return "the spec dict" if as_dict else "the spec text"
                if as_dict:
                    return _key_at(text, int(line), int(column) if column else None)
                return f"the spec text, line {line}" + (f":{column}" if column else "")
            pattern = re.escape(str(written)) + r"(?::(\d+)(?::(\d+))?)?"
            return re.sub(pattern, place, message)

        renamed = type(error)(rename(str(error)), exit_code=error.exit_code,
                              stderr=rename(error.stderr), command=error.command,
                              spec=error.spec)
        raise renamed from None


def _key_at(text: str, line: int, column: Optional[int]) -> str:
    """The dict key of TEXT's LINE (and, inside an inline table, the key before COLUMN), as
    Python indexing: spec['optimizer'][0]['compressor']['fraction']. TEXT is what _dumps
    wrote: [table] and [[array]] headers, then key = value lines."""
    lines = text.splitlines()
    table: list = []
    counts: dict = {}

    def unquote(key: str) -> str:
        key = key.strip()
        return key[1:-1] if len(key) >= 2 and key[0] == key[-1] == '"' else key

    for content in lines[:line]:
        stripped = content.strip()
        if stripped.startswith("[["):
            name = unquote(stripped[2:stripped.index("]]")])
            counts[name] = counts.get(name, -1) + 1
            table = [name, counts[name]]
        elif stripped.startswith("["):
            table = [unquote(part) for part in stripped[1:stripped.index("]")].split(".")]
    row = lines[line - 1] if 0 < line <= len(lines) else ""
    path = list(table)
    if "=" in row and not row.strip().startswith("["):
        path.append(unquote(row.split("=", 1)[0]))
        brace = row.find("{")
        if column is not None and 0 <= brace < column - 1:
            # The column points at a key of the inline table, or into the value of one.
            key = r'("[^"]*"|[A-Za-z0-9_.\-]+)\s*='
            at = re.match(key, row[column - 1:])
            inner = [at.group(1)] if at else re.findall(key, row[brace:column - 1])[-1:]
            path += [unquote(k) for k in inner]
    return "spec" + "".join(f"[{p!r}]" for p in path)


def _read_text(path: Path) -> str:
    return Path(path).read_text(encoding="utf-8")


class _TemporaryFolder:
    """A temporary folder removed, quietly, when the object holding it is collected (or at
    exit); tempfile.TemporaryDirectory would warn about that implicit clean-up."""

    def __init__(self, prefix: str):
        self.path = Path(tempfile.mkdtemp(prefix=prefix))
        self._finalizer = weakref.finalize(self, shutil.rmtree, self.path, ignore_errors=True)

    def cleanup(self) -> None:
        self._finalizer()


def _out_folder(out, prefix: str) -> tuple:
    if out is not None:
        return Path(out).resolve(), None
    keep = _TemporaryFolder(prefix)
    return keep.path, keep


def _read_params(out: Path, loaded: _results.Results) -> dict:
    """label -> final parameters, from params.npy: shape (runs, d), rows in spec order."""
    array = np.load(out / "params.npy")
    labels = list(loaded.runs.sort_values("run_id")["label"])
    if array.ndim != 2 or array.shape[0] != len(labels):
        raise LemmalabError(f"{out / 'params.npy'}: shape {array.shape}, expected "
                            f"({len(labels)}, d) for runs {labels}")
    return {label: array[i].astype(np.float64) for i, label in enumerate(labels)}


def _worker(value: Any) -> Any:
    """A trace worker: an int, or "server"."""
    if isinstance(value, str):
        return int(value) if value.lstrip("-").isdigit() else value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _read_trace(folder: Path) -> tuple:
    # round_trip: the values are written with 17 significant digits, and pandas' default parser
    # is not exact in the last bit, which a notebook comparing a step by hand would notice.
    trace = pd.read_csv(folder / "trace.csv", dtype={"label": str, "symbol": str, "worker": str},
                        keep_default_na=False, na_values={"coordinate": [""], "value": [""]},
                        float_precision="round_trip")
    trace["worker"] = trace["worker"].map(_worker).astype(object)
    trace["coordinate"] = pd.to_numeric(trace["coordinate"]).astype("Int64")
    trace["value"] = pd.to_numeric(trace["value"]).astype("float64")
    symbols = pd.read_csv(folder / "symbols.csv", dtype=str, keep_default_na=False)
    return trace, symbols


_VERDICT_COLUMNS = ["assertion", "run", "verdict", "expected", "as_expected", "measured_value",
                    "bound_value", "measured", "bound", "worst_step", "worst_worker", "source",
                    "summary", "status", "detail", "premises", "other_forms"]


def _read_check(path: Path) -> tuple:
    if not path.is_file():
        raise LemmalabError(f"{path}: lemmalab check wrote no verdicts")
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = data.get("verdicts", [])
    verdicts = pd.DataFrame(rows)
    columns = [c for c in _VERDICT_COLUMNS if c in verdicts] + \
              [c for c in verdicts.columns if c not in _VERDICT_COLUMNS]
    verdicts = verdicts.reindex(columns=columns or _VERDICT_COLUMNS)
    for column in ("worst_step", "worst_worker"):
        if column in verdicts:
            verdicts[column] = pd.to_numeric(verdicts[column]).astype("Int64")
    premises = pd.DataFrame(
        [{"verdict": i, "assertion": v.get("assertion"), "run": v.get("run"),
          "premise": p.get("name"), "status": p.get("status"), "detail": p.get("detail"),
          "step": p.get("step"), "worker": p.get("worker")}
         for i, v in enumerate(rows) for p in v.get("premises") or []],
        columns=["verdict", "assertion", "run", "premise", "status", "detail", "step", "worker"])
    for column in ("step", "worker"):
        premises[column] = pd.to_numeric(premises[column]).astype("Int64")
    return verdicts, premises, bool(data.get("as_expected", False))


def _reporter(progress: Progress) -> Optional[Callable[[str], Any]]:
    """What receives progress lines: print (True), the callable given, or nothing."""
    if progress is True:
        return lambda line: print(line, flush=True)
    return progress if callable(progress) else None


# ---------------------------------------------------------------------------------------------
# The in-process backend: the only code that knows the bindings (python/bindings.cc)


def _native_run(spec_path: Path, spec_text: str, out: Path, set_args: list,
                trace_args: Optional[list], progress: Progress, keep: Any) -> Run:
    native = _native()
    settings = [value for flag, value in zip(set_args[::2], set_args[1::2])]
    request = None
    if trace_args is not None:  # ["--steps", "1-2", "--coords", "0,1", ...] as the CLI takes it
        request = {flag[2:]: value for flag, value in zip(trace_args[::2], trace_args[1::2])}
    report = _reporter(progress)

    def on_step(label, step, last, loss):
        if step == last or step % max(1, last // 10) == 0:
            report(f"{label}: step {step}/{last}, minibatch loss {loss:.6g}")

    try:
        result = native.run(spec_text, str(spec_path), settings, str(out), request,
                            on_step if report is not None else None)
    except native.SpecError as error:
        raise SpecError(str(error), exit_code=2, stderr=f"error: {error}\n",
                        spec=spec_text) from None
    except MemoryError:  # as the command reports it (exit code 2)
        message = ("out of memory: the spec asks for more than this machine has (data size, "
                   "batch_size, workers)")
        raise SpecError(message, exit_code=2, stderr=f"error: {message}\n",
                        spec=spec_text) from None
    except RuntimeError as error:  # a bug, as the command's exit code 3
        raise LemmalabError(f"lemmalab internal error (please report it): {error}", exit_code=3,
                            spec=spec_text) from error
    loaded = _results.load(out)
    params = dict(zip(result["labels"], result["params"]))
    trace_frame = symbols = None
    if request is not None:
        columns = result["trace"]
        trace_frame = pd.DataFrame({
            "label": columns["label"],
            "step": columns["step"],
            "worker": pd.Series([w if w >= 0 else "server" for w in columns["worker"]],
                                dtype=object),
            "symbol": columns["symbol"],
            "coordinate": pd.array(columns["coordinate"], dtype="Int64"),
            "value": columns["value"],
        })
        symbols = pd.DataFrame(result["symbols"],
                               columns=["label", "symbol", "index", "source", "meaning"])
    text = "".join(f"{note}\n" for note in result["notes"])
    text += f"{result['report']}\nresults: {out}/ (results.sqlite, metrics.csv, runs.csv, params.npy)\n"
    return Run(out=out, results=loaded, params=params, text=text, spec=spec_text,
               trace=trace_frame, symbols=symbols, _keep=keep)


# ---------------------------------------------------------------------------------------------
# The command-line backend: the only code that knows the command's arguments and exit codes


def _cli() -> str:
    """The lemmalab command: $LEMMALAB_CLI, the repository's release build, or PATH's."""
    chosen = os.environ.get("LEMMALAB_CLI")
    if chosen:
        if not (os.path.isfile(chosen) and os.access(chosen, os.X_OK)):
            raise LemmalabError(f"LEMMALAB_CLI={chosen}: not an executable file")
        return chosen
    if _DEFAULT_CLI.is_file() and os.access(_DEFAULT_CLI, os.X_OK):
        return str(_DEFAULT_CLI)
    found = shutil.which("lemmalab")
    if found:
        return found
    raise LemmalabError(
        f"lemmalab not found: set LEMMALAB_CLI to the command, build it ({_DEFAULT_CLI} is "
        "missing; scripts/demo builds it), or put lemmalab on PATH")


_SUBCOMMANDS: dict = {}


def _cli_require(subcommand: str) -> None:
    """Raise LemmalabError when the command has no SUBCOMMAND (read from its --help)."""
    cli = _cli()
    stamp = (cli, os.stat(cli).st_mtime_ns)
    if stamp not in _SUBCOMMANDS:
        listing = subprocess.run([cli, "--help"], capture_output=True, text=True)
        names = set()
        inside = False
        for line in listing.stdout.splitlines():
            if line.startswith("Subcommands:"):
                inside = True
            elif inside and line.startswith("  ") and line.strip():
                names.add(line.split()[0])
        _SUBCOMMANDS[stamp] = names
    if subcommand not in _SUBCOMMANDS[stamp]:
        raise LemmalabError(f"{cli} has no `{subcommand}` subcommand (it has: "
                            f"{', '.join(sorted(_SUBCOMMANDS[stamp]))}); rebuild lemmalab")


def _error_message(stderr: str, code: int) -> str:
    """The command's error message: from its first "error..." line on, without "error: "."""
    lines = stderr.rstrip().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("error"):
            first = line[len("error: "):] if line.startswith("error: ") else line
            return "\n".join([first] + lines[i + 1:])
    return stderr.strip() or f"lemmalab exited with code {code}"


def _execute(arguments: list, progress: Progress, spec_text: str, ok=(0,)) -> tuple:
    """Run the command with ARGUMENTS, passing each printed line to PROGRESS. Returns (stdout,
    exit code) for an exit code in OK; raises SpecError for 2, LemmalabError otherwise."""
    command = [_cli()] + [str(a) for a in arguments]
    report = _reporter(progress)
    lines: queue.Queue = queue.Queue()
    captured = {"stdout": [], "stderr": []}

    def pump(stream, name):
        for line in stream:
            lines.put((name, line))
        lines.put((name, None))

    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL, text=True, encoding="utf-8",
                          errors="replace") as process:
        readers = [threading.Thread(target=pump, args=(process.stdout, "stdout"), daemon=True),
                   threading.Thread(target=pump, args=(process.stderr, "stderr"), daemon=True)]
        for reader in readers:
            reader.start()
        try:
            open_streams = 2
            while open_streams:
                name, line = lines.get()
                if line is None:
                    open_streams -= 1
                    continue
                captured[name].append(line)
                if report is not None and not line.startswith("error"):
                    report(line.rstrip("\n"))
            code = process.wait()
        except BaseException:
            # KeyboardInterrupt (or a failing progress callable): lemmalab stops between steps
            # on SIGINT and writes no results.
            process.send_signal(signal.SIGINT)
            process.wait()
            raise
        for reader in readers:
            reader.join()
    stdout, stderr = "".join(captured["stdout"]), "".join(captured["stderr"])
    if code in ok:
        return stdout, code
    kind = SpecError if code == 2 else LemmalabError
    message = _error_message(stderr, code)
    if code == 3:
        message = f"lemmalab internal error (please report it): {message}"
    elif code not in (1, 2):
        message = f"{message} (exit code {code})"
    raise kind(message, exit_code=code, stderr=stderr, command=command, spec=spec_text)


def _cli_run(spec_path: Path, out: Path, set_args: list, progress: Progress,
             spec_text: str) -> str:
    stdout, _ = _execute(["run", spec_path, "--out", out, *set_args], progress, spec_text)
    return stdout


def _cli_trace(spec_path: Path, out: Path, trace_args: list, set_args: list,
               progress: Progress, spec_text: str) -> str:
    stdout, _ = _execute(["trace", spec_path, *trace_args, "--out", out, *set_args], progress,
                         spec_text)
    return stdout


def _cli_check(spec_path: Path, out: Path, set_args: list, progress: Progress,
               spec_text: str) -> tuple:
    return _execute(["check", spec_path, "--out", out, *set_args], progress, spec_text,
                    ok=(0, 1))
