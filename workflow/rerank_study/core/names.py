"""One name and one place for each concept the artefacts spell out.

* methods: the three rankings every run evaluates;
* measures: a metric is one object (name + cut-off), parsed and printed in one place, as
  ir_measures does (``Measure.parse("ndcg@10")``, ``str(m) == "ndcg@10"``);
* scorers: the config value of each scorer kind and the label its artefacts carry;
* reranker kinds: what ``study.reranker_kind`` names as the reranker (the CE side of every study).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

# ------------------------------------------------------------------------------ methods --
RRF, CE, BLEND = "rrf", "ce", "blend"
METHODS = (RRF, CE, BLEND)  # the order of every table's columns

# ------------------------------------------------------------------------------ scorers --
PINNED = "pinned"         # config value: the pinned cross-encoder
STAND_IN = "stand-in"     # config value: the stand-in (explicit choice only)
STANDIN_LABEL = "STAND-IN"  # the label every stand-in artefact carries
SCORERS = (PINNED, STAND_IN)

# ------------------------------------------------------------------------ reranker kinds --
CROSS_ENCODER = "cross-encoder"  # a pinned Hugging Face sequence classifier, scored by this pipeline
RUN_FILE = "run"                 # a pinned TREC run of the frozen candidates, made by any system
TORCH_BACKEND = "torch"          # ce.backend: the model itself (the others are derived files: backends.py)
RERANKER_KINDS = (CROSS_ENCODER, RUN_FILE)


def scorer_label(scorer: str) -> str:
    """What summaries and manifests say about a scorer kind: "pinned" or "STAND-IN"."""
    if scorer not in SCORERS:
        raise ValueError(f"unknown scorer {scorer!r}; known: {SCORERS}")
    return STANDIN_LABEL if scorer == STAND_IN else PINNED


# ----------------------------------------------------------------------------- measures --
@dataclass(frozen=True, order=True)
class Measure:
    """A per-query metric with an optional cut-off; ``str`` is its column name."""

    name: str
    cutoff: int | None = None

    _PATTERN = re.compile(r"^([a-z_]+)(?:@([1-9][0-9]*))?$")

    def __str__(self) -> str:
        return self.name if self.cutoff is None else f"{self.name}@{self.cutoff}"

    @classmethod
    def parse(cls, text: str) -> Measure:
        m = cls._PATTERN.match(text)
        if not m:
            raise ValueError(f"not a measure name: {text!r} (expected e.g. 'ndcg@10')")
        return cls(m.group(1), int(m.group(2)) if m.group(2) else None)


FIRST_REL_RANK = Measure("first_rel_rank")


def primary_measure(metrics_cfg: Mapping) -> Measure:
    return Measure("ndcg", metrics_cfg["ndcg_k"])


def measures(metrics_cfg: Mapping) -> list[Measure]:
    """Every per-query measure of a run, in column order (the first is the primary metric)."""
    ks = metrics_cfg["recall_ks"]
    return ([primary_measure(metrics_cfg)] + [Measure("recall", k) for k in ks]
            + [Measure("capped_recall", k) for k in ks] + [Measure("mrr", metrics_cfg["mrr_k"]),
                                                           FIRST_REL_RANK])


def column(method: str, measure: Measure | str) -> str:
    """The per-query table's column of a method and measure, e.g. ``blend_ndcg@10``."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; known: {METHODS}")
    return f"{method}_{measure}"
