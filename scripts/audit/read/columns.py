"""Every value of every audited file, declared (docs/outputs.md, "Every column and key"): each table's columns
in order and each JSON file's keys, with the kind of text a value must be written as and the check that
recomputes it - or, for the values no run can reproduce byte for byte (timings, memory), the word
``provenance`` and the checks that still apply to them. A header or a key set other than this one fails (check
'columns'), and so does a cell not readable as its kind (a number, a count, a flag); the recomputing check
compares its value.

The parametric tables (per_query, the index matrices, the replicates) have columns that follow the settings:
``table_columns`` names them from the anchor's settings."""

from __future__ import annotations

import math
import re

from expected.definitions import METHODS

from read.readers import plain_number

ID, INT, FLOAT, BOOL, TEXT = "id", "int", "float", "bool", "text"

# artefact key -> ((column, kind, the check that recomputes it), ...)
TABLES = {
    "run_candidates": (("qid", ID, "candidates"), ("split", TEXT, "candidates"), ("rank", INT, "candidates"),
                       ("doc_id", ID, "candidates"), ("rrf_score", FLOAT, "candidates"),
                       ("bm25_rank", INT, "candidates"), ("dense_rank", INT, "candidates")),
    "run_qrels": (("query-id", ID, "qrels"), ("corpus-id", ID, "qrels"), ("score", INT, "qrels")),
    "groups": (("group_id", TEXT, "groups"), ("group_index", INT, "groups"), ("group_size", INT, "groups"),
               ("qid", ID, "groups")),
    "pairs": (("qid", ID, "pairs"), ("doc_id", ID, "pairs"), ("r0", INT, "pairs"),
              ("logit", FLOAT, "verification"), ("query_tokens", INT, "pairs"), ("doc_tokens", INT, "pairs"),
              ("total_tokens", INT, "pairs"), ("truncated", BOOL, "pairs"), ("batch", INT, "pairs"),
              ("model", TEXT, "scorer_label")),
    "rankings": (("qid", ID, "blend"), ("doc_id", ID, "blend"), ("r0", INT, "blend"),
                 ("logit", FLOAT, "blend"), ("r1", INT, "ce_ranks"), ("blend_score", FLOAT, "blend"),
                 ("blend_rank", INT, "blend")),
}
# a study whose candidates are a user's TREC run (study.candidates: trec): its candidate table keeps the run's
# score as the run's own text
TREC_CANDIDATES = (("qid", ID, "candidates"), ("split", TEXT, "candidates"), ("rank", INT, "candidates"),
                   ("doc_id", ID, "candidates"), ("run_score", TEXT, "candidates"))
# a run-file reranker (study.reranker_kind: run): its tables and JSON records in place of a cross-encoder's
RUN_FILE_TABLES = {
    "reranker_scores": (("qid", ID, "reranker_run"), ("doc_id", ID, "reranker_run"), ("r0", INT,
                                                                                      "reranker_run"),
                        ("score", FLOAT, "reranker_run")),
}
# a table whose columns follow the settings: (key, kind of its value columns, the check)
PARAMETRIC_TABLES = {"per_query": (FLOAT, "per_query"), "grouped_indices": (INT, "bootstrap_indices"),
                     "query_indices": (INT, "bootstrap_indices"), "replicates": (FLOAT, "replicates")}
TREC_RUNS = {f"run_{m}": m for m in METHODS}  # re-rendered whole (check 'runs')
# files compared whole: key -> (what every line / leaf is, the check)
WHOLE_FILES = {"run_queries": ("one analysed query id per line", "analysed_queries"),
               "summary": ("every leaf recomputed or taken from the anchor; an unknown key fails",
                           "summary, evalstats"),
               **{k: (f"`qid Q0 doc rank n+1-rank {m}`", "runs") for k, m in TREC_RUNS.items()},
               **{f"table_{t}_{x}": (f"the {t} table rendered from the recomputed summary", "tables")
                  for t in ("methods", "comparisons") for x in ("csv", "tex")},
               **{f"meta_{m}": ("every line: rendered from the run's files, settings and pins, or of its "
                                "documented form (machine, checkout)", "run_metadata") for m in METHODS}}

# the special tokens of the BERT pair template [CLS] query [SEP] document [SEP]
PAIR_SPECIAL_TOKENS = 3

