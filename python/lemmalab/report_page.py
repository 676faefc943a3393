"""report.html: one self-contained page per results folder (`lemmalab report` writes it).

Everything is inside the file, so it reads offline, mails as one attachment and prints: the
figures as embedded PNGs (each links to the vector PDF beside it in plots/), the summary table
(summary.csv's numbers), the paired differences, every verdict of a check folder with its
premises and evidence, the runs that did not complete, the spec, and the version, commit and
build that produced the results. The page has no script.
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
from pathlib import Path

import pandas as pd

from lemmalab import results as lr

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; max-width: 1200px; margin: 2em auto;
       padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 12px; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: right; vertical-align: top; }
th { background: #f4f4f4; } td.text, th.text { text-align: left; }
.wide { overflow-x: auto; } figure { margin: 1.5em 0; } figure img { max-width: 100%; height: auto; }
figcaption { font-size: 12px; color: #444; max-width: 60em; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 12px; }
.holds { color: #1a7f37; font-weight: 600; } .violated { color: #cf222e; font-weight: 600; }
.inconclusive { color: #9a6700; font-weight: 600; }
.provenance { font-size: 12px; color: #555; }
@media print { body { max-width: none; margin: 0; } figure, tr { break-inside: avoid; }
               h2 { break-after: avoid; } }
"""


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _table(header: list[str], rows: list[list[str]], text_columns: int = 1) -> str:
    """An HTML table of already-escaped cells; the first TEXT_COLUMNS left-aligned."""
    def cells(tag, row):
        return "".join(f'<{tag}{" class=text" if i < text_columns else ""}>{c}</{tag}>'
                       for i, c in enumerate(row))
    body = "".join(f"<tr>{cells('td', r)}</tr>" for r in rows)
    return (f"<div class=wide><table><thead><tr>{cells('th', header)}</tr></thead>"
            f"<tbody>{body}</tbody></table></div>")


def _estimate(mean, half) -> str:
    """As the console table shows it (cli/report.cc ShowEstimate)."""
    if not isinstance(mean, float) or math.isnan(mean):
        return "-"
    if isinstance(half, float) and math.isfinite(half) and half > 1e-9 * abs(mean):
        return f"{mean:.4g} ± {half:.2g}"
    return f"{mean:.4g}"


def _summary(folder: Path) -> str:
    path = folder / "summary.csv"
    if not path.is_file():
        return "<p>No summary.csv.</p>"
    table = pd.read_csv(path)
    quantities = [c[:-len("_mean")] for c in table.columns if c.endswith("_mean")]
    header = ["configuration", "runs completed", *quantities]
    rows = [[_e(r["configuration"]), f'{r["completed"]}/{r["runs"]}',
             *(_e(_estimate(r[f"{q}_mean"], r[f"{q}_ci95"])) for q in quantities)]
            for _, r in table.iterrows()]
    return ("<p>Mean ± half-width of the 95% Student-t interval over the runs that completed "
            "(summary.csv holds the numbers in full).</p>" + _table(header, rows))


def _not_completed(results) -> str:
    runs = results.runs[results.runs["status"] != "completed"]
    if runs.empty:
        return ""
    rows = [[_e(r["configuration"]), _e(lr.show_value(r["seed"])), _e(r["status"])]
            for _, r in runs.iterrows()]
    return "<h2>Runs that did not complete</h2>" + _table(["configuration", "seed", "status"],
                                                          rows, 3)


def _paired(table: pd.DataFrame | None) -> str:
    if table is None or table.empty:
        return ""
    quantities = list(pd.unique(table["quantity"]))
    rows = []
    for (axis, value, reference, at), group in table.groupby(
            ["axis", "value", "reference", "at"], sort=False):
        by_quantity = group.set_index("quantity")
        rows.append([_e(f"{axis}: {value} − {reference}"), _e(at), str(group["pairs"].min()),
                     *(_e(_estimate(by_quantity.at[q, "mean_difference"], by_quantity.at[q, "ci95"]))
                       if q in by_quantity.index else "-" for q in quantities)])
    return ("<h2>Paired differences</h2><p>Each configuration minus its reference with the same "
            "other settings, seed by seed (the same seed gives the same shards and x0): the "
            "mean difference ± 95% Student-t half-width over the pairs (plots/paired.csv).</p>"
            + _table(["comparison", "at", "pairs", *quantities], rows, 2))


