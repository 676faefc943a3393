"""Tests of lemmalab.results and lemmalab.plots on small SQLite fixtures with known values.

Run from the repository root:
    PYTHONPATH=python /usr/bin/python3 -m unittest discover -s tests/python -t tests/python
"""

import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import unittest
from unittest import mock
from pathlib import Path

from lemmalab import plots
from lemmalab import results as lr

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# The C++ schema (engine/results.cc) plus probe_series; hyperparameter columns are appended per
# fixture, as the writer does.
SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs(
  run_id INTEGER PRIMARY KEY, point TEXT, label TEXT NOT NULL, optimizer TEXT NOT NULL,
  schedule TEXT NOT NULL, status TEXT NOT NULL, steps_done INTEGER NOT NULL, dimension INTEGER,
  final_loss REAL, final_accuracy REAL, final_grad_sq_norm REAL, final_test_loss REAL,
  final_test_accuracy REAL, bits_sent_per_worker REAL, wall_seconds REAL,
  bytes_intra_per_step REAL, bytes_inter_per_step REAL, step_seconds REAL,
  comm_seconds_per_step REAL, version TEXT, "commit" TEXT, build TEXT, UNIQUE (point, label));
CREATE TABLE points(point TEXT PRIMARY KEY, idx INTEGER NOT NULL, axes TEXT NOT NULL);
CREATE TABLE metrics(run_id INTEGER NOT NULL, step INTEGER NOT NULL, name TEXT NOT NULL,
  worker INTEGER, value REAL);
CREATE TABLE constants(run_id INTEGER, name TEXT NOT NULL, value REAL, certainty TEXT NOT NULL,
  basis TEXT NOT NULL, point TEXT);
CREATE TABLE shards(worker INTEGER NOT NULL, samples INTEGER NOT NULL, label INTEGER NOT NULL,
  count INTEGER NOT NULL, point TEXT);
CREATE TABLE hyperparameters(run_id INTEGER NOT NULL, key TEXT NOT NULL, value,
  type TEXT NOT NULL, PRIMARY KEY (run_id, key));
CREATE TABLE probes(run_id INTEGER NOT NULL, step INTEGER NOT NULL, probe TEXT NOT NULL,
  series TEXT NOT NULL, worker INTEGER, value REAL);
"""
PROBE_SERIES = """
CREATE TABLE probe_series(probe TEXT, series TEXT, meaning TEXT, per_dimension INTEGER);
INSERT INTO probe_series VALUES
  ('ef-norm', 'worker_sq_norm', '||e_t^(i)||^2, worker i''s error (not divided by d)', 1),
  ('q-domain', 'worker_fraction', 'fraction of coordinates with |u_j| <= 1', 0);
