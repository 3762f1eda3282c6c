"""Bad studies stop before anything is scored, naming the study, the file and the fix: an unknown study,
dataset or model, a dataset without pins or missing a qrels file, several logits without a declared index, a
TREC run shorter than the depth, frozen candidates shallower than it, qrels of absent queries, the stand-in of
another architecture, a command-line mirror of another dataset, repin=data where it cannot apply, two studies
sharing a lock folder. The synthetic study (tests/data/synthetic_beir, the seeded tiny reranker) through
Snakemake, mostly as dry runs."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

from conftest import (
    FIXTURE,
    STUDY_DIR,
    SYNTH,
    TINY_REPO,
    read_json,
    run_snakemake,
    studies_arg,
    synthetic_study,
    write_yaml,
)


def _dry(tmp_path, study: Path, *extra: str, **config) -> subprocess.CompletedProcess:
    return run_snakemake(tmp_path, "-n", *extra, config={"studies": studies_arg(study), **config},
                         fixture=False, check=False)


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
    study = synthetic_study(tmp_path, tiny_models[1], candidates={"depth": 30},
                            metrics={"recall_ks": [10, 30]})
    _says(_dry(tmp_path, study), "STUDY 'synthetic-tiny'", "hold 20 per query, fewer than "
          "candidates.depth 30")


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
    proc = run_snakemake(tmp_path, "-n", config={"studies": studies_arg(one, twin)}, fixture=False,
                         check=False)
    _says(proc, "share one lock folder")
    proc = run_snakemake(tmp_path, "-n", config={"study_file": str(one)}, fixture=False, check=False)
    _says(proc, "'study_file' is set by studies=[...]")


def test_check_candidates_refuses_a_trec_run_study(tmp_path, tiny_models):
    study = synthetic_study(tmp_path, tiny_models[1])
    _says(_dry(tmp_path, study, "check_candidates"), "STUDY 'synthetic-tiny'", "nothing to regenerate")
