"""A family of studies across datasets: `confirm.py freeze-family`, then `snakemake synthesis_confirm`, which
refuses before any job while a study is not ready. Two PLANTED studies (tests/data/make_planted_studies.py),
each with a protocol written here as a freeze writes its records (protocol.json, protocol.sha256, a frozen
ledger line; the fields the family reads: threshold, primary comparison, metric); their openings are
hand-written ledger lines. Nothing is scored: every refusal comes while the workflow is parsed."""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, STUDY_DIR, run_snakemake, studies_arg, write_yaml
from seal_world import commit_all, constructed_freeze, genuine_repo, repo_config

from rerank_study.seal import guard

pytestmark = pytest.mark.slow

CONFIRM = ROOT / "scripts" / "confirm.py"
NAMES = ("alpha", "beta")
FROZEN_STUDY = "2026-12-01T00:00:00+00:00"


def study(wd: Path, name: str, threshold: float = 0.02) -> tuple[Path, Path, str]:
    """(study file, lock folder, protocol sha256) of a planted study with a frozen protocol."""
    import yaml

    lock = wd / f"planted-{name}-lock"
    shutil.copytree(STUDY_DIR / f"planted-{name}" / "lockfiles", lock)
    data = yaml.safe_load((STUDY_DIR / f"planted-{name}.yaml").read_text(encoding="utf-8"))
    data.update({"lockdir": str(lock), "data_mirror": str(STUDY_DIR.parent / "planted" / name)})
    text = json.dumps({"frozen_at": FROZEN_STUDY, "study": {"name": f"planted-{name}"},
                       "threshold": threshold, "test_only": False, "comparisons": {"primary": "blend-ce"},
                       "metrics": {"ndcg_k": 10}}, sort_keys=True)
    sha = hashlib.sha256(text.encode()).hexdigest()
    (lock / "protocol.json").write_text(text, encoding="utf-8")
    (lock / "protocol.sha256").write_text(f"{sha}  protocol.json\n", encoding="utf-8")
    append(lock, {"event": "frozen", "time": FROZEN_STUDY, "protocol_sha256": sha, "labels": []})
    return write_yaml(wd / f"planted-{name}.yaml", data), lock, sha


def append(lock: Path, entry: dict) -> None:
    with open(lock / "confirmation_ledger.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry, sort_keys=True) + "\n")


def opening(lock: Path, sha: str, start: str) -> None:
    """An opening's started and completed lines, as fetch_sealed_qrels and record_opening write them (the keys
    the openings lookup reads)."""
    run = f"confirm-{sha[:12]}-1"
    append(lock, {"event": "started", "protocol_sha256": sha, "opening": 1, "run": run, "time": start,
                  "labels": []})
    append(lock, {"event": "completed", "protocol_sha256": sha, "opening": 1, "run": run, "time": start,
                  "started_time": start, "labels": []})


def freeze_family(wd: Path, folder: Path, files: list[Path]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-B", str(CONFIRM), "freeze-family", "--family", str(folder),
                           "--configfile", str(wd / "synthesis.yaml"), "--studies", studies_arg(*files)],
                          capture_output=True, text=True, cwd=wd)


def synthesis_confirm(wd: Path, files: list[Path], folder: Path) -> subprocess.CompletedProcess:
    return run_snakemake(wd, "--configfile", str(wd / "synthesis.yaml"),
                         config={"studies": studies_arg(*files), "family": str(folder)}, fixture=False,
                         targets=("synthesis_confirm",), check=False)


@pytest.fixture
def world(tmp_path):
    write_yaml(tmp_path / "synthesis.yaml", {"synthesis": {
        "weighting": "datasets", "tau2": "dersimonian-laird", "B": 400, "seed": 7, "level": 0.95}})
    made = {n: study(tmp_path, n) for n in NAMES}
    files = [made[n][0] for n in NAMES]
    folder = tmp_path / "families" / "planted"
    proc = freeze_family(tmp_path, folder, files)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"wd": tmp_path, "made": made, "files": files, "folder": folder, "out": proc.stdout}


def test_freezing_records_each_studys_protocol_and_the_decision_rule(world):
    folder, made = world["folder"], world["made"]
    protocol = json.loads((folder / "family_protocol.json").read_text())
    sha = hashlib.sha256((folder / "family_protocol.json").read_bytes()).hexdigest()
    assert (folder / "family_protocol.sha256").read_text() == f"{sha}  family_protocol.json\n"
    assert [(s["name"], s["protocol_sha256"]) for s in protocol["studies"]] == \
        [("planted-alpha", made["alpha"][2]), ("planted-beta", made["beta"][2])]
    assert protocol["threshold"] == 0.02 and protocol["comparison"] == "blend-ce"
    assert protocol["synthesis"] == {"weighting": "datasets", "tau2": "dersimonian-laird", "B": 400,
                                     "seed": 7, "level": 0.95, "family": ["blend-ce"]}
    (line,) = [json.loads(x) for x in (folder / "family_ledger.jsonl").read_text().splitlines()]
    assert line["event"] == "frozen" and line["family_protocol_sha256"] == sha
    assert line["studies"] == {"planted-alpha": made["alpha"][2], "planted-beta": made["beta"][2]}
    assert line["labels"] == ["TEST-ONLY FIXTURE LOCKFILES"]
    assert f"sha256 {sha}" in world["out"] and "snakemake synthesis_confirm" in world["out"]


