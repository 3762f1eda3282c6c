"""`snakemake synthesis` on the PLANTED family (tests/data/make_planted_studies.py): three run-file studies
whose reranker helps the blend over the reranker alone on two datasets and hurts it on one, with every query's
nDCG@10 known by hand (one relevant document, at known ranks). The whole DAG runs (three studies, their
audits, the synthesis and its audit); its page (synthesis.html) and the cross-study report's section "Across
datasets" are read back; then its bad inputs are refused.

Expected values: the hand ranks below (their derivation: the generator's docstring) and plain arithmetic on
them; the meta-analysis from statsmodels' combine_effects on the (Δ, SE²) the synthesis reports."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import AUDIT, STUDY_DIR, load_data_module, read_json, run_snakemake, studies_arg, write_yaml

pytestmark = pytest.mark.slow

# pattern -> (rrf rank, ce rank, blend rank) of the one relevant document, by hand
HAND = {"P0": (1, 1, 1), "H1": (1, 10, 5), "H2": (1, 4, 2), "L1": (10, 1, 5), "L2": (4, 1, 2)}
NAMES = ("alpha", "beta", "gamma")
SHARED = {"beta": [("q01", "q05")]}  # queries sharing their relevant document: one evidence group


def ndcg(rank: int) -> float:
    return 1 / math.log2(1 + rank)


def planted_delta(pattern: str) -> float:
    _, ce, blend = HAND[pattern]
    return ndcg(blend) - ndcg(ce)


def planted_study(wd: Path, name: str, study_name: str | None = None, **overrides) -> Path:
    """A copy of a planted study's lock folder and its study file (paths made absolute)."""
    import yaml

    study_name = study_name or f"planted-{name}"
    lock = wd / f"{study_name}-lock"
    shutil.copytree(STUDY_DIR / f"planted-{name}" / "lockfiles", lock)
    data = yaml.safe_load((STUDY_DIR / f"planted-{name}.yaml").read_text(encoding="utf-8"))
    data["study"]["name"] = study_name
    data.update({"lockdir": str(lock), "data_mirror": str(STUDY_DIR.parent / "planted" / name), **overrides})
    return write_yaml(wd / f"{study_name}.yaml", data)


def declared(wd: Path, weighting: str, tau2: str) -> Path:
    return write_yaml(wd / f"synthesis-{weighting}.yaml", {"synthesis": {
        "weighting": weighting, "tau2": tau2, "B": 400, "seed": 7, "level": 0.95}})


def run_of(wd: Path, study: str) -> Path:
    (run,) = [p.parent for p in (wd / "results" / study).glob("*/summary.json")]
    return run


def tsv(path: Path) -> list[dict]:
    import csv

    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def synthesise(wd: Path, studies: list[Path], configfile: Path, *extra: str, check=True):
    return run_snakemake(wd, "--configfile", str(configfile), *extra,
                         config={"studies": studies_arg(*studies)}, fixture=False, targets=("synthesis",),
                         check=check)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """The three studies' runs and both declared syntheses (datasets + DerSimonian–Laird, then queries +
    Paule–Mandel), each synthesis folder kept."""
    wd = tmp_path_factory.mktemp("planted")
    studies = [planted_study(wd, n) for n in NAMES]
    folder = wd / "results" / "synthesis" / "+".join(f"planted-{n}" for n in NAMES)
    kept = {}
    for weighting, tau2 in (("datasets", "dersimonian-laird"), ("queries", "paule-mandel")):
        synthesise(wd, studies, declared(wd, weighting, tau2), "--forcerun", "synthesis")
        kept[weighting] = shutil.copytree(folder, wd / f"kept-{weighting}")
    return {"wd": wd, "studies": studies, "kept": kept, "runs": [run_of(wd, f"planted-{n}") for n in NAMES]}


def hand_dataset(name: str) -> dict:
    """n, mean and the linearised grouped variance of the planted Δ, by hand from the patterns."""
    patterns = load_data_module("make_planted_studies").dev_patterns(name)
    deltas = {q: planted_delta(p) for q, p in patterns.items()}
    grouped = [q for pair in SHARED.get(name, []) for q in pair]
    groups = [list(pair) for pair in SHARED.get(name, [])] + [[q] for q in deltas if q not in grouped]
    n, mean = len(deltas), sum(deltas.values()) / len(deltas)
    sums = [sum(deltas[q] for q in g) for g in groups]
    resid = [(s - len(g) * mean) ** 2 for s, g in zip(sums, groups)]
    var = len(groups) / (len(groups) - 1) * sum(resid) / n ** 2
    return {"deltas": deltas, "patterns": patterns, "n": n, "mean": mean, "var": var, "groups": len(groups)}


