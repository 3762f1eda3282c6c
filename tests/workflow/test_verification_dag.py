"""A cache that cannot lie quietly, on the fixture's smoke run: the verifier's record (sampled batches
re-inferred from scratch), a validly re-checksummed but altered cache entry caught by re-inference, a tampered
copy of the run's stand-in model names what to delete."""

import json
import shutil

import pytest
from conftest import read_json, run_snakemake, world_lock

from rerank_study.reranker import scoring


def test_verification_record_of_a_run(smoke_run):
    rec = read_json(smoke_run / "verification.json")
    # smoke: 5 batches, all sampled
    assert rec["all_equal"] is True and rec["k"] == 8 and len(rec["sample"]) == 5
    assert rec["pairs_compared"] == 50 and all(p["equal"] for p in rec["pairs"])


def test_an_altered_but_rechecksummed_cache_entry_is_caught_by_re_inference(smoke_run,
                                                                            fixture_workdir, tmp_path):
    wd = tmp_path / "lying-cache"
    with world_lock(fixture_workdir):  # no fixture run being made in it meanwhile
        for sub in ("lockfiles", "resources"):
            shutil.copytree(fixture_workdir / sub, wd / sub, symlinks=True)
    entries = sorted((wd / "resources/cache/ce_scores").rglob("*.json"))
    entries = [e for e in entries if "shapes" not in e.parts]
    assert entries, "the smoke run cached its batches"
    for path in entries:  # every cached batch lies by 1e-6 in its first logit
        e = json.loads(path.read_text())
        e["logits"][0] = repr(float(e["logits"][0]) + 1e-6)
        e["sha256"] = scoring.ScoreCache.checksum(e["key"], e["logits"])  # a careful liar re-checksums
        path.write_text(json.dumps(e))
    proc = run_snakemake(wd, config={"smoke": "true"}, check=False)
    assert proc.returncode != 0
    assert "RE-INFERENCE DIFFERS" in proc.stderr and "Delete the score cache" in proc.stderr
    assert not (wd / "results/smoke-standin/audit.json").exists()


def test_a_tampered_model_copy_says_what_to_delete(smoke_run, fixture_workdir, tmp_path):
    from rerank_study.core.errors import PinMismatchError
    from rerank_study.reranker import models

    folder = next((fixture_workdir / "resources/models").glob("standin-seed*"))
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    (copy / "config.json").write_text((copy / "config.json").read_text().replace('"hidden_act"',
                                                                                 '"hidden_act" '))
    with pytest.raises(PinMismatchError, match=f"delete the folder {copy}"):
        models.load_model_meta(copy)
