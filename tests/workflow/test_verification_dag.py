"""A cache that cannot lie quietly: the verifier re-infers sampled batches from scratch, a validly
re-checksummed but altered cache entry is caught, config types are strict, a tampered model copy
names what to delete. Plus the sample rule by hand."""

import hashlib
import json
import shutil

import pytest

from conftest import read_json, run_snakemake
from rerank_study import scoring, verification
from rerank_study.config import load_config
from rerank_study.errors import ConfigError

from conftest import ROOT


def test_sample_rule_by_hand():
    batches = [("1", 0), ("1", 1), ("2", 0), ("3", 0)]
    key = {b: hashlib.sha256(f"110\t{b[0]}\t{b[1]}".encode()).hexdigest() for b in batches}
    by_key = sorted(batches, key=key.get)
    assert verification.sample_batches(batches, 110, 2) == by_key[:2]
    assert verification.sample_batches(batches + batches, 110, None) == by_key  # every batch, once
    assert verification.sample_batches(batches, 110, 99) == by_key


def test_verification_record_of_a_run(smoke_run):
    rec = read_json(smoke_run / "verification.json")
    assert rec["all_equal"] is True and rec["k"] == 8 and len(rec["sample"]) == 5  # smoke: 5 batches, all sampled
    assert rec["pairs_compared"] == 50 and all(p["equal"] for p in rec["pairs"])


def test_an_altered_but_rechecksummed_cache_entry_is_caught_by_re_inference(smoke_run, fixture_workdir, tmp_path):
    wd = tmp_path / "lying-cache"
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


def test_a_non_integer_bootstrap_size_stops_at_validation():
    with pytest.raises(ConfigError, match=r"config key 'bootstrap.B': 100.0 is not of type 'integer'"):
        load_config(ROOT / "config" / "config.yaml", {"bootstrap": {"B": 100.0}})
    with pytest.raises(ConfigError, match="config key 'verify.batches'"):
        load_config(ROOT / "config" / "config.yaml", {"verify": {"batches": True}})


def test_a_tampered_model_copy_says_what_to_delete(smoke_run, fixture_workdir, tmp_path):
    from rerank_study import models
    from rerank_study.errors import PinMismatchError

    folder = next((fixture_workdir / "resources/models").glob("standin-seed*"))
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    (copy / "config.json").write_text((copy / "config.json").read_text().replace('"hidden_act"', '"hidden_act" '))
    with pytest.raises(PinMismatchError, match=f"delete the folder {copy}"):
        models.load_model_meta(copy)
