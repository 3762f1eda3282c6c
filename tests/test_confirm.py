"""The sealed confirmation (sealed means sealed). Every way around the guard that was found
is tried here and must fail loudly, or leave a record:

1. test switches only with a test-fixture lock folder, never the real sealed file; labelled
   openings never count for a real one;
2. every look is recorded (a 'started' ledger line before the judgements are copied), also one
   that targets an intermediate file; an unfinished opening blocks re-freezing, shows in status;
3. only the repository's tracked lockfiles/; committed (not stashed); append-only history; no
   results the ledger does not know;
4. no repin in confirmation mode; the audit compares with the protocol's pins;
5. the method (code, lock) is frozen; a refactor needs a recorded re-freeze before any opening;
6. freezing needs a full, audited development run with the pinned model;
7. fresh inference at every opening, proven equal to the cache;
8. the report says what was opened, its hash, when, the ledger line and the protocol.

Two worlds: the committed fixture (a TEST_FIXTURE lock folder: everything labelled TEST-ONLY, the
fixture's own sealed file) runs the whole DAG; a git copy of this checkout with its own lockfiles/
("genuine") exercises the guards of a real opening (no pinned model offline: those tests stop at
the guard, which runs before any job)."""

import csv
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from statistics import NormalDist

import pytest

from conftest import DATA, ROOT, make_lockdir, read_json, run_snakemake
from seal_world import FIXTURE_SPLITS, code_copy, commit_all, constructed_freeze, genuine_repo, git, repo_config
from rerank_study.seal import freeze as seal_freeze
from rerank_study.seal import guard, locations, tree
from rerank_study.seal import ledger as seal_ledger
from rerank_study.config import load_config
from rerank_study.errors import PipelineError, SealError

SEALED = "qrels/test.tsv"  # the fixture's (and SciFact's) sealed file: study.qrels_confirm

TEST_SWITCHES = {"allow_standin_for_testing": "true", "allow_dirty_for_testing": "true"}


def freeze_cmd(wd, *extra, command="freeze", dev_run=None):
    return [sys.executable, str(ROOT / "scripts/confirm.py"), command, "--dev-run",
            str(dev_run or wd / "results/dev-standin"), "--configfile", str(DATA / "fixture_config.yaml"),
            "--lockdir", str(wd / "lockfiles"), "--results", str(wd / "results"), "--resources", str(wd / "resources"),
            *extra]


