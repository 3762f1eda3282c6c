"""Reference results (rerank_study.repro.reference) on small run folders written here: the reference's name
and identity, the logit and per-query comparisons worked out by hand, the verdicts that need no measures
(NO-REFERENCE, NOT-COMPARABLE, IDENTICAL) and their markdown. Where bytes differ, ``compare`` measures the
difference with repro_run (tested in test_repro_run.py) and a real smoke run (tests/workflow/
test_reproduction_measures.py)."""

import json

import pytest

from rerank_study.core.errors import MissingInputError
from rerank_study.repro import reference

MACHINE = {"cpu": {"model": "Imaginary CPU"}, "machine": "x86_64",
           "torch": {"torch": "2.0", "mkl": "2024.0", "cpu_capability": "AVX2"}}


def manifest(**over):
    arts = [{"key": "corpus", "sha256": "c0", "deterministic": True},
            {"key": "qrels_dev", "sha256": "qd", "deterministic": True},
            {"key": "summary", "sha256": "s1", "deterministic": True},
            {"key": "report", "sha256": "r1", "deterministic": False}]
    m = {"run": "dev", "scorer": "stand-in", "artefacts": arts, "model_identity": {"name": "m"},
         "model_weights_sha256": "w", "kind": "dev", "settings": {"n_queries": 3, "depth": 10}}
    m.update(over)
    return m


def test_reference_name():
    assert reference.reference_name("stand-in", True) == "standin-smoke"
    assert reference.reference_name("stand-in", False) == "standin-dev"
    assert reference.reference_name("pinned", False) == "pinned-dev"
    assert reference.reference_name("anything else", True) == "pinned-smoke"


def test_deterministic_hashes_and_identity():
    m = manifest()
    assert reference.deterministic_hashes(m) == {"corpus": "c0", "qrels_dev": "qd", "summary": "s1"}
    assert reference.identity(m) == {"inputs": {"corpus": "c0", "qrels_dev": "qd"},
                                     "model_identity": {"name": "m"}, "model_weights_sha256": "w",
                                     "kind": "dev", "shape": {"n_queries": 3, "depth": 10}}


def test_compare_logits_by_hand():
    ref = {("q1", "a"): 1.0, ("q1", "b"): 0.5, ("q1", "c"): 0.0, ("q2", "x"): 2.0, ("q2", "y"): 1.0,
           ("q3", "z"): 0.0}
    run = {("q1", "a"): 1.0, ("q1", "b"): 0.25, ("q1", "c"): 0.375,  # q1: b and c swap CE ranks
           ("q2", "x"): 2.5, ("q2", "y"): 1.0,                       # q2: x moves up, order kept
           ("q4", "w"): 0.0}
    assert reference.compare_logits(run, ref) == {
        "pairs_compared": 5, "pairs_only_in_one": 2, "pairs_with_different_logit": 3,
        "largest_abs_logit_delta": 0.5, "pairs_whose_ce_rank_changes": 2, "queries_whose_ce_order_changes": 1}
    assert reference.compare_logits({}, {})["largest_abs_logit_delta"] == 0.0


def test_compare_per_query_by_hand():
    ref = {"q1": {"qid": "q1", "ce_ndcg@10": "0.5", "ce_first_rel": "3"},
           "q2": {"qid": "q2", "ce_ndcg@10": "0.25", "ce_first_rel": ""},
           "q3": {"qid": "q3", "ce_ndcg@10": "1", "ce_first_rel": "1"}}
    run = {"q1": {"qid": "q1", "ce_ndcg@10": "0.75", "ce_first_rel": "3"},
           "q2": {"qid": "q2", "ce_ndcg@10": "0.125", "ce_first_rel": "4"},  # "" -> 4: no number to subtract
           "q9": {"qid": "q9", "ce_ndcg@10": "0", "ce_first_rel": "1"}}
    assert reference.compare_per_query(run, ref) == {
        "queries_compared": 2, "queries_only_in_one": 2, "changed_cells": 3, "queries_with_a_change": 2,
        "largest_abs_change_by_column": {"ce_first_rel": None, "ce_ndcg@10": 0.25}}
    assert reference.compare_per_query({}, ref)["changed_cells"] == 0


