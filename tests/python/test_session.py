"""Tests of lemmalab.session (lemmalab.run / lemmalab.check), through the command line
(SessionTest) and through the Python bindings against it (BindingsTest).

They run the real `lemmalab` (LEMMALAB_CLI, which ctest sets to the built target, else the
release build under the repository root) and, where it was built, the extension module
_lemmalab (ctest puts <build>/python on PYTHONPATH), on small quadratics of a few dozen steps,
so each run takes milliseconds. Run from the repository root:
    PYTHONPATH=python:build/release/python /usr/bin/python3 -m unittest discover \
        -s tests/python -t tests/python
"""

import csv
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd

import lemmalab
from lemmalab import session

REPOSITORY = Path(__file__).resolve().parents[2]


def find_cli():
    try:
        return session._cli()
    except session.LemmalabError:
        return None


CLI = find_cli()

# The same experiment as a dict and as TOML text (written by hand, not by session's writer).
SPEC = {
    "seed": 3, "steps": 30, "workers": 2, "precision": "fp64", "eval_every": 5,
    "problem": {"name": "quadratic", "dimension": 12, "sigma": 0.1, "noise": "sphere"},
    "schedule": {"name": "constant", "lr": 0.1},
    "optimizer": [
        {"name": "ef-sgd", "compressor": {"name": "top-k", "fraction": 0.25}},
        {"name": "birder", "label": "birder-b05", "beta": 0.5,
         "schedule": {"name": "inv-sqrt", "lr": 0.05}},
        {"name": "sgd"},
    ],
}
TEXT = textwrap.dedent("""\
    seed = 3
    steps = 30
    workers = 2
    precision = "fp64"
    eval_every = 5

    [problem]
    name = "quadratic"
    dimension = 12
    sigma = 0.1
    noise = "sphere"

    [schedule]
    name = "constant"
    lr = 0.1

    [[optimizer]]
    name = "ef-sgd"
    compressor = { name = "top-k", fraction = 0.25 }

    [[optimizer]]
    name = "birder"
    label = "birder-b05"
    beta = 0.5
    schedule = { name = "inv-sqrt", lr = 0.05 }

    [[optimizer]]
    name = "sgd"
    """)



