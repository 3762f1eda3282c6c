"""The BRANCHES fixture (tests/data/branches, made by tests/data/make_branches_study.py) through the whole
pipeline and audit: a development run of its 8 queries x 20 candidates must pass the audit, and the same run
audited by a copy of the audit package with ONE wrong definition must fail - for each wrong definition below,
so the fixture's data are shown to reach that branch (graded gains, the ideal cut at K, |P| and min(|P|, K),
judged non-relevant and negative judgements, a chain of three queries linked only through relevant documents,
exact-zero ties). SciFact cannot: binary judgements, no judged non-relevant document, few chains (measured on
the SciFact fixture's development run, 8 queries x 50 candidates: 9 of the 14 wrong definitions below pass its
audit; only capped Recall divided by K, MRR not cut at K, the two zero-difference ones and the lower order
statistic fail it)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import AUDIT, DATA, ROOT, load_data_module, read_json, run_snakemake, studies_arg, write_yaml

BRANCHES = DATA / "branches"


def branches_study(tmp: Path, model_dir: Path) -> Path:
    """A writable copy of the branches lock folder and its study file (paths made absolute, the tiny model's
    folder)."""
    lock = tmp / "branches-lock"
    if not lock.exists():
        shutil.copytree(BRANCHES / "lockfiles", lock)
    data = yaml.safe_load((BRANCHES / "branches.yaml").read_text(encoding="utf-8"))
    data.update({"lockdir": str(lock), "data_mirror": str(BRANCHES / "beir"), "model_dir": str(model_dir)})
    return write_yaml(tmp / "branches-tiny.yaml", data)


DEFS, EXPECTED = "expected.definitions", "expected.expected"  # the audit modules the wrong definitions edit
WRONG = {  # name -> (module, the right text, the wrong text); each must make the audit of the run fail
    "ideal DCG from every relevant document, not cut at K": (
        DEFS, "sorted(gains.values(), reverse=True)[:k]", "sorted(gains.values(), reverse=True)"),
    "exponential gain 2^g - 1": (DEFS, "dcg += gains[d] /", "dcg += (2 ** gains[d] - 1) /"),
    "Recall divided by min(|P|, K)": (
        DEFS, "return len(positives.keys() & set(order[:k])) / len(positives)",
        "return len(positives.keys() & set(order[:k])) / min(len(positives), k)"),
    "Recall divided by the relevant documents in the ranking": (
        DEFS, "return len(positives.keys() & set(order[:k])) / len(positives)",
        "return len(positives.keys() & set(order[:k])) / len(positives.keys() & set(order))"),
    "capped Recall divided by |P|": (
        DEFS, "/ min(len(positives), k)", "/ len(positives)"),
    "capped Recall divided by K": (DEFS, "/ min(len(positives), k)", "/ k"),
    "MRR not cut at K": (DEFS, "r = first_rel(order[:k], rels)", "r = first_rel(order, rels)"),
    "a negative judgement counts as relevant": (
        DEFS, ("for d, g in rels.items() if g > 0}", "for d, g in rels.items() if g != 0}"),
        ("if rels.get(d, 0) > 0:", "if rels.get(d, 0) != 0:")),
    "a judged non-relevant document counts as the first relevant one": (
        DEFS, "        if rels.get(d, 0) > 0:\n            return i", "        if d in "
        "rels:\n            return i"),
    "groups linked through any judged document": (
        DEFS, ("            if g > 0:\n                by_doc", "            if g >= "
                        "0:\n                by_doc"),
        ("                if g <= 0:\n                    continue", "                if g < "
         "0:\n                    continue")),
    "groups linked through the first relevant document only": (
        DEFS, "                if g <= 0:\n                    continue",
        "                if g <= 0 or d != min(x for x, y in qrels[cur].items() if y > "
        "0):\n                    continue"),
    "a zero difference is a win of the sign test": (DEFS, "sum(x > 0 for x in d)",
                                                    "sum(x >= 0 for x in d)"),
    "a zero difference is a win in W/T/L": (EXPECTED, '"wins": sum(x > 0 for x in d)', '"wins": sum(x >= '
                                            '0 for x in d)'),
    "a percentile is the lower order statistic": (
        DEFS, "return b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t", "return a"),
}
MUST_FAIL = {name: "per_query" for name in list(WRONG)[:9]} | {
    "groups linked through any judged document": "groups", "groups linked through the first relevant "
    "document only":
    "groups", "a zero difference is a win of the sign test": "evalstats", "a zero difference is a "
    "win in W/T/L":
    "summary", "a percentile is the lower order statistic": "summary"}
# Reached by the unit tests only (tests/audit/test_audit_definitions.py), not by this run's numbers: numpy's
# second lerp formula (no interval end here differs in the last bit), Holm / BH monotonicity and the caps of
# BH and McNemar (the exploratory p-values of this run need neither), which depend on the seeded reranker's
# scores.


def audit_copy(tmp: Path, name: str, wrong: tuple | None) -> Path:
    """A copy of the audit package (scripts/audit), with one definition replaced by a wrong one. It sits in
    a repository-shaped folder (<copy>/scripts/audit) whose lockfiles/ and config/ are this checkout's: the
    audit finds the committed locks and config beside itself."""
    repo = tmp / f"audit-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
    dest = repo / "scripts" / "audit"
    shutil.copytree(AUDIT, dest, ignore=shutil.ignore_patterns("__pycache__"))
    for sub in ("lockfiles", "config"):
        (repo / sub).symlink_to(ROOT / sub)
    if wrong:
        module, *edits = wrong
        edits = [tuple(edits)] if isinstance(edits[0], str) else edits  # one (right, wrong) pair or several
        path = dest.joinpath(*module.split(".")).with_suffix(".py")  # a dotted name: room.module
        text = path.read_text(encoding="utf-8")
        for right, bad in edits:
            assert text.count(right) == 1, f"{name}: the right definition is no longer written {right!r}"
            text = text.replace(right, bad)
        path.write_text(text, encoding="utf-8")
    return dest


def run_audit(package: Path, run: Path, lock: Path, study: Path, out: Path) -> subprocess.CompletedProcess:
    """The audit as the DAG's rule runs it (python -I -S -B), anchored to this checkout's config and the study
    file."""
    return subprocess.run([sys.executable, "-I", "-S", "-B", str(package), str(run), "--lockdir", str(lock),
                           "--study", str(study), "--config", str(ROOT / "config" / "config.yaml"), "--out",
                           str(out)],
                          capture_output=True, text=True)


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        q, d, g = line.split("\t")
        out.setdefault(q, {})[d] = int(g)
    return out


def test_the_branches_fixture_is_its_builders_output_and_has_the_branches_it_claims(tmp_path):
    """Quick (no DAG): the committed files are what make_branches_study.py writes, and the data have, by hand,
    every structure the DAG test relies on."""
    built = load_data_module("make_branches_study").build(tmp_path / "built")
    assert len(built) == 8
    for rel, digest in built.items():
        assert digest == hashlib.sha256((BRANCHES / rel).read_bytes()).hexdigest(), rel
    dev, test = read_qrels(BRANCHES / "beir/qrels/dev.tsv"), read_qrels(BRANCHES / "beir/qrels/test.tsv")
    assert sorted(dev) == (BRANCHES / "lockfiles/splits/dev.txt").read_text().split() == \
        [f"b0{i}" for i in range(1, 9)]
    assert sorted(test) == (BRANCHES / "lockfiles/splits/confirm.txt").read_text().split() == ["b09", "b10"]
    run: dict[str, list[str]] = {}
    for line in (BRANCHES / "lockfiles/candidates/run.trec").read_text().splitlines():
        q, _, d, _, _, _ = line.split()
        run.setdefault(q, []).append(d)
    assert sorted(run) == sorted(dev | test) and all(len(c) == 20 for c in run.values())
    k = yaml.safe_load((BRANCHES / "branches.yaml").read_text())["metrics"]["ndcg_k"]
    grades = {g for r in dev.values() for g in r.values()}
    assert grades == {-1, 0, 1, 2}                                     # graded, zero and negative judgements
    # judged non-relevant ranked first
    assert dev["b01"][run["b01"][0]] == 0 and dev["b08"][run["b08"][0]] == -1
    assert sum(g > 0 for g in dev["b05"].values()) == 7 > k             # more relevant documents than K
    anywhere = {d for c in run.values() for d in c}
    # shared, outside every list
    assert dev["b01"]["d02"] == dev["b02"]["d02"] == 1 and "d02" not in anywhere
    assert dev["b02"]["d06"] > 0 and dev["b03"]["d06"] > 0 and not {d for d, g in dev["b01"].items()
                                                                    if g > 0} & {
        d for d, g in dev["b03"].items() if g > 0}                     # the chain b01 - b02 - b03
    assert dev["b01"]["d03"] == 0 < dev["b04"]["d03"] and dev["b04"]["d08"] == dev["b08"]["d08"] == 0
    assert not {d for d, g in dev["b06"].items() if g > 0} & set(run["b06"])   # no relevant candidate: Δ = 0


@pytest.mark.slow
def test_the_branches_fixture_passes_the_audit_and_every_wrong_definition_fails_it(tmp_path, tiny_models):
    t0 = time.perf_counter()
    study = branches_study(tmp_path, tiny_models[1])
    run_snakemake(tmp_path, config={"studies": studies_arg(study)}, fixture=False)
    run, lock = tmp_path / "results" / "branches-tiny" / "dev", tmp_path / "branches-lock"
    audit = read_json(run / "audit.json")
    assert audit["ok"] is True and audit["failed_checks"] == [], audit["failed_checks"]
    assert (audit["info"]["queries"], audit["info"]["pairs"], audit["info"]["groups"]) == (8, 160, 6)
    groups = read_json(run / "groups.json")["groups"]
    assert groups["G001"] == ["b01", "b02", "b03"] and len(groups) == 6
    seconds_run = time.perf_counter() - t0

    # the copy of the audit itself is not what fails: unchanged, it passes
    same = run_audit(audit_copy(tmp_path, "unchanged", None), run, lock, study, tmp_path / "unchanged.json")
    assert same.returncode == 0, same.stdout[-3000:]
    failed = {}
    for name, wrong in WRONG.items():
        proc = run_audit(audit_copy(tmp_path, name, wrong), run, lock, study, tmp_path / "wrong.json")
        failed[name] = read_json(tmp_path / "wrong.json")["failed_checks"] if proc.returncode == 1 \
            else proc.returncode
    assert all(isinstance(v, list) and v for v in failed.values()), failed
    for name, check in MUST_FAIL.items():  # the check that recomputes the wrong definition's numbers
        assert check in failed[name], (name, failed[name])
    print(f"branches: development run {seconds_run:.1f} s; "
          f"{len(WRONG) + 1} audits {time.perf_counter() - t0 - seconds_run:.1f} s; failed checks: {failed}")
