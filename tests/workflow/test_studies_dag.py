"""Studies through the SAME DAG as SciFact: a second BEIR-layout dataset (tests/data/synthetic_beir, graded
judgements, string ids) x a differently shaped reranker (2 layers, hidden 128;
tests/data/make_tiny_reranker.py, seeded, test-only) x a user's own TREC run as candidates; several studies in
one invocation (the cross-study table); a declared label index; a per-study sealed confirmation.

Expected numbers come from pytrec_eval on the study's own files (the run file, the qrels), from pandas
reading the TSVs, or from the summaries written by each study's own single run - never from the code
that builds the cross-study table."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import (
    DATA,
    FIXTURE,
    ROOT,
    STUDY_DIR,
    SYNTH,
    TINY_REPO,
    make_lockdir,
    read_json,
    run_snakemake,
    studies_arg,
    synthetic_study,
    write_yaml,
)

from rerank_study.settings.config import load_config
from rerank_study.settings.config_docs import load_yaml


def fixture_study(tmp: Path) -> Path:
    """The default study's block on the committed SciFact fixture (its own lock folder copy)."""
    lock = make_lockdir(tmp / "fixture-lock")
    base = load_config(ROOT / "config" / "config.yaml")
    sizes = load_yaml(DATA / "fixture_config.yaml")  # the smoke run's splits, bootstrap and calibration sizes
    return write_yaml(tmp / "scifact-fixture.yaml", {
        "study": {**base["study"], "name": "scifact-fixture"}, "lockdir": str(lock),
        "data_mirror": str(FIXTURE), "scorer": "stand-in", **sizes})


def tsv(path: Path) -> list[dict]:
    import csv

    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


@pytest.fixture(scope="module")
def synthetic_run(tmp_path_factory, tiny_models):
    wd = tmp_path_factory.mktemp("synthetic")
    study = synthetic_study(wd, tiny_models[1])
    run_snakemake(wd, config={"studies": studies_arg(study)}, fixture=False)
    return wd, wd / "results" / "synthetic-tiny" / "dev"


@pytest.mark.slow
def test_second_study_runs_the_same_dag_and_passes_its_audit(synthetic_run):
    wd, run = synthetic_run
    audit = read_json(run / "audit.json")
    assert audit["ok"] is True and audit["failed_checks"] == []
    man = read_json(run / "manifest.json")
    assert man["settings"]["study"]["name"] == "synthetic-tiny" and man["scorer"] == "pinned"
    assert man["model_identity"] == f"{TINY_REPO}@seeded-20261130"
    # the architecture facts come from the tiny model's pinned config: hidden 128, one logit
    shape = read_json(run / "shape_check.json")
    assert shape["last_hidden_state"][2] == 128 and shape["logits"][1] == 1 and shape["ok"] is True
    pairs = tsv(run / "pairs.tsv")
    assert len(pairs) == 20 * 20 and {p["model"] for p in pairs} == {
        f"{TINY_REPO}@seeded-20261130 weights-sha256:"
        + read_json(STUDY_DIR / "synthetic" / "lockfiles" / "model_pins.json")["cross_encoder"]["files"]
        ["model.safetensors"]["sha256"]}


