"""Check 'reference': the logits against committed reference runs of the stand-in scorer, an anchor outside
the run. An honest stand-in run passes (on the real data against lockfiles/reference/standin-smoke; on the
fixture against a hand-made reference); a logit forged by +0.13 - together with the run's own verification
record - fails; a run no reference applies to says so in its note and compares nothing."""

import json

import pytest
from conftest import ROOT, full_mirror, read_json, run_snakemake
from forged_runs import copy_run, failures, forge_logit, read_rows, run_audit

INPUT_ROLES = ("corpus", "queries", "qrels_dev", "qrels_confirm", "split_dev", "split_confirm", "candidates")


def commit_reference(rundir, lockdir, name="fixture-smoke"):
    """A reference made by hand from an audited run, in the committed layout (reference.json identity as
    scripts/reference.py writes it; logits.tsv)."""
    m = read_json(rundir / "manifest.json")
    hashes = {a["key"]: a["sha256"] for a in m["artefacts"] if a["deterministic"]}
    ref = {"run": m["run"], "scorer": m["scorer"],
           "identity": {"inputs": {k: hashes[k] for k in INPUT_ROLES if k in hashes},
                        "model_identity": m["model_identity"],
                        "model_weights_sha256": m["model_weights_sha256"], "kind": m["kind"],
                        "shape": {"n_queries": m["settings"]["n_queries"],
                                                     "depth": m["settings"]["depth"]}}}
    folder = lockdir / "reference" / name
    folder.mkdir(parents=True)
    (folder / "reference.json").write_text(json.dumps(ref, indent=2, sort_keys=True) + "\n")
    rows = read_rows(rundir / "pairs.tsv")
    (folder / "logits.tsv").write_text("qid\tdoc_id\tlogit\n" + "".join(
        f"{r['qid']}\t{r['doc_id']}\t{r['logit']}\n" for r in rows))
    return folder


@pytest.fixture
def referenced(tmp_path, smoke_run, fixture_workdir):
    """A copy of the fixture's smoke run with a lock folder holding a reference made from it."""
    rundir, lockdir = copy_run(smoke_run, fixture_workdir, tmp_path / "w")
    commit_reference(rundir, lockdir)
    return rundir, lockdir