"""
D = 4  # every fixture run's dimension


def bits(run_id, step):
    """The bits_sent window planted at recorded step 2 or 4."""
    return {2: 1000.0 + run_id, 4: 2000.0 + run_id}[step]


COMM = {2: 0.5, 4: 0.25}


def final_loss(run_id):
    """The final loss planted in run RUN_ID: not linear in the id, so paired differences vary
    by seed."""
    return 0.5 + run_id ** 2 / 1000


def make_db(path, runs, meta=None, probe_series=True, test_accuracy=True):
    """Write a results database: RUNS are dicts of hyperparameters plus label/point/seed.

    Every run has 4 steps, per-step metrics recorded at steps 2 and 4, evaluations at 0, 2, 4,
    and probes at steps 1..4 for 2 workers."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    db.execute("PRAGMA synchronous = OFF")  # a throwaway fixture: no need to wait for the disk
    db.executescript(SCHEMA + (PROBE_SERIES if probe_series else ""))
    for key, value in {"spec_path": "spec.toml", "lemmalab_version": "0.1", **(meta or {})}.items():
        db.execute("INSERT INTO meta VALUES (?, ?)", (key, value))
    points = {r["point"]: r["axes"] for r in runs if r.get("point")}
    db.executemany("INSERT INTO points VALUES (?, ?, ?)",
                   [(p, i, json.dumps(a)) for i, (p, a) in enumerate(points.items(), 1)])
    hyper = sorted({k for r in runs for k in r if k not in ("label", "point", "axes")},
                   key=lambda k: (k == "seed", k))
    for k in hyper:
        db.execute(f'ALTER TABLE runs ADD COLUMN "{k}"')
    for run_id, run in enumerate(runs, start=1):
        columns = ["run_id", "point", "label", "optimizer", "schedule", "status", "steps_done",
                   "dimension", *hyper]
        values = [run_id, run.get("point"), run["label"], run["label"], "constant", "completed",
                  4, D, *(run.get(k) for k in hyper)]
        columns.append("final_loss")
        values.append(final_loss(run_id))
        db.execute(f"INSERT INTO runs({', '.join(map(json.dumps, columns))}) "
                   f"VALUES ({', '.join('?' * len(values))})", values)
        for k in hyper:
            if run.get(k) is not None:
                db.execute("INSERT INTO hyperparameters VALUES (?, ?, ?, ?)",
                           (run_id, k, run[k], "string" if isinstance(run[k], str) else "number"))
        metrics = []
        for step in (0, 2, 4):
            metrics.append((run_id, step, "train_loss", None, 8.0 / 2 ** step + run_id / 100))
            if test_accuracy:
                metrics.append((run_id, step, "test_accuracy", None, 0.5 + step / 10))
        for step in (2, 4):
            metrics += [(run_id, step, "minibatch_loss", None, 1.0 / step),
                        (run_id, step, "bits_sent", None, bits(run_id, step)),
                        (run_id, step, "comm_seconds", None, COMM[step])]
        db.executemany("INSERT INTO metrics VALUES (?, ?, ?, ?, ?)", metrics)
        probes = []
        for step in range(1, 5):
            # worker means: ef-norm 3 * step (shown / d as 0.75 * step), q-domain 0.5
            probes += [(run_id, step, "ef-norm", "worker_sq_norm", 0, 2.0 * step),
                       (run_id, step, "ef-norm", "worker_sq_norm", 1, 4.0 * step),
                       (run_id, step, "q-domain", "worker_fraction", 0, 0.25),
                       (run_id, step, "q-domain", "worker_fraction", 1, 0.75)]
        db.executemany("INSERT INTO probes VALUES (?, ?, ?, ?, ?, ?)", probes)
    db.commit()
    db.close()
    return path


def sweep_runs():
    """2 betas x 2 compressors x 3 seeds; workers/steps constant; compressor.k only for top-k."""
    runs = []
    for beta in (0.9, 0.99):
        for compressor in ("sign", "top-k"):
            for seed in (1, 2, 3):
                shown = "top-k(k=2)" if compressor == "top-k" else compressor
                runs.append({"point": f"compressor={shown} beta={beta} seed={seed}",
                             "axes": {"compressor": shown, "beta": beta, "seed": seed},
                             "label": "birder", "beta": beta, "compressor.name": compressor,
                             "compressor.k": 2 if compressor == "top-k" else None,
                             "workers": 2, "steps": 4, "seed": seed})
    return runs


def plain_runs(seed=7):
    """A plain run: two labels, one seed; lr differs but only with the label."""
    return [{"label": "birder", "beta": 0.9, "schedule.lr": 0.1, "seed": seed, "workers": 2},
            {"label": "adam", "beta": None, "schedule.lr": 0.001, "seed": seed, "workers": 2}]


