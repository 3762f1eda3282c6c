"""The seal's invariants, each tested by making the mistake a hurried, honest researcher makes: the opening
asked for without its token; the same sealed set opened twice or under a re-tuned protocol; a setting or code
edited after freezing; the confirmation judgements given as development judgements; a look whose ledger line
was thrown away. Documentation, tests and scratch files edited after freezing must NOT block the opening. The
world is a git checkout of this code whose own lockfiles/ is a genuine lock folder of the fixture data
(seal_world.genuine_repo); a real opening is reached through its real guard and its real first rule
(fetch_sealed_qrels: no model is needed to read the sealed file), with protocols constructed as freeze writes
them (no pinned model offline)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import DATA, FIXTURE, ROOT, read_json, run_snakemake
from seal_world import commit_all, constructed_freeze, genuine_repo, git, look_at_sealed_file, repo_config

from rerank_study.core.errors import SealError
from rerank_study.core.fileio import write_json
from rerank_study.data import beir, splits
from rerank_study.seal import freeze as seal_freeze
from rerank_study.seal import guard, ledger, locations, registry, status, traces
from rerank_study.settings import studies

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
                                                       train)
        write_json(lock / "derived_pins.json", derived)
    study = repo / "config/studies/swapped.yaml"
    study.write_text("study:\n  name: swapped\n  dataset: scifact\n  qrels_dev: qrels/test.tsv\n"
                     "  qrels_confirm: qrels/train.tsv\n  reranker: cross-encoder/ms-marco-MiniLM-L6-v2\n"
                     "  label_index: null\n  candidates: frozen\nlockdir: ../../lockfiles/studies/swapped\n")
    return study


# ------------------------------------------ 1. the confirmation judgements given as development ones --
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


# ---------------------------- 2. the same sealed set opened twice, or again under a re-tuned protocol --
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


# ----------------------------------------------------------- 3. the method edited after freezing --
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
    ("workflow/rerank_study/metrics/__init__.py", "NDCG = None\n", "added"),
    ("scripts/confirm.py", "\n# weakened\n", "changed"),
    ("lockfiles/reference/standin-smoke/reference.json", " ", "changed"),
    ("pyproject.toml", "\n# a comment\n", "changed"),
])
def test_code_committed_after_freezing_is_a_changed_method(tmp_path, path, text, how):
    repo, cfg = _frozen_world(tmp_path)
    p = repo / path
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text((p.read_text() if p.exists() else "") + text)
    commit_all(repo, f"after freezing: {path}")
    with pytest.raises(SealError, match=r"the method changed since the protocol was frozen: "
                                        rf".*{path} \({how}\)") as refused:
        guard.check_unseal(cfg, repo / "lockfiles", repo)
    # the fix the refusal names (the freezing commit; git rm for an added file) works as given
    frozen_at = git(repo, "log", "-1", "--format=%H", "--", "lockfiles/protocol.json").stdout.strip()
    fix = f"git rm {path}" if how == "added" else f"git checkout {frozen_at} -- {path}"
    assert fix in str(refused.value), str(refused.value)
    git(repo, *fix.split()[1:])
    commit_all(repo, "the frozen code restored")
    assert guard.check_unseal(cfg, repo / "lockfiles", repo)["opening"] == 1


def _status(repo: Path) -> subprocess.CompletedProcess:
    """scripts/confirm.py status of the repository, as a user runs it from the checkout."""
    return subprocess.run([sys.executable, "-B", str(repo / "scripts/confirm.py"), "status", "--configfile",
                           str(DATA / "fixture_config.yaml")], capture_output=True, text=True, cwd=repo)


def test_docs_tests_and_scratch_files_edited_after_freezing_do_not_block_the_opening(tmp_path):
    repo, cfg = _frozen_world(tmp_path)
    with open(repo / "README.md", "a", encoding="utf-8") as fh:
        fh.write("\nA typo fixed after freezing.\n")
    with open(repo / "docs/seal.md", "a", encoding="utf-8") as fh:
        fh.write("\nA paragraph written after freezing.\n")
    (repo / "tests/unit/test_after_freezing.py").write_text("def test_sum():\n    assert 1 + 1 == 2\n")
    # another study started meanwhile: its lock folder committed, its study file not yet
    (repo / "lockfiles/studies/other").mkdir(parents=True)
    shutil.copy(repo / "lockfiles/model_pins.json", repo / "lockfiles/studies/other/model_pins.json")
    commit_all(repo, "documentation, a test and another study's pins after freezing")
    (repo / "config/studies").mkdir(exist_ok=True)
    (repo / "config/studies/other.yaml").write_text("study:\n  name: other\n")
    (repo / "notes.txt").write_text("scratch, never committed\n")
    (repo / "workflow/rerank_study/__pycache__").mkdir(exist_ok=True)
    (repo / "workflow/rerank_study/__pycache__/ranking.cpython-311.pyc").write_bytes(b"byte code")
    status = _status(repo)
    assert status.returncode == 0 and "an opening now would pass every check: opening 1" in status.stdout, \
        status.stdout + status.stderr
    proc = look_at_sealed_file(repo, cfg["unseal"], 1)  # the real opening's first rule ran
    assert "started" in [e["event"] for e in ledger.read_ledger(repo / "lockfiles")], _out(proc)[-2000:]


def test_a_setting_edited_after_freezing_is_refused_naming_it_and_a_speed_setting_is_not(tmp_path):
    repo, cfg = _frozen_world(tmp_path)
    conf = repo / "config/config.yaml"
    frozen_text = conf.read_text(encoding="utf-8")
    # a speed setting, not yet committed: the fix the refusal gives (commit it) works
    conf.write_text(frozen_text.replace("  threads: 4               # speed only", "  threads: 2"))
    with pytest.raises(SealError, match=r"config/config.yaml \(changed\)\. The opening must be traceable to "
                                        r"a commit\. Fix: commit config/config.yaml"):
        guard.check_unseal(dict(repo_config(repo), unseal=cfg["unseal"]), repo / "lockfiles", repo)
    commit_all(repo, "fewer threads")
    assert guard.check_unseal(dict(repo_config(repo), unseal=cfg["unseal"]), repo / "lockfiles", repo)
    # a setting that changes a result, committed: refused before any job, naming the key and where it lives
    conf.write_text(conf.read_text(encoding="utf-8").replace("threshold: 0.01 ", "threshold: 0.02 "))
    commit_all(repo, "a re-tuned threshold")
    proc = look_at_sealed_file(repo, cfg["unseal"], 1, check=False)
    out = _out(proc)
    assert proc.returncode != 0 and "REFUSED: pins or settings changed since the protocol was frozen:" in out
    for key in ("settings.threshold", "threshold"):  # each key with both values, and where it lives
        assert f"  {key}: frozen 0.01, now 0.02" in out, out
    assert "Where: config/config.yaml" in out and "a committed one: git revert <its commit>" in out
    assert not (repo / "results").exists() and [e["event"] for e in ledger.read_ledger(repo / "lockfiles")] \
        == ["frozen"]
    status = _status(repo)
    assert status.returncode == 1 and "an opening now would be REFUSED" in status.stdout \
        and "settings.threshold" in status.stdout


def test_status_says_whether_the_records_kept_elsewhere_exist_and_how_to_make_them(tmp_path):
    repo, cfg = _frozen_world(tmp_path)
    before = _status(repo).stdout
    assert "registered outside: NO" in before and "confirm.py register --url" in before
    assert "ledger pushed: NO (no remote)" in before and "git push" in before
    done = subprocess.run([sys.executable, "-B", str(repo / "scripts/confirm.py"), "register", "--url",
                           "https://osf.io/abcde"], capture_output=True, text=True, cwd=repo)
    assert done.returncode == 0, done.stderr
    assert ledger.read_ledger(repo / "lockfiles")[-1] == {
        "event": "registered", "protocol_sha256": cfg["unseal"], "where": "https://osf.io/abcde",
        "time": ledger.read_ledger(repo / "lockfiles")[-1]["time"]}
    commit_all(repo, "registered")
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "remote.git")], check=True)
    git(repo, "remote", "add", "origin", str(tmp_path / "remote.git"))
    git(repo, "push", "-q", "origin", "HEAD:refs/heads/main")
    git(repo, "fetch", "-q", "origin")
    after = _status(repo)
    assert after.returncode == 0 and "registered outside: yes, https://osf.io/abcde" in after.stdout
    assert "ledger pushed: yes, origin/main" in after.stdout, after.stdout


def test_the_confirm_target_without_its_token_is_refused_before_any_job(tmp_path):
    repo, _cfg = _frozen_world(tmp_path)
    proc = run_snakemake(repo, config={"scorer": "pinned"}, snakefile=repo / "Snakefile",
                         targets=("confirm",), check=False)
    assert proc.returncode != 0 and "THE CONFIRMATION IS SEALED: no unseal token" in _out(proc), _out(proc)
    assert f"--config unseal=$(cut -d' ' -f1 {repo / 'lockfiles/protocol.sha256'})" in _out(proc)
    assert "rule " not in proc.stdout and not (repo / "results").exists()  # no job, no log


# ------------------------------------------------------------ 4. a look whose ledger line was discarded --
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
    # a line removed but not committed: the fix is to restore the committed ledger, never to commit the cut
    kept = (lock / locations.LEDGER).read_text()
    (lock / locations.LEDGER).write_text(kept.splitlines(keepends=True)[0])
    with pytest.raises(SealError, match=r"Fix: restore the ledger's committed lines \(git checkout HEAD -- "
                                        r"lockfiles/confirmation_ledger.jsonl\)"):
        guard.check_unseal(cfg, lock, repo)
    git(repo, "checkout", "HEAD", "--", "lockfiles/confirmation_ledger.jsonl")
    assert guard.check_unseal(cfg, lock, repo)["opening"] == 2
    # status warns until the started line has reached a remote; pushed, it does not
    assert "this started line is on no remote-tracking branch yet" in status.describe(lock, repo, cfg)[0]
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "remote.git")], check=True)
    git(repo, "remote", "add", "origin", str(tmp_path / "remote.git"))
    git(repo, "push", "-q", "origin", "HEAD:refs/heads/main")
    git(repo, "fetch", "-q", "origin")
    text = status.describe(lock, repo, cfg)[0]
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
