"""The layout, in one place: the files of a lock folder and every artefact of a run (key, path inside the run
folder, role, whether the same inputs and pins give the same bytes). The rules' paths (``common.smk``), the
manifest rule, the reproduction check and the documentation (docs/outputs.md) read this table; the
independent audit keeps its own copy of it and a test holds the two equal.
"""

from __future__ import annotations

from dataclasses import dataclass

from .names import CROSS_ENCODER, RERANKER_KINDS

# ------------------------------------------------------------------------------------- a lock folder --
DATA_PINS = "data_pins.json"          # the dataset: archive, every file's sha256, qrels content hashes, roles
MODEL_PINS = "model_pins.json"        # the reranker (and the bi-encoder of the candidate generator)
DERIVED_PINS = "derived_pins.json"    # the splits, the frozen candidates, the sealed set record
SPLIT_DEV = "splits/dev.txt"
SPLIT_CONFIRM = "splits/confirm.txt"
CANDIDATES = "candidates/candidates.tsv"  # the frozen candidate table every run reads
TREC_RUN = "candidates/run.trec"          # a TREC-run study's own run (byte copy), the source of its table
RERANKER_DEV_RUN = "reranker/dev.trec"    # a run-file reranker's development run (byte copy, pinned)
# its confirmation run, blind-submitted at freeze (protocol pin)
RERANKER_CONFIRM_RUN = "reranker/confirm.trec"
# the retrievers' ranked lists behind the frozen RRF table (provenance)
FROZEN_BM25 = "candidates/bm25.tsv.gz"
FROZEN_DENSE = "candidates/dense.tsv.gz"
REFERENCES = "reference"                  # reference/<name>/: committed fingerprints of reference runs
TEST_FIXTURE = "TEST_FIXTURE"             # marker of a test-suite lock folder (never the repository's own)
STUDY_LOCKDIRS = "lockfiles/studies"      # another study's lock folder: lockfiles/studies/<study>/


@dataclass(frozen=True)
class Artefact:
    key: str            # the rules' path key (``P[key]``) and the manifest's entry key
    path: str           # inside the run folder
    role: str           # what the audit checks it as
    # same inputs + pins => the same bytes (else: measurements, and the report showing them)
    deterministic: bool


# the inputs outside the run folder a manifest lists: (key, role); the analysed qrels (development or sealed)
# are added per run
INPUTS = (("corpus", "corpus"), ("queries", "queries"), ("split_dev", "split_dev"),
          ("split_confirm", "split_confirm"), ("candidates", "candidates"))
QRELS_KEYS = ("qrels_dev", "qrels_confirm")

RUN_ARTEFACTS = (
    Artefact("run_queries", "inputs/queries.txt", "analysed_queries", True),
    Artefact("run_candidates", "inputs/candidates.tsv", "candidates", True),
    Artefact("run_qrels", "inputs/qrels.tsv", "qrels_run", True),
    Artefact("groups", "groups.tsv", "groups", True),
    Artefact("groups_meta", "groups.json", "groups", True),
    Artefact("pairs", "pairs.tsv", "pairs", True),
    Artefact("shape_check", "shape_check.json", "shape_check", True),
    Artefact("verification", "verification.json", "verification", True),
    Artefact("rankings", "rankings.tsv", "rankings", True),
    Artefact("run_rrf", "runs/rrf.trec", "runs", True),
    Artefact("run_ce", "runs/ce.trec", "runs", True),
    Artefact("run_blend", "runs/blend.trec", "runs", True),
    # the ir_metadata sidecars of the runs (machine and checkout facts: not byte-reproducible)
    Artefact("meta_rrf", "runs/rrf.yaml", "run_metadata", False),
    Artefact("meta_ce", "runs/ce.yaml", "run_metadata", False),
    Artefact("meta_blend", "runs/blend.yaml", "run_metadata", False),
    Artefact("per_query", "per_query.tsv", "per_query", True),
    Artefact("grouped_indices", "bootstrap/grouped_indices.tsv", "bootstrap_indices", True),
    Artefact("query_indices", "bootstrap/query_indices.tsv", "bootstrap_indices", True),
    Artefact("replicates", "bootstrap/replicates.tsv", "replicates", True),
    Artefact("summary", "summary.json", "summary", True),
    Artefact("calibration", "calibration.json", "calibration", True),
    Artefact("forest_plot", "figures/forest.png", "figure", True),
    Artefact("delta_plot", "figures/primary_delta.png", "figure", True),
    Artefact("power_plot", "figures/power_curve.png", "figure", True),
    Artefact("table_methods_csv", "tables/methods.csv", "paper_table", True),
    Artefact("table_methods_tex", "tables/methods.tex", "paper_table", True),
    Artefact("table_comparisons_csv", "tables/comparisons.csv", "paper_table", True),
    Artefact("table_comparisons_tex", "tables/comparisons.tex", "paper_table", True),
    Artefact("report", "report.md", "report", False),
    # report.md as one page, per-query table added
    Artefact("report_html", "report.html", "report_html", False),
    Artefact("scoring_measurements", "measurements/scoring.json", "measurements", False),
    Artefact("verification_measurements", "measurements/verification.json", "measurements", False),
    Artefact("report_measurements", "measurements/report.json", "measurements", False),
    Artefact("reranker_scores", "reranker_scores.tsv", "reranker_scores", True),
    Artefact("reranker_run", "reranker_run.json", "reranker_run", True),
)
# what depends on the reranker's kind (study.reranker_kind): a cross-encoder's scoring artefacts, or the
# scores a run-file reranker's pinned run gives the analysed candidates and the record of that run
CROSS_ENCODER_ONLY = frozenset({"pairs", "shape_check", "verification", "scoring_measurements",
                                "verification_measurements"})