class Fixture(unittest.TestCase):
    """The two databases are written once per class and only read; each test gets its own
    scratch folder `self.tmp`."""

    @classmethod
    def setUpClass(cls):
        cls._fixtures = tempfile.TemporaryDirectory()
        root = Path(cls._fixtures.name)
        cls.sweep_db = make_db(root / "sweep" / "results.sqlite", sweep_runs(), meta={
            "sweep_axes": json.dumps(["compressor", "beta", "seed"]),
            "sweep_axis_paths": json.dumps(["optimizer.compressor", "optimizer.beta", "seed"])})
        cls.plain_db = make_db(root / "plain" / "results.sqlite", plain_runs(),
                               probe_series=False, test_accuracy=False)

    @classmethod
    def tearDownClass(cls):
        cls._fixtures.cleanup()

    def setUp(self):
        scratch = tempfile.TemporaryDirectory()
        self.addCleanup(scratch.cleanup)
        self.tmp = Path(scratch.name)


class ResultsTest(Fixture):
    def test_load_accepts_file_or_folder(self):
        by_file, by_folder = lr.load(self.sweep_db), lr.load(self.sweep_db.parent)
        self.assertEqual(len(by_file.runs), 12)
        self.assertEqual(list(by_file.runs["run_id"]), list(by_folder.runs["run_id"]))
        self.assertEqual(by_file.meta["lemmalab_version"], "0.1")

    def test_axes_are_the_sweep_axes_but_the_seed(self):
        r = lr.load(self.sweep_db)
        # A sweep's runs differ by its axes, in meta sweep_axes' order; the compressor axis is
        # one column named as the sweep names it, so top-k keeps its k.
        self.assertEqual(lr.axes(r), ["compressor", "beta"])
        self.assertEqual(sorted(set(r.runs["compressor"])), ["sign", "top-k(k=2)"])

    def test_configurations_pool_exactly_the_seeds(self):
        r = lr.load(self.sweep_db)
        configs = lr.configurations(r)
        self.assertEqual(len(configs), 4)
        runs = r.runs.set_index("run_id")
        seen = []
        for _, config in configs.iterrows():
            self.assertEqual(config["seeds"], (1, 2, 3))
            members = runs.loc[list(config["run_ids"])]
            self.assertEqual(set(members["beta"]), {config["beta"]})
            self.assertEqual(set(members["compressor"]), {config["compressor"]})
            seen += config["run_ids"]
        self.assertEqual(sorted(seen), list(range(1, 13)))
        self.assertEqual(list(configs["configuration"]),
                         ["compressor=sign beta=0.9", "compressor=top-k(k=2) beta=0.9",
                          "compressor=sign beta=0.99", "compressor=top-k(k=2) beta=0.99"])

    def test_cumulative_bits_and_comm_time(self):
        r = lr.load(self.sweep_db)
        for run_id in (1, 7, 12):
            loss = lr.series(r, "train_loss").query("run_id == @run_id")
            self.assertEqual(list(loss["step"]), [0, 2, 4])
            self.assertEqual(list(loss["cumulative_bits"]),
                             [0.0, bits(run_id, 2), bits(run_id, 2) + bits(run_id, 4)])
            self.assertEqual(list(loss["cumulative_comm_seconds"]), [0.0, 0.5, 0.75])
            self.assertAlmostEqual(loss["value"].iloc[0], 8.0 + run_id / 100)
        minibatch = lr.series(r, "minibatch_loss").query("run_id == 3")
        self.assertEqual(list(minibatch["step"]), [2, 4])
        self.assertEqual(list(minibatch["cumulative_bits"]), [1003.0, 1003.0 + 2003.0])
        self.assertEqual(lr.loss_metric(r), "train_loss")

    def test_per_worker_bits_are_averaged_over_workers(self):
        path = self.tmp / "results.sqlite"
        shutil.copy(self.sweep_db, path)
        db = sqlite3.connect(path)
        db.execute("DELETE FROM metrics WHERE run_id = 1 AND name = 'bits_sent'")
        db.executemany("INSERT INTO metrics VALUES (1, ?, 'bits_sent', ?, ?)",
                       [(2, 0, 10.0), (2, 1, 30.0), (4, 0, 1.0), (4, 1, 3.0)])
        db.commit()
        db.close()
        loss = lr.series(lr.load(path), "train_loss").query("run_id == 1")
        self.assertEqual(list(loss["cumulative_bits"]), [0.0, 20.0, 22.0])

    def test_probe_frame_divides_per_dimension_series_by_d(self):
        r = lr.load(self.sweep_db)
        self.assertEqual(lr.probe_names(r), [("ef-norm", "worker_sq_norm"),
                                             ("q-domain", "worker_fraction")])
        ef = lr.probe_frame(r, "ef-norm", "worker_sq_norm").query("run_id == 5")
        # worker mean 3 * step, shown as ||e||^2 / d with d = 4
        self.assertEqual(list(ef["value"]), [3.0 * s / D for s in (1, 2, 3, 4)])
        q = lr.probe_frame(r, "q-domain", "worker_fraction")
        self.assertEqual(set(q["value"]), {0.5})  # per_dimension 0: not divided

    def test_plain_run(self):
        r = lr.load(self.plain_db)
        self.assertTrue(r.runs["point"].isna().all())
        # beta is NULL for adam and lr follows the label: the label is the only axis.
        self.assertEqual(lr.axes(r), ["label"])
        configs = lr.configurations(r)
        self.assertEqual(list(configs["configuration"]), ["birder", "adam"])
        self.assertEqual(list(configs["seeds"]), [(7,), (7,)])
        # No probe_series table (an older database): series are shown as recorded.
        ef = lr.probe_frame(r, "ef-norm", "worker_sq_norm").query("run_id == 1")
        self.assertEqual(list(ef["value"]), [3.0 * s for s in (1, 2, 3, 4)])

    def test_check_folder_concatenates_experiments(self):
        check = self.tmp / "check"
        for seed, workers in ((1, 2), (2, 4)):
            runs = [{k: v for k, v in run.items() if k not in ("seed", "workers")}
                    for run in plain_runs()]
            make_db(check / f"seed-{seed}-workers-{workers}" / "results.sqlite", runs)
        r = lr.load(check)
        self.assertEqual(list(r.runs["run_id"]), [1, 2, 3, 4])
        self.assertEqual(list(r.runs["seed"]), [1, 1, 2, 2])
        self.assertEqual(list(r.runs["workers"]), [2, 2, 4, 4])
        self.assertEqual(sorted(r.metrics["run_id"].unique()), [1, 2, 3, 4])
        self.assertEqual(lr.axes(r), ["workers", "label"])

    def test_not_a_results_database(self):
        with self.assertRaisesRegex(lr.NotResultsError, "no such file"):
            lr.load(self.tmp / "absent.sqlite")
        text = self.tmp / "notes.sqlite"
        text.write_text("not sqlite at all, just some text that is long enough " * 10)
        with self.assertRaisesRegex(lr.NotResultsError, "not a lemmalab results database"):
            lr.load(text)
        other = self.tmp / "other.sqlite"
        sqlite3.connect(other).execute("CREATE TABLE t(x)").connection.close()
        with self.assertRaisesRegex(lr.NotResultsError, "no meta, metrics, runs table"):
            lr.load(other)


