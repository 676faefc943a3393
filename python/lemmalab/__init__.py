"""Python side of lemmalab: read the results database (`lemmalab.results`) and draw it
(`lemmalab.plots`, also `python3 -m lemmalab.plots RESULTS OUT_DIR`).

Nothing is imported here on purpose: `python3 -m lemmalab.plots` must be able to report a
missing pandas or matplotlib with a clear message, which an eager import here would pre-empt.
"""

__all__ = ["results", "plots"]