def write_run(rundir, m, ok=True):
    rundir.mkdir(parents=True, exist_ok=True)
    (rundir / "manifest.json").write_text(json.dumps(m))
    (rundir / "audit.json").write_text(json.dumps({"ok": ok}))
    primary = {"mean": 0.1, "grouped_interval": [0.0, 0.2], "query_interval": [0.05, 0.15],
               "a": "ce", "b": "rrf"}
    summary = {"primary": "ce-rrf", "comparisons": {"ce-rrf": primary}}
    (rundir / "summary.json").write_text(json.dumps(summary))
    (rundir / "pairs.tsv").write_text("qid\tdoc_id\tlogit\textra\nq1\ta\t0.1\tx\nq1\tb\t-2.5\ty\n")
    (rundir / "per_query.tsv").write_text("qid\tce_ndcg@10\nq1\t0.5\n")
    return rundir


def test_write_reference_fingerprints_an_audited_run(tmp_path):
    run = write_run(tmp_path / "run", manifest())
    dest = tmp_path / "ref"
    dest.mkdir()
    ref = reference.write_reference(run, dest, MACHINE, 4)
    assert ref == json.loads((dest / "reference.json").read_text())
    assert ref["artefacts_sha256"] == {"corpus": "c0", "qrels_dev": "qd", "summary": "s1"}
    assert ref["primary"] == {"comparison": "ce-rrf", "mean": 0.1, "grouped_interval": [0.0, 0.2],
                              "query_interval": [0.05, 0.15]}
    assert (ref["run"], ref["scorer"], ref["machine"], ref["threads"]) == ("dev", "stand-in", MACHINE, 4)
    assert (dest / "logits.tsv").read_text() == "qid\tdoc_id\tlogit\nq1\ta\t0.1\nq1\tb\t-2.5\n"
    assert (dest / "per_query.tsv").read_bytes() == (run / "per_query.tsv").read_bytes()
    assert reference.read_logits(dest / "logits.tsv") == {("q1", "a"): 0.1, ("q1", "b"): -2.5}
    assert reference.read_per_query(dest / "per_query.tsv") == {"q1": {"qid": "q1", "ce_ndcg@10": "0.5"}}


def test_only_an_audited_run_can_be_a_reference(tmp_path):
    run = write_run(tmp_path / "run", manifest(), ok=False)
    with pytest.raises(MissingInputError, match=r"audit\.json does not say ok: only an audited run"):
        reference.write_reference(run, tmp_path, MACHINE, 4)
    assert not (tmp_path / "reference.json").exists()


def test_no_reference_is_its_own_verdict_never_a_pass(tmp_path):
    run = write_run(tmp_path / "run", manifest())
    got = reference.compare(run, tmp_path / "absent", 60)
    assert got["verdict"] == "NO-REFERENCE" and "This is not a pass." in got["detail"]
    text = reference.render(got, "dev")
    assert "**Verdict: NO-REFERENCE**" in text and "nobody has committed one" in text
    assert "| artefact" not in text


def test_other_inputs_or_shape_are_not_comparable(tmp_path):
    ref_run = write_run(tmp_path / "a", manifest())
    dest = tmp_path / "ref"
    dest.mkdir()
    reference.write_reference(ref_run, dest, MACHINE, 4)
    other = manifest(settings={"n_queries": 3, "depth": 20}, model_weights_sha256="v")
    run = write_run(tmp_path / "b", other)
    got = reference.compare(run, dest, 60)
    assert got["verdict"] == "NOT-COMPARABLE" and got["differs_in"] == ["model_weights_sha256", "shape"]
    assert "(differs in: model_weights_sha256, shape)" in reference.render(got, "b")


def test_identical_bytes_are_identical_and_newer_artefacts_are_listed_not_compared(tmp_path):
    ref_run = write_run(tmp_path / "a", manifest())
    dest = tmp_path / "ref"
    dest.mkdir()
    reference.write_reference(ref_run, dest, MACHINE, 4)
    m = manifest()
    m["artefacts"].append({"key": "calibration", "sha256": "k1", "deterministic": True})
    run = write_run(tmp_path / "b", m)
    got = reference.compare(run, dest, 60)
    assert got["verdict"] == "IDENTICAL" and got["not_in_reference"] == ["calibration"]
    assert [(r["artefact"], r["identical"]) for r in got["artefacts"]] == [
        ("corpus", True), ("qrels_dev", True), ("summary", True), ("calibration", None)]
    text = reference.render(got, "b")
    assert "# Reproduction check of `b`" in text and "**Verdict: IDENTICAL**" in text
    assert "| summary | yes | `s1` | `s1` |" in text
    assert "| calibration | not in the reference (newer): not compared | `-` | `k1` |" in text
    assert "Reference machine: Imaginary CPU, x86_64, torch 2.0, MKL 2024.0, CPU capability AVX2." in text
    assert "## By how much" not in text
