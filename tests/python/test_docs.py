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


class ComponentTables(unittest.TestCase):
    def test_every_table_names_exactly_the_registered_components(self):
        cli = os.environ.get("LEMMALAB_CLI", str(ROOT / "build/release/cli/lemmalab"))
        registry = json.loads(subprocess.run([cli, "list", "--json"], check=True,
                                             capture_output=True, text=True).stdout)
        for page, column, kind in TABLES:
            with self.subTest(page=page, kind=kind):
                registered = {entry["name"] for entry in registry[kind]}
                documented = table_names(page, column)
                self.assertEqual(sorted(documented - registered), [], "documented, not registered")
                self.assertEqual(sorted(registered - documented), [], "registered, not documented")


if __name__ == "__main__":
    unittest.main()
