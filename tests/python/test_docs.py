"""The manual (issue 34): the README is a front page with a map of docs/, every link in it and in
docs/ names a file that exists, and the component tables name exactly what the registries hold
(`lemmalab list --json`)."""
import json
import os
import pathlib
import re
import subprocess
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").glob("*.md"))
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def links(path):
    """The relative link targets of a markdown file, outside code blocks."""
    targets, fence = [], False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence:
            targets += [t for t in LINK.findall(line) if not t.startswith(("http:", "https:"))]
    return targets


class Manual(unittest.TestCase):
    def test_every_link_names_a_file_that_exists(self):
        for page in [ROOT / "README.md"] + PAGES:
            for target in links(page):
                with self.subTest(page=page.name, link=target):
                    self.assertTrue((page.parent / target).exists())

    def test_the_readme_is_a_front_page_with_a_map_of_every_page(self):
        readme = ROOT / "README.md"
        self.assertLess(len(readme.read_text().splitlines()), 250)
        mapped = {pathlib.Path(t).name for t in links(readme) if t.startswith("docs/")}
        for page in PAGES:
            with self.subTest(page=page.name):
                self.assertIn(page.name, mapped)


# The tables that describe a registry: page, the heading of its first column, the registry.
TABLES = [
    ("optimizers.md", "name", "optimizers"),
    ("compressors.md", "name", "compressors"),
    ("data.md", "source", "data"),
    ("data.md", "problem", "problems"),
    ("theory-checks.md", "assertion", "assertions"),
    ("communication.md", "scheme", "schemes"),
    ("commands.md", "metric", "metrics"),
]


def table_names(page, first_column):
    """The `names` in the first column of the page's table whose first heading is first_column
    (a row may name several, `sgd`, `sgdm`, and an alias after them: `allreduce` = `...`)."""
    names, inside = set(), False
    for line in (ROOT / "docs" / page).read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if not cells:
            inside = False
        elif cells[0] == first_column:
            inside = True
        elif inside and not set(cells[0]) <= set("-: "):
            names |= set(re.findall(r"`([^`]+)`", cells[0].split(" = ")[0]))
    return names


def registry():
    cli = os.environ.get("LEMMALAB_CLI", str(ROOT / "build/release/cli/lemmalab"))
    return json.loads(subprocess.run([cli, "list", "--json"], check=True, capture_output=True,
                                     text=True).stdout)


# Where the Python package names a metric: series(r, "x"), has_metric(r, "x"), metric("x"), and
# the keys of results.py's _COUNTERS and the loss names loss_metric chooses between.
METRIC_USE = re.compile(r'(?:series\(\w+, |has_metric\(\w+, |metric\()"([a-z_]+)"'
                        r'|"([a-z_]+)": "cumulative_'
                        r'|return "([a-z_]+)" if has_metric\(results, "[a-z_]+"\) else "([a-z_]+)"')


class ComponentTables(unittest.TestCase):
    def test_every_table_names_exactly_the_registered_components(self):
        listed = registry()
        for page, column, kind in TABLES:
            with self.subTest(page=page, kind=kind):
                registered = {entry["name"] for entry in listed[kind]}
                documented = table_names(page, column)
                self.assertEqual(sorted(documented - registered), [], "documented, not registered")
                self.assertEqual(sorted(registered - documented), [], "registered, not documented")


# "27 optimizers", "17 compressors", "5 data sources" in prose: the count the registry has now.
# Not a part of one ("on 9 assertions", "over 1 optimizers", "4 β × 4 compressors").
COUNT = re.compile(r"(?<!on )(?<!over )(?<!× )\b(\d+) "
                   r"(optimizers|compressors|problems|data sources|assertions|probes)\b")
COUNTED = {"optimizers": "optimizers", "compressors": "compressors", "problems": "problems",
           "data sources": "data", "assertions": "assertions", "probes": "probes"}


class Counts(unittest.TestCase):
    def test_every_count_of_a_registry_in_the_manual_is_its_size(self):
        listed = registry()
        seen = 0
        for page in [ROOT / "README.md"] + PAGES:
            for number, kind in COUNT.findall(page.read_text()):
                seen += 1
                with self.subTest(page=page.name, said=f"{number} {kind}"):
                    self.assertEqual(int(number), len(listed[COUNTED[kind]]))
        self.assertGreater(seen, 0)  # the README states the counts: the pattern must find them


class MetricNames(unittest.TestCase):
    def test_the_python_package_names_only_metrics_the_engine_records(self):
        recorded = {entry["name"] for entry in registry()["metrics"]}
        used = set()
        for source in sorted((ROOT / "python" / "lemmalab").glob("*.py")):
            for match in METRIC_USE.finditer(source.read_text()):
                used |= {name for name in match.groups() if name}
        # The loader reads the loss, the counters and test accuracy by name: a pattern that
        # stopped matching would make this test vacuous.
        self.assertGreaterEqual(used, {"train_loss", "minibatch_loss", "bits_sent", "comm_seconds",
                                       "test_accuracy"})
        self.assertEqual(sorted(used - recorded), [], "named in python/lemmalab, never recorded")


if __name__ == "__main__":
    unittest.main()
