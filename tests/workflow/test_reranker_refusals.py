"""Bad input for a new reranker or dataset stops BEFORE ANY JOB (the Snakefile's parse-time checks), naming
the file, the expected and found value and the fix, and writes nothing: a reranker run with a query outside
the study, a missing, extra or repeated candidate or a non-finite score; a model folder whose files differ
from the pins; a revision the Hugging Face cache does not hold; a data folder with a missing file or a
judgement of an unknown query. A run whose candidates all have one score for a query is pinned, with a warning
saying how its ties are broken. A data folder whose development judgements are a sealed set's is refused by
the seal registry, nothing written. Expected texts are written here; sha256 by hashlib."""

from __future__ import annotations

import csv
import hashlib
import shutil
from pathlib import Path

import pytest
from conftest import (
    SYNTH,
    TINY_REPO,
    full_mirror,
    read_json,
    run_snakemake,
    studies_arg,
    synthetic_study,
    write_yaml,
)

NO_JOB = "Select jobs to execute"


def without_model_dir(study: Path) -> Path:
    """The study file without its model_dir (synthetic_study always writes one)."""
    import yaml

    data = yaml.safe_load(study.read_text())
    data.pop("model_dir")
    return write_yaml(study, data)


def run_file_study(tmp: Path) -> tuple[Path, Path]:
    """The synthetic study (committed splits and candidates) with a run file as its reranker."""
    study = synthetic_study(tmp, Path(""), study={"reranker_kind": "run", "reranker": "term-overlap"})
    return without_model_dir(study), tmp / "synthetic-lock"


