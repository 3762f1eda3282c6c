"""The documented layout of a run folder (docs/outputs.md), kept here independently of the pipeline's own
table (its layout module; a test holds the two equal): every artefact a manifest must list - key, path inside
the run folder, role, whether its bytes are reproducible - and every other file a run folder may hold. The
manifest does not decide what is audited: a manifest that lists another set, another path or another role
fails, and so does a file in the run folder that the layout does not name."""

from __future__ import annotations

# the inputs outside the run folder (key, role); plus the analysed judgements: qrels_dev (a development run)
# or qrels_confirm (an opening)
INPUTS = (("corpus", "corpus"), ("queries", "queries"), ("split_dev", "split_dev"),
          ("split_confirm", "split_confirm"), ("candidates", "candidates"))
QRELS_OF_KIND = {"development": "qrels_dev", "confirmation": "qrels_confirm"}

# key: (path inside the run folder, role, deterministic)
RUN_ARTEFACTS = {
    "run_queries": ("inputs/queries.txt", "analysed_queries", True),
    "run_candidates": ("inputs/candidates.tsv", "candidates", True),
    "run_qrels": ("inputs/qrels.tsv", "qrels_run", True),
    "groups": ("groups.tsv", "groups", True),
    "groups_meta": ("groups.json", "groups", True),
    "pairs": ("pairs.tsv", "pairs", True),
    "shape_check": ("shape_check.json", "shape_check", True),
    "verification": ("verification.json", "verification", True),
    "rankings": ("rankings.tsv", "rankings", True),
    "run_rrf": ("runs/rrf.trec", "runs", True),
    "run_ce": ("runs/ce.trec", "runs", True),
    "run_blend": ("runs/blend.trec", "runs", True),
    "meta_rrf": ("runs/rrf.yaml", "run_metadata", False),
    "meta_ce": ("runs/ce.yaml", "run_metadata", False),
    "meta_blend": ("runs/blend.yaml", "run_metadata", False),
    "per_query": ("per_query.tsv", "per_query", True),
    "grouped_indices": ("bootstrap/grouped_indices.tsv", "bootstrap_indices", True),
    "query_indices": ("bootstrap/query_indices.tsv", "bootstrap_indices", True),
    "replicates": ("bootstrap/replicates.tsv", "replicates", True),
    "summary": ("summary.json", "summary", True),
    "calibration": ("calibration.json", "calibration", True),
    "forest_plot": ("figures/forest.png", "figure", True),
    "delta_plot": ("figures/primary_delta.png", "figure", True),
    "power_plot": ("figures/power_curve.png", "figure", True),
    "table_methods_csv": ("tables/methods.csv", "paper_table", True),
    "table_methods_tex": ("tables/methods.tex", "paper_table", True),
    "table_comparisons_csv": ("tables/comparisons.csv", "paper_table", True),
    "table_comparisons_tex": ("tables/comparisons.tex", "paper_table", True),
    "report": ("report.md", "report", False),
    "report_html": ("report.html", "report_html", False),
    "scoring_measurements": ("measurements/scoring.json", "measurements", False),
    "verification_measurements": ("measurements/verification.json", "measurements", False),
    "report_measurements": ("measurements/report.json", "measurements", False),
    "reranker_scores": ("reranker_scores.tsv", "reranker_scores", True),
    "reranker_run": ("reranker_run.json", "reranker_run", True),
}
# what depends on the reranker's kind (study.reranker_kind of the ANCHOR): a cross-encoder's scoring
# artefacts, or a run-file reranker's scores of the analysed candidates and the record of its pinned run
CROSS_ENCODER, RUN_FILE = "cross-encoder", "run"
CROSS_ENCODER_ONLY = ("pairs", "shape_check", "verification", "scoring_measurements",
                      "verification_measurements")
RUN_FILE_ONLY = ("reranker_scores", "reranker_run")

# the run's other files: the manifest and the audit themselves, conveniences, an opening's records, the
# reproduction check, and the jobs' logs, benchmarks and intermediate shards
RUN_FILES = ("manifest.json", "audit.json", "pairs.parquet", "per_query.parquet", "reproduction.md",
             "reproduction.json")