def test_freezing_refuses_studies_that_disagree_and_a_study_already_opened(world):
    wd, made = world["wd"], world["made"]
    (wd / "other").mkdir()
    stricter, _, _ = study(wd / "other", "beta", threshold=0.05)
    proc = freeze_family(wd, wd / "families" / "mixed", [made["alpha"][0], stricter])
    assert proc.returncode == 1
    assert ("REFUSED: the studies of the family disagree on the practical threshold (threshold) "
            "(planted-alpha: 0.02, planted-beta: 0.05)") in proc.stderr
    lock, sha = made["beta"][1], made["beta"][2]
    opening(lock, sha, "2026-12-02T00:00:00+00:00")
    proc = freeze_family(wd, wd / "families" / "late", world["files"])
    assert proc.returncode == 1
    assert f"study 'planted-beta' ({lock}): REFUSED to freeze a family:" in proc.stderr
    assert "A family is frozen before any of its studies opens." in proc.stderr
    assert not (wd / "families" / "late").exists() and not (wd / "families" / "mixed").exists()


def test_a_study_not_opened_yet_is_refused_before_any_job(world):
    wd, made = world["wd"], world["made"]
    opening(made["alpha"][1], made["alpha"][2], "2099-01-01T00:00:00+00:00")  # after the freezing
    proc = synthesis_confirm(wd, world["files"], world["folder"])
    assert proc.returncode != 0
    assert "REFUSED: the family 'planted' (frozen at " in proc.stderr
    assert (f"study 'planted-beta' has not opened yet: no ledger records an opening of its sealed set under "
            f"protocol {made['beta'][2]}. Fix: open it: snakemake confirm --cores 4 --config "
            f"studies=[{made['beta'][0]}] unseal=$(cut -d' ' -f1 {made['beta'][1]}/protocol.sha256)") \
        in proc.stderr
    assert "study 'planted-alpha'" not in proc.stderr
    assert not (wd / "results").exists() and "Job stats" not in proc.stdout + proc.stderr


def test_a_study_opened_before_the_family_froze_is_refused_before_any_job(world):
    wd, made = world["wd"], world["made"]
    opening(made["alpha"][1], made["alpha"][2], "2026-12-01T12:00:00+00:00")  # before this test's freezing
    opening(made["beta"][1], made["beta"][2], "2099-01-01T00:00:00+00:00")
    proc = synthesis_confirm(wd, world["files"], world["folder"])
    assert proc.returncode != 0
    assert (f"study 'planted-alpha': opening 1 (confirm-{made['alpha'][2][:12]}-1) started at "
            f"2026-12-01T12:00:00+00:00 ({made['alpha'][1]}/confirmation_ledger.jsonl line 2), before the "
            "family was frozen at ") in proc.stderr
    assert "study 'planted-beta'" not in proc.stderr
    assert not (wd / "results").exists() and "Job stats" not in proc.stdout + proc.stderr


def test_the_invocation_must_name_the_familys_studies_and_its_frozen_settings(world):
    wd, files, folder = world["wd"], world["files"], world["folder"]
    proc = synthesis_confirm(wd, files[::-1], folder)
    assert proc.returncode != 0 and "is the studies ['planted-alpha', 'planted-beta'], in that order" in \
        proc.stderr
    write_yaml(wd / "synthesis.yaml", {"synthesis": {
        "weighting": "queries", "tau2": "dersimonian-laird", "B": 400, "seed": 7, "level": 0.95}})
    proc = synthesis_confirm(wd, files, folder)
    assert proc.returncode != 0
    assert "synthesis.weighting: frozen 'datasets', now 'queries'" in proc.stderr
    assert not (wd / "results").exists()
    proc = synthesis_confirm(wd, files[:1], folder)
    assert proc.returncode != 0
    assert (f"REFUSED: family={folder} pools the openings of a family's studies; studies=['planted-alpha'] "
            "names 1.") in proc.stderr
    proc = run_snakemake(wd, config={"studies": studies_arg(*files)}, fixture=False,
                         targets=("synthesis_confirm",), check=False)
    assert proc.returncode != 0
    assert "REFUSED: synthesis_confirm decides a frozen family of studies, and none is named." in proc.stderr
    assert not (wd / "results").exists()