def test_every_query_delta_is_the_planted_one(planted):
    for name, run in zip(NAMES, planted["runs"]):
        hand = hand_dataset(name)
        rows = {r["qid"]: r for r in tsv(run / "per_query.tsv")}
        assert set(rows) == set(hand["patterns"])
        for q, p in hand["patterns"].items():
            got = [float(rows[q][f"{m}_ndcg@10"]) for m in ("rrf", "ce", "blend")]
            assert got == pytest.approx([ndcg(r) for r in HAND[p]], abs=1e-12), (name, q, p)
            delta = float(rows[q]["blend_ndcg@10"]) - float(rows[q]["ce_ndcg@10"])
            assert delta == pytest.approx(hand["deltas"][q], abs=1e-12)
        assert read_json(run / "audit.json")["ok"] is True


def test_each_dataset_and_the_pooled_means_are_the_hand_ones(planted):
    hands = [hand_dataset(n) for n in NAMES]
    for weighting, folder in planted["kept"].items():
        got = read_json(folder / "synthesis.json")
        for row, hand in zip(got["datasets"], hands):
            assert (row["n_queries"], row["n_groups"]) == (hand["n"], hand["groups"])
            assert row["mean"] == pytest.approx(hand["mean"], abs=1e-12)
            assert row["se"] == pytest.approx(math.sqrt(hand["var"]), rel=1e-9)
        want = (sum(h["mean"] for h in hands) / 3 if weighting == "datasets"
                else sum(h["mean"] * h["n"] for h in hands) / sum(h["n"] for h in hands))
        assert got["pooled"]["weighting"] == weighting
        assert got["pooled"]["estimate"] == pytest.approx(want, abs=1e-12)
        assert got["consistency"] == {"above 0": 2, "covers 0": 0, "below 0": 1}
        assert [r["sign"] for r in got["datasets"]] == ["above 0", "above 0", "below 0"]


def test_the_meta_analysis_equals_statsmodels(planted):
    import numpy as np
    from statsmodels.stats.meta_analysis import combine_effects

    for weighting, method, sm_name in (("datasets", "dersimonian-laird", "dl"),
                                       ("queries", "paule-mandel", "pm")):
        got = read_json(planted["kept"][weighting] / "synthesis.json")
        y = np.array([r["mean"] for r in got["datasets"]])
        v = np.array([r["se"] ** 2 for r in got["datasets"]])
        ref = combine_effects(y, v, method_re=sm_name, atol=1e-14, maxiter=1000)
        m = got["meta_analysis"]
        assert m["tau2_method"] == method and m["k"] == 3
        assert m["fixed_effect"] == pytest.approx(ref.mean_effect_fe, rel=1e-9)
        assert m["tau2_" + method.replace("-", "_")] == pytest.approx(ref.tau2, rel=1e-6)
        assert m["random_effect"] == pytest.approx(ref.mean_effect_re, rel=1e-6)
        assert m["q"] == pytest.approx(ref.q, rel=1e-9) and m["i2"] == pytest.approx(ref.i2, rel=1e-9)


def audit_cli(folder: Path, runs: list[Path], configfile: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-I", "-S", "-B", str(AUDIT), "--synthesis", str(folder),
                           *[a for r in runs for a in ("--run", str(r))], "--configfile", str(configfile),
                           "--out", str(out)], capture_output=True, text=True)


def test_the_synthesis_audit_passes_and_fails_naming_an_edited_number_or_an_unknown_key(planted, tmp_path):
    wd, runs = planted["wd"], planted["runs"]
    for folder in planted["kept"].values():
        verdict = read_json(folder / "audit.json")
        assert verdict["ok"] is True, verdict["failed_checks"]
        assert "Audit of this synthesis: PASSED" in (folder / "synthesis.md").read_text()
    edits = {"meta_analysis.fixed_effect": lambda s: s["meta_analysis"].update(
                 fixed_effect=s["meta_analysis"]["fixed_effect"] + 1e-6),
             "datasets[1].mean": lambda s: s["datasets"][1].update(mean=s["datasets"][1]["mean"] * 1.001),
             "pooled.interval": lambda s: s["pooled"].update(interval=[s["pooled"]["interval"][0], 0.5]),
             "answer": lambda s: s.update(answer="helps")}  # a key the audit does not declare
    for key, edit in edits.items():
        copy = shutil.copytree(planted["kept"]["datasets"], tmp_path / key)
        got = read_json(copy / "synthesis.json")
        edit(got)
        (copy / "synthesis.json").write_text(json.dumps(got, indent=2) + "\n")
        proc = audit_cli(copy, runs, wd / "synthesis-datasets.yaml", tmp_path / f"{key}.json")
        assert proc.returncode == 1 and f":: {key} ::" in proc.stdout, (key, proc.stdout[-3000:])
        assert read_json(tmp_path / f"{key}.json")["ok"] is False


