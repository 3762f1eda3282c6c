"""The seal's invariants, each attacked as the adversary of a fresh clone did, step by step; every attack that
broke the seal before now ends in a refusal or a record. The world is a git checkout of this code whose own
lockfiles/ is a genuine lock folder of the fixture data (seal_world.genuine_repo); a real opening is reached
through its real guard and its real first rule (fetch_sealed_qrels: no model is needed to read the sealed
file), with protocols constructed as freeze writes them (no pinned model offline)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from conftest import FIXTURE, ROOT, read_json, run_snakemake
from seal_world import commit_all, constructed_freeze, genuine_repo, git, look_at_sealed_file, repo_config

from rerank_study import beir, splits, studies
from rerank_study.errors import SealError
from rerank_study.fileio import write_json
from rerank_study.seal import freeze as seal_freeze
from rerank_study.seal import guard, ledger, locations, registry, status, traces, tree

pytestmark = pytest.mark.slow  # runs snakemake


def _out(proc) -> str:
    return proc.stdout + proc.stderr


def _swapped_study(repo: Path, with_split_pins: bool) -> Path:
    """lockfiles/studies/swapped: the repository's data pins with the two qrels roles swapped (its sealed file
    named as development qrels); ``with_split_pins``: also the default's splits and candidates, its
    development split being the default's confirmation queries, as the attacker hand-wrote them."""
    lock = repo / "lockfiles" / "studies" / "swapped"
    lock.mkdir(parents=True)
    pins = read_json(repo / "lockfiles/data_pins.json")
    pins["files"]["qrels/test.tsv"].update(role="qrels_dev", sealed=False)
    pins["files"]["qrels/train.tsv"].update(role="qrels_confirm", sealed=True)
    write_json(lock / "data_pins.json", pins)
    shutil.copy(repo / "lockfiles/model_pins.json", lock / "model_pins.json")
    # written by hand, each consistent with the swapped pins (registry.sealed_record included)
    if with_split_pins:
        for sub in ("splits", "candidates"):
            shutil.copytree(repo / "lockfiles" / sub, lock / sub)
        train = splits.canonical_order(beir.read_qrels(FIXTURE / "qrels/train.tsv"))
        (lock / "splits/dev.txt").write_text((repo / "lockfiles/splits/confirm.txt").read_text())
        (lock / "splits/confirm.txt").write_text(splits.split_text(train))
        derived = read_json(repo / "lockfiles/derived_pins.json")
        derived["sealed_set"] = registry.sealed_record(pins, beir.read_queries(FIXTURE / "queries.jsonl"),
                                                       train, beir.read_corpus(FIXTURE / "corpus.jsonl"))
        write_json(lock / "derived_pins.json", derived)
    study = repo / "config/studies/swapped.yaml"
    study.write_text("study:\n  name: swapped\n  dataset: scifact\n  qrels_dev: qrels/test.tsv\n"
                     "  qrels_confirm: qrels/train.tsv\n  reranker: cross-encoder/ms-marco-MiniLM-L6-v2\n"
                     "  label_index: null\n  candidates: frozen\nlockdir: ../../lockfiles/studies/swapped\n")
    return study


# ---------------------------------------------------------- 1. a development run on sealed queries --
def test_a_study_that_names_a_sealed_file_as_its_development_qrels_is_refused_before_any_job(tmp_path):
    repo = genuine_repo(tmp_path / "w")
    study = _swapped_study(repo, with_split_pins=False)
    commit_all(repo, "a study with swapped roles")
    # the attacker's first step, repin=splits, stops at start: nothing is drawn, nothing written
    proc = run_snakemake(repo, config={"studies": f"[{study}]", "repin": "splits"},
                         snakefile=repo / "Snakefile", check=False)
    assert proc.returncode != 0 and "REFUSED to run study 'swapped'" in _out(proc), _out(proc)[-3000:]
    assert "the development file qrels/test.tsv" in _out(proc) and str(repo / "lockfiles") in _out(proc)
    assert not (repo / "lockfiles/studies/swapped/splits").exists()
    # ... and with the split and candidate pins written by hand: the smoke development run stops at start too,
    # naming the sealed query ids it holds and both lock folders
    shutil.rmtree(repo / "lockfiles/studies/swapped")
    study = _swapped_study(repo, with_split_pins=True)
    proc = run_snakemake(repo, config={"studies": f"[{study}]", "smoke": "true"},
                         snakefile=repo / "Snakefile", check=False)
    out = _out(proc)
    assert proc.returncode != 0 and "holds exactly the sealed set of" in out and "sealed query id(s)" in \
        out, out[-3000:]
    assert "rule " not in proc.stdout and not (repo / "results").exists()  # no job ran


