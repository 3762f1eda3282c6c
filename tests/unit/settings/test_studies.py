"""Studies at parse time (rerank_study.settings.studies): the study list from the command line, unknown study
names, a study file's paths (relative to it) and outputs (under the study), a bad value named with the file to
fix, study files the audit cannot read as PyYAML does stopped at start."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT, STUDY_DIR, SYNTH, audit_module, write_yaml

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