# JSON artefact key -> {key: the check that recomputes its value, or what it is declared as}; the key set must
# be this one. Declared values are checked by 'columns' for their kind only: PROVENANCE a measurement (one
# finite number >= 0: not null, a flag, a list or a record), TIMINGS a record of measurements with the keys
# TIMING_KEYS, PROSE a description (text; its words are not checked), FLAG a record of how the run was made
# (true/false; an opening's: checked by 'measurements'), MACHINE a record describing the machine (texts and
# numbers).
PROVENANCE, TIMINGS, PROSE, FLAG, MACHINE = "provenance", "timings", "prose", "flag", "machine"
DECLARED = (PROVENANCE, TIMINGS, PROSE, FLAG, MACHINE)
TIMING_KEYS = ("peak_rss_mib", "seconds")  # scoring.json's gather: the gathering step's own


def _keys(check: str, names: str, **declared: str) -> dict:
    return {**{n: check for n in names.split()}, **declared}


_TIMINGS = {n: PROVENANCE for n in ("inference_seconds", "stage_seconds", "peak_rss_mib")}
JSON_KEYS = {
    "manifest": {**_keys("manifest", "kind run labels code_sha256 method_sha256 protocol_sha256"),
                 **_keys("layout", "artefacts lockdir"), **_keys("scorer_label", "model_identity "
                                                                                "model_weights_sha256 "
                                                                                "scorer"),
                 "settings": "settings"},
    "verification": _keys("verification", "all_equal k pairs pairs_compared queries sample seed", rule=PROSE),
    "shape_check": _keys("shape_check", "doc_ids expected hidden_size input_ids last_hidden_state logits "
                                        "model ok padding pairs qid"),
    "groups_meta": _keys("groups", "groups inputs n_groups n_queries size_histogram", rule=PROSE),
    "scoring_measurements": {  # the gathered record: sums and copies of the shard records (shard_records)
        **_keys("measurements", "kind model numerics pairs truncated_pairs settings versions "
                                "cache_entries_verified model_load_seconds padded_tokens_inferred "
                                "pairs_from_cache pairs_inferred pairs_per_second_inference per_shard shards "
                                "threads threads_granted_by_scheduler tokens_inferred useful_gflop_inferred "
                                "fresh_inference inference_seconds peak_rss_mib"),
        "stage_seconds": PROVENANCE, "gather": TIMINGS, "_note": PROSE},
    # measurements/score-of-<N>/<i>.json, one per scoring shard (checks.measurements.check_shard_records)
    "shard_measurements": {
        **_keys("measurements", "numerics pairs queries settings shape_check shard shards truncated_pairs "
                                "versions cache_entries_verified padded_tokens_inferred pairs_from_cache "
                                "pairs_inferred threads threads_granted_by_scheduler tokens_inferred "
                                "fresh_inference"),
        **_TIMINGS, "machine": MACHINE,
        **{n: PROVENANCE for n in ("model_load_seconds", "shape_check_seconds", "tokenizer_load_seconds")},
        "useful_gflop_inferred": "measurements",
        "shape_check_from_cache": FLAG, "_note": PROSE},
    "verification_measurements": {**_keys("measurements", "batches numerics pairs_inferred"), **_TIMINGS,
                                  "threads": PROVENANCE, "_note": PROSE},
    "report_measurements": {
        **{n: "measurements" for n in ("torch threads (granted by the scheduler; speed only)",
                                       "pairs scored / inferred / from cache", "truncated pairs (> "
                                       "max_length tokens)",
                                       "model-load seconds", "model-inference seconds",
                                       "scoring stage seconds", "pairs / second (inference)", "peak RSS of "
                                       "the scoring process (MiB)")},
        **{f"rule {r} seconds (snakemake benchmark)": PROVENANCE for r in ("score", "evaluate", "analyse")},
        "machine": PROSE, "_note": PROSE},
    # every leaf below these keys is recomputed (a sample of the recorded simulations; every tally from
    # the recorded ones): checks.calibration
    "calibration": _keys("calibration", "comparisons computable confirmation_n data methods metric primary "
                                        "reason settings simulations"),
}
RUN_FILE_JSON_KEYS = {
    "manifest": JSON_KEYS["manifest"],
    "groups_meta": JSON_KEYS["groups_meta"],
    "calibration": JSON_KEYS["calibration"],
    "reranker_run": _keys("reranker_run",
                          "reranker file sha256 identity weights_sha256 queries pairs all_tied_queries",
                          tie_rule=PROSE),
    "report_measurements": {**{f"rule {r} seconds (snakemake benchmark)": PROVENANCE
                               for r in ("reranker_scores", "evaluate", "analyse")}, "machine": PROSE,
                               "_note": PROSE},
}
# the cross-study table of a multi-study invocation (results/cross-study/<a>+<b>/cross_study.tsv): one row per
# study, every value copied from that study's audited run (summary.json, manifest.json, audit.json) and the
# study file; the table is not a run artefact and no check of a run recomputes it
CROSS_STUDY_SOURCE = "copied from the study's audited run"
CROSS_STUDY = tuple((c, kind, CROSS_STUDY_SOURCE) for c, kind in (
    ("study", TEXT), ("dataset", TEXT), ("reranker_kind", TEXT), ("reranker", TEXT), ("reranker_sha256",
                                                                                      TEXT),
    ("backend", TEXT), ("scorer", TEXT), ("run", TEXT), ("n_queries", INT), ("n_groups", INT),
    ("rrf_mean", FLOAT),
    ("ce_mean", FLOAT), ("blend_mean", FLOAT), ("primary", TEXT), ("primary_delta", FLOAT),
    ("primary_grouped_lo", FLOAT), ("primary_grouped_hi", FLOAT), ("audit", TEXT)))
