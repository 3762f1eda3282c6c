"""Studies: a second BEIR-layout dataset (tests/data/synthetic_beir, graded judgements, string ids)
x a differently shaped reranker (2 layers, hidden 128; tests/data/make_tiny_reranker.py, seeded, test-only)
x a user's own TREC run as candidates, through the SAME DAG as SciFact; several studies in one invocation;
bad studies stopped before anything is scored; a per-study sealed confirmation.

Expected numbers come from pytrec_eval on the study's own files (the run file, the qrels), from pandas
reading the TSVs, or from the summaries written by each study's own single run - never from the code
that builds the cross-study table."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DATA, FIXTURE, ROOT, audit_module, make_lockdir, read_json, run_snakemake
from rerank_study import candidates, studies
from rerank_study.config import load_config
from rerank_study.errors import PipelineError
from rerank_study.scoring_model import relevance_column

STUDY_DIR = DATA / "studies"
SYNTH = DATA / "synthetic_beir"
TINY_REPO = "rerank-study/tiny-bert-ce-2x128"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, DATA / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _yaml_lines(data: dict, indent: int = 0) -> list[str]:
    """Block mappings, flow lists, JSON-quoted strings: the subset config.yaml is written in."""
    out = []
    for key, val in data.items():
        pad = " " * indent
        if isinstance(val, dict):
            out += [f"{pad}{key}:"] + _yaml_lines(val, indent + 2)
        else:
            out.append(f"{pad}{key}: {json.dumps(val)}")
    return out


def write_yaml(path: Path, data: dict) -> Path:
    path.write_text("\n".join(_yaml_lines(data)) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> dict[int, Path]:
    """The seeded tiny rerankers (1 and 3 output logits), built once; their bytes equal the committed pins."""
    root = tmp_path_factory.mktemp("tiny")
    mod = _load("make_tiny_reranker")
    return {n: Path(mod.build(root / f"labels{n}", num_labels=n)["out_dir"]) for n in (1, 3)}


def synthetic_study(tmp: Path, model_dir: Path, **overrides) -> Path:
    """A writable copy of the synthetic study's lock folder and its study file (paths made absolute)."""
    lock = tmp / "synthetic-lock"
    if not lock.exists():
        shutil.copytree(STUDY_DIR / "synthetic" / "lockfiles", lock)
    import yaml

    data = yaml.safe_load((STUDY_DIR / "synthetic.yaml").read_text(encoding="utf-8"))
    data.update({"lockdir": str(lock), "data_mirror": str(SYNTH), "model_dir": str(model_dir)})
    for key, val in overrides.items():
        if val is None:  # the study file does not set it (a command-line value then applies)
            data.pop(key, None)
        elif isinstance(val, dict):
            data.setdefault(key, {}).update(val)
        else:
            data[key] = val
    return write_yaml(tmp / f"{data['study']['name']}.yaml", data)


def fixture_study(tmp: Path) -> Path:
    """The default study's block on the committed SciFact fixture (its own lock folder copy)."""
    lock = make_lockdir(tmp / "fixture-lock")
    base = load_config(ROOT / "config" / "config.yaml")
    return write_yaml(tmp / "scifact-fixture.yaml", {
        "study": {**base["study"], "name": "scifact-fixture"}, "lockdir": str(lock), "data_mirror": str(FIXTURE),
        "scorer": "stand-in", "splits": {"dev_size": 8, "confirm_size": 6, "seed": 110}})


def studies_arg(*files: Path) -> str:
    return "[" + ",".join(str(f) for f in files) + "]"


def tsv(path: Path) -> list[dict]:
    import csv

    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


# ------------------------------------------------------------------------------------ unit --
def test_study_list_from_the_command_line_and_config():
    assert studies.parse_study_list("[a,b]") == ["a", "b"]
    assert studies.parse_study_list("a, b") == ["a", "b"]
    assert studies.parse_study_list(["x.yaml"]) == ["x.yaml"]
    assert studies.parse_study_list("") == [] and studies.parse_study_list([]) == []