@unittest.skipIf(CLI is None, "no lemmalab command (set LEMMALAB_CLI or build release)")
class SessionTest(unittest.TestCase):
    """The command-line backend (the default where the bindings were not built)."""

    def setUp(self):
        cli_backend = mock.patch.object(session, "_default_backend", return_value="cli")
        cli_backend.start()
        self.addCleanup(cli_backend.stop)
        scratch = tempfile.TemporaryDirectory()
        self.addCleanup(scratch.cleanup)
        self.tmp = Path(scratch.name)

    @contextmanager
    def working_directory(self, path):
        before = os.getcwd()
        os.chdir(path)
        try:
            yield
        finally:
            os.chdir(before)

    def write(self, name, text):
        path = self.tmp / name
        path.write_text(text)
        return path

    def assert_params_equal(self, a, b):
        self.assertEqual(list(a), list(b))
        for label in a:
            np.testing.assert_array_equal(a[label], b[label])

    def test_dict_text_and_path_give_identical_runs(self):
        from_dict = lemmalab.run(SPEC)
        from_text = lemmalab.run(TEXT)
        from_path = lemmalab.run(self.write("spec.toml", TEXT))
        self.assertEqual(from_dict.labels, ["ef-sgd", "birder-b05", "sgd"])
        self.assert_params_equal(from_dict.params, from_text.params)
        self.assert_params_equal(from_dict.params, from_path.params)
        # The nested component tables were read: the options show in the resolved runs.
        runs = from_dict.runs.set_index("label")
        self.assertEqual(runs.loc["ef-sgd", "compressor.name"], "top-k")
        self.assertEqual(runs.loc["ef-sgd", "compressor.fraction"], 0.25)
        self.assertEqual(runs.loc["birder-b05", "schedule.name"], "inv-sqrt")
        self.assertEqual(runs.loc["birder-b05", "schedule.lr"], 0.05)
        self.assertEqual(runs.loc["sgd", "schedule.lr"], 0.1)
        # Different optimizers end at different points (the comparison above is not vacuous).
        self.assertFalse(np.array_equal(from_dict.params["sgd"], from_dict.params["ef-sgd"]))

    def test_params_are_params_npy_rows_in_spec_order(self):
        out = self.tmp / "out"
        r = lemmalab.run(SPEC, out=out)
        self.assertEqual(r.out, out.resolve())
        array = np.load(out / "params.npy")
        self.assertEqual(array.shape, (3, 12))
        for i, label in enumerate(["ef-sgd", "birder-b05", "sgd"]):
            self.assertEqual(r.params[label].dtype, np.float64)
            np.testing.assert_array_equal(r.params[label], array[i])

    def test_the_loaders_run_columns_are_the_databases(self):
        # python/lemmalab/results.py names the runs table's fixed columns; the database's come
        # from RunRecord's one field list (engine/results.h). Every other column is a
        # hyperparameter the run resolved.
        import sqlite3
        out = self.tmp / "out"
        r = lemmalab.run(SPEC, out=out)
        with sqlite3.connect(out / "results.sqlite") as db:
            columns = [row[1] for row in db.execute("PRAGMA table_info(runs)")]
        fixed = list(lemmalab.results.RUN_COLUMNS)
        self.assertEqual(columns[:len(fixed)], fixed)
        self.assertIn("compressor.name", columns[len(fixed):])
        self.assertEqual(set(lemmalab.results.hyperparameter_columns(r.results)),
                         set(columns[len(fixed):]))

    def test_settings_change_hyperparameters(self):
        base = lemmalab.run(SPEC)
        changed = lemmalab.run(SPEC, settings={
            "optimizer.birder-b05.beta": 0.75, "steps": 20,
            "optimizer.ef-sgd.compressor": {"name": "top-k", "k": 5}})
        runs = changed.runs.set_index("label")
        self.assertEqual(runs.loc["birder-b05", "beta"], 0.75)
        self.assertEqual(base.runs.set_index("label").loc["birder-b05", "beta"], 0.5)
        self.assertEqual(runs.loc["ef-sgd", "compressor.k"], 5)
        self.assertTrue((changed.runs["steps_done"] == 20).all())
        self.assertFalse(np.array_equal(base.params["birder-b05"], changed.params["birder-b05"]))

    def test_bad_option_raises_the_commands_message(self):
        spec = self.write("bad.toml", TEXT.replace('label = "birder-b05"', 'bta = 0.9'))
        cli = subprocess.run([CLI, "run", str(spec), "--out", str(self.tmp / "cli")],
                             capture_output=True, text=True)
        self.assertEqual(cli.returncode, 2)
        self.assertTrue(cli.stderr.startswith("error: "), cli.stderr)
        with self.assertRaises(lemmalab.SpecError) as caught:
            lemmalab.run(spec, out=self.tmp / "session")
        self.assertEqual(str(caught.exception), cli.stderr.strip()[len("error: "):])
        self.assertIn("unknown key 'bta'", str(caught.exception))
        self.assertEqual(caught.exception.exit_code, 2)
        self.assertIsInstance(caught.exception, ValueError)
        self.assertIsInstance(caught.exception, lemmalab.LemmalabError)

    def test_bad_setting_raises_the_commands_message(self):
        spec = self.write("spec.toml", TEXT)
        cli = subprocess.run([CLI, "run", str(spec), "--out", str(self.tmp / "cli"),
                              "--set", "optimizer.birder-b05.beta=1.5"],
                             capture_output=True, text=True)
        self.assertEqual(cli.returncode, 2)
        with self.assertRaises(lemmalab.SpecError) as caught:
            lemmalab.run(spec, settings={"optimizer.birder-b05.beta": 1.5})
        self.assertEqual(str(caught.exception), cli.stderr.strip()[len("error: "):])
        self.assertIn("beta must be in [0, 1)", str(caught.exception))

    def test_errors_name_the_users_dict_keys_and_text_lines(self):
        """A dict or a text goes through a hidden file; errors name what the user gave."""
        top_k = {"name": "ef-sgd", "compressor": {"name": "top-k", "fraction": 2.0}}
        cases = [
            ({**SPEC, "optimizer": [{"name": "sgd"}, top_k]},
             "spec['optimizer'][1]['compressor']['fraction']: ", "fraction must be in (0, 1]"),
            ({**SPEC, "optimizer": [{"name": "birder", "beta": 1.5}]},
             "spec['optimizer'][0]['beta']: ", "beta must be in [0, 1)"),
            ({**SPEC, "optimizer": [{"name": "sgd", "bta": 1}]},
             "spec['optimizer'][0]['bta']: ", "unknown key 'bta'"),
            ({**SPEC, "problem": {**SPEC["problem"], "dimension": -3}},
             "spec['problem']['dimension']: ", "dimension"),
            (TEXT.replace('label = "birder-b05"', 'bta = 0.9'), "the spec text, line ",
             "unknown key 'bta'"),
        ]
        claim = [{"assertion": "ef-norm"}]
        for spec, place, words in cases:
            checked = ({**spec, "assert": claim} if isinstance(spec, dict)
                       else spec + '[[assert]]\nassertion = "ef-norm"\n')
            for call, given in ((lemmalab.run, spec), (lemmalab.check, checked)):
                with self.subTest(place, call=call.__name__):
                    with self.assertRaises(lemmalab.SpecError) as caught:
                        call(given)
                    message = str(caught.exception)
                    self.assertTrue(message.startswith(place), message)
                    self.assertIn(words, message)
                    self.assertNotIn(".lemmalab-spec", message + caught.exception.stderr)
        # The text's line is the line of the user's text.
        with self.assertRaises(lemmalab.SpecError) as caught:
            lemmalab.run(TEXT.replace('label = "birder-b05"', 'bta = 0.9'))
        line = int(str(caught.exception).split("line ")[1].split(":")[0])
        self.assertIn("bta", TEXT.replace('label = "birder-b05"', 'bta = 0.9').splitlines()[line - 1])

    def test_relative_data_paths_resolve_against_the_working_directory(self):
        shutil.copy(REPOSITORY / "data" / "skewed_signs.csv", self.tmp / "signs.csv")
        spec = {"seed": 1, "steps": 5, "workers": 1,
                "data": {"source": "csv", "path": "signs.csv", "label": "label"},
                "problem": {"name": "logreg", "intercept": False, "batch_size": 1},
                "schedule": {"name": "constant", "lr": 0.1},
                "optimizer": [{"name": "sgd"}]}
        with self.working_directory(self.tmp):
            r = lemmalab.run(spec)
            leftovers = list(self.tmp.glob(".lemmalab-spec-*"))
        self.assertEqual(r.runs["dimension"].iloc[0], 2)
        self.assertEqual(leftovers, [])  # the spec file is removed after the command

    def test_metric_and_frames(self):
        r = lemmalab.run(SPEC)
        loss = r.metric("train_loss")
        self.assertEqual(list(loss.columns), ["label", "step", "value"])
        self.assertEqual(list(loss["label"].unique()), r.labels)
        self.assertEqual(sorted(loss["step"].unique()), [0, 5, 10, 15, 20, 25, 30])
        csv = pd.read_csv(r.out / "metrics.csv")
        expected = csv[(csv["name"] == "train_loss") & (csv["label"] == "sgd")]
        np.testing.assert_allclose(loss[loss["label"] == "sgd"]["value"].to_numpy(),
                                   expected.sort_values("step")["value"].to_numpy())
        self.assertIs(r.runs, r.results.runs)
        self.assertIs(r.metrics, r.results.metrics)
        with self.assertRaises(KeyError):
            r.metric("no_such_metric")

    def test_probe_series_through_metric(self):
        spec = {**SPEC, "probes": ["ef-norm"]}
        r = lemmalab.run(spec)
        ef = r.metric("ef-norm/worker_sq_norm")
        self.assertEqual(set(ef["label"]), {"ef-sgd", "birder-b05"})
        p = r.probes
        raw = p[(p["probe"] == "ef-norm") & (p["series"] == "worker_sq_norm")]
        expected = raw[raw["run_id"] == 1].groupby("step")["value"].mean()
        np.testing.assert_allclose(ef[ef["label"] == "ef-sgd"]["value"].to_numpy(),
                                   expected.to_numpy())

    def test_progress_receives_the_printed_lines(self):
        lines = []
        r = lemmalab.run(SPEC, progress=lines.append)
        self.assertTrue(any(line.startswith("sgd ") for line in lines), lines)
        self.assertEqual("\n".join(lines).strip(), r.text.strip())

    def test_check_reports_verdicts_without_raising(self):
        text = TEXT + textwrap.dedent("""\

            [[assert]]
            assertion = "q-deviate"
            runs = ["ef-sgd"]

            [[assert]]
            assertion = "q-deviate"
            runs = ["ef-sgd"]
            q = 0.1
            """)
        c = lemmalab.check(text)
        self.assertEqual(c.exit_code, 1)  # the second verdict is not the expected "holds"
        self.assertFalse(c.as_expected)
        self.assertEqual(list(c.verdicts["verdict"]), ["holds", "violated"])
        self.assertEqual(list(c.verdicts["as_expected"]), [True, False])
        self.assertEqual(c.verdicts["bound_value"].iloc[1], 0.1)
        self.assertIn("violated", c.text)
        self.assertEqual(set(c.results.runs["label"]), {"ef-sgd", "birder-b05", "sgd"})
        expected = lemmalab.check(text.replace("q = 0.1", 'q = 0.1\nexpect = "violated"'))
        self.assertEqual(expected.exit_code, 0)
        self.assertTrue(expected.as_expected)

    def test_check_premises_frame(self):
        text = TEXT + textwrap.dedent("""\

            [[assert]]
            assertion = "birder-lemma2"
            runs = ["birder-b05"]
            """)
        c = lemmalab.check(text)
        premises = c.premises[c.premises["assertion"] == "birder-lemma2"]
        self.assertGreater(len(premises), 0)
        self.assertTrue(set(premises["status"]) <= {"met", "failed", "unchecked"})
        self.assertEqual(len(c.verdicts.loc[0, "premises"]), len(premises))

    def test_check_bad_spec_raises(self):
        with self.assertRaises(lemmalab.SpecError) as caught:
            lemmalab.check(TEXT + '\n[[assert]]\nassertion = "no-such-lemma"\n')
        self.assertIn("no-such-lemma", str(caught.exception))

    def test_trace(self):
        r = lemmalab.run(SPEC, settings={"steps": 10},
                         trace={"steps": "1-2", "coords": [0, 1], "workers": [0]})
        self.assertEqual(list(r.trace.columns),
                         ["label", "step", "worker", "symbol", "coordinate", "value"])
        self.assertEqual(set(r.trace["step"]), {1, 2})
        self.assertEqual(set(r.trace["worker"]), {0, "server"})
        self.assertEqual(set(r.trace["coordinate"]), {0, 1})
        self.assertEqual(set(r.trace["label"]), {"ef-sgd", "birder-b05", "sgd"})
        self.assertTrue((r.runs["steps_done"] == 10).all())  # the setting reached the run
        self.assertEqual(list(r.symbols.columns), ["label", "symbol", "index", "source", "meaning"])
        birder = r.symbols[r.symbols["label"] == "birder-b05"].set_index("symbol")
        self.assertEqual(birder.loc["m", "source"], "birder.txt Alg. 1 line 5")
        self.assertEqual(birder.loc["m", "index"], "coordinate")
        # Values are read back exactly as written (17 digits; pandas' default parser is not
        # exact in the last bit).
        with open(r.out / "trace" / "trace.csv") as f:
            exact = [float(row["value"]) for row in csv.DictReader(f)]
        self.assertEqual(list(r.trace["value"]), exact)


