"""seal.evidence: what freezing needs from a development run. The power block is recomputed from the run's
per_query.tsv and groups.tsv (the Δ and groups read from them are checked by hand; the block itself is
evalstats.power_block's, tested in tests/unit/stats) and must equal the stored one; a run without its
manifest or audit, or with any problem, is refused listing every problem."""

from __future__ import annotations

import pytest
from conftest import make_lockdir

from rerank_study.core.errors import SealError
from rerank_study.core.fileio import read_once
from rerank_study.seal import evidence

CFG = {"comparisons": {"primary": "blend-ce", "all": {"blend-ce": ["blend", "ce"]}},
       "metrics": {"ndcg_k": 10}, "evalstats": {"power": {"alpha": 0.05, "power": 0.8, "confirm_n": 300}}}


def run_files(folder) -> dict:
    """Four queries (Δ blend - ce: 0.1, 0.3, -0.1, 0.1) in three evidence groups {q1, q2}, {q3}, {q4}, listed
    out of order."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "per_query.tsv").write_text("qid\tblend_ndcg@10\tce_ndcg@10\n"
                                          "q1\t0.5\t0.4\nq2\t0.5\t0.2\nq3\t0.2\t0.3\nq4\t0.6\t0.5\n")
    (folder / "groups.tsv").write_text("group_index\tqid\n2\tq4\n0\tq2\n1\tq3\n0\tq1\n")
    return {"per_query": folder / "per_query.tsv", "groups": folder / "groups.tsv",
            "summary": folder / "summary.json"}


@pytest.fixture
def power_block(monkeypatch):
    """evalstats.power_block replaced by a recorder that returns a fixed block."""
    seen = []

    def record(deltas, groups, power_cfg):
        seen.append((deltas, groups, power_cfg))
        return {"sd_eff": 0.5, "mde_confirmation": 0.1}

    monkeypatch.setattr(evidence.es, "power_block", record)
    return seen


def test_the_power_block_is_computed_from_the_per_query_deltas_and_the_groups(tmp_path, power_block):
    read = run_files(tmp_path)
    stored = {"evalstats": {"power": {"sd_eff": 0.5, "mde_confirmation": 0.1}}}
    assert evidence.recompute_power(read, stored, CFG) == {"sd_eff": 0.5, "mde_confirmation": 0.1}
    [(deltas, groups, power_cfg)] = power_block
    assert deltas == pytest.approx([0.1, 0.3, -0.1, 0.1], abs=1e-15)
    assert groups == [[1, 0], [2], [3]]  # by group index; members in the order groups.tsv lists them
    assert power_cfg == CFG["evalstats"]["power"]


def test_a_stored_power_block_that_differs_is_refused_naming_the_keys(tmp_path, power_block):
    read = run_files(tmp_path)
    with pytest.raises(SealError, match=r"its power block differs from the one recomputed from per_query.tsv "
                                        r"and groups.tsv in mde_confirmation \(recomputed"):
        evidence.recompute_power(read, {"evalstats": {"power": {"sd_eff": 0.5, "mde_confirmation": 0.2}}},
                                 CFG)
    with pytest.raises(SealError, match=r"in sd_eff, mde_confirmation .*stored None\)"):
        evidence.recompute_power(read, {}, CFG)


def test_a_run_without_its_manifest_or_audit_is_refused(tmp_path):
    with pytest.raises(SealError, match=r"manifest.json does not exist. Freeze from a FINISHED development"):
        evidence.development_evidence(tmp_path, CFG, tmp_path, tmp_path)
    (tmp_path / "manifest.json").write_text("{}")
    with pytest.raises(SealError, match=r"audit.json does not exist"):
        evidence.development_evidence(tmp_path, CFG, tmp_path, tmp_path)


def test_the_evidence_files_are_read_as_the_manifest_names_them_and_only_if_present(tmp_path):
    run_files(tmp_path)
    manifest = {"artefacts": [{"key": "per_query", "path": "per_query.tsv"},
                              {"key": "summary", "path": "summary.json"}, {"key": "other", "path": "x"}]}
    read = evidence.read_evidence(tmp_path, manifest)
    assert sorted(read) == ["per_query"]  # groups not listed, summary.json absent, "other" not evidence
    assert read["per_query"].data == (tmp_path / "per_query.tsv").read_bytes()


def test_every_problem_of_a_run_is_listed(tmp_path):
    lock = make_lockdir(tmp_path / "lock")
    (tmp_path / "root/workflow").mkdir(parents=True)
    (tmp_path / "root/workflow/a.py").write_text("a = 1\n")
    run = tmp_path / "dev"
    run.mkdir()
    (run / "manifest.json").write_text("{}")
    m, a = run / "manifest.json", run / "audit.json"
    read = {"manifest": read_once(m)}
    manifest = {"kind": "confirmation", "scorer": "someone", "method_sha256": "old", "artefacts": []}
    audit = {"ok": False, "failed_checks": ["x"], "info": {"manifest_sha256": "0" * 64}}
    cfg = {**CFG, "study": {"reranker_kind": "cross-encoder"}}
    found = evidence.evidence_problems(run, manifest, audit, cfg, lock, tmp_path / "root", False, read)
    assert found[0] == f"{a}: the audit did not pass (failed checks ['x']); fix the run and audit it again"
    assert found[1].startswith(f"{a} audited a manifest with sha256 {'0' * 64}, but {m} has sha256 ")
    assert found[2] == f"{m}: kind 'confirmation', expected 'development'"
    assert found[3] == f"{m}: unknown scorer 'someone'"
    assert found[4].startswith(f"{m}: made with other code (method sha256 old;")
    assert found[5:8] == [f"{m}: lists no artefact {k!r}" for k in evidence.EVIDENCE_FILES]
    assert [p.split(":")[1].split(" sha256")[0].strip() for p in found[8:]] == \
        ["corpus", "queries", "qrels_dev", "split_dev", "split_confirm", "candidates"]