def test_unknown_study_names_the_known_ones_and_the_fix(tmp_path):
    with pytest.raises(studies.StudyError) as exc:
        studies.study_file("nfcorpus-minilmm", ROOT)
    msg = str(exc.value)
    assert "nfcorpus-minilmm" in msg and "scifact-minilm" in msg and "config/studies" in msg and "Fix" in msg


def test_study_config_paths_are_relative_to_the_study_file_and_outputs_go_under_the_study(tmp_path):
    base = load_config(ROOT / "config" / "config.yaml")
    cfg = studies.study_config(base, STUDY_DIR / "synthetic.yaml")
    assert cfg["study"]["name"] == "synthetic-tiny" and cfg["study"]["candidates"] == "trec"
    assert Path(cfg["lockdir"]) == (STUDY_DIR / "synthetic" / "lockfiles").resolve()
    assert Path(cfg["data_mirror"]) == SYNTH.resolve()
    assert cfg["results"] == "results/synthetic-tiny" and cfg["resources"] == "resources/synthetic-tiny"
    assert cfg["metrics"]["recall_ks"] == [10, 20] and cfg["metrics"]["ndcg_k"] == 10  # merged, not replaced
    assert cfg["study_file"] == str((STUDY_DIR / "synthetic.yaml").resolve()) and cfg["studies"] == []
    # the shipped default study file IS config.yaml's study, with the repository's lock folder
    default = studies.study_config(base, ROOT / "config" / "studies" / "scifact-minilm.yaml")
    assert default["study"] == base["study"] and Path(default["lockdir"]) == (ROOT / "lockfiles").resolve()


def test_a_study_file_with_a_bad_value_is_named(tmp_path):
    bad = write_yaml(tmp_path / "bad.yaml", {"study": {"name": "bad-one", "candidates": "bm25"}, "lockdir": "x"})
    with pytest.raises(studies.StudyError) as exc:
        studies.study_config(load_config(ROOT / "config" / "config.yaml"), bad)
    assert "bad-one" in str(exc.value) and "study.candidates" in str(exc.value) and f"fix the study file {bad}" in str(exc.value)
    lockless = write_yaml(tmp_path / "lockless.yaml", {"study": {"name": "lockless"}})
    with pytest.raises(studies.StudyError, match="names no lockdir"):
        studies.study_config(load_config(ROOT / "config" / "config.yaml"), lockless)


def test_relevance_column_of_one_or_several_logits():
    assert relevance_column(None, [4, 1]) == 0 and relevance_column(2, [4, 3]) == 2
    with pytest.raises(ValueError, match="label_index"):
        relevance_column(None, [4, 3])
    with pytest.raises(ValueError, match="not a column"):
        relevance_column(3, [4, 3])


def test_user_run_in_trec_eval_order_and_depth(tmp_path):
    run = tmp_path / "r.trec"
    # rank column deliberately wrong: trec_eval orders by score desc, then doc id desc
    run.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.9 t\nq1 Q0 d3 3 0.5 t\nq2 Q0 d9 1 1 t\n")
    parsed = candidates.read_user_run(run)
    assert [d for d, _ in candidates.run_order(parsed["q1"])] == ["d2", "d3", "d1"]
    rows = candidates.trec_candidate_rows(parsed, ["q1"], {"q1": "dev"}, 2)
    assert rows == [("q1", "dev", 1, "d2", "0.9"), ("q1", "dev", 2, "d3", "0.5")]
    assert candidates.short_queries(parsed, ["q1", "q2", "q3"], 2) == [("q2", 1), ("q3", 0)]
    with pytest.raises(ValueError, match="fewer than 2"):
        candidates.trec_candidate_rows(parsed, ["q1", "q2"], {"q1": "dev", "q2": "dev"}, 2)
    run.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d1 2 0.4 t\n")
    with pytest.raises(PipelineError, match="twice"):
        candidates.read_user_run(run)
    run.write_text("q1 Q0 d1 1 nan t\n")
    with pytest.raises(PipelineError, match="finite"):
        candidates.read_user_run(run)