def hand_pooled(weighting: str) -> float:
    hands = [hand_dataset(n) for n in NAMES]
    if weighting == "datasets":
        return sum(h["mean"] for h in hands) / 3
    return sum(h["mean"] * h["n"] for h in hands) / sum(h["n"] for h in hands)


def test_synthesis_html_is_synthesis_md_as_one_self_contained_page(planted, tmp_path):
    from rerank_study.synthesis import synthesis_report

    for weighting, folder in planted["kept"].items():
        page, md = (folder / "synthesis.html").read_bytes(), (folder / "synthesis.md").read_text("utf-8")
        text, forest = page.decode("utf-8"), (folder / "forest.png").read_bytes()
        assert forest.startswith(b"\x89PNG\r\n\x1a\n") and "](forest.png)" in md
        assert not re.search(r"https?://", text) and "<script" not in text and "<link" not in text
        # the one image: forest.png's own bytes, inlined
        assert re.findall(r'src="([^"]*)"', text) == [
            "data:image/png;base64," + base64.b64encode(forest).decode("ascii")]
        shown = f"{hand_pooled(weighting):.6f}"  # the pooled Δ as synthesis.md prints it, by hand
        assert f"**{shown}**" in md and f"<strong>{shown}</strong>" in text, (weighting, shown)
        assert "Audit of this synthesis: PASSED" in text
        # a deterministic rendering: the page again from synthesis.md and forest.png, the plot again from
        # synthesis.json, byte for byte
        studies = read_json(folder / "synthesis.json")["studies"]
        assert synthesis_report.page(md, forest, studies).encode("utf-8") == page
        synthesis_report.forest(read_json(folder / "synthesis.json"), tmp_path / f"{weighting}.png")
        assert (tmp_path / f"{weighting}.png").read_bytes() == forest
        listed = read_json(folder / "audit.json")["info"]["renderings"]
        assert listed["synthesis.html"] == hashlib.sha256(page).hexdigest()
        assert set(listed) == {"synthesis.tsv", "synthesis.tex", "forest.png", "synthesis.md",
                               "synthesis.html"}
    print(f"synthesis.html: {len(page)} bytes (forest.png {len(forest)})")


def test_the_audit_fails_a_differing_or_missing_page_and_a_pooled_line_not_synthesis_json(planted, tmp_path):
    wd, runs = planted["wd"], planted["runs"]
    copy = shutil.copytree(planted["kept"]["datasets"], tmp_path / "edited")
    text = (copy / "synthesis.html").read_text("utf-8")
    shown = f"<strong>{hand_pooled('datasets'):.6f}</strong>"
    (copy / "synthesis.html").write_text(text.replace(shown, "<strong>0.5</strong>"), encoding="utf-8")
    proc = audit_cli(copy, runs, wd / "synthesis-datasets.yaml", tmp_path / "edited.json")
    assert proc.returncode == 1 and "[synthesis_pages]" in proc.stdout, proc.stdout[-3000:]
    assert ":: the numbers of synthesis.md (the first to differ" in proc.stdout
    (copy / "synthesis.html").unlink()
    proc = audit_cli(copy, runs, wd / "synthesis-datasets.yaml", tmp_path / "missing.json")
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert f"{copy / 'synthesis.html'} :: present ::" in proc.stdout, proc.stdout[-3000:]
    assert read_json(tmp_path / "missing.json")["failed_checks"] == ["synthesis_pages"]
    # synthesis.md's pooled line must show synthesis.json's pooled answer
    copy = shutil.copytree(planted["kept"]["datasets"], tmp_path / "pooled")
    md = (copy / "synthesis.md").read_text("utf-8")
    (copy / "synthesis.md").write_text(md.replace(f"**{hand_pooled('datasets'):.6f}**", "**0.500000**"),
                                       encoding="utf-8")
    proc = audit_cli(copy, runs, wd / "synthesis-datasets.yaml", tmp_path / "pooled.json")
    assert proc.returncode == 1, proc.stdout[-3000:]
    named = f"{copy / 'synthesis.md'} :: the line 'Pooled primary Δ': estimate"
    assert named in proc.stdout, proc.stdout[-3000:]


