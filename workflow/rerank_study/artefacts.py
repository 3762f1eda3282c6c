"""The artefacts a run's manifest lists: key (= the path key in the rules' ``P``), role, scope, and
whether the same inputs and pins give the same bytes. One table, used by the manifest rule (as
its declared inputs) and by the reproduction check."""

from __future__ import annotations

# inputs outside the run folder: (key, role); the analysed qrels (development or sealed) are added per run
INPUTS = (("corpus", "corpus"), ("queries", "queries"), ("split_dev", "split_dev"),
          ("split_confirm", "split_confirm"), ("candidates", "candidates"))
# the run's own files: (key, role)
RUN = (("run_queries", "analysed_queries"), ("run_candidates", "candidates"), ("run_qrels", "qrels_run"),
       ("groups", "groups"), ("groups_meta", "groups"), ("pairs", "pairs"), ("shape_check", "shape_check"),
       ("verification", "verification"), ("rankings", "rankings"), ("run_rrf", "runs"), ("run_ce", "runs"), ("run_blend", "runs"),
       ("per_query", "per_query"), ("grouped_indices", "bootstrap_indices"), ("query_indices", "bootstrap_indices"),
       ("replicates", "replicates"), ("summary", "summary"), ("forest_plot", "figure"), ("delta_plot", "figure"),
       ("report", "report"), ("scoring_measurements", "measurements"),
       ("verification_measurements", "measurements"), ("report_measurements", "measurements"))
# timings and memory, and the report that shows them: not reproducible byte for byte
NON_DETERMINISTIC = frozenset({"report", "scoring_measurements", "verification_measurements", "report_measurements"})


def manifest_keys(qrels_key: str) -> list[str]:
    """Every artefact key of a run's manifest, inputs first; ``qrels_key`` is qrels_dev or qrels_confirm."""
    return [k for k, _ in INPUTS] + [qrels_key] + [k for k, _ in RUN]


def role_of(key: str) -> tuple[str, str]:
    """(role, scope) of an artefact key."""
    for k, role in INPUTS:
        if k == key:
            return role, "input"
    if key in ("qrels_dev", "qrels_confirm"):
        return key, "input"
    for k, role in RUN:
        if k == key:
            return role, "run"
    raise KeyError(f"unknown artefact key {key!r}")