def test_cross_study_row_reads_the_summary_it_is_given():
    summary = {"primary": "blend-ce", "metric": "ndcg@10", "scorer": "pinned", "n_queries": 7, "n_groups": 5,
               "methods": {"rrf": {"mean": 0.1}, "ce": {"mean": 0.2}, "blend": {"mean": 0.3}},
               "comparisons": {"blend-ce": {"mean": 0.1, "grouped_interval": [-0.05, 0.25]}}}
    cfg = {"study": {"name": "s", "dataset": "d", "reranker": "m"}}
    row = studies.cross_study_row(cfg, summary, {"ok": True}, "dev")
    assert row == {"study": "s", "dataset": "d", "reranker": "m", "scorer": "pinned", "run": "dev", "n_queries": 7,
                   "n_groups": 5, "rrf_mean": 0.1, "ce_mean": 0.2, "blend_mean": 0.3, "primary": "blend-ce (ndcg@10)",
                   "primary_delta": 0.1, "primary_grouped_lo": -0.05, "primary_grouped_hi": 0.25, "audit": "PASSED"}
    assert tuple(row) == studies.CROSS_STUDY_COLUMNS


def test_a_study_file_the_audit_cannot_read_stops_at_start(tmp_path):
    bad = tmp_path / "blocky.yaml"
    bad.write_text("study:\n  name: blocky\nmetrics:\n  recall_ks:\n  - 10\n  - 20\n")
    with pytest.raises(studies.StudyError, match="flow style") as err:
        studies.study_config(load_config(ROOT / "config" / "config.yaml"), bad)
    assert f"({bad}:5: tabs and block sequences are not supported)" in str(err.value)
    # read, but not as PyYAML reads it (YAML 1.1: '1e3' without a dot is a string)
    other = tmp_path / "other.yaml"
    other.write_text("study:\n  name: other\nthreshold: 1e3\n")
    with pytest.raises(studies.StudyError, match=r"\(it reads other values than PyYAML\)"):
        studies.check_audit_reads(other)


def test_the_audit_reads_every_study_file_as_pyyaml_does():
    import yaml

    yamlsubset = audit_module("yamlsubset")
    for path in [*sorted((ROOT / "config" / "studies").glob("*.yaml")), STUDY_DIR / "synthetic.yaml"]:
        assert yamlsubset.read_simple_yaml(path) == yaml.safe_load(path.read_text(encoding="utf-8")), path
        studies.check_audit_reads(path)  # the library's own check: the audit run with --read-yaml


# ------------------------------------------------------- bad studies stop before any job --
def _dry(tmp_path, study: Path, *extra: str, **config) -> subprocess.CompletedProcess:
    return run_snakemake(tmp_path, "-n", *extra, config={"studies": studies_arg(study), **config}, fixture=False,
                         check=False)


def _says(proc, *needles):
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0, text[-2000:]
    for n in needles:
        assert n in text, (n, text[-3000:])


def test_unknown_study_stops_at_start(tmp_path):
    proc = run_snakemake(tmp_path, "-n", config={"studies": "[no-such-study]"}, fixture=False, check=False)
    _says(proc, "UNKNOWN STUDY 'no-such-study'", "scifact-minilm")


def test_unknown_dataset_stops_naming_study_file_and_fix(tmp_path, tiny_models):
    study = synthetic_study(tmp_path, tiny_models[1], study={"dataset": "nfcorpus"})
    _says(_dry(tmp_path, study), "STUDY 'synthetic-tiny'", "study.dataset is 'nfcorpus'",
          str(tmp_path / "synthetic-lock" / "data_pins.json"), "fix:")


def test_unpinned_dataset_says_how_to_pin_it(tmp_path, tiny_models):
    study = synthetic_study(tmp_path, tiny_models[1])
    (tmp_path / "synthetic-lock" / "data_pins.json").unlink()
    _says(_dry(tmp_path, study), "STUDY 'synthetic-tiny'", "has no pins", "repin=data")