@pytest.mark.slow
def test_second_study_r0_metrics_equal_pytrec_eval_on_the_users_run_and_graded_qrels(synthetic_run):
    """r0 of a TREC-run study is the user's run itself: its nDCG@10 per query, from pytrec_eval on the run
    file (scores as written; pytrec_eval orders as trec_eval) and the graded dev qrels, must be the
    pipeline's."""
    import pytrec_eval

    wd, run = synthetic_run
    analysed = (run / "inputs" / "queries.txt").read_text().split()
    qrels: dict = {}
    for r in tsv(SYNTH / "qrels" / "dev.tsv"):
        qrels.setdefault(r["query-id"], {})[r["corpus-id"]] = int(r["score"])
    user_run: dict = {}
    for line in (STUDY_DIR / "synthetic" / "lockfiles" / "candidates" / "run.trec").read_text().splitlines():
        q, _, d, _, s, _ = line.split()
        if q in analysed:
            user_run.setdefault(q, {})[d] = float(s)
    assert max(v for q in qrels.values() for v in q.values()) == 2  # graded judgements really occur
    ev = pytrec_eval.RelevanceEvaluator({q: qrels[q] for q in analysed}, {"ndcg_cut.10"})
    want = {q: m["ndcg_cut_10"] for q, m in ev.evaluate(user_run).items()}
    got = {r["qid"]: float(r["rrf_ndcg@10"]) for r in tsv(run / "per_query.tsv")}
    assert set(got) == set(analysed)
    for q in analysed:
        assert got[q] == pytest.approx(want.get(q, 0.0), abs=1e-12), q


@pytest.mark.slow
def test_parquet_copies_equal_the_tsvs(synthetic_run):
    import pandas as pd

    wd, run = synthetic_run
    for name in ("pairs", "per_query"):
        frame = pd.read_parquet(run / f"{name}.parquet")
        rows = tsv(run / f"{name}.tsv")
        assert list(frame.columns) == list(rows[0]) and len(frame) == len(rows)
        for col in frame.columns:  # every cell reads back to the TSV's text (floats: exactly)
            for cell, row in zip(frame[col].tolist(), rows):
                text = row[col]
                if isinstance(cell, float):
                    assert cell == float(text), (name, col)
                elif isinstance(cell, bool):
                    assert str(cell).lower() == text.lower(), (name, col)
                else:
                    assert str(cell) == text, (name, col)


@pytest.mark.slow
def test_two_studies_in_one_invocation_write_the_cross_study_table(tmp_path, tiny_models, smoke_run):
    fx = fixture_study(tmp_path)
    syn = synthetic_study(tmp_path, tiny_models[1])
    run_snakemake(tmp_path, config={"studies": studies_arg(fx, syn), "smoke": "true"}, fixture=False)
    runs = {"scifact-fixture": tmp_path / "results" / "scifact-fixture" / "smoke-standin",
            "synthetic-tiny": tmp_path / "results" / "synthetic-tiny" / "smoke"}
    for run in runs.values():
        assert read_json(run / "audit.json")["ok"] is True
    table = tsv(tmp_path / "results" / "cross-study" / "scifact-fixture+synthetic-tiny" / "cross_study.tsv")
    assert [r["study"] for r in table] == list(runs)
    for row in table:
        s = read_json(runs[row["study"]] / "summary.json")
        comp = s["comparisons"][s["primary"]]
        assert float(row["primary_delta"]) == comp["mean"]
        assert [float(row["primary_grouped_lo"]), float(row["primary_grouped_hi"])] == \
            comp["grouped_interval"]
        assert [float(row[f"{m}_mean"]) for m in ("rrf", "ce", "blend")] == [s["methods"][m]["mean"]
                                                                             for m in ("rrf", "ce", "blend")]
        assert (int(row["n_queries"]), int(row["n_groups"]), row["audit"]) == (s["n_queries"],
                                                                               s["n_groups"], "PASSED")
    import pandas as pd

    assert pd.read_parquet(tmp_path / "results" / "cross-study" / "scifact-fixture+synthetic-tiny"
                           / "cross_study.parquet")["study"].tolist() == list(runs)
    # the default study inside a multi-study invocation: byte-identical to the single default invocation
    def hashes(run):
        return {a["key"]: a["sha256"] for a in read_json(run / "manifest.json")["artefacts"]
                if a["deterministic"]
                and a["scope"] == "run"}
    assert hashes(runs["scifact-fixture"]) == hashes(smoke_run)
    check_the_synthesis_of(tmp_path, fx, syn, runs)