def test_an_honest_fixture_run_passes_against_a_hand_made_reference(referenced):
    rundir, lockdir = referenced
    proc, result = run_audit(rundir, lockdir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ref = result["checks"]["reference"]
    assert ref["failures"] == 0 and ref["checked"] == 51  # the pair set + every one of the 50 pairs
    assert ref["note"].startswith("reference fixture-smoke applies (identity equal): 50 pairs compared")
    assert "tolerance 1e-06" in ref["note"] and "5.77e-8" in ref["note"]


def test_a_logit_forged_by_0_13_fails_also_with_the_verification_record_forged_with_it(referenced):
    rundir, lockdir = referenced
    row = read_rows(rundir / "pairs.tsv")[7]
    forged = repr(float(row["logit"]) + 0.13)
    honest = forge_logit(rundir, row["qid"], row["doc_id"], forged)
    proc, result = run_audit(rundir, lockdir)
    assert proc.returncode == 1 and "reference" in result["failed_checks"]
    assert "verification" not in result["failed_checks"]  # the run's own record was forged to agree
    (fail,) = failures(result, "reference")
    assert fail["item"] == f"qid {row['qid']} doc {row['doc_id']} logit vs reference fixture-smoke"
    assert fail["expected"] == f"{honest} ± 1e-06" and fail["found"].startswith(forged)


def test_a_difference_within_the_tolerance_passes_and_one_beyond_it_fails(referenced):
    """Another CPU's last bits (measured: |Δ| <= 5.77e-8) pass; 2e-6 is beyond the documented 1e-6."""
    rundir, lockdir = referenced
    rows = read_rows(rundir / "pairs.tsv")
    forge_logit(rundir, rows[0]["qid"], rows[0]["doc_id"], repr(float(rows[0]["logit"]) + 5.77e-8))
    proc, result = run_audit(rundir, lockdir)
    assert result["checks"]["reference"]["failures"] == 0, result["checks"]["reference"]
    forge_logit(rundir, rows[1]["qid"], rows[1]["doc_id"], repr(float(rows[1]["logit"]) + 2e-6))
    proc, result = run_audit(rundir, lockdir)
    assert [f["item"].split(" logit")[0] for f in failures(result, "reference")] == \
        [f"qid {rows[1]['qid']} doc {rows[1]['doc_id']}"]


def test_a_run_no_reference_applies_to_says_so_and_compares_nothing(smoke_run, fixture_workdir, tmp_path):
    rundir, lockdir = copy_run(smoke_run, fixture_workdir, tmp_path / "w")
    proc, result = run_audit(rundir, lockdir)  # the fixture's lock folder commits no reference
    assert proc.returncode == 0 and result["checks"]["reference"]["checked"] == 0
    assert result["checks"]["reference"]["note"].startswith("NO REFERENCE APPLIES - no logit was compared")
    assert "no reference runs in" in result["checks"]["reference"]["note"]
    # a reference of other inputs and shape (the committed real-data ones): why none applies, field by field
    (lockdir / "reference").mkdir()
    for name in ("standin-smoke", "standin-dev"):
        (lockdir / "reference" / name).symlink_to(ROOT / "lockfiles" / "reference" / name)
    proc, result = run_audit(rundir, lockdir)
    note = result["checks"]["reference"]["note"]
    assert proc.returncode == 0 and result["checks"]["reference"]["checked"] == 0
    assert "standin-dev (differs in inputs.candidates, inputs.corpus," in note and "shape.depth" in note, note
    assert "standin-smoke (differs in inputs.candidates, inputs.corpus," in note, note


@pytest.mark.slow  # runs the DAG on the real data
@pytest.mark.full_data
def test_an_honest_stand_in_smoke_run_on_the_real_data_passes_against_the_committed_reference(tmp_path):
    """README command 1 (smoke) on the real data: the DAG's audit compares every logit with
    lockfiles/reference/standin-smoke within the tolerance (whatever this machine's CPU kind)."""
    mirror = full_mirror()
    cfg = {"lockdir": str(ROOT / "lockfiles"), "data_mirror": str(mirror), "smoke": "true"}
    run_snakemake(tmp_path, config=cfg, fixture=False)
    rundir = tmp_path / "results" / "smoke-standin"
    audit = read_json(rundir / "audit.json")
    ref = audit["checks"]["reference"]
    # 50 pairs against the smoke reference (identity equal), the same 50 against the dev reference (same model
    # and texts, other shape: the smoke's pairs are among the dev run's), 1 pair-set check
    assert audit["ok"] is True and ref["failures"] == 0 and ref["checked"] == 101, ref
    notes = ref["note"].split(" | ")
    assert notes[0].startswith("reference standin-dev shares the model and texts (not the shape): 50 pairs "
                               "in common compared"), notes
    assert notes[1].startswith("reference standin-smoke applies (identity equal): 50 pairs compared"), notes
    print(notes[:2])  # how many differ and by how much, on this machine


def test_a_run_of_another_shape_is_still_compared_on_the_pairs_it_shares_with_the_reference(referenced):
    """The reference's model and texts, another shape (as a --configfile with another depth or split makes):
    the shape no longer switches the anchor off; the pairs in common are compared, a forged one fails."""
    rundir, lockdir = referenced
    ref_json = lockdir / "reference/fixture-smoke/reference.json"
    ref = read_json(ref_json)
    ref["identity"]["shape"]["depth"] += 10
    ref["identity"]["inputs"]["split_dev"] = "0" * 64
    ref_json.write_text(json.dumps(ref, indent=2, sort_keys=True) + "\n")
    logits = lockdir / "reference/fixture-smoke/logits.tsv"
    lines = logits.read_text().splitlines(keepends=True)
    logits.write_text("".join(lines[:31]))  # the reference holds 30 of the run's 50 pairs
    proc, result = run_audit(rundir, lockdir)
    ref_check = result["checks"]["reference"]
    assert proc.returncode == 0 and ref_check["failures"] == 0 and ref_check["checked"] == 30, ref_check
    assert ref_check["note"].startswith("reference fixture-smoke shares the model and texts (not the shape): "
                                        "30 pairs in common compared"), ref_check["note"]
    row = read_rows(rundir / "pairs.tsv")[3]  # among the 30
    forge_logit(rundir, row["qid"], row["doc_id"], repr(float(row["logit"]) + 0.13))
    proc, result = run_audit(rundir, lockdir)
    assert proc.returncode == 1 and "reference" in result["failed_checks"]
    (fail,) = failures(result, "reference")
    assert fail["item"] == (f"qid {row['qid']} doc {row['doc_id']} logit vs reference fixture-smoke (same "
                            "model and texts, other shape)")
