"""Check 'reference': the logits against committed reference runs of the stand-in scorer, an anchor outside
the run. An honest stand-in run passes (on the real data against lockfiles/reference/standin-smoke; on the
fixture against a hand-made reference); a logit forged by +0.13 - together with the run's own verification
record - fails; a stand-in run relabelled as the pinned model fails (also shifted and scaled to keep its
rankings), a run of another model does not; a run no reference applies to says so in its note and compares
nothing."""

import json
import math
import random
import subprocess
import sys

import pytest
from conftest import AUDIT, ROOT, audit_module, full_mirror, read_json, run_snakemake
from forged_runs import copy_run, failures, forge_logit, read_rows, rehash_manifest, run_audit, write_rows

INPUT_ROLES = ("corpus", "queries", "qrels_dev", "qrels_confirm", "split_dev", "split_confirm", "candidates")
PINNED = json.loads((ROOT / "lockfiles" / "model_pins.json").read_text())["cross_encoder"]


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


def relabel_as_pinned(rundir, transform=lambda x: x):
    """The stand-in run's manifest and pairs.tsv saying the pinned model (its weights pin, its identity), the
    logits through ``transform``; rankings.tsv follows the logits; hashes updated."""
    m = read_json(rundir / "manifest.json")
    m.update(scorer="pinned", model_identity=f"{PINNED['repo']}@{PINNED['revision']}",
             model_weights_sha256=PINNED["files"]["model.safetensors"]["sha256"])
    (rundir / "manifest.json").write_text(json.dumps(m, indent=2, sort_keys=True) + "\n")
    rows, new = read_rows(rundir / "pairs.tsv"), {}
    for r in rows:
        r["model"] = f"{m['model_identity']} weights-sha256:{m['model_weights_sha256']}"
        r["logit"] = new[(r["qid"], r["doc_id"])] = repr(transform(float(r["logit"])))
    write_rows(rundir / "pairs.tsv", rows)
    ranks = read_rows(rundir / "rankings.tsv")
    for r in ranks:
        r["logit"] = new[(r["qid"], r["doc_id"])]
    write_rows(rundir / "rankings.tsv", ranks)
    rehash_manifest(rundir)


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


@pytest.mark.parametrize("transform", [lambda x: x, lambda x: 3.0 * x + 1.0],
                         ids=["as is", "scaled and shifted"])
def test_a_stand_in_run_relabelled_as_the_pinned_model_fails(referenced, transform):
    rundir, lockdir = referenced
    relabel_as_pinned(rundir, transform)
    proc, result = run_audit(rundir, lockdir)
    assert proc.returncode == 1 and "reference" in result["failed_checks"]
    fails = failures(result, "reference")
    assert len(fails) == 5  # every smoke query (10 pairs each) is an image of the reference's logits
    assert all("the reference's logits under another label" in f["found"] for f in fails)
    assert "the run names another model on the same texts; 5 queries" in result["checks"]["reference"]["note"]
    assert "NO REFERENCE APPLIES" in result["checks"]["reference"]["note"]  # no tolerance comparison was made


def test_a_run_of_another_model_is_not_taken_for_a_relabelled_stand_in(referenced):
    """Logits unrelated to the reference's (seeded noise of the pinned model's size) under the pinned
    label."""
    rundir, lockdir = referenced
    rng = random.Random(7)
    relabel_as_pinned(rundir, lambda x: rng.uniform(-10.0, 10.0))
    proc, result = run_audit(rundir, lockdir)
    assert result["checks"]["reference"]["failures"] == 0 and result["checks"]["reference"]["checked"] == 5


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


def test_affine_images_and_what_is_not_one():
    ref = audit_module("checks_reference")
    xs = [0.0183, -0.0171, 0.0042, -0.0330, 0.0291, -0.0050]
    assert ref.affine_image(xs, list(xs))[:2] == (1.0, 0.0)
    noisy = [x + (5.77e-8 if i % 2 else -4e-8) for i, x in enumerate(xs)]  # another CPU's last bits
    assert ref.affine_image(xs, noisy) is not None
    # order reversed: still the stand-in's
    assert ref.affine_image(xs, [-7.5 * x + 2.0 for x in xs]) is not None
    assert ref.affine_image(xs, [x + (1e-5 if i == 2 else 0.0) for i, x in enumerate(xs)]) is None
    assert ref.affine_image(xs, [x * x for x in xs]) is None
    assert ref.affine_image(xs, [1.0] * len(xs)) is None  # constant logits are nobody's image


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
    # the same run relabelled as the pinned model fails against the committed reference
    relabel_as_pinned(rundir)
    out = subprocess.run([sys.executable, "-I", "-S", "-B", str(AUDIT), str(rundir), "--lockdir",
                          str(ROOT / "lockfiles"), "--out", str(tmp_path / "relabelled.json")],
                         capture_output=True, text=True)
    result = read_json(tmp_path / "relabelled.json")
    assert out.returncode == 1 and "reference" in result["failed_checks"]
    # each of the 5 queries, against both references of the same texts (the dev reference: other batches too)
    assert sorted(f["item"].split(" in common with reference ")[1] for f in failures(result,
                                                                                     "reference")) == \
        ["standin-dev"] * 5 + ["standin-smoke"] * 5


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


def test_a_stand_in_run_relabelled_through_a_rank_preserving_transform_fails(referenced):
    """exp(40 x) keeps every query's ranking (and so every metric) and is no affine image: the order rule."""
    rundir, lockdir = referenced
    relabel_as_pinned(rundir, lambda x: math.exp(40.0 * x))
    proc, result = run_audit(rundir, lockdir)
    assert proc.returncode == 1 and "reference" in result["failed_checks"]
    fails = failures(result, "reference")
    assert len(fails) == 5, fails  # each smoke query: 10 pairs, ranked exactly as the reference ranks them
    assert all("the 10 logits rank the pairs exactly as the reference's do" in f["found"] for f in fails)
