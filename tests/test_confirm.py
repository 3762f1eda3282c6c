"""The sealed confirmation on the fixture: freeze (power before unsealing), every refusal, one
recorded opening, a byte-identical re-opening that never overwrites the first result."""

import json
import shutil
import subprocess
import sys

import pytest

from conftest import DATA, ROOT, read_json, run_snakemake
from rerank_study import protocol
from rerank_study.config import load_config
from rerank_study.errors import SealError

TEST_SWITCHES = {"allow_standin_for_testing": "true", "allow_dirty_for_testing": "true"}


def freeze_cmd(wd, *extra):
    return [sys.executable, str(ROOT / "scripts/confirm.py"), "freeze", "--dev-run", str(wd / "results/dev-standin"),
            "--configfile", str(DATA / "fixture_config.yaml"), "--lockdir", str(wd / "lockfiles"), *extra]


@pytest.fixture(scope="module")
def frozen(dev_run, fixture_workdir, tmp_path_factory):
    """A copy of the fixture work folder (dev run done) with a TEST-ONLY protocol frozen."""
    wd = tmp_path_factory.mktemp("confirm")
    for sub in ("lockfiles", "resources", "results"):
        shutil.copytree(fixture_workdir / sub, wd / sub, symlinks=True)
    refused = subprocess.run(freeze_cmd(wd), capture_output=True, text=True)
    assert refused.returncode == 1 and "STAND-IN" in refused.stderr
    assert not (wd / "lockfiles/protocol.json").exists()
    out = subprocess.run(freeze_cmd(wd, "--allow-standin-for-testing"), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    sha = (wd / "lockfiles/protocol.sha256").read_text().split()[0]
    return wd, sha


def test_freeze_writes_protocol_hash_and_preregistration_with_mde(frozen):
    wd, sha = frozen
    lock = wd / "lockfiles"
    import hashlib

    assert hashlib.sha256((lock / "protocol.json").read_bytes()).hexdigest() == sha
    p = read_json(lock / "protocol.json")
    assert p["bootstrap"]["seed"] == 111 and p["bootstrap"]["B"] == 10000 and p["threshold"] == 0.01
    assert p["comparisons"]["primary"] == "blend-ce" and p["blend"]["k"] == 60 and p["test_only"] is True
    assert p["model"]["revision"] == "233902d25c440f23af6f7d6e94d2946bac0bee0a"
    assert p["candidates"]["sha256"] == read_json(lock / "derived_pins.json")["candidates"]["sha256"]
    assert p["evalstats"]["slices"] and p["evalstats"]["guardrails"] == {"blend-rrf": 0.02}
    # MDE = (z_.975 + z_.8) * sd_eff / sqrt(n_conf), from the development run's grouped variance
    from statistics import NormalDist

    pw = p["power"]
    z = NormalDist().inv_cdf(0.975) + NormalDist().inv_cdf(0.8)
    assert pw["mde_confirmation"] == pytest.approx(z * pw["sd_eff"] / pw["n_confirmation"] ** 0.5, rel=1e-12)
    dev = read_json(wd / "results/dev-standin/summary.json")
    assert pw["sd_eff"] == pytest.approx((dev["n_queries"] * pw["grouped_variance_of_mean"]) ** 0.5, rel=1e-12)
    note = (lock / "PREREGISTRATION.md").read_text()
    assert sha in note and f"{pw['mde_confirmation']:.6f}" in note and "sqrt(n_conf)" in note and "TEST-ONLY" in note
    again = subprocess.run(freeze_cmd(wd, "--allow-standin-for-testing"), capture_output=True, text=True)
    assert again.returncode == 1 and "already exists" in again.stderr


def _assert_refused(proc, wd, text):
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert text in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-3000:]
    assert not list((wd / "results").glob("confirm-*")), "a refused opening must leave no partial output"
    assert not (wd / "resources/sealed").exists()


def test_refusals_leave_no_partial_output(frozen):
    wd, sha = frozen
    _assert_refused(run_snakemake(wd, "-n", config={**TEST_SWITCHES, "unseal": "ab" * 32}, check=False), wd,
                    "is not the frozen protocol's sha256")
    _assert_refused(run_snakemake(wd, config=TEST_SWITCHES, check=False, targets=("confirm",)), wd,
                    "no unseal token")
    # a protocol setting changed since freezing (the blend constant)
    _assert_refused(_run_with_blend_k(wd, sha), wd, "changed since the protocol was frozen: blend.k")
    # the stand-in without the test-only switch
    _assert_refused(run_snakemake(wd, "-n", config={"allow_dirty_for_testing": "true", "unseal": sha}, check=False),
                    wd, "cannot be run with the STAND-IN")


def _run_with_blend_k(wd, sha):
    cfg = wd / "blend.yaml"
    cfg.write_text("blend:\n  k: 61\n")
    return run_snakemake(wd, "-n", "--configfile", str(cfg), config={**TEST_SWITCHES, "unseal": sha}, check=False)