def _catalogue_zip(tmp: Path) -> tuple[Path, Path]:
    """The fixture's files as a catalogue dataset 'scifactcopy' (a copy of the repository's data)."""
    zpath = tmp / "scifactcopy.zip"
    with zipfile.ZipFile(zpath, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel in ("corpus.jsonl", "queries.jsonl", "qrels/train.tsv", "qrels/test.tsv"):
            zf.writestr(f"scifactcopy/{rel}", (FIXTURE / rel).read_bytes())
    raw = zpath.read_bytes()
    cat = tmp / "catalogue.json"
    cat.write_text(json.dumps({"datasets": {"scifactcopy": {
        "url": "https://example.invalid/scifactcopy.zip", "md5": hashlib.md5(raw).hexdigest(),
        "bytes": len(raw), "zip_top_folder": "scifactcopy", "qrels_splits": ["train", "test"], "sha256": None,
        "note": "test"}}}))
    return zpath, cat


def test_repin_data_cannot_create_a_lock_folder_whose_development_side_holds_sealed_judgements(tmp_path):
    repo = genuine_repo(tmp_path / "w")
    zpath, cat = _catalogue_zip(tmp_path)
    study = repo / "config/studies/copy.yaml"
    study.write_text("study:\n  name: copy\n  dataset: scifactcopy\n  qrels_dev: qrels/test.tsv\n"
                     "  qrels_confirm: qrels/train.tsv\n  reranker: cross-encoder/ms-marco-MiniLM-L6-v2\n"
                     "  label_index: null\n  candidates: frozen\nlockdir: ../../lockfiles/studies/copy\n"
                     f"data:\n  url: https://example.invalid/scifactcopy.zip\n  catalogue: {cat}\n"
                     "splits:\n  dev_size: 5\n  confirm_size: 12\n  seed: 110\ndata_mirror: \"\"\n")
    (repo / "lockfiles/studies/copy").mkdir(parents=True)
    shutil.copy(repo / "lockfiles/model_pins.json", repo / "lockfiles/studies/copy/model_pins.json")
    commit_all(repo, "a copy of the data with swapped roles")
    proc = run_snakemake(repo, config={"studies": f"[{study}]", "repin": "data", "data_zip": str(zpath)},
                         snakefile=repo / "Snakefile", check=False)
    out = _out(proc)
    assert proc.returncode != 0 and ("REFUSED to pin the data of study 'copy' (nothing "
                                     "was written)") in out, out[-3000:]
    assert "holds exactly the sealed set of" in out
    assert not (repo / "lockfiles/studies/copy/data_pins.json").exists()


# -------------------------------------- 2. a second "opening 1" of the same sealed file, re-tuned --
def test_a_sealed_set_started_under_one_protocol_cannot_be_frozen_or_opened_under_another(tmp_path):
    repo = genuine_repo(tmp_path / "w")
    sha = constructed_freeze(repo, repo_config(repo), repo / "lockfiles")
    look_at_sealed_file(repo, sha, 1)
    commit_all(repo, "opening 1 started")
    # another lock folder of the repository, the same pins, a re-tuned analysis
    retuned = repo / "lockfiles/studies/retuned"
    shutil.copytree(repo / "lockfiles", retuned, ignore=shutil.ignore_patterns("studies",
                                                                               *locations.SEAL_RECORDS))
    study = repo / "config/studies/retuned.yaml"
    study.write_text("study:\n  name: retuned\n  dataset: scifact\n  qrels_dev: qrels/train.tsv\n"
                     "  qrels_confirm: qrels/test.tsv\n  reranker: cross-encoder/ms-marco-MiniLM-L6-v2\n"
                     "  label_index: null\n  candidates: frozen\nlockdir: ../../lockfiles/studies/retuned\n"
                     "blend:\n  k: 20\nthreshold: 0.005\n")
    commit_all(repo, "a re-tuned study")
    cfg = studies.study_config(repo_config(repo), study)  # as the Snakefile reads studies=[retuned]
    with pytest.raises(SealError, match=r"REFUSED to freeze a protocol: .*confirmation_ledger.jsonl records "
                                        r"1 opening\(s\) of this sealed set"):
        seal_freeze.freeze(cfg, retuned, tmp_path / "no-run", repo)
    # the protocol written by hand instead: its opening is refused before any job, naming the first look
    sha2 = constructed_freeze(repo, cfg, retuned)
    with pytest.raises(SealError, match=r"records opening 1 of this sealed set .* under a "
                                        r"different protocol"):
        guard.check_unseal(dict(cfg, unseal=sha2), retuned, repo)
    proc = run_snakemake(repo, config={"studies": f"[{study}]", "unseal": sha2, "scorer": "pinned"},
                         snakefile=repo / "Snakefile", targets=("confirm",), check=False)
    assert proc.returncode != 0 and "under a different protocol" in _out(proc)
    # the same protocol re-opened is a reproduction: opening 2 (once the re-tuned study, which is part of the
    # method like every tracked file, is gone again)
    shutil.rmtree(retuned)
    study.unlink()
    commit_all(repo, "the re-tuned study removed")
    u = guard.check_unseal(dict(repo_config(repo), unseal=sha), repo / "lockfiles", repo)
    assert u["opening"] == 2 and u["unfinished"][0]["opening"] == 1


# ------------------------------------------------- 3. code outside the method inside an opening --
def _frozen_world(tmp_path, before_freeze=None):
    repo = genuine_repo(tmp_path / "w")
    ref = repo / "lockfiles/reference/standin-smoke"
    shutil.copytree(ROOT / "lockfiles/reference/standin-smoke", ref)
    if before_freeze:
        before_freeze(repo)
    commit_all(repo, "reference results")
    cfg = repo_config(repo)
    sha = constructed_freeze(repo, cfg, repo / "lockfiles")
    return repo, dict(cfg, unseal=sha)


@pytest.mark.parametrize("path, text, how", [
    ("workflow/sitecustomize.py", "print('hello from outside the method')\n", "added"),
    ("workflow/rerank_study/metrics/__init__.py", "NDCG = None\n", "added"),
    ("scripts/confirm.py", "\n# weakened\n", "changed"),
    ("lockfiles/reference/standin-smoke/reference.json", " ", "changed"),
    ("tests/conftest.py", "\n# a test helper\n", "changed"),
])
def test_every_committed_file_that_can_run_is_the_method(tmp_path, path, text, how):
    repo, cfg = _frozen_world(tmp_path)
    p = repo / path
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text((p.read_text() if p.exists() else "") + text)
    commit_all(repo, f"after freezing: {path}")
    with pytest.raises(SealError, match=r"the method changed since the protocol was frozen: "
                                        rf".*{path} \({how}\)"):
        guard.check_unseal(cfg, repo / "lockfiles", repo)


def test_a_start_up_hook_on_the_jobs_path_is_refused_even_when_frozen(tmp_path):
    repo, cfg = _frozen_world(tmp_path,
                              lambda r: (r / "workflow/sitecustomize.py").write_text("print('x')\n"))
    with pytest.raises(SealError, match=r"(?s)environment is not the lock.*workflow/sitecustomize.py runs at "
                                        r"every interpreter start"):
        guard.check_unseal(cfg, repo / "lockfiles", repo)


def test_an_importable_file_in_snakemakes_script_folder_is_refused(tmp_path):
    repo, cfg = _frozen_world(tmp_path)
    (repo / ".snakemake/scripts").mkdir(parents=True)
    (repo / ".snakemake/scripts/tmpab12cd34.score.py").write_text("# a leftover temporary rule script\n")
    assert guard.check_unseal(cfg, repo / "lockfiles", repo)["opening"] == 1
    (repo / ".snakemake/scripts/numpy.py").write_text("raise SystemExit('shadowed')\n")
    with pytest.raises(SealError, match=r"scripts/numpy.py is importable by every script job"):
        guard.check_unseal(cfg, repo / "lockfiles", repo)


# ----------------------------------------------------------------- 4. a dirty tree reported clean --
def test_a_change_hidden_from_git_status_is_found_by_content(tmp_path):
    repo, cfg = _frozen_world(tmp_path)
    lock = repo / "lockfiles"
    ranking = repo / "workflow/rerank_study/ranking.py"
    ranking.write_text(ranking.read_text().replace("reverse=True", "reverse=False"))
    git(repo, "update-index", "--skip-worktree", "workflow/rerank_study/ranking.py")
    assert git(repo, "status", "--porcelain").stdout == ""  # git itself sees nothing
    # refused twice over: the method is hashed from the bytes on disk, and the tree is compared by content
    with pytest.raises(SealError, match=r"the method changed .*workflow/rerank_study/ranking.py \(changed\)"):
        guard.check_unseal(cfg, lock, repo)
    assert tree.tree_state(repo).dirty == ["workflow/rerank_study/ranking.py (changed)",
                                           "workflow/rerank_study/ranking.py (skip-worktree)"]
    git(repo, "update-index", "--no-skip-worktree", "workflow/rerank_study/ranking.py")
    git(repo, "checkout", "--", "workflow/rerank_study/ranking.py")
    git(repo, "update-index", "--assume-unchanged", "Snakefile")
    with pytest.raises(SealError, match=r"Snakefile \(assume-unchanged\)"):
        guard.check_unseal(cfg, lock, repo)
    git(repo, "update-index", "--no-assume-unchanged", "Snakefile")
    # an untracked module listed in .git/info/exclude, and a planted byte-code cache: the walk finds both
    (repo / ".git/info/exclude").write_text("helper.py\n__pycache__/\n")
    (repo / "workflow/rerank_study/helper.py").write_text("x = 1\n")
    (repo / "workflow/rerank_study/__pycache__").mkdir()
    (repo / "workflow/rerank_study/__pycache__/metrics.cpython-311.pyc").write_bytes(b"planted")
    assert git(repo, "status", "--porcelain").stdout == ""
    with pytest.raises(SealError, match=r"workflow/rerank_study/__pycache__/metrics.cpython-311.pyc \(not "
                                        r"committed\), workflow/rerank_study/helper.py \(not committed\)"):
        guard.check_unseal(cfg, lock, repo)


# ------------------------------------------------------------------------------ 5. a discarded look --
def test_a_look_whose_ledger_line_was_rewritten_away_stops_the_next_opening_until_restored(tmp_path):
    repo, cfg = _frozen_world(tmp_path)
    sha, lock = cfg["unseal"], repo / "lockfiles"
    look_at_sealed_file(repo, sha, 1)
    started = ledger.read_ledger(lock)[-1]
    assert started["event"] == "started" and started["opening"] == 1 \
        and started["pushed"]["code_commit_on_a_remote"] is False
    trace = traces.trace_path(repo, lock)
    assert trace.is_relative_to(repo / ".git") \
        and json.loads(trace.read_text().splitlines()[-1])["opening"] == 1
    # the started line was committed at once (the ledger cannot be checked out to a state without it); the
    # attack now has to rewrite history: the commit dropped from the branch, the results folder moved away
    assert git(repo, "log", "-1", "--format=%s").stdout.startswith("seal: opening 1 of protocol")
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    shutil.move(repo / "results", tmp_path / "moved-away")
    assert [e["event"] for e in ledger.read_ledger(lock)] == ["frozen"]
    with pytest.raises(SealError, match=r"a look left traces that the ledgers do not know") as refused:
        guard.check_unseal(cfg, lock, repo)
    message = str(refused.value)
    assert "seal-traces.jsonl line 1 records a look that no ledger holds" in message
    assert "is a verified copy of the sealed judgements" in message  # resources/cache/sealed
    # ... the sealed copy removed too: the trace outside the work tree still stops it, and freezing
    shutil.rmtree(repo / "resources/cache/sealed")
    with pytest.raises(SealError, match="records a look that no ledger holds"):
        guard.check_unseal(cfg, lock, repo)
    # restored as the message says (the line is printed in it): the look counts, the next opening is 2
    line = message.split("exactly as it is and commit it:\n    ", 1)[1].splitlines()[0]
    with open(lock / locations.LEDGER, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
    commit_all(repo, "restore the started line")
    assert guard.check_unseal(cfg, lock, repo)["opening"] == 2
    # status warns until the started line has reached a remote; pushed, it does not
    assert "this started line is on no remote-tracking branch yet" in status.describe(lock, repo, cfg)
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "remote.git")], check=True)
    git(repo, "remote", "add", "origin", str(tmp_path / "remote.git"))
    git(repo, "push", "-q", "origin", "HEAD:refs/heads/main")
    git(repo, "fetch", "-q", "origin")
    text = status.describe(lock, repo, cfg)
    assert "opening 1 of" in text and "STARTED" in text and "no remote-tracking branch" not in text


def test_a_started_line_in_the_history_of_any_branch_stops_the_next_opening(tmp_path):
    repo, cfg = _frozen_world(tmp_path)
    sha, lock = cfg["unseal"], repo / "lockfiles"
    git(repo, "checkout", "-q", "-b", "elsewhere")
    look_at_sealed_file(repo, sha, 1)
    commit_all(repo, "opening 1 started, on a side branch")
    git(repo, "checkout", "-q", "-")
    shutil.rmtree(repo / "results")
    shutil.rmtree(repo / "resources/cache/sealed")
    traces.trace_path(repo, lock).unlink()  # even without the trace file
    with pytest.raises(SealError, match=r"[0-9a-f]{12}:lockfiles/confirmation_ledger.jsonl line 2 records "
                                        r"opening 1 .*which the current lockfiles/confirmation_ledger.jsonl "
                                        r"does not hold"):
        guard.check_unseal(cfg, lock, repo)
