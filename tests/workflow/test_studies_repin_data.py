"""repin=data: the first verified acquisition of a study's dataset from the catalogue (size and md5 checked
before the archive is opened, pinned once, a wrong md5 writes nothing); a dataset with one qrels file gets its
sealed part drawn once and pinned, the development DAG never sees it, a later opening reads it."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SYNTH, read_json, run_snakemake, studies_arg, synthetic_study


def _zip_of_synthetic(tmp: Path) -> Path:
    import zipfile

    zpath = tmp / "synthbeir.zip"
    with zipfile.ZipFile(zpath, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel in ("corpus.jsonl", "qrels/dev.tsv", "qrels/test.tsv"):
            zf.writestr(f"synthbeir/{rel}", (SYNTH / rel).read_bytes())
        # + queries of a third split no pinned qrels file judges (as NFCorpus's queries.jsonl holds train
        # queries)
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
    proc = run_snakemake(tmp_path, config={"studies": studies_arg(study), "repin": "data",
                                           "data_zip": str(zpath)},
                         fixture=False, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    pins = read_json(lock / "data_pins.json")
    assert pins["dataset"] == "synthbeir" and pins["zip"]["sha256"] == hashlib.sha256(raw).hexdigest()
    for rel in ("corpus.jsonl", "qrels/dev.tsv", "qrels/test.tsv"):
        assert pins["files"][rel]["sha256"] == hashlib.sha256((SYNTH / rel).read_bytes()).hexdigest(), rel
    assert pins["files"]["qrels/test.tsv"]["sealed"] is True and pins["files"]["qrels/dev.tsv"]["role"] == \
        "qrels_dev"
    # the confirmation split is the sealed file's 12 queries, not "every query without development judgements"
    # (that would add the 3 queries of the third split)
    sealed_ids = sorted({l.split("\t")[0] for l in (SYNTH / "qrels/test.tsv").read_text().splitlines()[1:]})
    assert pins["files"]["qrels/test.tsv"]["queries"] == sealed_ids
    run_snakemake(tmp_path, config={"studies": studies_arg(study), "repin": "splits", "data_zip": str(zpath)},
                  fixture=False)
    assert (lock / "splits" / "confirm.txt").read_text().split() == sealed_ids
    again = run_snakemake(tmp_path, "--forcerun", "freeze_data", config={"studies": studies_arg(study),
                                                                         "repin": "data",
                                                                         "data_zip": str(zpath)},
                          fixture=False, check=False)
    assert again.returncode != 0 and "already" in (again.stdout + again.stderr)
    # a wrong md5 in the catalogue: refused before the archive is opened, nothing written
    (lock / "data_pins.json").unlink()
    bad = json.loads(cat.read_text())
    bad["datasets"]["synthbeir"]["md5"] = "0" * 32
    cat.write_text(json.dumps(bad))
    proc = run_snakemake(tmp_path, "--forcerun", "freeze_data", config={"studies": studies_arg(study),
                                                                        "repin": "data",
                                                                        "data_zip": str(zpath)},
                         fixture=False, check=False)
    assert proc.returncode != 0 and "0" * 32 in (proc.stdout + proc.stderr)
    assert not (lock / "data_pins.json").exists()


@pytest.mark.slow
def test_a_dataset_with_one_qrels_file_gets_its_sealed_part_drawn_once_and_pinned(tmp_path, tiny_models):
    """ONE qrels file (dev.tsv + test.tsv of the synthetic set merged into qrels/test.tsv): repin=data draws
    the sealed confirmation queries from it (seed, size) and pins both parts; the development DAG gets only
    the development rows (the whole file never reaches resources/); the audit passes; a later opening reads
    the sealed part, whose rows are exactly the drawn queries' rows of the file."""
    import zipfile

    merged = (SYNTH / "qrels" / "dev.tsv").read_bytes() + \
        (SYNTH / "qrels" / "test.tsv").read_bytes().split(b"\n", 1)[1]
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
    study = synthetic_study(tmp_path, tiny_models[1], study={"dataset": "synthone",
                                                             "qrels_dev": "qrels/test.tsv",
                                                             "qrels_confirm": "qrels/test.tsv"},
                            data_mirror="", data={"url": url, "catalogue": str(cat)})
    for name in ("data_pins.json", "derived_pins.json"):
        (lock / name).unlink()
    shutil.rmtree(lock / "splits")
    shutil.move(lock / "candidates" / "run.trec", tmp_path / "user.trec")
    shutil.rmtree(lock / "candidates")
    base = {"studies": studies_arg(study), "data_zip": str(zpath)}
    for extra in ({"repin": "data"}, {"repin": "splits"},
                  {"repin": "candidates", "trec_run": str(tmp_path / "user.trec")}):
        run_snakemake(tmp_path, config={**base, **extra}, fixture=False)
    pins = read_json(lock / "data_pins.json")
    dev_part = pins["files"]["qrels/test.dev-part.tsv"]
    sealed_part = pins["files"]["qrels/test.sealed-part.tsv"]
    assert pins["files"]["qrels/test.tsv"]["role"] == "qrels_source" and sealed_part["sealed"] is True
    sealed_q = sealed_part["derived_from"]["queries"]
    # the draw, recomputed here: numpy default_rng(110).choice over the canonically sorted judged ids (all
    # 'qNN')
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
    freeze = subprocess.run([sys.executable, str(ROOT / "scripts/confirm.py"), "freeze", "--dev-run",
                             str(run), "--study", str(study)], capture_output=True, text=True)
    assert freeze.returncode == 0, freeze.stderr
    sha = (lock / "protocol.sha256").read_text().split()[0]
    run_snakemake(tmp_path, "confirm", config={**base, "unseal": sha, "allow_dirty_for_testing": "true"},
                  fixture=False)
    (opening,) = sorted((tmp_path / "results" / "synthetic-tiny").glob("confirm-*"))
    assert read_json(opening / "audit.json")["ok"] is True
    assert (opening / "sealed" / "qrels" / "test.sealed-part.tsv").read_bytes() == sealed_bytes
    assert read_json(opening / "summary.json")["n_queries"] == 12