class Captured:
    """Keeps every figure plots draws, by file name, to inspect what it shows."""

    def __init__(self):
        self.figures = {}
        self._patch = mock.patch.object(plots, "_save", side_effect=self._keep)
        self._save = plots._save

    def _keep(self, fig, path, meta):
        self.figures[Path(path).name] = fig
        return self._save(fig, path, meta)

    def __enter__(self):
        self._patch.start()
        return self

    def __exit__(self, *_):
        self._patch.stop()


def legend_texts(fig):
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def dashed_lines(ax):
    return [line for line in ax.get_lines() if line.get_linestyle() == "--"]


class PlotsTest(Fixture):
    def assert_figures(self, paths, out, names):
        """PATHS are the PNGs NAMES, each with its PDF beside it, and OUT holds only those."""
        self.assertEqual(sorted(Path(p).name for p in paths), sorted(names))
        pdfs = [n.replace(".png", ".pdf") for n in names]
        self.assertEqual(sorted(p.name for p in out.iterdir() if p.suffix in (".png", ".pdf")),
                         sorted(names + pdfs))
        for path in paths:
            data = Path(path).read_bytes()
            self.assertGreater(len(data), 1000)
            self.assertEqual(data[:8], PNG_SIGNATURE)
            self.assertEqual(Path(path).with_suffix(".pdf").read_bytes()[:5], b"%PDF-")

    def test_draw_sweep(self):
        out = self.tmp / "figures"
        paths = plots.draw(lr.load(self.sweep_db), out)
        self.assert_figures(paths, out, [
            "summary-beta.png", "paired-compressor.png", "paired-beta.png",
            "loss-vs-steps.png", "loss-vs-bits.png", "loss-vs-comm-time.png",
            "test-accuracy-vs-steps.png", "probe-ef-norm-worker_sq_norm.png",
            "probe-q-domain-worker_fraction.png"])
        self.assertTrue((out / "paired.csv").is_file())

    def test_band_is_t_interval_with_three_seeds_and_min_max_with_two(self):
        import pandas as pd
        frame = pd.DataFrame({"run_id": [1, 2, 3], "step": [0, 0, 0], "value": [1.0, 2.0, 3.0]})
        stats, band = plots._over_seeds(frame, "step", log=False)
        half = 4.303 / math.sqrt(3)  # t_{0.975, 2} * sd 1 / sqrt(3)
        self.assertIn("95% t-interval of the mean", band)
        self.assertAlmostEqual(stats["lo"].iloc[0], 2.0 - half, places=3)
        self.assertAlmostEqual(stats["hi"].iloc[0], 2.0 + half, places=3)
        stats, band = plots._over_seeds(frame[frame["run_id"] < 3], "step", log=False)
        self.assertIn("min–max", band)
        self.assertEqual((stats["lo"].iloc[0], stats["hi"].iloc[0]), (1.0, 2.0))
        self.assertIsNone(plots._over_seeds(frame[frame["run_id"] == 1], "step", False)[1])

    def test_a_positive_quantitys_band_is_taken_in_log_space_and_stays_positive(self):
        import pandas as pd
        # 1, 10, 100: log10 values 0, 1, 2 (sd 1): geometric mean 10, band 10^(1 +- t s / sqrt 3),
        # where the mean +- t-interval of the values themselves would reach 37 - 122 < 0.
        frame = pd.DataFrame({"run_id": [1, 2, 3], "step": [0] * 3, "value": [1.0, 10.0, 100.0]})
        stats, band = plots._over_seeds(frame, "step", log=True)
        half = 4.303 / math.sqrt(3)
        self.assertIn("geometric mean", band)
        self.assertAlmostEqual(stats["mean"].iloc[0], 10.0)
        self.assertAlmostEqual(math.log10(stats["lo"].iloc[0]), 1 - half, places=3)
        self.assertAlmostEqual(math.log10(stats["hi"].iloc[0]), 1 + half, places=3)
        self.assertGreater(stats["lo"].iloc[0], 0)

    def test_t_quantiles_match_the_tables(self):
        for df, t in ((1, 12.7062), (2, 4.3027), (4, 2.7764), (9, 2.2622), (11, 2.2010),
                      (29, 2.0452), (100, 1.9840)):
            self.assertAlmostEqual(plots.t975(df), t, places=4, msg=f"df = {df}")

    def test_panels_fill_a_grid_sized_to_their_number(self):
        for n, shape in ((1, (1, 1)), (3, (1, 3)), (4, (2, 2)), (5, (2, 3)), (9, (3, 3))):
            fig, grid = plots._grid(n)
            self.assertEqual(grid.shape, shape, f"{n} panels")
            self.assertEqual(sum(ax.get_visible() for ax in grid.flat), n)

    def test_curves_are_on_log_axes_in_words_with_every_option_in_the_legend(self):
        with Captured() as c:
            plots.draw(lr.load(self.sweep_db), self.tmp / "figures")
        fig = c.figures["loss-vs-steps.png"]
        panels = [ax for ax in fig.axes if ax.get_visible()]
        # The loss falls from 8 to 0.5: a log axis, labelled in words, a panel per compressor.
        self.assertEqual([ax.get_yscale() for ax in panels], ["log", "log"])
        self.assertEqual(panels[0].get_ylabel(), "training loss (full batch)")
        self.assertEqual([ax.get_title() for ax in panels],
                         ["compressor=sign", "compressor=top-k(k=2)"])
        self.assertEqual(legend_texts(fig), ["beta=0.9 (3 seeds)", "beta=0.99 (3 seeds)"])
        title = fig.legends[0].get_title().get_text().splitlines()
        self.assertEqual(title, ["line: geometric mean over seeds",
                                 "95% t-interval of the geometric mean over seeds"])
        for ax in panels:
            for band in ax.collections:
                self.assertGreater(band.get_paths()[0].vertices[:, 1].min(), 0)
        probe = c.figures["probe-ef-norm-worker_sq_norm.png"]
        self.assertEqual(probe._suptitle.get_text(), "Probe ef-norm: worker sq norm / d")

    def test_a_bound_is_drawn_only_on_the_lines_it_is_about(self):
        def probe_figure(runs_of_q):
            """The ef-norm figure where RUNS_OF_Q use Birder's quantizer Q (Lemma 1's)."""
            path = self.tmp / f"q-{len(runs_of_q)}" / "results.sqlite"
            path.parent.mkdir()
            shutil.copy(self.sweep_db, path)
            db = sqlite3.connect(path)
            db.execute("UPDATE hyperparameters SET value = 'stochastic-binary' WHERE key = "
                       f"'compressor.name' AND run_id IN ({', '.join(map(str, runs_of_q))})")
            db.commit()
            db.close()
            with Captured() as c:
                plots.draw(lr.load(path), path.parent / "figures")
            return [ax for ax in c.figures["probe-ef-norm-worker_sq_norm.png"].axes
                    if ax.get_visible()]

        def solid(ax):
            return [line for line in ax.get_lines() if line.get_linestyle() == "-"]

        # Every run of the sign panel uses Q: the bound once, in black; none beside top-k.
        sign, top_k = probe_figure([1, 2, 3, 7, 8, 9])
        (bound,) = dashed_lines(sign)
        self.assertEqual((bound.get_ydata()[0], bound.get_color()), (1.0, "black"))
        self.assertEqual(dashed_lines(top_k), [])
        # Only beta = 0.9's runs (1-3) use Q: the bound in that line's colour alone.
        sign, top_k = probe_figure([1, 2, 3])
        (bound,) = dashed_lines(sign)
        beta_09 = solid(sign)[0]
        self.assertEqual(bound.get_color(), beta_09.get_color())
        self.assertEqual(dashed_lines(top_k), [])

    def test_running_totals_that_span_decades_are_on_a_log_axis(self):
        with Captured() as c:
            plots.draw(lr.load(self.sweep_db), self.tmp / "figures")
        # Cumulative bits 1001..3024: not two decades, linear; the steps are always linear.
        self.assertEqual(c.figures["loss-vs-bits.png"].axes[0].get_xscale(), "linear")
        self.assertEqual(c.figures["loss-vs-steps.png"].axes[0].get_xscale(), "linear")
        path = self.tmp / "results.sqlite"
        shutil.copy(self.sweep_db, path)
        db = sqlite3.connect(path)
        db.execute("UPDATE metrics SET value = value * 1000 WHERE name = 'bits_sent' AND step = 4")
        db.commit()
        db.close()
        with Captured() as c:
            plots.draw(lr.load(path), self.tmp / "log-figures")
        ax = c.figures["loss-vs-bits.png"].axes[0]
        self.assertEqual(ax.get_xscale(), "log")
        self.assertGreater(min(min(line.get_xdata()) for line in ax.get_lines()), 0)

    def test_a_diverged_run_is_marked_and_does_not_set_the_scale(self):
        path = self.tmp / "results.sqlite"
        shutil.copy(self.sweep_db, path)
        db = sqlite3.connect(path)
        db.execute("UPDATE runs SET status = 'diverged at step 2: the training loss is not "
                   "finite' WHERE run_id = 1")
        db.execute("UPDATE metrics SET value = 1e9 WHERE run_id = 1 AND step = 2")
        db.execute("DELETE FROM metrics WHERE run_id = 1 AND step = 4")
        db.execute("UPDATE probes SET value = 3000 WHERE run_id = 1 AND step >= 2")
        db.commit()
        db.close()
        with Captured() as c:
            plots.draw(lr.load(path), self.tmp / "figures")
        for name in ("loss-vs-steps.png", "probe-ef-norm-worker_sq_norm.png"):
            fig = c.figures[name]
            sign = fig.axes[0]
            self.assertLess(sign.get_ylim()[1], 100, name)  # the healthy runs reach 8.04
            texts = legend_texts(fig)
            self.assertIn("beta=0.9 (1 of 3 runs diverged)", texts, name)
            self.assertIn("diverged run: left the scale here", texts, name)
        # The summary figure's point is the mean of the two runs that completed, as in
        # summary.csv.
        loss_panel = c.figures["summary-beta.png"].axes[0]
        sign_points = loss_panel.containers[0].lines[0].get_ydata()
        self.assertAlmostEqual(sign_points[0], (final_loss(2) + final_loss(3)) / 2)

    def test_paired_differences_are_taken_seed_by_seed(self):
        table = plots.paired_differences(lr.load(self.sweep_db))
        loss = table[(table["quantity"] == "final_loss") & (table["axis"] == "compressor")]
        first = loss.iloc[0]
        self.assertEqual((first["value"], first["reference"], first["at"]),
                         ("top-k(k=2)", "sign", "beta=0.9"))
        # Runs 4-6 minus runs 1-3 (same seeds): ((r + 3)^2 - r^2) / 1000 = 0.015, 0.021, 0.027.
        self.assertEqual(first["pairs"], 3)
        self.assertAlmostEqual(first["mean_difference"], 0.021)
        self.assertAlmostEqual(first["ci95"], plots.t975(2) * 0.006 / math.sqrt(3))
        beta = table[(table["quantity"] == "final_loss") & (table["axis"] == "beta")]
        self.assertEqual(list(beta["at"]), ["compressor=sign", "compressor=top-k(k=2)"])
        # Runs 7-9 minus 1-3: ((r + 6)^2 - r^2) / 1000 = (12 r + 36) / 1000.
        self.assertAlmostEqual(beta["mean_difference"].iloc[0], (12 * 2 + 36) / 1000)


