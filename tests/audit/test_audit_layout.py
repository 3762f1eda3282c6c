"""The audit's own copy of the documented layout equals the pipeline's table (rerank_study.core.layout), and a
manifest, a run folder or a lock folder that does not follow it is refused
(tests/audit/test_audit_corruptions.py runs the corruptions on real runs)."""

from __future__ import annotations

import re

from conftest import ROOT, audit_module

from rerank_study.core import layout


def test_the_audit_layout_is_the_pipelines():
    audit_layout = audit_module("read.layout")
    assert audit_layout.INPUTS == layout.INPUTS
    assert set(audit_layout.QRELS_OF_KIND.values()) == set(layout.QRELS_KEYS)
    assert audit_layout.RUN_ARTEFACTS == {a.key: (a.path, a.role, a.deterministic)
                                          for a in layout.RUN_ARTEFACTS}
    assert set(audit_layout.RUN_FILES) | set(audit_layout.OPENING_FILES) == set(layout.RUN_FILES.values())
    assert audit_layout.SEALED_FOLDER == layout.SEALED_FOLDER
    for kind, qrels in audit_layout.QRELS_OF_KIND.items():
        assert audit_layout.manifest_keys(kind) == layout.manifest_keys(qrels)
        assert audit_layout.manifest_keys(kind, "run") == layout.manifest_keys(qrels, "run")
        for key in audit_layout.manifest_keys(kind):
            assert audit_layout.role_of(key) == layout.role_of(key)[0]


def test_only_documented_files_belong_to_a_run_folder():
    allowed = audit_module("read.layout").allowed_file
    for rel in ("report.md", "pairs.tsv", "logs/score.log", "logs/score_shard/0-of-4.job.json",
                "logs/score_shard/3-of-4.log", "benchmarks/score_shard/3-of-4.tsv", "shards/score-of-4/3.tsv",
                "measurements/score-of-4/0.json", "audit.json", "pairs.parquet"):
        assert allowed(rel, "development", None, shards=4), rel
    for rel in ("report-honest.md", "inputs/extra.tsv", "runs/rrf.trec.bak", "sealed/qrels/test.tsv",
                "logs/../report.md", "figures/other.png",
                # a shard's files of another shard count, or beyond the last shard
                "measurements/score-of-1/0.json", "shards/score-of-2/0.tsv", "logs/score_shard/4-of-4.log",
                "benchmarks/score_shard/0-of-1.tsv", "measurements/score-of-4/4.json",
                "logs/score_shard/0-of-4.job.json.bak"):
        assert not allowed(rel, "development", None, shards=4), rel
    assert allowed("measurements/score-of-1/0.json", "development", None, shards=1)
    assert allowed("sealed/qrels/test.tsv", "confirmation", "qrels/test.tsv", shards=1)
    # a run-file reranker's run folder: its scores and record, none of a cross-encoder's scoring artefacts
    assert allowed("reranker_scores.tsv", "development", None, "run", shards=0)
    assert allowed("reranker_run.json", "development", None, "run", shards=0)
    assert not allowed("pairs.tsv", "development", None, "run", shards=0)
    assert not allowed("shards/score-of-1/0.tsv", "development", None, "run", shards=0)
    assert not allowed("reranker_run.json", "development", None, shards=1)
    assert not allowed("sealed/qrels/train.tsv", "confirmation", "qrels/test.tsv", shards=1)


def test_the_documented_columns_are_the_audits():
    """docs/outputs.md "Every column and key" is the audit's columns table, rendered."""
    doc = (ROOT / "docs" / "outputs.md").read_text(encoding="utf-8")
    assert audit_module("read.columns").markdown() in doc


def test_the_cross_study_table_is_declared_column_by_column():
    from rerank_study.report.cross_table import CROSS_STUDY_COLUMNS, RETENTION_COLUMNS

    assert tuple(c for c, _, _ in audit_module("read.columns").CROSS_STUDY) == CROSS_STUDY_COLUMNS
    assert tuple(c for c, _, _ in audit_module("read.columns").CROSS_RETENTION) == RETENTION_COLUMNS


def test_every_table_and_json_artefact_has_its_columns_documented():
    """Every run artefact that is a table, a list or a JSON record is in the columns table (the figures and
    the report are checked by their own checks)."""
    columns, audit_layout = audit_module("read.columns"), audit_module("read.layout")
    covered = (set(columns.TABLES) | set(columns.PARAMETRIC_TABLES) | set(columns.JSON_KEYS)
               | set(columns.WHOLE_FILES))
    # a run-file reranker's artefacts
    covered |= set(columns.RUN_FILE_TABLES) | set(columns.RUN_FILE_JSON_KEYS)
    for key, (path, _role, _det) in audit_layout.RUN_ARTEFACTS.items():
        if path.endswith((".tsv", ".json", ".trec", ".txt", ".yaml")):
            assert key in covered, key


def test_the_audits_rule_names_are_the_rules_that_write_into_a_run_folder():
    """Log and benchmark files are allowed by the names of the rules that write them, not by any name."""
    text = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "workflow" / "rules").glob("*.smk"))
    written = set(re.findall(r'(?:log|bench)_of\("([a-z_]+)"\)', text))
    assert written == set(audit_module("read.layout").RULES)


def test_a_rules_log_belongs_only_to_the_runs_its_rule_runs_for():
    """An opening's rules (the sealed judgements fetched, the opening recorded) log in an opening only; the
    cross-encoder's scoring rules in a cross-encoder's run only, a run file's scores rule in its own only."""
    allowed = audit_module("read.layout").allowed_file
    for rel in ("logs/fetch_sealed_qrels.log", "benchmarks/record_opening.tsv"):
        assert allowed(rel, "confirmation", "qrels/test.tsv", shards=1)
        assert not allowed(rel, "development", None, shards=1)
    for rel in ("logs/score.log", "logs/verify_scores.job.json", "benchmarks/verify_scores.tsv"):
        assert allowed(rel, "development", None, "cross-encoder", shards=1)
        assert not allowed(rel, "development", None, "run", shards=0)
    assert allowed("logs/reranker_scores.log", "development", None, "run", shards=0)
    assert not allowed("logs/reranker_scores.log", "development", None, "cross-encoder", shards=1)
    for rel in ("logs/analyse.log", "logs/audit.job.json", "benchmarks/report.tsv"):
        assert all(allowed(rel, kind, None, rk, shards=1) for kind in ("development", "confirmation")
                   for rk in ("cross-encoder", "run"))
    assert not allowed("logs/analyse.txt", "development", None, shards=1)


def test_an_openings_files_belong_only_to_an_opening():
    allowed = audit_module("read.layout").allowed_file
    for rel in ("OPENING.json", "OPENING_STARTED.json"):
        assert allowed(rel, "confirmation", "qrels/test.tsv", shards=1)
        assert not allowed(rel, "development", None, shards=1)
    assert not allowed("logs/verdict.log", "development", None, shards=1)
    assert not allowed("benchmarks/verdict.tsv", "development", None, shards=1)
    assert not allowed(".audit.json.note", "development", None, shards=1)