def status(wd) -> str:
    proc = subprocess.run([sys.executable, str(ROOT / "scripts/confirm.py"), "status", "--configfile",
                           str(DATA / "fixture_config.yaml"), "--lockdir", str(wd / "lockfiles"), "--results",
                           str(wd / "results"), "--resources", str(wd / "resources")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def fixture_cfg(sha, **extra):
    over = {**FIXTURE_SPLITS, "scorer": "stand-in", "unseal": sha, "allow_standin_for_testing": True,
            "allow_dirty_for_testing": True}
    return load_config(ROOT / "config/config.yaml", {**over, **extra})


def sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def copy_workdir(src: Path, dest: Path, results=("dev-standin",), link_resources: bool = True) -> Path:
    """A work folder: the source's lock folder (copied), resources (linked, for read-only use, or
    copied where Snakemake runs) and runs."""
    dest.mkdir(parents=True)
    shutil.copytree(src / "lockfiles", dest / "lockfiles")
    if link_resources:
        (dest / "resources").symlink_to(src / "resources")
    else:
        shutil.copytree(src / "resources", dest / "resources", symlinks=True)
    for run in results:
        shutil.copytree(src / "results" / run, dest / "results" / run)
    return dest


# ------------------------------------------------------------------------ 1: the test fixture --
def test_the_repository_lockfiles_are_never_a_test_fixture(tmp_path):
    assert (DATA / "lockfiles" / locations.TEST_FIXTURE).is_file()
    assert not (ROOT / "lockfiles" / locations.TEST_FIXTURE).exists()
    assert not locations.is_test_fixture(ROOT / "lockfiles", ROOT)
    # even with the marker in it, a checkout's own lockfiles/ never counts as a fixture
    repo = code_copy(tmp_path / "repo")
    (repo / "lockfiles" / locations.TEST_FIXTURE).write_text("x\n")
    assert not locations.is_test_fixture(repo / "lockfiles", repo)
    assert locations.is_test_fixture(make_lockdir(tmp_path / "fixture-lock"), repo)


# ------------------------------------------------------- 6: freezing needs audited evidence --
def _freeze(wd, *extra, dev_run=None):
    return subprocess.run(freeze_cmd(wd, *extra, dev_run=dev_run), capture_output=True, text=True)


def test_freeze_refuses_a_smoke_run_a_standin_run_and_an_edited_summary(smoke_run, dev_run, fixture_workdir, tmp_path):
    wd = copy_workdir(fixture_workdir, tmp_path / "w")
    shutil.copytree(smoke_run, wd / "results" / smoke_run.name)
    # a 5-query smoke run (MDE from n = 5), even with the stand-in allowed
    proc = _freeze(wd, "--allow-standin-for-testing", dev_run=wd / "results" / smoke_run.name)
    assert proc.returncode == 1 and "a smoke/partial run (5 development queries" in proc.stderr, proc.stderr
    # the stand-in without the test switch
    proc = _freeze(wd)
    assert proc.returncode == 1 and "comes from the STAND-IN scorer" in proc.stderr
    # the test switch outside a test fixture lock folder
    plain = tmp_path / "plain"
    shutil.copytree(wd / "lockfiles", plain / "lockfiles")
    (plain / "lockfiles" / locations.TEST_FIXTURE).unlink()
    proc = _freeze(plain, "--allow-standin-for-testing", dev_run=wd / "results/dev-standin")
    assert proc.returncode == 1 and "TEST SUITE's fixture lock folder only" in proc.stderr
    # a stand-in summary whose "scorer" was edited to "pinned"
    run = wd / "results/dev-standin"
    summary = run / "summary.json"
    summary.write_text(summary.read_text().replace('"scorer": "STAND-IN"', '"scorer": "pinned"'))
    assert '"scorer": "pinned"' in summary.read_text()
    proc = _freeze(wd)
    assert proc.returncode == 1 and "summary.json: sha256" in proc.stderr and "edited after the run" in proc.stderr
    # ... and the manifest made to agree (scorer pinned, summary hash updated): the audit did not vouch for it
    m = read_json(run / "manifest.json")
    m["scorer"] = "pinned"
    next(a for a in m["artefacts"] if a["key"] == "summary")["sha256"] = sha256(summary)
    (run / "manifest.json").write_text(json.dumps(m, indent=2, sort_keys=True) + "\n")
    proc = _freeze(wd)
    assert proc.returncode == 1 and "audited a manifest with sha256" in proc.stderr
    assert "model weights sha256" in proc.stderr  # and the weights are not the pinned model's
    # ... and audited again: the independent audit rejects the forged run
    audit = subprocess.run([sys.executable, "-I", "-S", "-B", str(ROOT / "scripts/audit"), str(run), "--lockdir",
                            str(wd / "lockfiles")], capture_output=True, text=True)
    assert audit.returncode == 1 and "scorer_label" in read_json(run / "audit.json")["failed_checks"]
    proc = _freeze(wd)
    assert proc.returncode == 1 and "the audit did not pass" in proc.stderr
    # no audit at all
    (run / "audit.json").unlink()
    proc = _freeze(wd)
    assert proc.returncode == 1 and "audit.json does not exist" in proc.stderr
    assert not (wd / "lockfiles/protocol.json").exists() and not (wd / "lockfiles" / locations.LEDGER).exists()


@pytest.fixture(scope="module")
def frozen(dev_run, fixture_workdir, tmp_path_factory):
    """A copy of the fixture work folder (dev run done) with a TEST-ONLY protocol frozen."""
    wd = tmp_path_factory.mktemp("confirm")
    for sub in ("lockfiles", "resources", "results"):
        shutil.copytree(fixture_workdir / sub, wd / sub, symlinks=True)
    out = _freeze(wd, "--allow-standin-for-testing")
    assert out.returncode == 0, out.stderr
    sha = (wd / "lockfiles/protocol.sha256").read_text().split()[0]
    return wd, sha


def _recomputed_power(run: Path, n_conf: int):
    """Independently of the project: cluster-robust Var(mean Δ) = G/(G-1)·Σ_g (S_g − n_g·Δ̄)²/n²,
    sd_eff = sqrt(n·Var), MDE = (z_.975 + z_.8)·sd_eff/sqrt(n_conf), from per_query.tsv and groups.tsv."""
    with open(run / "per_query.tsv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    delta = {r["qid"]: float(r["blend_ndcg@10"]) - float(r["ce_ndcg@10"]) for r in rows}
    with open(run / "groups.tsv", encoding="utf-8") as fh:
        groups = {}
        for r in csv.DictReader(fh, delimiter="\t"):
            groups.setdefault(r["group_id"], []).append(r["qid"])
    n, G = len(delta), len(groups)
    mean = sum(delta.values()) / n
    var = G / (G - 1) * sum((sum(delta[q] for q in g) - len(g) * mean) ** 2 for g in groups.values()) / n ** 2
    sd_eff = math.sqrt(n * var)
    z = NormalDist().inv_cdf(0.975) + NormalDist().inv_cdf(0.8)
    return var, sd_eff, z * sd_eff / math.sqrt(n_conf), G


def test_freeze_writes_protocol_method_hash_and_preregistration_with_an_mde_we_recompute(frozen):
    wd, sha = frozen
    lock = wd / "lockfiles"
    assert sha256(lock / "protocol.json") == sha
    p = read_json(lock / "protocol.json")
    assert p["bootstrap"]["seed"] == 111 and p["bootstrap"]["B"] == 10000 and p["threshold"] == 0.01
    assert p["comparisons"]["primary"] == "blend-ce" and p["blend"]["k"] == 60 and p["test_only"] is True
    # a test protocol says what it is: the stand-in, not "pinned"
    assert p["model"]["scorer"] == "stand-in" and p["model"]["standin"] == {"head_seed": 110, "head_std": 0.02}
    assert p["model"]["revision"] == "233902d25c440f23af6f7d6e94d2946bac0bee0a"
    assert p["candidates"]["sha256"] == read_json(lock / "derived_pins.json")["candidates"]["sha256"]
    assert p["candidates"]["file_sha256"] == sha256(lock / "candidates/candidates.tsv")
    # the method: every library module, rule script, rule, the Snakefile, schema, requirements lock
    files = p["method"]["files"]
    for rel in ("workflow/rerank_study/metrics.py", "workflow/rerank_study/ranking.py", "workflow/scripts/evaluate.py",
                "workflow/rules/analyse.smk", "Snakefile", "workflow/schemas/config.schema.yaml",
                "lockfiles/requirements.lock", "lockfiles/torch.txt"):
        assert files[rel] == sha256(ROOT / rel), rel
    assert p["evalstats"]["slices"] and p["evalstats"]["guardrails"] == {"blend-rrf": 0.02}
    # the evidence is the audited run, not summary.json alone
    run = wd / "results/dev-standin"
    ev = p["development_evidence"]
    assert ev["manifest_sha256"] == sha256(run / "manifest.json") == read_json(run / "audit.json")["info"]["manifest_sha256"]
    # MDE recomputed here from per_query.tsv and groups.tsv (not from the protocol's own stored variance)
    var, sd_eff, mde, G = _recomputed_power(run, 300)
    pw = p["power"]
    assert G >= 2 and pw["n_development"] == 8 and pw["n_confirmation"] == 300
    assert pw["grouped_variance_of_mean"] == pytest.approx(var, rel=1e-12)
    assert pw["sd_eff"] == pytest.approx(sd_eff, rel=1e-12) and pw["mde_confirmation"] == pytest.approx(mde, rel=1e-12)
    note = (lock / "PREREGISTRATION.md").read_text()
    assert sha in note and f"{mde:.6f}" in note and "sqrt(n_conf)" in note and "TEST-ONLY" in note
    assert p["method"]["sha256"] in note
    ledger = seal_ledger.read_ledger(lock)
    assert [e["event"] for e in ledger] == ["frozen"] and ledger[0]["protocol_sha256"] == sha
    assert ledger[0]["labels"] == [seal_ledger.FIXTURE_LABEL, seal_ledger.PROTOCOL_LABEL]
    again = _freeze(wd, "--allow-standin-for-testing")
    assert again.returncode == 1 and "already exists" in again.stderr


# ------------------------------------------------------------------- refusals before any job --
def _assert_refused(proc, wd, text):
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert text in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-3000:]
    assert not list((wd / "results").glob("confirm-*")), "a refused opening must leave no partial output"
    assert not (wd / "resources/cache/sealed").exists()
    assert [e["event"] for e in seal_ledger.read_ledger(wd / "lockfiles")] == ["frozen"], "a refusal records no look"


def test_refusals_leave_no_partial_output(frozen, tmp_path):
    wd, sha = frozen
    on = {**TEST_SWITCHES, "unseal": sha}
    _assert_refused(run_snakemake(wd, "-n", config={**on, "unseal": "ab" * 32}, check=False), wd,
                    "is not the frozen protocol's sha256")
    _assert_refused(run_snakemake(wd, config=TEST_SWITCHES, check=False, targets=("confirm",)), wd, "no unseal token")
    # a protocol setting changed since freezing (the blend constant)
    cfg = tmp_path / "blend.yaml"
    cfg.write_text("blend:\n  k: 61\n")
    _assert_refused(run_snakemake(wd, "-n", "--configfile", str(cfg), config=on, check=False), wd,
                    "changed since the protocol was frozen: blend.k")
    # the stand-in without the test-only switch
    _assert_refused(run_snakemake(wd, "-n", config={"allow_dirty_for_testing": "true", "unseal": sha}, check=False),
                    wd, "cannot be run with the STAND-IN")
    # 4: re-pinning during an opening, refused at parse time
    _assert_refused(run_snakemake(wd, config={**on, "repin": "candidates"}, check=False, targets=("confirm",)), wd,
                    "repin=candidates in confirmation mode")
    # 3: a lock folder elsewhere (a fresh protocol and ledger with no trace) - not a test fixture either
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(wd / "lockfiles", elsewhere)
    (elsewhere / locations.TEST_FIXTURE).unlink()
    _assert_refused(run_snakemake(wd, "-n", config={"unseal": sha, "lockdir": str(elsewhere)}, check=False), wd,
                    "only with one of the repository's own tracked lock folders")
    # 1: ... and the test switches there
    _assert_refused(run_snakemake(wd, "-n", config={**on, "lockdir": str(elsewhere)}, check=False), wd,
                    "is for the TEST SUITE's fixture lock folder only")


def _copy_lock(wd, tmp_path) -> Path:
    lock = tmp_path / "lockfiles"
    shutil.copytree(wd / "lockfiles", lock)
    return lock


def test_test_switches_never_reach_the_real_sealed_judgements(frozen, tmp_path):
    """A "fixture" lock folder whose sealed set overlaps the repository's real one is refused: the real file's
    pins, or an edited copy of it (other content, the same sealed queries), each with a consistent record."""
    wd, sha = frozen
    lock = _copy_lock(wd, tmp_path)
    assert guard.check_unseal(fixture_cfg(sha), lock, ROOT)["labels"][0] == seal_ledger.FIXTURE_LABEL
    real_record = read_json(ROOT / "lockfiles/derived_pins.json")["sealed_set"]
    pins, derived = read_json(lock / "data_pins.json"), read_json(lock / "derived_pins.json")
    pins["files"][SEALED] = read_json(ROOT / "lockfiles/data_pins.json")["files"][SEALED]
    (lock / "data_pins.json").write_text(json.dumps(pins))
    derived["sealed_set"] = dict(real_record, corpus_sha256=pins["files"]["corpus.jsonl"]["sha256"])
    (lock / "derived_pins.json").write_text(json.dumps(derived))
    (lock / "splits/confirm.txt").write_text("".join(f"{q}\n" for q in sorted(real_record["queries"], key=int)))
    with pytest.raises(SealError, match="overlap the REAL sealed set"):
        guard.check_unseal(fixture_cfg(sha), lock, ROOT)
    # an edited copy: one judgement changed, so neither the file nor the content hash is the real one
    pins["files"][SEALED].update(sha256="1" * 64, content_sha256="2" * 64)
    (lock / "data_pins.json").write_text(json.dumps(pins))
    derived["sealed_set"].update(file_sha256="1" * 64, content_sha256="2" * 64)
    (lock / "derived_pins.json").write_text(json.dumps(derived))
    with pytest.raises(SealError, match="overlap the REAL sealed set .*a sealed query id of the same corpus"):
        guard.check_unseal(fixture_cfg(sha), lock, ROOT)


def test_refusal_when_protocol_file_or_a_pin_changed(frozen, tmp_path):
    wd, sha = frozen
    lock = _copy_lock(wd, tmp_path)
    cfg = fixture_cfg(sha)
    assert guard.check_unseal(cfg, lock, ROOT)["opening"] == 1
    pins = read_json(lock / "derived_pins.json")
    pins["candidates"]["sha256"] = "f" * 64
    (lock / "derived_pins.json").write_text(json.dumps(pins))
    with pytest.raises(SealError, match="changed since the protocol was frozen: candidates.sha256"):
        guard.check_unseal(cfg, lock, ROOT)
    shutil.copy(wd / "lockfiles/derived_pins.json", lock / "derived_pins.json")
    (lock / "candidates/candidates.tsv").write_text("qid\trank\tdoc_id\n")  # the committed table itself
    with pytest.raises(SealError, match="candidates.file_sha256"):
        guard.check_unseal(cfg, lock, ROOT)
    shutil.copy(wd / "lockfiles/candidates/candidates.tsv", lock / "candidates/candidates.tsv")
    (lock / "protocol.json").write_text((lock / "protocol.json").read_text().replace('"B": 10000', '"B": 9999'))
    with pytest.raises(SealError, match="changed since it was frozen"):
        guard.check_unseal(cfg, lock, ROOT)


def test_refusal_on_uncommitted_code_says_commit_not_stash(frozen, tmp_path):
    wd, sha = frozen
    repo = code_copy(tmp_path / "repo", with_git=True)
    cfg = fixture_cfg(sha, allow_dirty_for_testing=False)
    u = guard.check_unseal(cfg, wd / "lockfiles", repo)
    assert u["labels"] == [seal_ledger.FIXTURE_LABEL, seal_ledger.PROTOCOL_LABEL, seal_ledger.STANDIN_RUN_LABEL]
    assert u["git"]["commit"] and u["git"]["dirty"] == []
    (repo / "scripts/notes.py").write_text("print(2)\n")  # untracked, outside the method: the tree is still dirty
    with pytest.raises(SealError) as err:
        guard.check_unseal(cfg, wd / "lockfiles", repo)
    assert "differs from its last commit: scripts/notes.py (not committed)" in str(err.value)
    assert "COMMIT changes" in str(err.value)
    assert "or stash" not in str(err.value) and "never stash" in str(err.value)
    cfg["allow_dirty_for_testing"] = True
    assert seal_ledger.DIRTY_LABEL in guard.check_unseal(cfg, wd / "lockfiles", repo)["labels"]
    cfg["allow_dirty_for_testing"] = False
    with pytest.raises(SealError, match="is not a git checkout"):
        guard.check_unseal(cfg, wd / "lockfiles", code_copy(tmp_path / "not-a-repo"))


def test_refusal_after_an_opening_under_another_protocol(frozen, tmp_path):
    wd, sha = frozen
    lock = _copy_lock(wd, tmp_path)
    seal_ledger.append_ledger(lock, {"event": "started", "protocol_sha256": "e" * 64, "opening": 1,
                                  "run": "confirm-eeeeeeeeeeee-test-1", "labels": [seal_ledger.FIXTURE_LABEL]})
    with pytest.raises(SealError, match="line 2 records opening 1 of this sealed set .* under a different protocol"):
        guard.check_unseal(fixture_cfg(sha), lock, ROOT)


def test_an_unreadable_or_unknown_ledger_line_stops_the_opening(frozen, tmp_path):
    wd, sha = frozen
    lock = _copy_lock(wd, tmp_path)
    ledger = lock / locations.LEDGER
    good = ledger.read_text()
    ledger.write_text(good + '{"event": "started", "protocol_sha256": "e"\n')
    with pytest.raises(SealError, match="UNREADABLE LEDGER .* line 2"):
        guard.check_unseal(fixture_cfg(sha), lock, ROOT)
    ledger.write_text(good + json.dumps({"event": "peeked", "protocol_sha256": sha}) + "\n")
    with pytest.raises(SealError, match="line 2: unknown event 'peeked'"):
        guard.check_unseal(fixture_cfg(sha), lock, ROOT)
    ledger.write_text(good + '{"event": "started"')  # a truncated last line: nothing is appended after it
    with pytest.raises(SealError, match="last line is unterminated"):
        seal_ledger.append_ledger(lock, {"event": "completed"})


def test_results_the_ledger_does_not_know_are_refused(frozen, tmp_path):
    wd, sha = frozen
    lock = _copy_lock(wd, tmp_path)
    (tmp_path / "results" / f"confirm-{sha[:12]}-test-1").mkdir(parents=True)
    with pytest.raises(SealError, match=f"confirm-{sha[:12]}-test-1 is a confirmation results folder that no ledger"):
        guard.check_unseal(dict(fixture_cfg(sha), results=str(tmp_path / "results")), lock, ROOT)


def test_changed_method_stops_the_opening_and_names_the_files(frozen, tmp_path):
    wd, sha = frozen
    repo = code_copy(tmp_path / "repo")
    assert guard.check_unseal(fixture_cfg(sha), wd / "lockfiles", repo)["opening"] == 1
    metrics = repo / "workflow/rerank_study/metrics.py"
    metrics.write_text(metrics.read_text().replace("log2(i + 2)", "log2(i + 3)") + "\n")
    (repo / "workflow/scripts/extra.py").write_text("# a new rule script\n")
    (repo / "lockfiles/torch.txt").write_text("torch==2.14.0\n")
    with pytest.raises(SealError) as err:
        guard.check_unseal(fixture_cfg(sha), wd / "lockfiles", repo)
    msg = str(err.value)
    assert "the method changed since the protocol was frozen" in msg and "refreeze" in msg
    for part in ("workflow/rerank_study/metrics.py (changed)", "workflow/scripts/extra.py (added)",
                 "lockfiles/torch.txt (changed)"):
        assert part in msg, msg


# ----------------------------------------------------------------- 1 + 3: a genuine opening --
@pytest.fixture
def genuine(tmp_path):
    """A git checkout of this code whose own lockfiles/ hold a frozen, committed protocol for the
    pinned model. No pinned model exists offline, so the evidence and power blocks are a harness
    (the real ones are tested on the fixture); these tests stop at the guard, before any job."""
    repo = genuine_repo(tmp_path / "repo")
    cfg = repo_config(repo)
    sha = constructed_freeze(repo, cfg, repo / "lockfiles")
    cfg["unseal"] = sha
    return repo, cfg, sha


def test_every_started_line_of_the_sealed_set_counts_labelled_or_not(genuine):
    """A look is a look: a line labelled TEST-ONLY in the repository's own ledger (the switches are refused there, so
    only a hand-written or legacy line can be one) counts like any other for the sealed set it names."""
    repo, cfg, sha = genuine
    lock = repo / "lockfiles"
    u = guard.check_unseal(dict(cfg, results=str(repo / "results")), lock, repo)
    assert (u["opening"], u["labels"], u["run"], u["test_fixture"]) == (1, [], f"confirm-{sha[:12]}-1", False)
    # the switches themselves are refused on the repository's lockfiles
    with pytest.raises(SealError, match="is for the TEST SUITE's fixture lock folder only"):
        guard.check_unseal(dict(cfg, allow_standin_for_testing=True), lock, repo)
    # a labelled started + completed line of THIS protocol: opening 1 is taken, the next is 2, and it is compared with it
    labelled = [{"event": "started", "protocol_sha256": sha, "opening": 1, "run": f"confirm-{sha[:12]}-1",
                 "labels": ["TEST-ONLY STAND-IN"]},
                {"event": "completed", "protocol_sha256": sha, "opening": 1, "run": f"confirm-{sha[:12]}-1",
                 "labels": ["TEST-ONLY STAND-IN"], "artefacts_sha256": {"summary": "1" * 64}}]
    for e in labelled:
        seal_ledger.append_ledger(lock, e)
    commit_all(repo, "labelled lines")
    u = guard.check_unseal(dict(cfg, results=str(repo / "results")), lock, repo)
    assert u["opening"] == 2 and [p["opening"] for p in u["previous"]] == [1]
    # ... and a labelled opening under ANOTHER protocol blocks this one, like any look
    seal_ledger.append_ledger(lock, {"protocol_sha256": "e" * 64, "opening": 1, "labels": ["TEST-ONLY UNCOMMITTED CODE"]})
    commit_all(repo, "another protocol's labelled opening")
    with pytest.raises(SealError, match="line 4 records opening 1 of this sealed set .* under a different protocol"):
        guard.check_unseal(cfg, lock, repo)


def test_a_genuine_opening_needs_the_tracked_append_only_ledger_of_the_repository(genuine, tmp_path):
    repo, cfg, sha = genuine
    lock = repo / "lockfiles"
    # a lock folder elsewhere: a fresh protocol and ledger there would leave no trace
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(lock, elsewhere)
    with pytest.raises(SealError, match="only with one of the repository's own tracked lock folders"):
        guard.check_unseal(cfg, elsewhere, repo)
    # an uncommitted ledger line: commit it (never stash it away)
    seal_ledger.append_ledger(lock, {"event": "started", "protocol_sha256": sha, "opening": 1,
                                  "run": f"confirm-{sha[:12]}-1", "labels": []})
    with pytest.raises(SealError, match=r"differs from its last commit: lockfiles/confirmation_ledger.jsonl \(changed\).*COMMIT"):
        guard.check_unseal(cfg, lock, repo)
    commit_all(repo, "opening 1 started")
    u = guard.check_unseal(cfg, lock, repo)
    assert u["opening"] == 2 and u["unfinished"][0]["opening"] == 1 and u["previous"] == []
    # a committed rewrite that drops the line: the history shows it
    lines = (lock / locations.LEDGER).read_text().splitlines(keepends=True)
    (lock / locations.LEDGER).write_text(lines[0])
    commit_all(repo, "tidy the ledger")
    with pytest.raises(SealError, match="the ledger lockfiles/confirmation_ledger.jsonl was rewritten: commit"):
        guard.check_unseal(cfg, lock, repo)
    (lock / locations.LEDGER).write_text("".join(lines))
    commit_all(repo, "restore the ledger")
    assert guard.check_unseal(cfg, lock, repo)["opening"] == 2
    # results the ledger does not know
    (repo / "results" / f"confirm-{sha[:12]}-7").mkdir(parents=True)
    with pytest.raises(SealError, match=f"confirm-{sha[:12]}-7 is a confirmation results folder that no ledger records"):
        guard.check_unseal(dict(cfg, results=str(repo / "results")), lock, repo)
    # an ignored (untracked) protocol file, invisible to git status: the walk of the file system sees it
    git(repo, "rm", "-q", "--cached", "lockfiles/protocol.json")
    (repo / ".git/info/exclude").write_text("lockfiles/protocol.json\n")  # (.gitignore is part of the method)
    commit_all(repo, "untrack the protocol")
    assert git(repo, "status", "--porcelain").stdout == ""
    assert tree.tree_state(repo).dirty == ["lockfiles/protocol.json (not committed)"]
    with pytest.raises(SealError, match=r"differs from its last commit: lockfiles/protocol.json \(not committed\)"):
        guard.check_unseal(cfg, lock, repo)
    # ... and an uncommitted protocol is named even where a tree check is not reached first
    with pytest.raises(SealError, match="lockfiles/protocol.json not committed"):
        guard._committed_records(lock, repo)


def test_a_genuine_opening_refuses_repin_and_changed_committed_code(genuine):
    repo, cfg, sha = genuine
    with pytest.raises(SealError, match="repin=candidates in confirmation mode"):
        guard.check_unseal(dict(cfg, repin="candidates"), repo / "lockfiles", repo)
    ranking = repo / "workflow/rerank_study/ranking.py"
    ranking.write_text(ranking.read_text() + "\n# a committed change after freezing\n")
    commit_all(repo, "change after freezing")
    with pytest.raises(SealError, match=r"method changed .*workflow/rerank_study/ranking.py \(changed\)"):
        guard.check_unseal(cfg, repo / "lockfiles", repo)


# ---------------------------------------------- 2 + 7 + 8: openings on the fixture, every look --
def _sealed_run(sha, n):
    return f"results/confirm-{sha[:12]}-test-{n}"


@pytest.fixture(scope="module")
def opened(frozen):
    """1. a look at intermediate files of opening 1 (no 'confirm' target); 2. a full opening (2);
    3. a re-opening (3). What the ledger and status said after each step is kept."""
    wd, sha = frozen
    on = {**TEST_SWITCHES, "unseal": sha}
    seen = {}
    run_snakemake(wd, config=on, targets=(f"{wd / _sealed_run(sha, 1)}/inputs/qrels.tsv",
                                          f"{wd / _sealed_run(sha, 1)}/groups.tsv"))
    lock, aside = wd / "lockfiles", wd / "aside"
    aside.mkdir()
    for name in (locations.PROTOCOL, locations.PROTOCOL_SHA, locations.PREREG):  # the protocol moved aside ...
        shutil.move(lock / name, aside / name)
    refrozen = _freeze(wd, "--allow-standin-for-testing")  # ... and a new one frozen after the look
    for name in (locations.PROTOCOL, locations.PROTOCOL_SHA, locations.PREREG):
        shutil.move(aside / name, lock / name)
    seen["after_look"] = {"ledger": seal_ledger.read_ledger(wd / "lockfiles"), "status": status(wd), "freeze": refrozen,
                          "refreeze": subprocess.run(freeze_cmd(wd, "--reason", "tidy", command="refreeze"),
                                                     capture_output=True, text=True),
                          "replay": subprocess.run([sys.executable, str(ROOT / "workflow/scripts/fetch_sealed_qrels.py"),
                                                    str(wd / _sealed_run(sha, 1) / "logs/fetch_sealed_qrels.job.json")],
                                                   capture_output=True, text=True,
                                                   env=dict(os.environ, PYTHONPATH=str(ROOT / "workflow"))),
                          "plan": run_snakemake(wd, "-n", config=on, targets=("confirm",)).stdout}
    run_snakemake(wd, config=on, targets=("confirm",))
    seen["first_bytes"] = {p: p.read_bytes() for p in (wd / _sealed_run(sha, 2)).rglob("*") if p.is_file()}
    run_snakemake(wd, config=on, targets=("confirm",))
    return wd, sha, seen


def test_a_look_at_an_intermediate_file_is_recorded_before_the_judgements_are_copied(opened):
    wd, sha, seen = opened
    look = seen["after_look"]
    started = look["ledger"][-1]
    assert [e["event"] for e in look["ledger"]] == ["frozen", "started"]
    assert (started["opening"], started["run"]) == (1, f"confirm-{sha[:12]}-test-1")
    assert started["sealed_file"] == SEALED and started["protocol_sha256"] == sha
    assert started["sealed_sha256"] == read_json(wd / "lockfiles/data_pins.json")["files"][SEALED]["sha256"]
    assert started["time"] and started["method_sha256"] and seal_ledger.FIXTURE_LABEL in started["labels"]
    run1 = wd / _sealed_run(sha, 1)
    assert (run1 / "inputs/qrels.tsv").exists() and (run1 / "groups.tsv").exists()
    assert not (run1 / "summary.json").exists() and not (run1 / "OPENING.json").exists()
    assert read_json(run1 / "OPENING_STARTED.json")["line"] == 2
    # status shows the unfinished look; it blocks freezing and re-freezing; a replayed fetch job is refused
    assert "openings recorded in any ledger: 1 (0 completed, 1 started but not completed)" in look["status"]
    assert "opening 1 of" in look["status"] and "NOT COMPLETED" in look["status"]
    for proc, what in ((look["freeze"], "REFUSED to freeze a protocol"), (look["refreeze"], "REFUSED to re-freeze")):
        assert proc.returncode == 1 and what in proc.stderr and "NEVER COMPLETED" in proc.stderr, proc.stderr
    assert look["replay"].returncode != 0 and "is already started" in look["replay"].stderr
    # the next opening is number 2, never 1 again
    assert f"confirm-{sha[:12]}-test-2" in look["plan"] and f"confirm-{sha[:12]}-test-1/" not in look["plan"]


def test_opening_is_recorded_and_a_reopening_reproduces_it_from_fresh_inference(opened):
    wd, sha, seen = opened
    first, second = wd / _sealed_run(sha, 2), wd / _sealed_run(sha, 3)
    summary = read_json(first / "summary.json")
    assert summary["n_queries"] == 6 and summary["bootstrap"]["seed"] == 111
    audit = read_json(first / "audit.json")
    # against the protocol: its sha256, 6 pins (corpus, queries, sealed qrels, 2 splits, candidates), the
    # scorer and the method hash (a stand-in opening: no weights pin); its settings: anchored to it
    assert audit["ok"] is True and audit["checks"]["protocol"]["checked"] == 9
    assert audit["checks"]["settings"]["checked"] > 0
    assert read_json(first / "manifest.json")["kind"] == "confirmation"
    ledger = seal_ledger.read_ledger(wd / "lockfiles")
    assert [(e["event"], e.get("opening")) for e in ledger] == [
        ("frozen", None), ("started", 1), ("started", 2), ("completed", 2), ("started", 3), ("completed", 3)]
    done2, done3 = ledger[3], ledger[5]
    assert done2["started_line"] == 3 and done3["started_line"] == 5
    for key in ("time", "code_commit", "method_sha256", "model_identity", "data_sha256", "candidates_sha256",
                "summary_sha256", "audit_sha256"):
        assert done2[key], key
    assert "reproduces_opening" not in done2  # opening 1 never completed: nothing to reproduce
    assert done3["reproduces_opening"] == 2 and done3["reproduced_byte_identical"] is True and done3["differences"] == []
    assert read_json(second / "OPENING.json")["reproduces_opening"] == 2
    # 7: both openings inferred every pair; the re-opening proved every cached batch equal (a measurement)
    batches = 6 * 4  # 6 confirmation queries x 50 candidates in chunks of 16
    for d, verified in ((done2, 0), (done3, batches)):  # opening 2 found no cached confirmation batch
        assert d["scoring"]["fresh_inference"] is True
        assert d["scoring"]["pairs_inferred"] == d["scoring"]["pairs"] == 300 and d["scoring"]["pairs_from_cache"] == 0
        assert d["scoring"]["cache_entries_verified"] == verified
    # the first result was never overwritten
    assert {p: p.read_bytes() for p in first.rglob("*") if p.is_file()} == seen["first_bytes"]
    text = status(wd)
    assert "openings recorded in any ledger: 3 (2 completed, 1 started but not completed)" in text
    assert "reproduced byte-identical True" in text


def test_report_states_what_was_opened_when_and_under_which_protocol(opened):
    wd, sha, _ = opened
    run = wd / _sealed_run(sha, 2)
    report = (run / "report.md").read_text()
    summary = read_json(run / "summary.json")
    started = seal_ledger.read_ledger(wd / "lockfiles")[2]
    pins = read_json(wd / "lockfiles/data_pins.json")
    assert "Confirmation analysis — opening 2" in report and "TEST-ONLY STAND-IN" in report
    prim = summary["comparisons"][summary["primary"]]
    outcome = "REACHED" if prim["mean_reaches_threshold"] else "NOT REACHED"
    assert f"the practical threshold 0.01 is **{outcome}**" in report
    assert f"= **{prim['mean']:.6f}**" in report
    # what, its hash, the data URL, when, the ledger line, the protocol
    assert f"**`{SEALED}`**, sha256 `{pins['files'][SEALED]['sha256']}`" in report
    assert pins["zip"]["url"] in report
    assert f"Opened at **{started['time']}**" in report and "line 3" in report
    assert json.dumps(started, sort_keys=True, ensure_ascii=True) in report
    assert f"| protocol sha256 | `{sha}` |" in report
    assert "started and never completed: 1 (started" in report
    assert "SEALED: not an input" not in report
    assert "| sealed confirmation judgements OPENED |" in report
    # the development report still says the truth about the development run
    assert "SEALED: not an input of any development rule" in (wd / "results/dev-standin/report.md").read_text()
    assert "0.665" in report and "0.6451" in report  # published retriever numbers, for context


def test_audit_of_a_confirmation_run_compares_with_the_protocol_not_repinned_lockfiles(opened, tmp_path):
    wd, sha, _ = opened
    name = _sealed_run(sha, 2).split("/")[1]
    cp = copy_workdir(wd, tmp_path / "w", results=(name,))
    run, lock = cp / "results" / name, cp / "lockfiles"
    # what repin=candidates would do: another candidate table (dev rows only changed), pinned and used
    table = (lock / "candidates/candidates.tsv").read_text().splitlines(keepends=True)
    dev_q = (lock / "splits/dev.txt").read_text().split()[0]
    i = next(k for k, line in enumerate(table) if line.startswith(f"{dev_q}\t"))
    table[i], table[i + 1] = table[i + 1], table[i]
    (lock / "candidates/candidates.tsv").write_text("".join(table))
    new = sha256(lock / "candidates/candidates.tsv")
    pins = read_json(lock / "derived_pins.json")
    pins["candidates"]["sha256"] = new
    (lock / "derived_pins.json").write_text(json.dumps(pins, indent=2))
    m = read_json(run / "manifest.json")
    next(a for a in m["artefacts"] if a["key"] == "candidates")["sha256"] = new
    (run / "manifest.json").write_text(json.dumps(m, indent=2, sort_keys=True) + "\n")
    proc = subprocess.run([sys.executable, "-I", "-S", "-B", str(ROOT / "scripts/audit"), str(run), "--lockdir",
                           str(lock), "--out", str(tmp_path / "audit.json")], capture_output=True, text=True)
    result = read_json(tmp_path / "audit.json")
    assert proc.returncode == 1 and result["failed_checks"] == ["protocol"], result["failed_checks"]
    failure = result["checks"]["protocol"]["first_failures"][0]
    assert failure["item"] == "pin candidates" and failure["found"] == new
    assert failure["expected"] == read_json(wd / "lockfiles/protocol.json")["candidates"]["sha256"]


# --------------------------------------------------------- 7: fresh inference, proven equal --
def test_fresh_scoring_never_reads_the_cache_and_proves_each_entry_equal(tmp_path):
    from rerank_study import beir, models, scoring, scoring_model

    pins = read_json(ROOT / "lockfiles/model_pins.json")
    models.build_standin(pins["bi_encoder"], pins["cross_encoder"], tmp_path / "m", 110, 0.02)
    settings = scoring.ScoringSettings(512, "longest_first", 4, 110, "float32")
    scoring_model.setup_torch(settings)
    tok, model = scoring_model.load_cross_encoder(tmp_path / "m")
    corpus = beir.read_corpus(DATA / "scifact_fixture/corpus.jsonl")
    docs = {d: corpus[d].full_text[:300] for d in list(corpus)[:6]}  # 6 pairs = batches of 4 + 2
    ranked, qtext = {"35": list(docs)}, {"35": beir.read_queries(DATA / "scifact_fixture/queries.jsonl")["35"]}
    cache = scoring.ScoreCache(tmp_path / "cache")

    def score(fresh):
        return scoring.score_run(ranked, qtext, docs, tok, lambda: model, settings, "m", {"v": 1}, cache, fresh=fresh)

    rows, counts = score(False)
    assert (counts.pairs_inferred, counts.pairs_from_cache, counts.cache_entries_verified) == (6, 0, 0)
    again, fresh = score(True)
    assert (fresh.pairs_inferred, fresh.pairs_from_cache, fresh.cache_entries_verified) == (6, 0, 2)
    assert [r["logit"] for r in again] == [r["logit"] for r in rows]
    # a cache entry with a valid checksum but another score: used silently without fresh, refused with it
    entry_path = next((tmp_path / "cache").rglob("*.json"))
    entry = read_json(entry_path)
    entry["logits"][1] = repr(float(entry["logits"][1]) + 0.5)
    entry["sha256"] = scoring.ScoreCache.checksum(entry["key"], entry["logits"])
    entry_path.write_text(json.dumps(entry))
    cached_rows, c = score(False)
    assert c.pairs_from_cache == 6 and [r["logit"] for r in cached_rows] != [r["logit"] for r in rows]
    with pytest.raises(PipelineError) as err:
        score(True)
    assert "FRESH INFERENCE DIFFERS FROM THE SCORE CACHE: query 35 batch" in str(err.value)
    assert str(entry_path) in str(err.value)


# --------------------------------------------------- 5: a refactor needs a recorded re-freeze --
def test_changed_code_stops_an_opening_and_a_refactor_is_refrozen_only_before_any_opening(dev_run, fixture_workdir,
                                                                                           tmp_path):
    repo = code_copy(tmp_path / "repo")
    wd = copy_workdir(fixture_workdir, tmp_path / "w", link_resources=False)
    cfg = load_config(ROOT / "config/config.yaml", FIXTURE_SPLITS)
    lock, dev = wd / "lockfiles", wd / "results/dev-standin"
    sha = seal_freeze.freeze(cfg, lock, dev, repo, allow_standin_for_testing=True)["sha256"]
    # a comment in a rule file: the method changed; the opening stops before any job and names the file
    smk = repo / "workflow/rules/report.smk"
    smk.write_text(smk.read_text() + "\n# refactor: nothing that changes a result\n")
    proc = run_snakemake(wd, "-n", config={**TEST_SWITCHES, "unseal": sha}, check=False, targets=("confirm",),
                         snakefile=repo / "Snakefile")
    assert proc.returncode != 0 and "workflow/rules/report.smk (changed)" in proc.stdout + proc.stderr, proc.stdout[-2000:]
    assert not list((wd / "results").glob("confirm-*"))
    # a re-freeze needs a reason, and a development run under the changed code that reproduces the evidence
    with pytest.raises(SealError, match="must say why"):
        seal_freeze.refreeze(cfg, lock, repo, " ", dev)
    with pytest.raises(SealError, match="made with other code"):
        seal_freeze.refreeze(cfg, lock, repo, "comment in report.smk", dev)
    run_snakemake(wd, "--forcerun", "manifest", snakefile=repo / "Snakefile")  # the dev run, under the new code
    out = seal_freeze.refreeze(cfg, lock, repo, "comment in report.smk", dev)
    assert out["changed_files"] == ["workflow/rules/report.smk (changed)"] and out["sha256"] != sha
    p = read_json(lock / "protocol.json")
    assert p["refrozen_from"] == sha and p["refreeze_reason"] == "comment in report.smk"
    assert p["method"]["files"]["workflow/rules/report.smk"] == sha256(smk)
    last = seal_ledger.read_ledger(lock)[-1]
    assert (last["event"], last["previous_protocol_sha256"], last["protocol_sha256"]) == ("re-frozen", sha, out["sha256"])
    assert last["changed_files"] == out["changed_files"] and last["reason"] == "comment in report.smk"
    assert guard.check_unseal(fixture_cfg(out["sha256"]), lock, repo)["opening"] == 1
    with pytest.raises(SealError, match="nothing to re-freeze"):
        seal_freeze.refreeze(cfg, lock, repo, "no change", dev)
    # a change that alters results yet passes the audit (another stand-in head: other logits, which the audit
    # cannot recompute without a model) is not a refactor: the development evidence is not reproduced
    mod = repo / "workflow/rerank_study/models.py"
    original = mod.read_text()
    head = "(torch.randn(arch[\"num_labels\"], hidden, generator=gen) * head_std)"
    assert head in original
    mod.write_text(original.replace(head, "(torch.randn(arch[\"num_labels\"], hidden, generator=gen) * head_std * 2)"))
    run_snakemake(wd, "--forcerun", "standin_model", snakefile=repo / "Snakefile")
    assert read_json(dev / "audit.json")["ok"] is True
    with pytest.raises(SealError, match="does not reproduce the frozen development evidence: .*pairs"):
        seal_freeze.refreeze(cfg, lock, repo, "tidy the stand-in", dev)
    # never after an opening started
    mod.write_text(original)
    seal_ledger.append_ledger(lock, {"event": "started", "protocol_sha256": out["sha256"], "opening": 1,
                                  "run": f"confirm-{out['sha256'][:12]}-test-1", "labels": [seal_ledger.FIXTURE_LABEL]})
    with pytest.raises(SealError, match="REFUSED to re-freeze: .* NEVER COMPLETED"):
        seal_freeze.refreeze(cfg, lock, repo, "again", dev)
    assert read_json(lock / "protocol.json")["refrozen_from"] == sha  # nothing was rewritten


def test_development_mode_has_no_rule_that_reads_the_sealed_qrels(frozen):
    wd, _ = frozen
    proc = run_snakemake(wd, "--list-rules", check=False)
    assert "fetch_sealed_qrels" not in proc.stdout and "run_inputs" in proc.stdout