class EvidenceTest(unittest.TestCase):
    """What a check folder's evidence figures draw: the verdict's statistic of its own runs."""

    def results(self):
        import pandas as pd
        runs = pd.DataFrame({"run_id": [1, 2], "label": ["birder", "sgd"]})
        probes = pd.DataFrame({
            "run_id": [1, 1, 1, 1, 2, 2], "step": [1, 1, 2, 2, 1, 2],
            "probe": ["q-deviate"] * 6, "series": ["ratio"] * 6,
            "worker": [0, 1, 0, 1, 0, 0], "value": [0.2, 0.5, 0.4, 0.1, 9.0, 9.0]})
        metrics = pd.DataFrame({"run_id": [1, 1, 1], "step": [0, 1, 2], "name": ["grad_sq_norm"] * 3,
                                "worker": [math.nan] * 3, "value": [3.0, 1.0, 2.0]})
        hyperparameters = pd.DataFrame({"run_id": [1, 2], "key": ["compressor.name"] * 2,
                                        "value": ["stochastic-binary", "sign"],
                                        "type": ["string"] * 2})
        return lr.Results(runs=runs, metrics=metrics, probes=probes,
                          hyperparameters=hyperparameters, meta={},
                          probe_series=pd.DataFrame(columns=["probe", "series", "meaning",
                                                             "per_dimension"]))

    def test_statistic_reduces_over_workers_for_the_verdicts_runs_only(self):
        frame = plots._statistic(self.results(), "birder", "probe q-deviate/ratio", "max")
        self.assertEqual(list(frame["run_id"]), [1, 1])  # sgd's 9.0 is not birder's evidence
        self.assertEqual(list(frame["value"]), [0.5, 0.4])
        frame = plots._statistic(self.results(), "birder", "probe q-deviate/ratio", "min")
        self.assertEqual(list(frame["value"]), [0.2, 0.1])

    def test_running_mean_is_over_the_steps_so_far(self):
        frame = plots._statistic(self.results(), "birder", "metric grad_sq_norm", "running mean")
        self.assertEqual(list(frame["value"]), [3.0, 2.0, 2.0])
        frame = plots._statistic(self.results(), "birder", "metric grad_sq_norm", "running sum")
        self.assertEqual(list(frame["value"]), [3.0, 4.0, 6.0])

    def test_a_bound_is_drawn_only_on_the_runs_it_covers(self):
        covers = ("compressor.name", "stochastic-binary")
        self.assertTrue(plots._all_covered(self.results(), [1], covers))
        self.assertFalse(plots._all_covered(self.results(), [1, 2], covers))