def test_dataset_missing_a_qrels_file_stops(tmp_path, tiny_models):
    study = synthetic_study(tmp_path, tiny_models[1], study={"qrels_confirm": "qrels/heldout.tsv"})
    _says(_dry(tmp_path, study), "STUDY 'synthetic-tiny'", "qrels/heldout.tsv", "is not a pinned file")
    # and a pinned file that the mirror lacks: stops at the data rule, naming the file, before scoring
    mirror = tmp_path / "mirror"
    shutil.copytree(SYNTH, mirror)
    (mirror / "qrels" / "dev.tsv").unlink()
    study = synthetic_study(tmp_path, tiny_models[1], data_mirror=str(mirror))
    proc = run_snakemake(tmp_path, config={"studies": studies_arg(study), "smoke": "true"}, fixture=False,
                         check=False)
    _says(proc, "qrels/dev.tsv")
    assert not list((tmp_path / "results").rglob("pairs.tsv"))


def test_model_with_several_logits_needs_a_declared_index(tmp_path, tiny_models):
    study = synthetic_study(tmp_path, tiny_models[3])
    shutil.copy(STUDY_DIR / "model_pins_3labels.json", tmp_path / "synthetic-lock" / "model_pins.json")
    _says(_dry(tmp_path, study), "STUDY 'synthetic-tiny'", "3 output logits", "study.label_index",
          str(tmp_path / "synthetic-lock" / "model_pins.json"))
    study = synthetic_study(tmp_path, tiny_models[3], study={"label_index": 3})
    _says(_dry(tmp_path, study), "study.label_index 3 is not one of the model's 3 outputs")


def test_unknown_model_stops(tmp_path, tiny_models):
    study = synthetic_study(tmp_path, tiny_models[1], study={"reranker": "someone/other-model"})
    _says(_dry(tmp_path, study), "STUDY 'synthetic-tiny'", "study.reranker is 'someone/other-model'",
          TINY_REPO)


def test_trec_run_shorter_than_the_depth_is_refused_and_nothing_is_frozen(tmp_path, tiny_models):
    study = synthetic_study(tmp_path, tiny_models[1])
    lock = tmp_path / "synthetic-lock"
    before = (lock / "derived_pins.json").read_bytes()
    lines = (lock / "candidates" / "run.trec").read_text().splitlines(keepends=True)
    short = tmp_path / "short.trec"
    short.write_text("".join(l for l in lines if not (l.startswith("q05 ") and int(l.split()[3]) > 15)))
    proc = run_snakemake(tmp_path, config={"studies": studies_arg(study), "repin": "candidates",
                                           "trec_run": str(short)}, fixture=False, check=False)
    _says(proc, "STUDY 'synthetic-tiny'", str(short), "fewer than 20 candidates", "q05 (15)", "Fix:")
    assert (lock / "derived_pins.json").read_bytes() == before


def test_frozen_candidates_shallower_than_the_depth_stop_at_start(tmp_path, tiny_models):
    study = synthetic_study(tmp_path, tiny_models[1], candidates={"depth": 30}, metrics={"recall_ks": [10, 30]})
    _says(_dry(tmp_path, study), "STUDY 'synthetic-tiny'", "hold 20 per query, fewer than candidates.depth 30")


def test_qrels_of_queries_absent_from_queries_jsonl_stop_before_scoring(tmp_path, tiny_models):
    mirror = tmp_path / "mirror"
    shutil.copytree(SYNTH, mirror)
    qrels = mirror / "qrels" / "dev.tsv"
    qrels.write_text(qrels.read_text() + "q99\td001\t1\n")
    study = synthetic_study(tmp_path, tiny_models[1], data_mirror=str(mirror))
    pins = read_json(tmp_path / "synthetic-lock" / "data_pins.json")
    raw = qrels.read_bytes()
    pins["files"]["qrels/dev.tsv"].update(sha256=hashlib.sha256(raw).hexdigest(), bytes=len(raw),
                                          lines=raw.count(b"\n"))
    pins["files"]["qrels/dev.tsv"].pop("content_sha256")
    (tmp_path / "synthetic-lock" / "data_pins.json").write_text(json.dumps(pins))
    proc = run_snakemake(tmp_path, config={"studies": studies_arg(study), "smoke": "true"}, fixture=False,
                         check=False)
    _says(proc, "STUDY 'synthetic-tiny'", "judges queries absent from", "q99", "Fix:")
    assert not list((tmp_path / "results").rglob("pairs.tsv"))


