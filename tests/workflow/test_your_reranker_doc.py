"""docs/your-reranker.md followed command by command on the synthetic dataset, for both reranker kinds,
each in its own git checkout of this code (one sealed set opens under one protocol): a fresh lock folder, the
pins written by the tool (repin=data from a local folder, splits, candidates from a TREC run, repin=model of
the tiny reranker / repin=reranker_run of a term-overlap run), the development run and its audit, the freeze
(a run file's blind submission), the status, a genuine opening, and the cross-study table of both studies.

Every `sh` block of the page runs verbatim, in order, in one bash (`set -eux`) started in the checkout;
only step 0's settings are replaced by the synthetic study's (tests/data/studies/synthetic.yaml) and
`$SNAKEMAKE` is a wrapper outside the checkout that names the checkout's Snakefile (no test switch). The page
leaves the checkout clean (`git status`). Expected values: the committed hand-written pins, sha256 by hashlib
of the files the test gave, pytest-independent reads of the outputs."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATA, ROOT, SNAKEMAKE, STUDY_DIR, SYNTH, TINY_REPO, read_json
from seal_world import code_copy, commit_all, git

from rerank_study.seal import locations

DOC = ROOT / "docs" / "your-reranker.md"
COMMITTED = STUDY_DIR / "synthetic" / "lockfiles"
BLOCK = re.compile(r"^```sh( [a-z-]+)?\n(.*?)^```$", re.S | re.M)
WRAPPER = """#!/bin/bash
exec nice {snakemake} -s {root}/Snakefile --cores 2 "$@"
"""
SEAL_RECORDS = (locations.PROTOCOL, locations.PROTOCOL_SHA, locations.PREREG, locations.LEDGER)
GIT_IDENTITY = {"GIT_AUTHOR_NAME": "Researcher", "GIT_AUTHOR_EMAIL": "r@example.org",
                "GIT_COMMITTER_NAME": "Researcher", "GIT_COMMITTER_EMAIL": "r@example.org"}


def blocks() -> list[tuple[str | None, str]]:
    """(tag, text) of every ```sh block of the page, in order (tag: cross-encoder, run, compare or None)."""
    return [((m.group(1) or "").strip() or None, m.group(2)) for m in BLOCK.finditer(DOC.read_text())]


def values(wd: Path, kind: str, model_dir: str) -> dict:
    """Step 0's variables for the synthetic study (``wd``: the checkout)."""
    name = "synth-ce" if kind == "cross-encoder" else "synth-run"
    wrapper = wd.parent / f"bin-{wd.name}" / "snakemake"
    return {"REPO": wd, "SNAKEMAKE": wrapper, "PY": sys.executable, "NAME": name, "KIND": kind,
            "DATA": SYNTH,
              "DATASET": "synthetic-beir", "QRELS_DEV": "qrels/dev.tsv", "QRELS_CONFIRM": "qrels/test.tsv",
              "DEV_SIZE": 20, "CONFIRM_SIZE": 12, "SEED": 110,
              "FIRST_STAGE": COMMITTED / "candidates" / "run.trec",
              "DEPTH": 20, "RERANKER": TINY_REPO if kind == "cross-encoder" else "term-overlap",
              "MODEL_DIR": model_dir, "REVISION": "seeded-20261130",
              "MY_RERANKER": f"{sys.executable} {DATA / 'make_reranker_run.py'}",
              "OTHER_STUDY": "config/studies/synth-ce.yaml", "STUDY": f"config/studies/{name}.yaml",
              "LOCK": f"lockfiles/studies/{name}", "SUBMIT": f"results/{name}/submitted"}


def settings(wd: Path, kind: str, model_dir: str) -> str:
    """Step 0 for the synthetic study (and the snakemake wrapper, outside the checkout)."""
    wrapper = values(wd, kind, model_dir)["SNAKEMAKE"]
    wrapper.parent.mkdir(exist_ok=True)
    wrapper.write_text(WRAPPER.format(snakemake=SNAKEMAKE, root=wd))
    wrapper.chmod(0o755)
    return "\n".join(f'{k}="{v}"' for k, v in values(wd, kind, model_dir).items()) + "\n"


def follow(wd: Path, kind: str, model_dir: str = "", compare: bool = False) -> subprocess.CompletedProcess:
    """Every block of the page for ``kind`` (step 0 replaced), in one bash started in the checkout ``wd``;
    the transcript is kept beside it. The checkout is clean afterwards."""
    found = blocks()
    assert found[0][1].startswith("REPO=") and "SNAKEMAKE=" in found[0][1], "step 0 is the first sh block"
    wanted = [text for tag, text in found[1:] if tag in (None, kind) or (tag == "compare" and compare)]
    script = "set -eux\n" + settings(wd, kind, model_dir) + "".join(wanted)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONHASHSEED="0", **GIT_IDENTITY)
    proc = subprocess.run(["bash", "-c", script], cwd=wd, capture_output=True, text=True, env=env)
    (wd.parent / f"transcript-{kind}.txt").write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-6000:])
    assert git(wd, "status", "--porcelain", "--untracked-files=all").stdout == ""
    return proc


def colleagues_study(source: Path, dest: Path, name: str) -> None:
    """A study pulled from another checkout before its freeze: its study file and its pins, committed."""
    shutil.copy(source / "config" / "studies" / f"{name}.yaml", dest / "config" / "studies" / f"{name}.yaml")
    lock = dest / "lockfiles" / "studies" / name
    shutil.copytree(source / "lockfiles" / "studies" / name, lock)
    for record in SEAL_RECORDS:
        (lock / record).unlink()
    commit_all(dest, f"study {name}: pins")


@pytest.fixture(scope="module")
def walked(tmp_path_factory, tiny_models) -> dict:
    """Each walk in its own checkout (a sealed set opens under one protocol); the run-file checkout also holds
    the cross-encoder study's pins (the cross-study table compares both development runs)."""
    wd = tmp_path_factory.mktemp("your-reranker")
    ce = code_copy(wd / "ce-checkout", with_git=True)
    follow(ce, "cross-encoder", model_dir=str(tiny_models[1]))
    run = code_copy(wd / "run-checkout", with_git=True)
    (run / "config" / "studies").mkdir(exist_ok=True)
    colleagues_study(ce, run, "synth-ce")
    follow(run, "run", compare=True)
    return {"cross-encoder": ce, "run": run}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sealed_ids() -> list[str]:
    with open(SYNTH / "qrels" / "test.tsv", newline="") as fh:
        return sorted({row["query-id"] for row in csv.DictReader(fh, delimiter="\t")})


def test_the_page_has_both_kinds_and_the_tests_settings_cover_step_0():
    tags = [tag for tag, _ in blocks()]
    assert tags.count("cross-encoder") == 2 and tags.count("run") == 2 and tags.count("compare") == 1
    names = re.findall(r"^([A-Z_]+)=", blocks()[0][1], re.M)
    # the test sets every variable of step 0, in its order
    assert names == list(values(Path("wd"), "run", ""))


@pytest.mark.slow
def test_the_tool_writes_the_committed_hand_written_pins(walked):
    for kind, name in (("cross-encoder", "synth-ce"), ("run", "synth-run")):
        lock = walked[kind] / "lockfiles" / "studies" / name
        pins = read_json(lock / "data_pins.json")
        # the one added field: the sealed file's query ids (the confirmation split)
        assert pins["files"]["qrels/test.tsv"].pop("queries") == sealed_ids()
        assert pins["files"] == read_json(COMMITTED / "data_pins.json")["files"]
        sealed_set = read_json(COMMITTED / "derived_pins.json")["sealed_set"]
        assert read_json(lock / "derived_pins.json")["sealed_set"] == sealed_set
        for rel in ("splits/dev.txt", "splits/confirm.txt", "candidates/candidates.tsv",
                    "candidates/run.trec"):
            assert (lock / rel).read_bytes() == (COMMITTED / rel).read_bytes(), (name, rel)
    ce = walked["cross-encoder"] / "lockfiles" / "studies" / "synth-ce" / "model_pins.json"
    assert read_json(ce)["cross_encoder"] == read_json(COMMITTED / "model_pins.json")["cross_encoder"]
    assert not (walked["run"] / "lockfiles" / "studies" / "synth-run" / "model_pins.json").exists()


@pytest.mark.slow
def test_the_run_files_are_pinned_byte_for_byte(walked):
    lock = walked["run"] / "lockfiles" / "studies" / "synth-run"
    submitted = walked["run"] / "results" / "synth-run" / "submitted"
    assert (lock / "reranker" / "dev.trec").read_bytes() == (submitted / "dev.run").read_bytes()
    assert read_json(lock / "derived_pins.json")["reranker_run"]["sha256"] == sha256(submitted / "dev.run")
    protocol = read_json(lock / "protocol.json")
    assert protocol["model"]["confirmation_run"] == {"file": "reranker/confirm.trec",
                                                     "sha256": sha256(submitted / "confirm.run")}
    assert (lock / "reranker" / "confirm.trec").read_bytes() == (submitted / "confirm.run").read_bytes()


@pytest.mark.slow
def test_every_run_and_opening_passed_its_audit(walked):
    for kind, name in (("cross-encoder", "synth-ce"), ("run", "synth-run")):
        runs = sorted((walked[kind] / "results" / name).iterdir())
        assert [r.name for r in runs][1:] == ["dev", "submitted"], runs
        for run in runs[:2]:
            assert read_json(run / "audit.json")["ok"] is True, run
        sha = (walked[kind] / "lockfiles" / "studies" / name / "protocol.sha256").read_text().split()[0]
        assert runs[0].name == f"confirm-{sha[:12]}-1"  # a genuine opening, the first
        ledger = [json.loads(line) for line in git(walked[kind], "show", f"HEAD:lockfiles/studies/{name}/"
                                                   f"{locations.LEDGER}").stdout.splitlines()]
        assert [e["event"] for e in ledger] == ["frozen", "started", "completed"]  # committed by the opening
    rows = list(csv.DictReader(open(walked["run"] / "results" / "synth-run" / "dev" / "reranker_scores.tsv"),
                               delimiter="\t"))
    assert len(rows) == 20 * 20


@pytest.mark.slow
def test_the_cross_study_table_holds_both_new_studies(walked):
    path = walked["run"] / "results" / "cross-study" / "synth-ce+synth-run" / "cross_study.tsv"
    rows = {r["study"]: r for r in csv.DictReader(open(path), delimiter="\t")}
    assert list(rows) == ["synth-ce", "synth-run"]
    assert rows["synth-ce"]["reranker_kind"] == "cross-encoder"
    weights = read_json(COMMITTED / "model_pins.json")["cross_encoder"]["files"]["model.safetensors"]
    assert rows["synth-ce"]["reranker_sha256"] == weights["sha256"]
    assert rows["synth-ce"]["reranker"] == f"{TINY_REPO}@seeded-20261130"
    assert rows["synth-run"]["reranker_kind"] == "run"
    assert rows["synth-run"]["reranker"] == "term-overlap run:reranker/dev.trec"
    submitted = walked["run"] / "results" / "synth-run" / "submitted"
    assert rows["synth-run"]["reranker_sha256"] == sha256(submitted / "dev.run")
    for name, row in rows.items():
        summary = read_json(walked["run"] / "results" / name / "dev" / "summary.json")
        assert float(row["ce_mean"]) == summary["methods"]["ce"]["mean"] and row["audit"] == "PASSED"


@pytest.mark.slow
def test_an_opening_of_another_confirmation_run_is_refused_before_any_job(walked):
    walked = walked["run"]
    lock = walked / "lockfiles" / "studies" / "synth-run"
    frozen = lock / "reranker" / "confirm.trec"
    original = frozen.read_bytes()
    sha = (lock / "protocol.sha256").read_text().split()[0]
    cmd = [str(values(walked, "run", "")["SNAKEMAKE"]), "confirm", "--config",
           "studies=[config/studies/synth-run.yaml]",
           f"unseal={sha}"]
    edited = original.replace(b" 1 ", b" 1  ", 1)  # one more space: the same scores, other bytes
    try:
        frozen.write_bytes(edited)
        proc = subprocess.run(cmd, cwd=walked, capture_output=True, text=True)
        assert proc.returncode != 0
        refused = "REFUSED: the lock folder's confirmation run is not the run frozen in the protocol"
        assert refused in proc.stderr
        assert f"expected sha256: {hashlib.sha256(original).hexdigest()}" in proc.stderr
        assert f"found: {hashlib.sha256(edited).hexdigest()}" in proc.stderr
    finally:
        frozen.write_bytes(original)
    other = walked / "other.run"
    other.write_bytes(edited)
    proc = subprocess.run(cmd[:-1] + [f"unseal={sha}", f"run_file={other}"], cwd=walked, capture_output=True,
                          text=True)
    assert proc.returncode != 0 and f"run_file={other}" in proc.stderr
    assert "is not the run frozen in the protocol" in proc.stderr and "fix: drop run_file" in proc.stderr
    assert "Select jobs to execute" not in proc.stdout + proc.stderr
    assert sorted(p.name for p in (walked / "results" / "synth-run").iterdir())[0].endswith("-1")
    assert len(list((walked / "results" / "synth-run").iterdir())) == 3  # the opening, dev, submitted


def audit_copy(walked: Path, tmp: Path) -> tuple[Path, Path]:
    """A copy of the run-file study's development run and of its lock folder (the inputs it names linked)."""
    (tmp / "resources").symlink_to(walked / "resources")
    run = tmp / "results" / "synth-run" / "dev"
    shutil.copytree(walked / "results" / "synth-run" / "dev", run)
    lock = tmp / "lockfiles" / "studies" / "synth-run"  # where the run names it (check 'layout')
    shutil.copytree(walked / "lockfiles" / "studies" / "synth-run", lock)
    return run, lock


def audit(walked: Path, run: Path, lock: Path) -> dict:
    out = run.parent / "audit-copy.json"
    subprocess.run([sys.executable, "-I", "-S", "-B", str(ROOT / "scripts" / "audit"), str(run), "--lockdir",
                    str(lock), "--study", str(walked / "config" / "studies" / "synth-run.yaml"), "--out",
                    str(out)],
                   capture_output=True, text=True, cwd=walked)
    return read_json(out)


@pytest.mark.slow
def test_the_audit_re_derives_every_score_from_the_pinned_run_file(walked, tmp_path):
    walked = walked["run"]
    run, lock = audit_copy(walked, tmp_path)
    assert audit(walked, run, lock)["ok"] is True
    table = run / "reranker_scores.tsv"
    original = table.read_text()
    first = original.splitlines()[1].split("\t")
    table.write_text(original.replace("\t".join(first), "\t".join(first[:3] + ["0.5"]), 1))
    assert "reranker_run" in audit(walked, run, lock)["failed_checks"]
    table.write_text(original)
    pinned = lock / "reranker" / "dev.trec"
    pinned.write_text(pinned.read_text().replace(" overlap\n", " other\n", 1))
    verdict = audit(walked, run, lock)
    assert "reranker_run" in verdict["failed_checks"]
