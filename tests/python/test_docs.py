"""The manual (issue 34): the README is a front page with a map of docs/, and every link in it
and in docs/ names a file that exists."""
import pathlib
import re
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


if __name__ == "__main__":
    unittest.main()