# --------------------------------------------------------- the second study through the DAG --
@pytest.fixture(scope="module")
def synthetic_run(tmp_path_factory, tiny_models):
    wd = tmp_path_factory.mktemp("synthetic")
    study = synthetic_study(wd, tiny_models[1])
    run_snakemake(wd, config={"studies": studies_arg(study)}, fixture=False)
    return wd, wd / "results" / "synthetic-tiny" / "dev"


pytestmark_slow = pytest.mark.slow


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
    """r0 of a TREC-run study is the user's run itself: its nDCG@10 per query, from pytrec_eval on the run file
    (scores as written; pytrec_eval orders as trec_eval) and the graded dev qrels, must be the pipeline's."""
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
        assert [float(row["primary_grouped_lo"]), float(row["primary_grouped_hi"])] == comp["grouped_interval"]
        assert [float(row[f"{m}_mean"]) for m in ("rrf", "ce", "blend")] == [s["methods"][m]["mean"]
                                                                             for m in ("rrf", "ce", "blend")]
        assert (int(row["n_queries"]), int(row["n_groups"]), row["audit"]) == (s["n_queries"], s["n_groups"], "PASSED")
    import pandas as pd

    assert pd.read_parquet(tmp_path / "results" / "cross-study" / "scifact-fixture+synthetic-tiny"
                           / "cross_study.parquet")["study"].tolist() == list(runs)
    # the default study inside a multi-study invocation: byte-identical to the single default invocation
    def hashes(run):
        return {a["key"]: a["sha256"] for a in read_json(run / "manifest.json")["artefacts"] if a["deterministic"]
                and a["scope"] == "run"}
    assert hashes(runs["scifact-fixture"]) == hashes(smoke_run)


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
    queries = {json.loads(l)["_id"]: json.loads(l)["text"] for l in (SYNTH / "queries.jsonl").read_text().splitlines()}
    docs = {json.loads(l)["_id"]: json.loads(l) for l in (SYNTH / "corpus.jsonl").read_text().splitlines()}
    doc = docs[row["doc_id"]]
    tok = AutoTokenizer.from_pretrained(tiny_models[3])
    model = AutoModelForSequenceClassification.from_pretrained(tiny_models[3], dtype=torch.float32).eval()
    enc = tok([queries[row["qid"]]], [(doc["title"] + " " + doc["text"]).strip()], truncation="longest_first",
              max_length=512, return_tensors="pt")
    with torch.inference_mode():
        logits = model(**enc).logits[0].tolist()
    assert float(row["logit"]) == pytest.approx(logits[1], abs=1e-5) and logits[1] != pytest.approx(logits[0], abs=1e-6)


@pytest.mark.slow
def test_the_sealed_confirmation_works_per_study(synthetic_run):
    """Freeze the synthetic study's protocol into ITS lock folder, open its sealed judgements once: the ledger
    and protocol live there, the opening is audited and recorded; the default lock folder is untouched."""
    wd, run = synthetic_run
    study = wd / "synthetic-tiny.yaml"
    lock = Path(read_json(run / "manifest.json")["lockdir"])
    lock = (run / lock).resolve()
    repo_ledger = sorted((ROOT / "lockfiles").glob("confirmation_ledger.jsonl"))
    freeze = subprocess.run([sys.executable, str(ROOT / "scripts/confirm.py"), "freeze", "--dev-run", str(run),
                             "--study", str(study)], capture_output=True, text=True)
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
    assert (openings[0] / "sealed" / "qrels" / "test.tsv").read_bytes() == (SYNTH / "qrels" / "test.tsv").read_bytes()
    events = [json.loads(l)["event"] for l in (lock / "confirmation_ledger.jsonl").read_text().splitlines()]
    assert events == ["frozen", "started", "completed"]
    assert sorted((ROOT / "lockfiles").glob("confirmation_ledger.jsonl")) == repo_ledger
    summary = read_json(openings[0] / "summary.json")
    assert summary["n_queries"] == 12 and summary["bootstrap"]["seed"] == 111