class CliTest(Fixture):
    def cli(self, *args, pythonpath=str(PYTHON_DIR)):
        env = {**os.environ, "PYTHONPATH": pythonpath, "MPLBACKEND": "Agg"}
        return subprocess.run([sys.executable, "-m", "lemmalab.plots", *map(str, args)],
                              capture_output=True, text=True, env=env, timeout=60)

    def test_plain_run_draws_and_prints_paths(self):
        out = self.tmp / "plain-figures"
        done = self.cli(self.plain_db, out)
        self.assertEqual(done.returncode, 0, done.stderr)
        names = [Path(line).name for line in done.stdout.splitlines()]
        # no test accuracy recorded: no such figure
        self.assertEqual(names[::2], ["loss-vs-steps.png", "loss-vs-bits.png",
                                      "loss-vs-comm-time.png", "probe-ef-norm-worker_sq_norm.png",
                                      "probe-q-domain-worker_fraction.png"])
        self.assertEqual(names[1::2], [n.replace(".png", ".pdf") for n in names[::2]])
        self.assertTrue(all(Path(line).is_file() for line in done.stdout.splitlines()))

    def test_missing_database_exits_2_naming_it(self):
        missing = self.tmp / "nowhere" / "results.sqlite"
        done = self.cli(missing, self.tmp / "out")
        self.assertEqual(done.returncode, 2)
        self.assertIn(str(missing), done.stderr)
        self.assertEqual(done.stdout, "")
        self.assertFalse(missing.exists())

    def test_missing_matplotlib_exits_3(self):
        # A matplotlib that fails to import, first on the path, stands for an absent one.
        fake = self.tmp / "fake" / "matplotlib"
        fake.mkdir(parents=True)
        (fake / "__init__.py").write_text("raise ImportError('no matplotlib here')\n")
        done = self.cli(self.plain_db, self.tmp / "out",
                        pythonpath=f"{fake.parent}{os.pathsep}{PYTHON_DIR}")
        self.assertEqual(done.returncode, 3)
        self.assertIn("matplotlib is missing: install Debian's python3-matplotlib "
                      "(scripts/install-deps does)", done.stderr)


if __name__ == "__main__":
    unittest.main()