def check_the_synthesis_of(wd: Path, fx: Path, syn: Path, runs: dict) -> None:
    """`snakemake synthesis` on the two audited runs: refused while the weighting is not declared; declared,
    every number from the runs' own files by plain arithmetic, numpy's documented draws and statsmodels'
    meta-analysis."""
    import numpy as np
    from statsmodels.stats.meta_analysis import combine_effects

    args = {"studies": studies_arg(fx, syn), "smoke": "true"}
    folder = wd / "results" / "synthesis" / "scifact-fixture+synthetic-tiny"
    refused = run_snakemake(wd, config=args, fixture=False, targets=("synthesis",), check=False)
    assert refused.returncode != 0 and "REFUSED: the synthesis weighting is not declared" in refused.stderr
    assert not folder.exists()  # refused before any job
    declared = write_yaml(wd / "synthesis.yaml", {"synthesis": {
        "weighting": "queries", "tau2": "paule-mandel", "B": 500, "seed": 5, "level": 0.95}})
    run_snakemake(wd, "--configfile", str(declared), config=args, fixture=False, targets=("synthesis",))
    got = read_json(folder / "synthesis.json")
    rng = np.random.default_rng(5)  # the documented draw: one generator, the studies in order
    y, v, nums, dens = [], [], np.zeros(500), np.zeros(500)
    for row, (study, run) in zip(got["datasets"], runs.items()):
        deltas = {r["qid"]: float(r["blend_ndcg@10"]) - float(r["ce_ndcg@10"])
                  for r in tsv(run / "per_query.tsv")}
        members: dict = {}
        for g in tsv(run / "groups.tsv"):
            members.setdefault(int(g["group_index"]), []).append(deltas[g["qid"]])
        sums = [sum(members[k]) for k in sorted(members)]
        sizes = [len(members[k]) for k in sorted(members)]
        n, mean = len(deltas), sum(deltas.values()) / len(deltas)
        var = len(sums) / (len(sums) - 1) * sum((t - m * mean) ** 2 for t, m in zip(sums, sizes)) / n ** 2
        assert (row["n_queries"], row["n_groups"]) == (n, len(sums))
        assert row["mean"] == pytest.approx(mean, abs=1e-12)
        assert row["se"] == pytest.approx(var ** 0.5, rel=1e-9)
        s = read_json(run / "summary.json")
        assert row["grouped_interval"] == s["comparisons"][s["primary"]]["grouped_interval"]
        idx = [[int(x) for x in list(r.values())[1:]] for r in tsv(folder / "indices" / f"{study}.tsv")]
        assert np.array_equal(np.array(idx), rng.integers(0, len(sums), size=(500, len(sums))))
        nums += [sum(sums[j] for j in draw) for draw in idx]
        dens += [sum(sizes[j] for j in draw) for draw in idx]
        y.append(mean)
        v.append(var)
    n_all = sum(d["n_queries"] for d in got["datasets"])
    pooled = sum(m * d["n_queries"] for m, d in zip(y, got["datasets"])) / n_all  # every query counts once
    assert got["pooled"]["estimate"] == pytest.approx(pooled, abs=1e-12)
    want = list(np.percentile(nums / dens, [2.5, 97.5]))
    assert got["pooled"]["interval"] == pytest.approx(want, abs=1e-12)
    assert got["plain_mean_of_means"] == pytest.approx(sum(y) / 2, abs=1e-12)
    ref = combine_effects(np.array(y), np.array(v), method_re="pm", atol=1e-12, maxiter=500)
    assert got["meta_analysis"]["fixed_effect"] == pytest.approx(ref.mean_effect_fe, rel=1e-9)
    assert got["meta_analysis"]["random_effect"] == pytest.approx(ref.mean_effect_re, rel=1e-6)
    assert got["meta_analysis"]["prediction_interval"] is None  # two datasets: no t with 0 df
    for name in ("synthesis.tsv", "synthesis.tex", "synthesis.md", "forest.png"):
        assert (folder / name).stat().st_size > 0, name



