"""Freezing the sealed confirmation's protocol on the committed fixture (a TEST_FIXTURE lock folder, its
development run): freezing needs a full, audited development run with the pinned model (a smoke run, the
stand-in without the test switch, an edited summary or manifest, a failed or missing audit are refused); the
protocol, the method hash and the preregistration it writes, with an MDE recomputed here; the method (code,
lock) is frozen, so a refactor stops an opening and needs a recorded re-freeze, which is allowed only before
any opening."""

import csv
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path
from statistics import NormalDist

import pytest
from conftest import ROOT, read_json, run_freeze, run_snakemake
from seal_world import FIXTURE_SPLITS, TEST_SWITCHES, code_copy, copy_workdir, fixture_cfg, sha256

from rerank_study.core.errors import SealError
from rerank_study.seal import freeze as seal_freeze
from rerank_study.seal import guard, locations
from rerank_study.seal import ledger as seal_ledger
from rerank_study.settings.config import load_config


def test_freeze_refuses_a_smoke_run_a_standin_run_and_an_edited_summary(smoke_run, dev_run,
                                                                        fixture_workdir, tmp_path):
    wd = copy_workdir(fixture_workdir, tmp_path / "w")
    shutil.copytree(smoke_run, wd / "results" / smoke_run.name)
    # a 5-query smoke run (MDE from n = 5), even with the stand-in allowed
    proc = run_freeze(wd, "--allow-standin-for-testing", dev_run=wd / "results" / smoke_run.name)
    assert proc.returncode == 1 and "a smoke/partial run (5 development queries" in proc.stderr, proc.stderr
    # the stand-in without the test switch
    proc = run_freeze(wd)
    assert proc.returncode == 1 and "comes from the STAND-IN scorer" in proc.stderr
    # the test switch outside a test fixture lock folder
    plain = tmp_path / "plain"
    shutil.copytree(wd / "lockfiles", plain / "lockfiles")
    (plain / "lockfiles" / locations.TEST_FIXTURE).unlink()
    proc = run_freeze(plain, "--allow-standin-for-testing", dev_run=wd / "results/dev-standin")
    assert proc.returncode == 1 and "TEST SUITE's fixture lock folder only" in proc.stderr
    # a stand-in summary whose "scorer" was edited to "pinned"
    run = wd / "results/dev-standin"
    summary = run / "summary.json"
    summary.write_text(summary.read_text().replace('"scorer": "STAND-IN"', '"scorer": "pinned"'))
    assert '"scorer": "pinned"' in summary.read_text()
    proc = run_freeze(wd)
    assert proc.returncode == 1 and "summary.json: sha256" in proc.stderr and ("edited "
                                                                               "after the run") in proc.stderr
    # ... and the manifest made to agree (scorer pinned, summary hash updated): the audit did not vouch for it
    m = read_json(run / "manifest.json")
    m["scorer"] = "pinned"
    next(a for a in m["artefacts"] if a["key"] == "summary")["sha256"] = sha256(summary)
    (run / "manifest.json").write_text(json.dumps(m, indent=2, sort_keys=True) + "\n")
    proc = run_freeze(wd)
    assert proc.returncode == 1 and "audited a manifest with sha256" in proc.stderr
    assert "model weights sha256" in proc.stderr  # and the weights are not the pinned model's
    # ... and audited again: the independent audit rejects the forged run
    audit = subprocess.run([sys.executable, "-I", "-S", "-B", str(ROOT / "scripts/audit"), str(run),
                            "--lockdir", str(wd / "lockfiles")], capture_output=True, text=True)
    assert audit.returncode == 1 and "scorer_label" in read_json(run / "audit.json")["failed_checks"]
    proc = run_freeze(wd)
    assert proc.returncode == 1 and "the audit did not pass" in proc.stderr
    # no audit at all
    (run / "audit.json").unlink()
    proc = run_freeze(wd)
    assert proc.returncode == 1 and "audit.json does not exist" in proc.stderr
    assert not (wd / "lockfiles/protocol.json").exists() \
        and not (wd / "lockfiles" / locations.LEDGER).exists()


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
    assert p["bootstrap"]["seed"] == 111 and p["bootstrap"]["B"] == 1000 and p["threshold"] == 0.01
    assert p["comparisons"]["primary"] == "blend-ce" and p["blend"]["k"] == 60 and p["test_only"] is True
    # a test protocol says what it is: the stand-in, not "pinned"
    assert p["model"]["scorer"] == "stand-in" and p["model"]["standin"] == {"head_seed": 110,
                                                                            "head_std": 0.02}
    assert p["model"]["revision"] == "233902d25c440f23af6f7d6e94d2946bac0bee0a"
    assert p["candidates"]["sha256"] == read_json(lock / "derived_pins.json")["candidates"]["sha256"]
    assert p["candidates"]["file_sha256"] == sha256(lock / "candidates/candidates.tsv")
    # the method: every library module, rule script, rule, the Snakefile, schema, requirements lock
    files = p["method"]["files"]
    for rel in ("workflow/rerank_study/stats/metrics.py", "workflow/rerank_study/rankings/ranking.py",
                "workflow/scripts/evaluate.py", "workflow/rules/analyse.smk", "Snakefile",
                "workflow/schemas/config.schema.yaml", "lockfiles/requirements.lock", "lockfiles/torch.txt"):
        assert files[rel] == sha256(ROOT / rel), rel
    assert p["evalstats"]["slices"] and p["evalstats"]["guardrails"] == {"blend-rrf": 0.02}
    # the evidence is the audited run, not summary.json alone
    run = wd / "results/dev-standin"
    ev = p["development_evidence"]
    assert ev["manifest_sha256"] == sha256(run / "manifest.json") == \
        read_json(run / "audit.json")["info"]["manifest_sha256"]
    # MDE recomputed here from per_query.tsv and groups.tsv (not from the protocol's own stored variance)
    var, sd_eff, mde, G = _recomputed_power(run, 300)
    pw = p["power"]
    assert G >= 2 and pw["n_development"] == 8 and pw["n_confirmation"] == 300
    assert pw["grouped_variance_of_mean"] == pytest.approx(var, rel=1e-12)
    assert pw["sd_eff"] == pytest.approx(sd_eff, rel=1e-12) and pw["mde_confirmation"] == \
        pytest.approx(mde, rel=1e-12)
    note = (lock / "PREREGISTRATION.md").read_text()
    assert sha in note and f"{mde:.6f}" in note and "sqrt(n_conf)" in note and "TEST-ONLY" in note
    assert p["method"]["sha256"] in note
    ledger = seal_ledger.read_ledger(lock)
    assert [e["event"] for e in ledger] == ["frozen"] and ledger[0]["protocol_sha256"] == sha
    assert ledger[0]["labels"] == [seal_ledger.FIXTURE_LABEL, seal_ledger.PROTOCOL_LABEL]
    again = run_freeze(wd, "--allow-standin-for-testing")
    assert again.returncode == 1 and "already exists" in again.stderr


