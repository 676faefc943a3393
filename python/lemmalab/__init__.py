"""Python side of lemmalab: run specs from Python (`lemmalab.run`, `lemmalab.check`, defined in
`lemmalab.session`), read the results database (`lemmalab.results`) and draw it
(`lemmalab.plots`, also `python3 -m lemmalab.plots RESULTS OUT_DIR`).

    import lemmalab
    r = lemmalab.run({"steps": 100, "problem": {...}, "optimizer": [{"name": "sgd"}]})
    r.metric("train_loss")
    c = lemmalab.check("runs/theory/naive-adam.toml")

Nothing is imported here on purpose: `python3 -m lemmalab.plots` must be able to report a
missing pandas or matplotlib with a clear message, which an eager import here would pre-empt.
So `run` and `check` import `lemmalab.session` when first called, and the submodules and the
session's names (`Run`, `Check`, `LemmalabError`, `SpecError`, `backend`) load on first access.
"""

import importlib

__all__ = ["run", "check", "results", "plots", "session",
           "Run", "Check", "LemmalabError", "SpecError", "backend"]

_SUBMODULES = ("results", "plots", "session")
_SESSION_NAMES = ("Run", "Check", "LemmalabError", "SpecError", "backend")


def run(spec, **options):
    """`lemmalab.session.run`: run a spec (dict, TOML text or path) and load its results."""
    from .session import run as _run
    return _run(spec, **options)


def check(spec, **options):
    """`lemmalab.session.check`: judge a spec's [[assert]] claims with `lemmalab check`."""
    from .session import check as _check
    return _check(spec, **options)


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    if name in _SESSION_NAMES:
        return getattr(importlib.import_module(".session", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