OPENING_FILES = ("OPENING_STARTED.json", "OPENING.json")
# the rules whose log and benchmark files a run folder holds (a test holds this list equal to the rule files)
RULES = ("analyse", "audit", "calibrate", "check_reproduction", "evaluate", "fetch_sealed_qrels", "groups",
         "manifest", "parquet", "record_opening", "report", "reranker_scores", "run_inputs", "run_metadata",
         "score", "tables", "verify_scores")
# the rules that run for one kind of run or of reranker only (every other rule: for every run)
OPENING_RULES = ("fetch_sealed_qrels", "record_opening")
RULES_OF_RERANKER = {CROSS_ENCODER: ("score", "verify_scores"), RUN_FILE: ("reranker_scores",)}
SEALED_FOLDER = "sealed"  # an opening only: sealed/<the sealed file's pinned name>


def run_artefacts(reranker_kind: str = CROSS_ENCODER) -> list[str]:
    """The run artefact keys of a study whose reranker is of ``reranker_kind``, in the pipeline's order."""
    if reranker_kind not in (CROSS_ENCODER, RUN_FILE):
        raise ValueError(f"unknown reranker kind {reranker_kind!r}")
    left_out = RUN_FILE_ONLY if reranker_kind == CROSS_ENCODER else CROSS_ENCODER_ONLY
    return [k for k in RUN_ARTEFACTS if k not in left_out]


def manifest_keys(kind: str, reranker_kind: str = CROSS_ENCODER) -> list[str]:
    """Every key a manifest of a run of ``kind`` lists, in the pipeline's order."""
    return [k for k, _ in INPUTS] + [QRELS_OF_KIND[kind]] + run_artefacts(reranker_kind)


def role_of(key: str) -> str:
    for k, role in INPUTS:
        if k == key:
            return role
    if key in QRELS_OF_KIND.values():
        return key
    return RUN_ARTEFACTS[key][1]


def shard_files(shards: int) -> set[str]:
    """The files each of the ``shards`` scoring jobs (i of N, from 0; ce.shards of the anchor, 0 for a
    run-file reranker) writes into the run folder: its table, its measurement record, its log and its
    benchmark."""
    return {name for i in range(shards) for name in (
        f"shards/score-of-{shards}/{i}.tsv", f"measurements/score-of-{shards}/{i}.json",
        f"logs/score_shard/{i}-of-{shards}.log", f"logs/score_shard/{i}-of-{shards}.job.json",
        f"benchmarks/score_shard/{i}-of-{shards}.tsv")}


def rule_files(kind: str, reranker_kind: str) -> set[str]:
    """The log, job record and benchmark of each rule that runs for a run of ``kind`` whose reranker is of
    ``reranker_kind`` (an opening's rules in an opening only; a cross-encoder's scoring rules or a run file's
    scores rule, by the reranker)."""
    skipped = {r for k, rules in RULES_OF_RERANKER.items() if k != reranker_kind for r in rules}
    if kind != "confirmation":
        skipped |= set(OPENING_RULES)
    return {name for r in RULES if r not in skipped
            for name in (f"logs/{r}.log", f"logs/{r}.job.json", f"benchmarks/{r}.tsv")}


def allowed_file(rel: str, kind: str, sealed_name: str | None, reranker_kind: str = CROSS_ENCODER, *,
                 shards: int) -> bool:
    """Whether a file of the run folder (posix path relative to it) is part of the documented layout, for a
    run scored in ``shards`` shards."""
    if rel in shard_files(shards):
        return True
    if rel in OPENING_FILES:  # an opening's ledger lines: a development run opens nothing
        return kind == "confirmation"
    if rel in RUN_FILES or any(rel == RUN_ARTEFACTS[k][0] for k in run_artefacts(reranker_kind)):
        return True
    if kind == "confirmation" and sealed_name and rel == f"{SEALED_FOLDER}/{sealed_name}":
        return True
    return rel in rule_files(kind, reranker_kind)