def dev_lines(lock: Path) -> list[str]:
    """One line per candidate of every development query (candidate i scores 100 - i), read here with csv."""
    dev = (lock / "splits" / "dev.txt").read_text().split()
    with open(lock / "candidates" / "candidates.tsv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh, delimiter="\t") if r["qid"] in dev]
    return [f"{r['qid']} Q0 {r['doc_id']} {r['rank']} {100 - int(r['rank'])} sys\n" for r in rows]


def repin_run(tmp: Path, study: Path, lines: list[str]):
    run = tmp / "my.run"
    run.write_text("".join(lines))
    proc = run_snakemake(tmp, config={"studies": studies_arg(study), "repin": "reranker_run",
                                      "run_file": str(run)},
                         fixture=False, check=False)
    return proc, run, proc.stdout + proc.stderr


CASES = {
    "a query outside the study": (lambda rows: rows + ["q03 Q0 d030 1 5.0 sys\n"],
                                  "query q03: expected only the 20 development queries, found 1 line(s) of a "
                                  "query outside them (a confirmation query"),
    "a missing candidate": (lambda rows: [r for r in rows if not r.startswith("q01 Q0 d058 ")],
                            "query q01, document d058 (candidate rank 10): expected one score line, found "
                            "none"),
    "an extra document": (lambda rows: rows + ["q02 Q0 d999 21 0.5 sys\n"],
                          "query q02, document d999: expected only its 20 frozen candidates, found a score "
                          "line (not a candidate)"),
    "a repeated candidate": (lambda rows: rows + ["q01 Q0 d045 21 0.5 sys\n"],
                             "line 401: document d045 appears twice for query q01"),
    "a non-finite score": (lambda rows: rows[:2] + ["q01 Q0 d065 3 nan sys\n"] + rows[3:],
                           "line 3: query q01, document d065: score 'nan' is not a finite plain decimal "
                           "number"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_reranker_run_stops_before_any_job_naming_query_and_document(tmp_path, case):
    study, lock = run_file_study(tmp_path)
    change, expected = CASES[case]
    proc, run, out = repin_run(tmp_path, study, change(dev_lines(lock)))
    assert proc.returncode != 0 and NO_JOB not in out, out[-3000:]
    assert f"STUDY 'synthetic-tiny': the reranker run {run} is refused (nothing was frozen)" in out
    assert expected in out and f"file: {run}" in out and "expected: " in out and "found: " in out
    assert "fix: rerank exactly the frozen candidates" in out
    assert not (lock / "reranker").exists() and "reranker_run" not in read_json(lock / "derived_pins.json")


def test_a_query_with_one_score_for_all_candidates_is_pinned_with_a_warning(tmp_path):
    study, lock = run_file_study(tmp_path)
    rows = [r if not r.startswith("q05 ") else " ".join(r.split()[:4] + ["1.0", "sys"]) + "\n"
            for r in dev_lines(lock)]
    proc, run, out = repin_run(tmp_path, study, rows)
    assert proc.returncode == 0, out[-3000:]
    assert "gives 1 development query(ies) one score for all candidates (q05)" in out
    assert "they are ranked by document id as a string, descending (trec_eval's tie rule)" in out
    assert (lock / "reranker" / "dev.trec").read_bytes() == run.read_bytes()
    pin = read_json(lock / "derived_pins.json")["reranker_run"]
    assert (pin["sha256"] == hashlib.sha256(run.read_bytes()).hexdigest() and pin["file"]
            == "reranker/dev.trec")


def test_a_model_folder_whose_files_differ_from_the_pins_stops_before_any_job(tmp_path, tiny_models):
    folder = tmp_path / "model"
    shutil.copytree(tiny_models[1], folder)
    with open(folder / "tokenizer_config.json", "a") as fh:
        fh.write("\n")
    study = synthetic_study(tmp_path, folder)
    proc = run_snakemake(tmp_path, config={"studies": studies_arg(study)}, fixture=False, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and NO_JOB not in out, out[-3000:]
    pinned = hashlib.sha256((tiny_models[1] / "tokenizer_config.json").read_bytes()).hexdigest()
    found = hashlib.sha256((folder / "tokenizer_config.json").read_bytes()).hexdigest()
    assert f"model_dir={folder} is not the pinned model (checked before any job)" in out
    assert "tokenizer_config.json" in out and pinned in out and found in out and "point model_dir at" in out


def test_a_revision_the_cache_does_not_hold_stops_before_any_job(tmp_path, tiny_models):
    commit = "89abcdef" * 5
    repo = tmp_path / "hub" / f"models--{TINY_REPO.replace('/', '--')}"
    shutil.copytree(tiny_models[1], repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    study = without_model_dir(synthetic_study(tmp_path, Path("")))
    (tmp_path / "synthetic-lock" / "model_pins.json").unlink()
    proc = run_snakemake(tmp_path, config={"studies": studies_arg(study), "repin": "model", "revision": "v9",
                                           "hf_cache": str(tmp_path / "hub")}, fixture=False, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and NO_JOB not in out, out[-3000:]
    assert "repin=model refused (nothing was written)" in out and f"file: {repo}" in out
    assert f"expected: revision 'v9' of {TINY_REPO}" in out
    assert f"found: the cache holds ref main -> {commit}, snapshot {commit}" in out
    assert not (tmp_path / "synthetic-lock" / "model_pins.json").exists()


def data_study(tmp: Path, folder: Path) -> Path:
    study = without_model_dir(synthetic_study(tmp, Path("")))
    (tmp / "synthetic-lock" / "data_pins.json").unlink()
    return study


def repin_data(tmp: Path, study: Path, folder: Path):
    proc = run_snakemake(tmp, config={"studies": studies_arg(study), "repin": "data",
                                      "data_dir": str(folder)},
                         fixture=False, check=False)
    return proc, proc.stdout + proc.stderr


def test_a_data_folder_with_a_missing_file_stops_before_any_job(tmp_path):
    folder = tmp_path / "beir"
    shutil.copytree(SYNTH, folder)
    (folder / "queries.jsonl").unlink()
    proc, out = repin_data(tmp_path, data_study(tmp_path, folder), folder)
    assert proc.returncode != 0 and NO_JOB not in out, out[-3000:]
    assert f"repin=data data_dir={folder}: MISSING FILE in data_dir {folder}: queries.jsonl" in out
    assert "expected: corpus.jsonl, queries.jsonl, qrels/dev.tsv, qrels/test.tsv (BEIR layout)" in out
    assert "fix: give the folder of the dataset in BEIR layout" in out
    assert not (tmp_path / "synthetic-lock" / "data_pins.json").exists()


def test_a_data_folder_judging_an_unknown_query_stops_before_any_job(tmp_path):
    folder = tmp_path / "beir"
    shutil.copytree(SYNTH, folder)
    with open(folder / "qrels" / "test.tsv", "a") as fh:
        fh.write("q77\td001\t1\n")
    proc, out = repin_data(tmp_path, data_study(tmp_path, folder), folder)
    assert proc.returncode != 0 and NO_JOB not in out, out[-3000:]
    assert f"qrels/test.tsv of {folder} judges 1 query id(s) absent from queries.jsonl" in out
    assert "found: ['q77'] absent" in out and "fix: use another split" in out
    assert not (tmp_path / "synthetic-lock" / "data_pins.json").exists()


@pytest.mark.full_data
def test_a_data_folder_whose_development_side_holds_a_sealed_set_is_refused(tmp_path):
    """The repository's sealed SciFact test judgements given as a new study's development qrels."""
    mirror = full_mirror()
    lock = tmp_path / "lock"
    lock.mkdir()
    study = write_yaml(tmp_path / "swapped.yaml", {
        "study": {"name": "swapped", "dataset": "scifact-swapped", "qrels_dev": "qrels/test.tsv",
                  "qrels_confirm": "qrels/train.tsv", "reranker_kind": "run", "reranker": "x",
                  "label_index": None,
                  "candidates": "trec"},
        "lockdir": str(lock), "scorer": "pinned", "splits": {"dev_size": 5, "confirm_size": 809,
                                                             "seed": 110}})
    proc, out = repin_data(tmp_path, study, mirror)
    assert proc.returncode != 0, out[-3000:]
    assert "REFUSED to pin the data of study 'swapped' (nothing was written)" in out
    assert "holds exactly the sealed set of" in out and not (lock / "data_pins.json").exists()