RUN_FILE_ONLY = frozenset({"reranker_scores", "reranker_run"})

# the run's other files: not in the manifest (the manifest and the audit themselves, conveniences, an
# opening's records, the reproduction check)
RUN_FILES = {
    "manifest": "manifest.json",
    "audit": "audit.json",
    # Parquet copies for pandas users (the TSVs are the audited files)
    "pairs_parquet": "pairs.parquet",
    "per_query_parquet": "per_query.parquet",
    "reproduction": "reproduction.md",
    "reproduction_json": "reproduction.json",
    # an opening: its started ledger line (written before the copy)
    "opening_started": "OPENING_STARTED.json",
    "opening": "OPENING.json",                  # an opening: its completed ledger line
}
SEALED_FOLDER = "sealed"  # an opening: the sealed judgements it copied (sealed/<pinned name>)

NON_DETERMINISTIC = frozenset(a.key for a in RUN_ARTEFACTS if not a.deterministic)


def run_paths(rundir: str) -> dict[str, str]:
    """{key: path} of every file of a run folder (artefacts and the other files)."""
    return {**{a.key: f"{rundir}/{a.path}" for a in RUN_ARTEFACTS},
            **{k: f"{rundir}/{p}" for k, p in RUN_FILES.items()}}


def run_artefacts(reranker_kind: str = CROSS_ENCODER) -> tuple[Artefact, ...]:
    """The run artefacts of a study whose reranker is of ``reranker_kind`` (``cross-encoder`` or ``run``)."""
    if reranker_kind not in RERANKER_KINDS:
        raise ValueError(f"unknown reranker kind {reranker_kind!r}; known: {RERANKER_KINDS}")
    left_out = RUN_FILE_ONLY if reranker_kind == CROSS_ENCODER else CROSS_ENCODER_ONLY
    return tuple(a for a in RUN_ARTEFACTS if a.key not in left_out)


def manifest_keys(qrels_key: str, reranker_kind: str = CROSS_ENCODER) -> list[str]:
    """Every artefact key of a run's manifest, inputs first; ``qrels_key`` is qrels_dev or qrels_confirm."""
    return [k for k, _ in INPUTS] + [qrels_key] + [a.key for a in run_artefacts(reranker_kind)]


def role_of(key: str) -> tuple[str, str]:
    """(role, scope) of an artefact key."""
    for k, role in INPUTS:
        if k == key:
            return role, "input"
    if key in QRELS_KEYS:
        return key, "input"
    for a in RUN_ARTEFACTS:
        if a.key == key:
            return a.role, "run"
    raise KeyError(f"unknown artefact key {key!r}")
