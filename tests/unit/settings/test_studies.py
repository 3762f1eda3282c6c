"""Studies at parse time (rerank_study.settings.studies): the study list from the command line, unknown study
names, a
study file's paths (relative to it) and outputs (under the study), a bad value named with the file to fix, the
cross-study row read from the summary it is given, study files the audit cannot read as PyYAML does stopped at
start."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT, STUDY_DIR, SYNTH, audit_module, write_yaml

from rerank_study.report import cross_table
from rerank_study.settings import studies
from rerank_study.settings.config import load_config


def test_study_list_from_the_command_line_and_config():
    assert studies.parse_study_list("[a,b]") == ["a", "b"]
    assert studies.parse_study_list("a, b") == ["a", "b"]
    assert studies.parse_study_list(["x.yaml"]) == ["x.yaml"]
    assert studies.parse_study_list("") == [] and studies.parse_study_list([]) == []


def test_unknown_study_names_the_known_ones_and_the_fix(tmp_path):
    with pytest.raises(studies.StudyError) as exc:
        studies.study_file("nfcorpus-minilmm", ROOT)
    msg = str(exc.value)
    assert "nfcorpus-minilmm" in msg and "scifact-minilm" in msg and "config/studies" in msg and "Fix" in msg


def test_study_config_paths_are_relative_to_the_study_file_and_outputs_go_under_the_study(tmp_path):
    base = load_config(ROOT / "config" / "config.yaml")
    cfg = studies.study_config(base, STUDY_DIR / "synthetic.yaml")
    assert cfg["study"]["name"] == "synthetic-tiny" and cfg["study"]["candidates"] == "trec"
    assert Path(cfg["lockdir"]) == (STUDY_DIR / "synthetic" / "lockfiles").resolve()
    assert Path(cfg["data_mirror"]) == SYNTH.resolve()
    assert cfg["results"] == "results/synthetic-tiny" and cfg["resources"] == "resources/synthetic-tiny"
    assert cfg["metrics"]["recall_ks"] == [10, 20] and cfg["metrics"]["ndcg_k"] == 10  # merged, not replaced
    assert cfg["study_file"] == str((STUDY_DIR / "synthetic.yaml").resolve()) and cfg["studies"] == []
    # the shipped default study file IS config.yaml's study, with the repository's lock folder
    default = studies.study_config(base, ROOT / "config" / "studies" / "scifact-minilm.yaml")
    assert default["study"] == base["study"] and Path(default["lockdir"]) == (ROOT / "lockfiles").resolve()


def test_a_study_file_with_a_bad_value_is_named(tmp_path):
    bad = write_yaml(tmp_path / "bad.yaml", {"study": {"name": "bad-one", "candidates": "bm25"},
                                             "lockdir": "x"})
    with pytest.raises(studies.StudyError) as exc:
        studies.study_config(load_config(ROOT / "config" / "config.yaml"), bad)
    assert "bad-one" in str(exc.value) and "study.candidates" in str(exc.value) \
        and f"fix the study file {bad}" in str(exc.value)
    lockless = write_yaml(tmp_path / "lockless.yaml", {"study": {"name": "lockless"}})
    with pytest.raises(studies.StudyError, match="names no lockdir"):
        studies.study_config(load_config(ROOT / "config" / "config.yaml"), lockless)


def test_cross_study_row_reads_the_summary_it_is_given():
    summary = {"primary": "blend-ce", "metric": "ndcg@10", "scorer": "pinned", "n_queries": 7, "n_groups": 5,
               "methods": {"rrf": {"mean": 0.1}, "ce": {"mean": 0.2}, "blend": {"mean": 0.3}},
               "comparisons": {"blend-ce": {"mean": 0.1, "grouped_interval": [-0.05, 0.25]}}}
    cfg = {"study": {"name": "s", "dataset": "d", "reranker": "m", "reranker_kind": "run"}}
    manifest = {"model_identity": "m run:reranker/dev.trec", "model_weights_sha256": "ab" * 32}
    row = cross_table.cross_study_row(cfg, summary, {"ok": True}, "dev", manifest)
    assert row == {"study": "s", "dataset": "d", "reranker_kind": "run",
                   "reranker": "m run:reranker/dev.trec",
                   "reranker_sha256": "ab" * 32, "backend": "none", "scorer": "pinned", "run": "dev",
                   "n_queries": 7,
                   "n_groups": 5, "rrf_mean": 0.1, "ce_mean": 0.2, "blend_mean": 0.3,
                   "primary": "blend-ce (ndcg@10)", "primary_delta": 0.1, "primary_grouped_lo": -0.05,
                   "primary_grouped_hi": 0.25, "audit": "PASSED"}
    assert tuple(row) == cross_table.CROSS_STUDY_COLUMNS
    for verdict in ({"ok": False}, {}, {"ok": "yes"}):  # only a verdict of exactly true passes
        assert cross_table.cross_study_row(cfg, summary, verdict, "dev", manifest)["audit"] == "FAILED"


def _manifest(backend=None, model="M", inputs=None, max_length=512, name="s"):
    settings = {"max_length": max_length, "study": {"name": name, "dataset": "d"},
                **({"backend": backend} if backend else {})}
    arts = [{"key": k, "sha256": v} for k, v in (inputs or {"corpus": "c", "queries": "q"}).items()]
    return {"model_identity": model, "model_weights_sha256": "W", "settings": settings, "artefacts": arts}


def test_the_backend_column_and_the_torch_twin_of_a_derived_study():
    assert [cross_table.backend_of(m) for m in (_manifest(), _manifest("onnx-int8"), {"settings": {}})] == \
        ["torch", "onnx-int8", "none"]
    keys = ("corpus", "queries")
    int8, torch, other_model = _manifest("onnx-int8"), _manifest(), _manifest(model="N")
    other_inputs = _manifest(inputs={"corpus": "c", "queries": "q2"})
    other_settings = _manifest(max_length=256)
    scored = {"batch_size": 16, "seed": 110, "truncation": "longest_first", "backend": "torch",
              "numerics": "fp32"}
    s8 = {**scored, "backend": "onnx-int8", "numerics": "ONNX Runtime"}  # the derived study's own

    def twin(ms, scoring=None):
        return cross_table.torch_twin(0, ms, keys, scoring or [s8] + [scored] * (len(ms) - 1))

    # the first torch study of the same model, weights, inputs and settings but the backend and the study's
    # name; never a derived one, never itself, never one of other settings (passed over, not refused later)
    assert twin([int8, other_model, other_inputs, other_settings, _manifest(name="t"), torch]) == 4
    assert twin([int8, other_model, other_inputs, other_settings, _manifest("onnx")]) is None
    other_weights = {**_manifest(), "model_weights_sha256": "W2"}
    assert twin([int8, other_weights]) is None
    # the scoring settings count too, type-strictly: a torch study of batch size 8 (or 16.0) is passed over
    # for the exact twin after it; a study without a scoring record is never a twin
    assert twin([int8, torch, torch], [s8, {**scored, "batch_size": 8}, scored]) == 2
    assert twin([int8, torch, torch], [s8, {**scored, "batch_size": 16.0}, scored]) == 2
    assert twin([int8, torch], [s8, None]) is None and twin([int8, torch], [None, scored]) is None
    row = cross_table.retention_row("s", "onnx-int8", None, None)
    assert tuple(row) == cross_table.RETENTION_COLUMNS and row["primary_mean"] is None
    assert row["note"].startswith("no fp32 torch study of the same model, inputs and settings")


def test_a_study_file_the_audit_cannot_read_stops_at_start(tmp_path):
    bad = tmp_path / "blocky.yaml"
    bad.write_text("study:\n  name: blocky\nmetrics:\n  recall_ks:\n  - 10\n  - 20\n")
    with pytest.raises(studies.StudyError, match="flow style") as err:
        studies.study_config(load_config(ROOT / "config" / "config.yaml"), bad)
    assert f"({bad}:5: tabs and block sequences are not supported)" in str(err.value)
    # read, but not as PyYAML reads it (YAML 1.1: '1e3' without a dot is a string)
    other = tmp_path / "other.yaml"
    other.write_text("study:\n  name: other\nthreshold: 1e3\n")
    with pytest.raises(studies.StudyError, match=r"\(it reads other values than PyYAML\)"):
        studies.check_audit_reads(other)


def test_the_audit_reads_every_study_file_as_pyyaml_does():
    import yaml

    yamlsubset = audit_module("read.yamlsubset")
    for path in [*sorted((ROOT / "config" / "studies").glob("*.yaml")), STUDY_DIR / "synthetic.yaml"]:
        assert yamlsubset.read_simple_yaml(path) == yaml.safe_load(path.read_text(encoding="utf-8")), path
        studies.check_audit_reads(path)  # the library's own check: the audit run with --read-yaml