def test_the_cross_study_report_has_the_declared_synthesis_or_says_there_is_none(planted):
    """Without a declared weighting the cross-study report says no synthesis is declared (and does not
    fail); with one it carries synthesis.md as its audit lists it, its links relative to the report; a
    synthesis.md changed after its audit stops the table, naming the file."""
    wd, studies = planted["wd"], planted["studies"]
    cross = wd / "results" / "cross-study" / "+".join(f"planted-{n}" for n in NAMES) / "cross_study.md"
    folder = wd / "results" / "synthesis" / "+".join(f"planted-{n}" for n in NAMES)

    def cross_study(*extra, check=True):
        return run_snakemake(wd, "--forcerun", "cross_study", *extra,
                             config={"studies": studies_arg(*studies)}, fixture=False,
                             targets=("cross_study",), check=check)

    cross_study()
    assert "## Across datasets\n\nNo synthesis across datasets is declared" in cross.read_text("utf-8")
    # the synthesis folder holds the last one made (queries weighting): declared again, it is up to date
    cross_study("--configfile", str(wd / "synthesis-queries.yaml"))
    got, md = cross.read_text("utf-8"), (folder / "synthesis.md").read_text("utf-8")
    shown = f"**{hand_pooled('queries'):.6f}**"
    assert shown in md and shown in got
    (pooled_line,) = [x for x in md.split("\n") if shown in x]
    assert pooled_line in got.split("\n") and "Audit of this synthesis: PASSED" in got
    rel = "../../synthesis/" + folder.name
    assert f"[synthesis.html]({rel}/synthesis.html)" in got and f"]({rel}/forest.png)" in got
    assert (cross.parent / rel / "synthesis.html").is_file()
    kept = (folder / "synthesis.md").read_bytes()
    try:
        (folder / "synthesis.md").write_bytes(kept.replace(shown.encode(), b"**0.500000**"))
        proc = cross_study("--configfile", str(wd / "synthesis-queries.yaml"), "--allowed-rules",
                           "cross_study", check=False)
        assert proc.returncode != 0, proc.stderr[-3000:]
        assert "synthesis.md (as its audit lists it)" in proc.stderr, proc.stderr[-3000:]
        assert "Fix: rerun `snakemake synthesis`" in proc.stderr
    finally:
        (folder / "synthesis.md").write_bytes(kept)


def test_bad_inputs_are_refused_naming_the_study_and_the_fix(planted, tmp_path):
    wd, (alpha, beta, gamma) = planted["wd"], planted["studies"]
    decl = wd / "synthesis-datasets.yaml"
    undeclared = write_yaml(wd / "undeclared.yaml", {"synthesis": {"weighting": ""}})
    refusals = {
        "REFUSED: the synthesis weighting is not declared": ([alpha, beta], undeclared, "Declare it BEFORE"),
        "REFUSED: a synthesis needs two or more datasets (got 1) (studies=['planted-alpha'])":
            ([alpha], decl, "Fix: --config studies=[<a>,<b>,...]"),
    }
    other = planted_study(wd, "gamma", "planted-gamma-rrf", comparisons={"primary": "ce-rrf"})
    twin = planted_study(wd, "gamma", "planted-gamma-twin")
    refusals["REFUSED: the studies answer different questions (planted-alpha: blend-ce in ndcg@10, "
             "planted-gamma-rrf: ce-rrf in ndcg@10)"] = ([alpha, other], decl, "give the studies the same")
    refusals["REFUSED: a dataset entered twice: ['planted-gamma'] (studies=['planted-gamma', "
             "'planted-gamma-twin'])"] = ([gamma, twin], decl, "Fix: one study per dataset")
    for message, (studies, configfile, fix) in refusals.items():
        proc = synthesise(wd, studies, configfile, check=False)
        assert proc.returncode != 0 and message in proc.stderr, (message, proc.stderr[-3000:])
        assert fix in proc.stderr, (fix, proc.stderr[-3000:])
    audit = run_of(wd, "planted-beta") / "audit.json"
    kept = audit.read_bytes()
    try:
        audit.write_text(json.dumps({"ok": False, "failed_checks": ["per_query"]}))
        # only rule synthesis may run: snakemake must not remake the edited verdict
        proc = synthesise(wd, [alpha, beta], decl, "--allowed-rules", "synthesis", check=False)
        assert proc.returncode != 0 and "STUDY 'planted-beta'" in proc.stderr
        assert "did not pass" in proc.stderr
        assert "Fix: rerun the study until its audit passes" in proc.stderr
    finally:
        audit.write_bytes(kept)
