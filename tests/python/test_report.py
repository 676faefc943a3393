"""`lemmalab report` end to end: the same configuration names and numbers in summary.csv and in
Python, the figures of a sweep and of a check folder, and report.html opened in a real headless
browser (Debian's chromium).

Run from the repository root, with the command built:
    LEMMALAB_CLI=build/release/cli/lemmalab PYTHONPATH=python \\
        /usr/bin/python3 -m unittest tests.python.test_report
"""

import json
import math
import os
import re
import shutil
import subprocess
import tempfile
import textwrap
import unittest
from pathlib import Path

import pandas as pd

from lemmalab import plots
from lemmalab import results as lr

REPOSITORY = Path(__file__).resolve().parents[2]
CLI = Path(os.environ.get("LEMMALAB_CLI", REPOSITORY / "build" / "release" / "cli" / "lemmalab"))

def quadratic(seed, steps, dimension, extra=""):
    """A spec's top: 4 workers on a quadratic of DIMENSION."""
    return (f"seed = {seed}\nsteps = {steps}\nworkers = 4\n{extra}\n[problem]\n"
            f'name = "quadratic"\ndimension = {dimension}\nsigma = 0.1\n')


def optimizer(name, compressor=None, label=None):
    lines = ["\n[[optimizer]]", f'name = "{name}"']
    lines += [f'label = "{label}"'] if label else []
    lines += [f"compressor = {compressor}"] if compressor else []
    return "\n".join(lines + ['schedule = { name = "constant", lr = 0.05 }\n'])


TOP_K_5PC = '{ name = "top-k", fraction = 0.05 }'
TOP_K_1PC = '{ name = "top-k", fraction = 0.01 }'

# Two optimizers, one reading the compressor axis; two top-k fractions that only the fraction
# tells apart; an lr axis both read; three seeds.
SWEEP = (quadratic(1, 60, 100, 'eval_every = 10\nprobes = ["ef-norm"]\n')
         + optimizer("ef-sgd", TOP_K_5PC) + optimizer("sgd") + f"""
[sweep]
optimizer.ef-sgd.compressor = [{TOP_K_5PC}, {TOP_K_1PC}, "sign"]
optimizer.schedule.lr = [0.05, 0.1]
seed = [1, 2, 3]
""")

# A plain run: three labels, two of them the same optimizer with different compressors.
PLAIN = (quadratic(3, 40, 20) + optimizer("ef-sgd", TOP_K_5PC)
         + optimizer("ef-sgd", TOP_K_1PC, label="ef-sgd-1pc") + optimizer("sgd"))


# Shows what report.html loaded: its images (each loaded, with a size) and any script error.
PROBE = """<!DOCTYPE html><html><head><title>probe</title></head><body>
<iframe id="page" src="{page}" width="1280" height="900"></iframe>
<script>
document.getElementById("page").addEventListener("load", () => {{
  const doc = document.getElementById("page").contentDocument;
  const images = Array.from(doc.images);
  const loaded = images.filter(i => i.complete && i.naturalWidth > 0).length;
  document.body.setAttribute("data-rendered", JSON.stringify({{
    images: images.length, loaded: loaded, tables: doc.querySelectorAll("table").length,
    headings: Array.from(doc.querySelectorAll("h2")).map(h => h.textContent)}}));
}});
</script></body></html>
"""


def lemmalab(*args):
    done = subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "COLUMNS": "100"})
    if done.returncode != 0:
        raise AssertionError(f"lemmalab {' '.join(map(str, args))} exited {done.returncode}:\n"
                             f"{done.stdout}\n{done.stderr}")
    return done.stdout


def render(page: Path) -> tuple[dict, str]:
    """Opens PAGE in headless chromium inside a probe page; returns what the probe saw and
    chromium's log."""
    chromium = shutil.which("chromium")
    if chromium is None:
        raise AssertionError("chromium is missing: install Debian's chromium "
                             "(scripts/install-deps does)")
    probe = page.parent / "probe.html"
    probe.write_text(PROBE.format(page=page.resolve().as_uri()))
    done = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--allow-file-access-from-files", "--virtual-time-budget=20000",
         "--enable-logging=stderr", "--v=0", f"--user-data-dir={page.parent / '.chromium'}",
         "--dump-dom", probe.resolve().as_uri()],
        capture_output=True, text=True, timeout=120)
    found = re.search(r'data-rendered="([^"]*)"', done.stdout)
    if found is None:
        raise AssertionError(f"the probe page did not finish: {done.stderr[-2000:]}")
    return json.loads(found.group(1).replace("&quot;", '"')), done.stderr


class ReportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._scratch = tempfile.TemporaryDirectory()
        root = Path(cls._scratch.name)
        (root / "sweep.toml").write_text(SWEEP)
        (root / "plain.toml").write_text(PLAIN)
        cls.sweep, cls.plain, cls.check = root / "sweep", root / "plain", root / "check"
        cls.ablation = root / "ablation"
        # The library's ablation as it ships (48 runs, about two seconds).
        lemmalab("sweep", REPOSITORY / "runs" / "ablations" / "birder-beta-compressor.toml",
                 "--out", cls.ablation)
        lemmalab("report", cls.ablation)
        lemmalab("sweep", root / "sweep.toml", "--out", cls.sweep)
        lemmalab("run", root / "plain.toml", "--out", cls.plain)
        lemmalab("check", REPOSITORY / "runs" / "theory" / "diana.toml", "--out", cls.check)
        lemmalab("report", cls.sweep)
        lemmalab("report", cls.plain, "--no-plots")
        lemmalab("report", cls.check)

    @classmethod
    def tearDownClass(cls):
        cls._scratch.cleanup()

    def folders(self):
        return {"sweep": self.sweep, "plain run": self.plain, "check": self.check,
                "ablation": self.ablation}

    def test_python_names_every_configuration_as_summary_csv_does(self):
        for kind, folder in self.folders().items():
            with self.subTest(kind):
                summary = pd.read_csv(folder / "summary.csv")
                configs = lr.configurations(lr.load(folder))
                self.assertEqual(list(configs["configuration"]), list(summary["configuration"]))
        names = list(pd.read_csv(self.sweep / "summary.csv")["configuration"])
        self.assertIn("ef-sgd compressor=top-k(fraction=0.05) lr=0.05", names)
        self.assertIn("ef-sgd compressor=top-k(fraction=0.01) lr=0.05", names)
        self.assertIn("sgd lr=0.1", names)  # sgd reads no compressor
        self.assertEqual(lr.axes(lr.load(self.sweep)), ["lr", "label", "compressor"])
        self.assertEqual(list(pd.read_csv(self.plain / "summary.csv")["configuration"]),
                         ["ef-sgd", "ef-sgd-1pc", "sgd"])

    def test_figures_show_the_numbers_of_summary_csv(self):
        for kind, folder in self.folders().items():
            results = lr.load(folder)
            runs = results.runs.set_index("run_id")
            summary = pd.read_csv(folder / "summary.csv").set_index("configuration")
            for _, config in lr.configurations(results).iterrows():
                with self.subTest(kind, configuration=config["configuration"]):
                    done = runs.loc[list(config["run_ids"])]
                    done = done[done["status"] == "completed"]
                    got = plots.interval95(done["final_loss"])
                    row = summary.loc[config["configuration"]]
                    self.assertEqual(got.n, row["final_loss_n"])
                    if got.n:
                        self.assertAlmostEqual(got.mean, row["final_loss_mean"], places=12)
                    if got.n >= 2:
                        self.assertAlmostEqual(got.half, row["final_loss_ci95"], places=9)

    def test_sweep_and_check_folders_get_every_figure_and_the_page(self):
        expected = {
            self.ablation: ["summary-beta.png", "paired-beta.png", "paired-compressor.png",
                            "loss-vs-steps.png", "loss-vs-bits.png", "loss-vs-comm-time.png",
                            "probe-ef-norm-worker_sq_norm.png",
                            "probe-ef-norm-server_sq_norm.png"],
            self.sweep: ["summary-lr.png", "paired-lr.png", "paired-label.png",
                         "paired-compressor.png", "loss-vs-steps.png", "loss-vs-bits.png",
                         "loss-vs-comm-time.png", "probe-ef-norm-worker_sq_norm.png"],
            self.check: ["loss-vs-steps.png", "evidence-01-diana-nonconvex-diana.png"],
        }
        for folder, names in expected.items():
            with self.subTest(folder.name):
                pngs = sorted(p.name for p in (folder / "plots").glob("*.png"))
                for name in names:
                    self.assertIn(name, pngs)
                commit = lr.load(folder).meta["commit"]
                for png in pngs:
                    # Each figure records the build that wrote the results it shows.
                    from PIL import Image
                    with Image.open(folder / "plots" / png) as image:
                        self.assertIn(f"commit {commit}", image.text["Software"], png)
                    pdf = (folder / "plots" / png).with_suffix(".pdf").read_bytes()
                    self.assertIn(f"commit {commit}".encode(), pdf, png)
                page = (folder / "report.html").read_text()
                self.assertNotIn("<script", page)
                self.assertEqual(page.count('src="data:image/png;base64,'), len(pngs))
                for link in re.findall(r'href="([^"]+\.pdf)"', page):
                    self.assertTrue((folder / link).is_file(), link)
                self.assertIn(lr.load(folder).meta["commit"], page)
                self.assertIn("report.html", (folder / "report.md").read_text())

    def test_the_page_renders_in_a_headless_browser(self):
        for folder, headings in ((self.ablation, ["Summary", "Paired differences", "Figures",
                                                  "Spec"]),
                                 (self.sweep, ["Summary", "Paired differences", "Figures",
                                               "Spec"]),
                                 (self.check, ["Summary", "Verdicts", "Figures", "Spec"])):
            with self.subTest(folder.name):
                seen, log = render(folder / "report.html")
                self.assertGreater(seen["images"], 0)
                self.assertEqual(seen["loaded"], seen["images"])
                self.assertGreater(seen["tables"], 0)
                for heading in headings:
                    self.assertIn(heading, seen["headings"])
                self.assertNotRegex(log, r"Uncaught|CONSOLE\(\d+\)\].*[Ee]rror")

    def test_check_files_and_reports_record_the_build(self):
        check = json.loads((self.check / "check.json").read_text())
        for key in ("lemmalab_version", "commit", "build"):
            self.assertTrue(check[key], key)
        self.assertIn(f"commit {check['commit']}", (self.check / "check.md").read_text())
        self.assertIn(f"commit {check['commit']}", (self.check / "report.md").read_text())

    def test_a_report_without_figures_leaves_no_page_behind(self):
        folder = Path(self._scratch.name) / "again"
        shutil.copytree(self.check, folder)
        self.assertTrue((folder / "report.html").is_file())
        lemmalab("report", folder, "--no-plots")
        self.assertFalse((folder / "report.html").exists())


if __name__ == "__main__":
    unittest.main()