class TomlTest(unittest.TestCase):
    def test_written_text_reads_back_as_the_dict(self):
        import tomllib  # a TOML 1.0 parser (the toml library's own reader is 0.5 and buggy)
        spec = {"seed": np.int64(4), "steps": 10, "probes": ["ef-norm", "min-b"],
                "problem": {"name": "quadratic", "L": np.float64(1e-8), "radius": None,
                            "shards": {"name": "dirichlet", "alpha": 0.5}},
                "optimizer": [{"name": "x", "compressor": {"name": "top-k", "fraction": 0.1},
                               "schedule": {"name": "step", "milestones": (5, 8)}}],
                "sweep": {"optimizer.compressor": ["sign", {"name": "top-k", "k": 2}],
                          "exclude": [{"optimizer": {"beta": 0.9}}]},
                "network": {"inter_bandwidth_gbps": float("inf")}}
        text = session._dumps(spec)
        back = tomllib.loads(text)
        self.assertEqual(back["seed"], 4)
        self.assertEqual(back["problem"]["L"], 1e-8)
        self.assertNotIn("radius", back["problem"])
        self.assertEqual(back["problem"]["shards"], {"name": "dirichlet", "alpha": 0.5})
        self.assertEqual(back["optimizer"][0]["schedule"]["milestones"], [5, 8])
        self.assertEqual(back["sweep"]["optimizer.compressor"][1], {"name": "top-k", "k": 2})
        self.assertEqual(back["sweep"]["exclude"], [{"optimizer": {"beta": 0.9}}])
        self.assertEqual(back["network"]["inter_bandwidth_gbps"], float("inf"))
        self.assertIn('compressor = { name = "top-k", fraction = 0.1 }', text)
        self.assertIn("[[optimizer]]", text)

    def test_setting_values_are_toml_literals(self):
        self.assertEqual(session._set_arguments({"a": True, "b": 0.5, "c": "sign", "d": [1, 2],
                                                 "e": {"name": "top-k", "k": np.int32(3)}}),
                         ["--set", "a=true", "--set", "b=0.5", "--set", 'c="sign"',
                          "--set", "d=[1, 2]", "--set", 'e={ name = "top-k", k = 3 }'])

    def test_import_lemmalab_stays_light(self):
        code = ("import sys, lemmalab; assert 'pandas' not in sys.modules; "
                "assert 'lemmalab.session' not in sys.modules; "
                "assert lemmalab.backend() in ('cli', 'bindings'); "
                "assert 'pandas' in sys.modules")
        subprocess.run([sys.executable, "-c", code], check=True,
                       env={**os.environ, "PYTHONPATH": str(REPOSITORY / "python")})

    def test_backend_and_spec_errors(self):
        self.assertEqual(session.backend(), "bindings" if session._native() else "cli")
        with self.assertRaises(ValueError):
            lemmalab.run(SPEC, backend="gpu")
        with self.assertRaises(FileNotFoundError):
            lemmalab.run("no/such/spec.toml")
        with self.assertRaises(ValueError):
            session._trace_arguments({"step": "1-2"})
        self.assertEqual(session._trace_arguments({"steps": 3, "coords": [1, 2]}),
                         ["--steps", "3", "--coords", "1,2"])