def _verdicts(folder: Path) -> str:
    path = folder / "check.json"
    if not path.is_file():
        return ""
    check = json.loads(path.read_text())
    parts = ["<h2>Verdicts</h2>"]
    for v in check["verdicts"]:
        verdict = str(v.get("verdict", ""))
        expected = v.get("expected")
        parts.append(
            f'<h3>{_e(v.get("assertion", ""))} on {_e(v.get("run", ""))}: '
            f'<span class="{_e(verdict)}">{_e(verdict)}</span>'
            + (f" (expected {_e(expected)})" if expected else "") + "</h3>")
        facts = [("measured", v.get("measured")), ("bound", v.get("bound")),
                 ("detail", v.get("detail"))]
        parts.append("<dl>" + "".join(f"<dt>{k}</dt><dd>{_e(x)}</dd>" for k, x in facts if x)
                     + "</dl>")
        premises = v.get("premises") or []
        if premises:
            rows = [[_e(p.get("name", "")), _e(p.get("status", "")),
                     _e("" if p.get("step") is None else p["step"]), _e(p.get("detail", ""))]
                    for p in premises]
            parts.append("<p>Premises</p>" + _table(["premise", "status", "step", "detail"],
                                                     rows, 4))
        evidence = v.get("evidence") or []
        if evidence:
            parts.append("<details><summary>Evidence (" + str(len(evidence)) + " series)"
                         "</summary><ul>" + "".join(f"<li>{_e(x)}</li>" for x in evidence)
                         + "</ul></details>")
    return "".join(parts)


def _figures(figures, folder: Path, plots: Path) -> str:
    if not figures:
        return ""
    parts = ["<h2>Figures</h2>"]
    for figure in figures:
        png = Path(figure.path)
        data = base64.b64encode(png.read_bytes()).decode("ascii")
        pdf = os.path.relpath(plots / png.with_suffix(".pdf").name, folder)
        parts.append(f'<figure><img src="data:image/png;base64,{data}" alt="{_e(png.stem)}">'
                     f"<figcaption>{_e(figure.caption)} "
                     f'(<a href="{_e(pdf)}">vector PDF</a>)</figcaption></figure>')
    return "".join(parts)


def _provenance(results) -> str:
    meta = results.meta
    facts = [("lemmalab", meta.get("lemmalab_version")), ("commit", meta.get("commit")),
             ("build", meta.get("build")), ("spec", meta.get("spec_path")),
             ("kind", meta.get("kind"))]
    return ('<p class="provenance">' + "<br>".join(f"{k}: {_e(v)}" for k, v in facts if v)
            + "</p>")


def write(folder, results, figures, paired: pd.DataFrame | None, path, plots) -> Path:
    """Write PATH, the page of the results FOLDER (RESULTS loaded from it), embedding FIGURES
    (plots.Figure, their PDFs to be found in PLOTS); written whole, then moved into place."""
    folder, path = Path(folder), Path(path)
    spec = results.meta.get("spec_text", "")
    body = "".join([
        f"<h1>Report: {_e(folder.name)}</h1>", _provenance(results),
        "<h2>Summary</h2>", _summary(folder), _not_completed(results), _verdicts(folder),
        _paired(paired), _figures(figures, folder, Path(plots)),
        ("<h2>Spec</h2><pre>" + _e(spec) + "</pre>") if spec else ""])
    page = ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f"<title>lemmalab report: {_e(folder.name)}</title><style>{_STYLE}</style></head>"
            f"<body>{body}</body></html>\n")
    partial = path.with_name(path.name + ".partial")
    partial.write_text(page, encoding="utf-8")
    partial.replace(path)
    return path