def test_the_pooled_confirmation_decides_on_the_completed_openings_and_records_it(tmp_path):
    """End to end on stand-in openings: each study's development run (the whole DAG, ~35 s) copied to the
    folder its completed ledger line names. (A genuine opening of the planted studies would confirm nothing
    here: their sealed sets are four queries of pattern P0 each, Δ = 0 everywhere, a zero variance the
    meta-analysis cannot weigh.) Expected: the planted means by hand (make_planted_studies.py: one relevant
    document, nDCG@10 = 1/log2(1 + rank); Δ of H1 = ndcg(5) - ndcg(10), H2 = ndcg(2) - ndcg(4), L2 = ndcg(2) -
    ndcg(1)), weighting datasets: alpha (8 H2 + 4 H1) / 16, beta (10 H1 + 6 H2 + L2) / 24, pooled their mean
    (about 0.124574 and 0.075430: 0.100002)."""
    wd = tmp_path
    write_yaml(wd / "synthesis.yaml", {"synthesis": {
        "weighting": "datasets", "tau2": "dersimonian-laird", "B": 400, "seed": 7, "level": 0.95}})
    made = {n: study(wd, n) for n in NAMES}
    files = [made[n][0] for n in NAMES]
    run_snakemake(wd, config={"studies": studies_arg(*files)}, fixture=False)  # the development runs
    folder = wd / "families" / "planted"
    assert freeze_family(wd, folder, files).returncode == 0
    runs = {}
    for n in NAMES:
        _, lock, sha = made[n]
        runs[n] = f"confirm-{sha[:12]}-1"
        shutil.copytree(wd / "results" / f"planted-{n}" / "dev", wd / "results" / f"planted-{n}" / runs[n])
        opening(lock, sha, "2099-01-01T00:00:00+00:00")
    proc = synthesis_confirm(wd, files, folder)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = wd / "results" / "families" / "planted"
    result = json.loads((out / "synthesis.json").read_text())
    ndcg = [None] + [1 / math.log2(1 + r) for r in range(1, 11)]
    h1, h2, l2 = ndcg[5] - ndcg[10], ndcg[2] - ndcg[4], ndcg[2] - ndcg[1]
    pooled = ((8 * h2 + 4 * h1) / 16 + (10 * h1 + 6 * h2 + l2) / 24) / 2
    assert result["pooled"]["estimate"] == pytest.approx(pooled, abs=1e-12)
    assert json.loads((out / "audit.json").read_text())["ok"] is True
    decision = json.loads((out / "decision.json").read_text())
    lower = result["pooled"]["interval"][0]
    assert decision["decision"]["lower_bound"] == lower and decision["decision"]["threshold"] == 0.02
    assert decision["decision"]["met"] is (lower > 0.02)
    assert decision["openings"] == {f"planted-{n}": {
        "run": runs[n], "opening": 1, "protocol_sha256": made[n][2], "started": "2099-01-01T00:00:00+00:00",
        "completed": "2099-01-01T00:00:00+00:00"} for n in NAMES}
    frozen, done = [json.loads(x) for x in (folder / "family_ledger.jsonl").read_text().splitlines()]
    assert (frozen["event"], done["event"]) == ("frozen", "completed")
    assert done["family_protocol_sha256"] == frozen["family_protocol_sha256"]
    assert done["decision"] == decision["decision"] and done["openings"] == decision["openings"]
    md = (out / "synthesis.md").read_text()
    assert "## The family's decision" in md and "lower bound" in md


def test_a_familys_folder_committed_or_not_never_blocks_a_studys_opening(tmp_path):
    """A family is frozen after its studies froze: its folder under lockfiles/ is no study's method (a git
    copy of this checkout whose lockfiles/ hold a frozen protocol; the guard of the opening, in process)."""
    repo = genuine_repo(tmp_path / "repo")
    cfg = repo_config(repo)
    sha = constructed_freeze(repo, cfg, repo / "lockfiles")
    cfg = dict(cfg, unseal=sha, results=str(repo / "results"))
    folder = repo / "lockfiles" / "families" / "beir"
    folder.mkdir(parents=True)
    (folder / "family_protocol.json").write_text('{"name": "beir"}\n')
    (folder / "family_ledger.jsonl").write_text('{"event": "frozen"}\n')
    (folder / "notes.txt").write_text("not a record\n")
    assert guard.check_unseal(cfg, repo / "lockfiles", repo)["opening"] == 1  # untracked
    commit_all(repo, "family beir frozen")
    assert guard.check_unseal(cfg, repo / "lockfiles", repo)["opening"] == 1  # committed