# its retention section (cross_study_retention.tsv): one row per study of a derived backend, computed from its
# audited run and its torch twin's (the cross-study rule; no run check recomputes it)
CROSS_RETENTION_SOURCE = "the study's audited run against its torch twin's (conclusion retention)"
CROSS_RETENTION = tuple((c, kind, CROSS_RETENTION_SOURCE) for c, kind in (
    ("study", TEXT), ("backend", TEXT), ("torch_study", TEXT), ("torch_primary_mean", FLOAT),
    ("torch_grouped_lo", FLOAT), ("torch_grouped_hi", FLOAT), ("primary_mean", FLOAT), ("grouped_lo", FLOAT),
    ("grouped_hi", FLOAT), ("delta_difference", FLOAT), ("delta_difference_lo", FLOAT),
    ("delta_difference_hi", FLOAT), ("verdicts_changed", TEXT), ("conclusion_retained", TEXT),
    ("kendall_tau_b_min", FLOAT), ("kendall_tau_b_median", FLOAT), ("top10_overlap_min", FLOAT),
    ("top10_overlap_mean", FLOAT), ("max_abs_delta_logit", FLOAT), ("note", TEXT)))


def tables_of(settings: dict) -> dict:
    """The documented fixed tables of a run made with ``settings`` (its anchor's): the candidate table of its
    candidate source, the scores of its reranker's kind."""
    study = settings["study"]
    out = {k: v for k, v in TABLES.items() if not (k == "pairs" and study["reranker_kind"] == "run")}
    if study["candidates"] == "trec":
        out["run_candidates"] = TREC_CANDIDATES
    return {**out, **(RUN_FILE_TABLES if study["reranker_kind"] == "run" else {})}


def json_keys_of(settings: dict) -> dict:
    """The documented JSON records of a run made with ``settings``, by its reranker's kind."""
    return RUN_FILE_JSON_KEYS if settings["study"]["reranker_kind"] == "run" else JSON_KEYS


# the keys of scoring.json's settings record: the scoring contract's values, and two descriptions
SCORING_SETTINGS = {"batch_size": "measurements", "dtype": "measurements", "max_length": "measurements",
                    "seed": "measurements", "truncation": "measurements", "batching": PROSE,
                    "numerics": PROSE}


def scoring_settings_of(settings: dict) -> dict:
    """The keys of a run's scoring settings record: a derived backend's adds its name (docs/backends.md)."""
    return {**SCORING_SETTINGS, **({"backend": "settings"} if "backend" in settings else {})}


# the scoring contract every measurement record must state (docs/scoring.md)
NUMERICS = "AUTO,STRICT"
DTYPE = "float32"

_CANONICAL = {
    ID: re.compile(r"[^\s]+"),
    INT: re.compile(r"[+-]?[0-9]+"),
    BOOL: re.compile(r"true|false"),
    TEXT: re.compile(r"[^\t\r\n]+"),
}


def cell_is(text: str, value) -> bool:
    """Whether a table cell holds ``value``: a number by value (``8.0`` is 8, ``-0.0`` is 0.0, ``5e0`` is 5),
    a flag as true/false, anything else as its text."""
    if value is True or value is False:
        return text == str(value).lower()
    if isinstance(value, (int, float)):
        return plain_number(text) == value
    return text == str(value)