# --------------------------------------------------- repin=data: the first verified acquisition --
def _zip_of_synthetic(tmp: Path) -> Path:
    import zipfile

    zpath = tmp / "synthbeir.zip"
    with zipfile.ZipFile(zpath, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel in ("corpus.jsonl", "qrels/dev.tsv", "qrels/test.tsv"):
            zf.writestr(f"synthbeir/{rel}", (SYNTH / rel).read_bytes())
        # + queries of a third split no pinned qrels file judges (as NFCorpus's queries.jsonl holds train queries)
        extra = "".join(json.dumps({"_id": f"x{i}", "text": f"other split query {i}", "metadata": {}}) + "\n"
                        for i in range(3))
        zf.writestr("synthbeir/queries.jsonl", (SYNTH / "queries.jsonl").read_bytes() + extra.encode())
    return zpath


@pytest.mark.slow
def test_repin_data_pins_a_catalogue_dataset_once_from_its_verified_archive(tmp_path, tiny_models):
    """A study on a dataset that is in the catalogue but not pinned: repin=data checks the archive against the
    catalogue's size and md5 BEFORE opening it, then writes the study's data pins (sha256 by hashlib here); a
    second repin=data is refused; a wrong md5 writes nothing."""
    zpath = _zip_of_synthetic(tmp_path)
    raw = zpath.read_bytes()
    url = "https://example.invalid/beir/synthbeir.zip"
    cat = tmp_path / "catalogue.json"
    cat.write_text(json.dumps({"datasets": {"synthbeir": {
        "url": url, "md5": hashlib.md5(raw).hexdigest(), "bytes": len(raw), "zip_top_folder": "synthbeir",
        "qrels_splits": ["dev", "test"], "sha256": None, "note": "test"}}}))
    lock = tmp_path / "synthetic-lock"
    study = synthetic_study(tmp_path, tiny_models[1], study={"dataset": "synthbeir"}, data_mirror="",
                            data={"url": url, "catalogue": str(cat)})
    (lock / "data_pins.json").unlink()
    proc = run_snakemake(tmp_path, config={"studies": studies_arg(study), "repin": "data", "data_zip": str(zpath)},
                         fixture=False, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    pins = read_json(lock / "data_pins.json")
    assert pins["dataset"] == "synthbeir" and pins["zip"]["sha256"] == hashlib.sha256(raw).hexdigest()
    for rel in ("corpus.jsonl", "qrels/dev.tsv", "qrels/test.tsv"):
        assert pins["files"][rel]["sha256"] == hashlib.sha256((SYNTH / rel).read_bytes()).hexdigest(), rel
    assert pins["files"]["qrels/test.tsv"]["sealed"] is True and pins["files"]["qrels/dev.tsv"]["role"] == "qrels_dev"
    # the confirmation split is the sealed file's 12 queries, not "every query without development judgements"
    # (that would add the 3 queries of the third split)
    sealed_ids = sorted({l.split("\t")[0] for l in (SYNTH / "qrels/test.tsv").read_text().splitlines()[1:]})
    assert pins["files"]["qrels/test.tsv"]["queries"] == sealed_ids
    run_snakemake(tmp_path, config={"studies": studies_arg(study), "repin": "splits", "data_zip": str(zpath)},
                  fixture=False)
    assert (lock / "splits" / "confirm.txt").read_text().split() == sealed_ids
    again = run_snakemake(tmp_path, "--forcerun", "freeze_data", config={"studies": studies_arg(study), "repin": "data",
                                                                         "data_zip": str(zpath)},
                          fixture=False, check=False)
    assert again.returncode != 0 and "already" in (again.stdout + again.stderr)
    # a wrong md5 in the catalogue: refused before the archive is opened, nothing written
    (lock / "data_pins.json").unlink()
    bad = json.loads(cat.read_text())
    bad["datasets"]["synthbeir"]["md5"] = "0" * 32
    cat.write_text(json.dumps(bad))
    proc = run_snakemake(tmp_path, "--forcerun", "freeze_data", config={"studies": studies_arg(study), "repin": "data",
                                                                        "data_zip": str(zpath)},
                         fixture=False, check=False)
    assert proc.returncode != 0 and "0" * 32 in (proc.stdout + proc.stderr)
    assert not (lock / "data_pins.json").exists()


@pytest.mark.slow
def test_a_dataset_with_one_qrels_file_gets_its_sealed_part_drawn_once_and_pinned(tmp_path, tiny_models):
    """ONE qrels file (dev.tsv + test.tsv of the synthetic set merged into qrels/test.tsv): repin=data draws the
    sealed confirmation queries from it (seed, size) and pins both parts; the development DAG gets only the
    development rows (the whole file never reaches resources/); the audit passes; a later opening reads the
    sealed part, whose rows are exactly the drawn queries' rows of the file."""
    import zipfile

    merged = (SYNTH / "qrels" / "dev.tsv").read_bytes() + (SYNTH / "qrels" / "test.tsv").read_bytes().split(b"\n", 1)[1]
    zpath = tmp_path / "synthone.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        for rel in ("corpus.jsonl", "queries.jsonl"):
            zf.writestr(f"synthone/{rel}", (SYNTH / rel).read_bytes())
        zf.writestr("synthone/qrels/test.tsv", merged)
    raw = zpath.read_bytes()
    url = "https://example.invalid/beir/synthone.zip"
    cat = tmp_path / "catalogue.json"
    cat.write_text(json.dumps({"datasets": {"synthone": {
        "url": url, "md5": hashlib.md5(raw).hexdigest(), "bytes": len(raw), "zip_top_folder": "synthone",
        "qrels_splits": ["test"], "sha256": None, "note": "test"}}}))
    lock = tmp_path / "synthetic-lock"
    study = synthetic_study(tmp_path, tiny_models[1], study={"dataset": "synthone", "qrels_dev": "qrels/test.tsv",
                                                             "qrels_confirm": "qrels/test.tsv"},
                            data_mirror="", data={"url": url, "catalogue": str(cat)})
    for name in ("data_pins.json", "derived_pins.json"):
        (lock / name).unlink()
    shutil.rmtree(lock / "splits")
    shutil.move(lock / "candidates" / "run.trec", tmp_path / "user.trec")
    shutil.rmtree(lock / "candidates")
    base = {"studies": studies_arg(study), "data_zip": str(zpath)}
    for extra in ({"repin": "data"}, {"repin": "splits"}, {"repin": "candidates", "trec_run": str(tmp_path / "user.trec")}):
        run_snakemake(tmp_path, config={**base, **extra}, fixture=False)
    pins = read_json(lock / "data_pins.json")
    dev_part, sealed_part = pins["files"]["qrels/test.dev-part.tsv"], pins["files"]["qrels/test.sealed-part.tsv"]
    assert pins["files"]["qrels/test.tsv"]["role"] == "qrels_source" and sealed_part["sealed"] is True
    sealed_q = sealed_part["derived_from"]["queries"]
    # the draw, recomputed here: numpy default_rng(110).choice over the canonically sorted judged ids (all 'qNN')
    import numpy as np

    pool = sorted({line.split("\t")[0] for line in merged.decode().splitlines()[1:]})
    want = sorted(pool[i] for i in np.random.default_rng(110).choice(len(pool), 12, replace=False))
    assert sealed_q == want and sorted(dev_part["derived_from"]["queries"]) == sorted(set(pool) - set(want))
    rows = merged.decode().splitlines(keepends=True)
    sealed_bytes = (rows[0] + "".join(r for r in rows[1:] if r.split("\t")[0] in set(want))).encode()
    assert sealed_part["sha256"] == hashlib.sha256(sealed_bytes).hexdigest()
    assert (lock / "splits" / "confirm.txt").read_text().split() == want

    run_snakemake(tmp_path, config=base, fixture=False)
    run = tmp_path / "results" / "synthetic-tiny" / "dev"
    assert read_json(run / "audit.json")["ok"] is True
    # no file under resources/ or the run holds a sealed query's judgement
    for path in [*(tmp_path / "resources").rglob("*.tsv"), *run.rglob("*.tsv")]:
        if "qrels" in path.parts or path.name == "qrels.tsv":
            judged = {l.split("\t")[0] for l in path.read_text().splitlines()[1:]}
            assert not judged & set(want), path
    assert not list((tmp_path / "resources").rglob("test.tsv"))

    # the opening reads the sealed part (and only then)
    freeze = subprocess.run([sys.executable, str(ROOT / "scripts/confirm.py"), "freeze", "--dev-run", str(run),
                             "--study", str(study)], capture_output=True, text=True)
    assert freeze.returncode == 0, freeze.stderr
    sha = (lock / "protocol.sha256").read_text().split()[0]
    run_snakemake(tmp_path, "confirm", config={**base, "unseal": sha, "allow_dirty_for_testing": "true"},
                  fixture=False)
    (opening,) = sorted((tmp_path / "results" / "synthetic-tiny").glob("confirm-*"))
    assert read_json(opening / "audit.json")["ok"] is True
    assert (opening / "sealed" / "qrels" / "test.sealed-part.tsv").read_bytes() == sealed_bytes
    assert read_json(opening / "summary.json")["n_queries"] == 12


def test_the_stand_in_of_another_architecture_is_refused_at_start(tmp_path, tiny_models):
    study = synthetic_study(tmp_path, tiny_models[1], scorer="stand-in")
    _says(_dry(tmp_path, study), "STUDY 'synthetic-tiny'", "STAND-IN has all-MiniLM-L6-v2's shape",
          "hidden_size", "set scorer: pinned")


def test_a_command_line_mirror_of_another_dataset_is_refused_at_start(tmp_path, tiny_models):
    study = synthetic_study(tmp_path, tiny_models[1], data_mirror=None)
    _says(_dry(tmp_path, study, data_mirror=str(FIXTURE)), "STUDY 'synthetic-tiny'", "holds another dataset",
          "set this study's own data_mirror")


def test_repin_data_is_refused_at_start_when_pinned_or_not_in_the_catalogue(tmp_path, tiny_models):
    study = synthetic_study(tmp_path, tiny_models[1])
    _says(_dry(tmp_path, study, repin="data"), "STUDY 'synthetic-tiny'", "already pinned")
    (tmp_path / "synthetic-lock" / "data_pins.json").unlink()
    _says(_dry(tmp_path, study, repin="data"), "'synthetic-beir' is not in the catalogue", "scifact")


def test_two_studies_never_share_a_lock_folder_and_study_file_is_not_set_by_hand(tmp_path, tiny_models):
    one = synthetic_study(tmp_path, tiny_models[1])
    import yaml

    data = yaml.safe_load(one.read_text())
    data["study"]["name"] = "synthetic-twin"
    twin = write_yaml(tmp_path / "twin.yaml", data)
    proc = run_snakemake(tmp_path, "-n", config={"studies": studies_arg(one, twin)}, fixture=False, check=False)
    _says(proc, "share one lock folder")
    proc = run_snakemake(tmp_path, "-n", config={"study_file": str(one)}, fixture=False, check=False)
    _says(proc, "'study_file' is set by studies=[...]")


def test_check_candidates_refuses_a_trec_run_study(tmp_path, tiny_models):
    study = synthetic_study(tmp_path, tiny_models[1])
    _says(_dry(tmp_path, study, "check_candidates"), "STUDY 'synthetic-tiny'", "nothing to regenerate")