@pytest.mark.slow
def test_a_declared_label_index_scores_that_logit(tmp_path, tiny_models):
    """The 3-logit tiny model with study.label_index 1: the pairs' logits are column 1 of the model's output
    (checked on one pair with transformers directly), and the audit passes."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    study = synthetic_study(tmp_path, tiny_models[3], study={"label_index": 1})
    shutil.copy(STUDY_DIR / "model_pins_3labels.json", tmp_path / "synthetic-lock" / "model_pins.json")
    run_snakemake(tmp_path, config={"studies": studies_arg(study), "smoke": "true"}, fixture=False)
    run = tmp_path / "results" / "synthetic-tiny" / "smoke"
    assert read_json(run / "audit.json")["ok"] is True
    assert read_json(run / "shape_check.json")["logits"][1] == 3
    row = tsv(run / "pairs.tsv")[0]
    assert row["model"].startswith(f"{TINY_REPO}@seeded-20261130-3labels#logit1 ")
    queries = {json.loads(l)["_id"]: json.loads(l)["text"]
               for l in (SYNTH / "queries.jsonl").read_text().splitlines()}
    docs = {json.loads(l)["_id"]: json.loads(l) for l in (SYNTH / "corpus.jsonl").read_text().splitlines()}
    doc = docs[row["doc_id"]]
    tok = AutoTokenizer.from_pretrained(tiny_models[3])
    model = AutoModelForSequenceClassification.from_pretrained(tiny_models[3], dtype=torch.float32).eval()
    enc = tok([queries[row["qid"]]], [(doc["title"] + " " + doc["text"]).strip()], truncation="longest_first",
              max_length=512, return_tensors="pt")
    with torch.inference_mode():
        logits = model(**enc).logits[0].tolist()
    assert float(row["logit"]) == pytest.approx(logits[1],
                                                abs=1e-5) and logits[1] != pytest.approx(logits[0], abs=1e-6)


@pytest.mark.slow
def test_the_sealed_confirmation_works_per_study(synthetic_run):
    """Freeze the synthetic study's protocol into ITS lock folder, open its sealed judgements once: the ledger
    and protocol live there, the opening is audited and recorded; the default lock folder is untouched."""
    wd, run = synthetic_run
    study = wd / "synthetic-tiny.yaml"
    lock = Path(read_json(run / "manifest.json")["lockdir"])
    lock = (run / lock).resolve()
    repo_ledger = sorted((ROOT / "lockfiles").glob("confirmation_ledger.jsonl"))
    freeze = subprocess.run([sys.executable, str(ROOT / "scripts/confirm.py"), "freeze", "--dev-run",
                             str(run), "--study", str(study)], capture_output=True, text=True)
    assert freeze.returncode == 0, freeze.stderr
    assert f"studies=[{study}]" in freeze.stdout
    sha = (lock / "protocol.sha256").read_text().split()[0]
    p = read_json(lock / "protocol.json")
    assert p["study"]["name"] == "synthetic-tiny" and p["study"]["candidates"] == "trec"
    assert p["model"]["repo"] == TINY_REPO and p["model"]["scorer"] == "pinned"
    run_snakemake(wd, "confirm", config={"studies": studies_arg(study), "unseal": sha,
                                         "allow_dirty_for_testing": "true"}, fixture=False)
    openings = sorted((wd / "results" / "synthetic-tiny").glob("confirm-*"))
    assert len(openings) == 1 and read_json(openings[0] / "audit.json")["ok"] is True
    assert (openings[0] / "sealed" / "qrels" / "test.tsv").read_bytes() == \
        (SYNTH / "qrels" / "test.tsv").read_bytes()
    events = [json.loads(l)["event"] for l in (lock / "confirmation_ledger.jsonl").read_text().splitlines()]
    assert events == ["frozen", "started", "completed"]
    assert sorted((ROOT / "lockfiles").glob("confirmation_ledger.jsonl")) == repo_ledger
    summary = read_json(openings[0] / "summary.json")
    assert summary["n_queries"] == 12 and summary["bootstrap"]["seed"] == 111