def test_changed_code_stops_an_opening_and_a_refactor_is_refrozen_only_before_any_opening(dev_run,
                                                                                           fixture_workdir,
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
    assert proc.returncode != 0 and "workflow/rules/report.smk (changed)" in proc.stdout + \
        proc.stderr, proc.stdout[-2000:]
    assert not list((wd / "results").glob("confirm-*"))
    # a re-freeze needs a reason, and a development run under the changed code that reproduces the evidence
    with pytest.raises(SealError, match="must say why"):
        seal_freeze.refreeze(cfg, lock, repo, " ", dev)
    with pytest.raises(SealError, match="made with other code"):
        seal_freeze.refreeze(cfg, lock, repo, "comment in report.smk", dev)
    # the dev run, under the new code (the manifest and the runs' ir_metadata sidecars record its method hash)
    run_snakemake(wd, "--forcerun", "manifest", "run_metadata", snakefile=repo / "Snakefile")
    out = seal_freeze.refreeze(cfg, lock, repo, "comment in report.smk", dev)
    assert out["changed_files"] == ["workflow/rules/report.smk (changed)"] and out["sha256"] != sha
    p = read_json(lock / "protocol.json")
    assert p["refrozen_from"] == sha and p["refreeze_reason"] == "comment in report.smk"
    assert p["method"]["files"]["workflow/rules/report.smk"] == sha256(smk)
    last = seal_ledger.read_ledger(lock)[-1]
    assert (last["event"], last["previous_protocol_sha256"], last["protocol_sha256"]) == ("re-frozen",
                                                                                          sha, out["sha256"])
    assert last["changed_files"] == out["changed_files"] and last["reason"] == "comment in report.smk"
    assert guard.check_unseal(fixture_cfg(out["sha256"]), lock, repo)["opening"] == 1
    with pytest.raises(SealError, match="nothing to re-freeze"):
        seal_freeze.refreeze(cfg, lock, repo, "no change", dev)
    # a change the audit cannot see (the grouping rule's prose in groups.json is read for its form only) that
    # alters a deterministic artefact: the development run under it passes its audit, and the re-freeze is
    # refused because the evidence differs, naming the artefact; nothing is rewritten
    grp = repo / "workflow/scripts/groups.py"
    g_orig = grp.read_text()
    assert g_orig.count('"rule": "queries linked') == 1
    grp.write_text(g_orig.replace('"rule": "queries linked', '"rule": "reworded: queries linked'))
    run_snakemake(wd, "--forcerun", "groups", snakefile=repo / "Snakefile")
    assert read_json(dev / "audit.json")["ok"] is True and "reworded" in (dev / "groups.json").read_text()
    protocol_before = (lock / "protocol.json").read_bytes()
    with pytest.raises(SealError, match=r"does not reproduce the frozen development evidence: .*\bgroups"):
        seal_freeze.refreeze(cfg, lock, repo, "reworded the grouping rule", dev)
    assert (lock / "protocol.json").read_bytes() == protocol_before
    grp.write_text(g_orig)
    # another stand-in head is no refactor either: the built stand-in no longer matches its pins, and the
    # build stops (the stand-in is pinned in model_pins.json 'standin')
    mod = repo / "workflow/rerank_study/reranker/models.py"
    original = mod.read_text()
    head = "generator=gen) * head_std).contiguous()"  # the classifier head's weights
    assert original.count(head) == 1
    mod.write_text(original.replace(head, "generator=gen) * head_std * 2).contiguous()"))
    proc = run_snakemake(wd, "--forcerun", "standin_model", snakefile=repo / "Snakefile", check=False)
    assert proc.returncode != 0 and "the STAND-IN's files" in proc.stdout + proc.stderr, proc.stdout[-2000:]
    mod.write_text(original)
    # never after an opening started
    mod.write_text(original)
    seal_ledger.append_ledger(lock, {"event": "started", "protocol_sha256": out["sha256"], "opening": 1,
                                  "run": f"confirm-{out['sha256'][:12]}-test-1",
                                     "labels": [seal_ledger.FIXTURE_LABEL]})
    with pytest.raises(SealError, match="REFUSED to re-freeze: .* NEVER COMPLETED"):
        seal_freeze.refreeze(cfg, lock, repo, "again", dev)
    assert read_json(lock / "protocol.json")["refrozen_from"] == sha  # nothing was rewritten