@unittest.skipIf(session._native() is None,
                 "the Python bindings (_lemmalab) were not built or are not on PYTHONPATH")
class BindingsTest(unittest.TestCase):
    """The in-process backend gives what the command line gives, bit for bit."""

    def setUp(self):
        scratch = tempfile.TemporaryDirectory()
        self.addCleanup(scratch.cleanup)
        self.tmp = Path(scratch.name)

    def both(self, spec, **options):
        return (lemmalab.run(spec, backend="bindings", **options),
                lemmalab.run(spec, backend="cli", **options))

    def test_params_are_the_clis_bit_for_bit(self):
        for precision in ("fp32", "fp64"):
            spec = {**SPEC, "precision": precision, "probes": ["ef-norm"]}
            native, cli = self.both(spec, settings={"optimizer.birder-b05.beta": 0.8})
            self.assertEqual(list(native.params), ["ef-sgd", "birder-b05", "sgd"])
            for label in native.params:
                self.assertEqual(native.params[label].dtype, np.float64)
                self.assertEqual(native.params[label].tobytes(), cli.params[label].tobytes(),
                                 (precision, label))
            # The results folders agree too (wall times aside).
            pd.testing.assert_frame_equal(native.metrics, cli.metrics)
            pd.testing.assert_frame_equal(native.probes, cli.probes)
            self.assertEqual((native.out / "params.npy").read_bytes(),
                             (cli.out / "params.npy").read_bytes())
            self.assertEqual(native.runs.loc[1, "beta"], 0.8)

    def test_trace_is_the_clis(self):
        request = {"steps": (2, 4), "coords": [0, 5, 11], "workers": [1]}
        native, cli = self.both(SPEC, trace=request)
        pd.testing.assert_frame_equal(native.trace, cli.trace)
        pd.testing.assert_frame_equal(native.symbols, cli.symbols)
        self.assertEqual(set(native.trace["worker"]), {1, "server"})
        self.assertEqual(set(native.trace["coordinate"].dropna()), {0, 5, 11})
        # One pass: the traced run is the whole run, and its parameters are the untraced run's.
        plain = lemmalab.run(SPEC, backend="bindings")
        for label in plain.params:
            np.testing.assert_array_equal(native.params[label], plain.params[label])

    def test_errors_carry_the_clis_message(self):
        path = self.tmp / "bad.toml"
        path.write_text(TEXT.replace('name = "sgd"', 'name = "sgd"\nmomentum = 2'))
        messages = []
        for backend in ("bindings", "cli"):
            with self.assertRaises(lemmalab.SpecError) as caught:
                lemmalab.run(path, backend=backend)
            messages.append(str(caught.exception))
        self.assertEqual(messages[0], messages[1])
        self.assertIn("momentum", messages[0])
        with self.assertRaises(lemmalab.SpecError) as caught:
            lemmalab.run(SPEC, backend="bindings", trace={"steps": "1-2", "coords": [99]})
        self.assertIn("--coords: coordinate 99 does not exist", str(caught.exception))

    def test_progress_streams_each_run(self):
        lines = []
        lemmalab.run(SPEC, backend="bindings", progress=lines.append)
        self.assertIn("sgd: step 30/30", "\n".join(lines))
        self.assertEqual(sum(line.startswith("ef-sgd: step") for line in lines), 10)

    def test_an_exception_in_progress_stops_the_run(self):
        def fail(line):
            raise KeyError(line)
        with self.assertRaises(KeyError):
            lemmalab.run(SPEC, backend="bindings", progress=fail)

        def fail_at_the_very_end(line):  # after the last step of the last run: nothing to stop
            if line.startswith("sgd: step 30/30"):
                raise KeyError(line)
        with self.assertRaises(KeyError):
            lemmalab.run(SPEC, backend="bindings", progress=fail_at_the_very_end)


if __name__ == "__main__":
    unittest.main()