def test_refusal_when_protocol_file_or_a_pin_changed(frozen, tmp_path):
    wd, sha = frozen
    lock = tmp_path / "lockfiles"
    shutil.copytree(wd / "lockfiles", lock)
    cfg = load_config(ROOT / "config/config.yaml", {"splits": {"dev_size": 8, "confirm_size": 6, "seed": 110},
                                                      "scorer": "stand-in", "unseal": sha,
                                                      "allow_standin_for_testing": True, "allow_dirty_for_testing": True})
    assert protocol.check_unseal(cfg, lock, ROOT)["opening"] == 1
    pins = read_json(lock / "derived_pins.json")
    pins["candidates"]["sha256"] = "f" * 64
    (lock / "derived_pins.json").write_text(json.dumps(pins))
    with pytest.raises(SealError, match="changed since the protocol was frozen: candidates.sha256"):
        protocol.check_unseal(cfg, lock, ROOT)
    shutil.copy(wd / "lockfiles/derived_pins.json", lock / "derived_pins.json")
    (lock / "protocol.json").write_text((lock / "protocol.json").read_text().replace('"B": 10000', '"B": 9999'))
    with pytest.raises(SealError, match="changed since it was frozen"):
        protocol.check_unseal(cfg, lock, ROOT)


def test_refusal_on_uncommitted_code_and_its_test_only_override(frozen, tmp_path):
    wd, sha = frozen
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    (repo / "scripts/x.py").write_text("print(1)\n")
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(git + ["-C", str(repo), "add", "-A"], check=True)
    subprocess.run(git + ["-C", str(repo), "commit", "-qm", "x"], check=True)
    cfg = load_config(ROOT / "config/config.yaml", {"splits": {"dev_size": 8, "confirm_size": 6, "seed": 110},
                                                      "scorer": "stand-in", "unseal": sha,
                                                      "allow_standin_for_testing": True})
    assert protocol.check_unseal(cfg, wd / "lockfiles", repo)["labels"] == ["TEST-ONLY PROTOCOL", "TEST-ONLY STAND-IN"]
    (repo / "scripts/x.py").write_text("print(2)\n")
    with pytest.raises(SealError, match="uncommitted changes in scripts/x.py.*allow_dirty_for_testing"):
        protocol.check_unseal(cfg, wd / "lockfiles", repo)
    cfg["allow_dirty_for_testing"] = True
    assert "TEST-ONLY UNCOMMITTED CODE" in protocol.check_unseal(cfg, wd / "lockfiles", repo)["labels"]
    cfg["allow_dirty_for_testing"] = False
    with pytest.raises(SealError, match="is not a git checkout"):
        protocol.check_unseal(cfg, wd / "lockfiles", tmp_path / "not-a-repo")


def test_refusal_after_an_opening_under_another_protocol(frozen, tmp_path):
    wd, sha = frozen
    lock = tmp_path / "lockfiles"
    shutil.copytree(wd / "lockfiles", lock)
    protocol.append_ledger(lock, {"protocol_sha256": "e" * 64, "opening": 1})
    cfg = load_config(ROOT / "config/config.yaml", {"splits": {"dev_size": 8, "confirm_size": 6, "seed": 110},
                                                      "scorer": "stand-in", "unseal": sha,
                                                      "allow_standin_for_testing": True, "allow_dirty_for_testing": True})
    with pytest.raises(SealError, match="opening under a different protocol"):
        protocol.check_unseal(cfg, lock, ROOT)


def test_opening_is_recorded_and_a_reopening_reproduces_it_byte_for_byte(frozen):
    wd, sha = frozen
    run_snakemake(wd, config={**TEST_SWITCHES, "unseal": sha}, targets=("confirm",))
    first = wd / f"results/confirm-{sha[:12]}-1"
    summary = read_json(first / "summary.json")
    assert summary["n_queries"] == 6 and summary["bootstrap"]["seed"] == 111
    assert read_json(first / "audit.json")["ok"] is True
    assert read_json(first / "manifest.json")["kind"] == "confirmation"
    report = (first / "report.md").read_text()
    assert "Confirmation analysis — opening 1" in report and "TEST-ONLY STAND-IN" in report
    assert "REACHED" in report and "0.665" in report and "0.6451" in report
    ledger = protocol.read_ledger(wd / "lockfiles")
    assert len(ledger) == 1 and ledger[0]["protocol_sha256"] == sha and "TEST-ONLY STAND-IN" in ledger[0]["labels"]
    for key in ("time", "code_commit", "model_identity", "data_sha256", "candidates_sha256", "summary_sha256"):
        assert key in ledger[0]
    first_bytes = {p: p.read_bytes() for p in first.rglob("*") if p.is_file()}

    run_snakemake(wd, config={**TEST_SWITCHES, "unseal": sha}, targets=("confirm",))
    second = wd / f"results/confirm-{sha[:12]}-2"
    ledger = protocol.read_ledger(wd / "lockfiles")
    assert len(ledger) == 2 and ledger[1]["opening"] == 2
    assert ledger[1]["reproduced_byte_identical"] is True and ledger[1]["differences"] == []
    assert read_json(second / "OPENING.json")["reproduces_opening"] == 1
    assert {p: p.read_bytes() for p in first.rglob("*") if p.is_file()} == first_bytes  # never overwritten
    # and the sealed judgements were fetched only in confirmation mode, verified against their pin
    assert (wd / "resources/sealed/scifact/qrels/test.tsv").exists()


def test_development_mode_has_no_rule_that_reads_the_sealed_qrels(frozen):
    wd, _ = frozen
    proc = run_snakemake(wd, "--list-rules", check=False)
    assert "fetch_sealed_qrels" not in proc.stdout and "run_inputs" in proc.stdout