def canonical(kind: str, text: str, empty_allowed: bool = False) -> bool:
    """Whether ``text`` is readable as its kind: a float a plain decimal number, an integer a whole number
    without a decimal point (a count), true/false, an id without white space. An empty cell only where the
    table allows it (a rank of a document a list does not hold)."""
    if text == "":
        return empty_allowed
    if kind == FLOAT:
        return not math.isnan(plain_number(text))
    return _CANONICAL[kind].fullmatch(text) is not None


EMPTY_ALLOWED = {("run_candidates", "bm25_rank"), ("run_candidates", "dense_rank")}  # in one list only
EMPTY_ALLOWED_SUFFIX = "_first_rel_rank"  # per_query: no relevant document in the list


def table_columns(key: str, settings: dict, n_groups: int, n_queries: int) -> list[tuple[str, str, str]]:
    """The documented (column, kind, check) of a table, the parametric ones named from the settings."""
    fixed = tables_of(settings) if "study" in settings else {**TABLES, **RUN_FILE_TABLES}
    if key in fixed:
        return list(fixed[key])
    kind, check = PARAMETRIC_TABLES[key]
    if key == "per_query":
        ms = settings["metrics"]
        names = ([f"ndcg@{ms['ndcg_k']}"] + [f"recall@{k}" for k in ms["recall_ks"]]
                 + [f"capped_recall@{k}" for k in ms["recall_ks"]] + [f"mrr@{ms['mrr_k']}"])
        cols = [("qid", ID, check), ("n_relevant", INT, check), ("n_relevant_in_candidates", INT, check)]
        for m in METHODS:
            cols += [(f"{m}_{n}", kind, check) for n in names] + [(f"{m}_first_rel_rank", INT, check)]
        return cols
    if key == "replicates":
        names = [f"{level}_{c}" for c in settings["comparisons"]["all"] for level in ("grouped", "query")]
        return [("replicate", INT, check)] + [(n, kind, check) for n in names]
    width = n_groups if key == "grouped_indices" else n_queries
    return [("replicate", INT, check)] + [(f"draw{j}", kind, check) for j in range(width)]


def markdown() -> str:
    """The table above as docs/outputs.md shows it ("Every column and key"; a test holds them equal)."""
    lines = ["| file | column or key | written as | recomputed by (or declared as) |", "|---|---|---|---|"]
    for key, cols in TABLES.items():
        lines += [f"| `{key}` | `{c}` | {kind} | {check} |" for c, kind, check in cols]
    for key, (kind, check) in PARAMETRIC_TABLES.items():
        lines.append(f"| `{key}` | every column (named from the settings) | {kind} (ids and counts: id, "
                     f"int) | {check} |")
    lines += [f"| `{key}` | the whole file | {what} | {check} |" for key, (what,
                                                                           check) in WHOLE_FILES.items()]
    for key, keys in JSON_KEYS.items():
        lines += [f"| `{key}` | `{k}` | JSON | {check} |" for k, check in keys.items()]
    lines += [f"| `scoring_measurements` | `settings.{k}` | JSON | {check} |"
              for k, check in SCORING_SETTINGS.items()]
    lines.append("| `scoring_measurements` (ce.backend: a derived file) | `settings.backend` | JSON | "
                 "settings |")
    trec = "`run_candidates` (candidates: trec)"
    lines += [f"| {trec} | `{c}` | {kind} | {check} |" for c, kind, check in TREC_CANDIDATES]
    for key, cols in RUN_FILE_TABLES.items():
        lines += [f"| `{key}` (reranker_kind: run) | `{c}` | {kind} | {check} |" for c, kind, check in cols]
    for key in ("reranker_run", "report_measurements"):
        lines += [f"| `{key}` (reranker_kind: run) | `{k}` | JSON | {check} |"
                  for k, check in RUN_FILE_JSON_KEYS[key].items()]
    lines += [f"| `cross_study` (several studies) | `{c}` | {kind} | {check} |"
              for c, kind, check in CROSS_STUDY]
    lines += [f"| `cross_study_retention` (several studies, a derived backend) | `{c}` | {kind} | {check} |"
              for c, kind, check in CROSS_RETENTION]
    return "\n".join(lines) + "\n"
