"""Cross-encoder scoring: bit-identical to sentence-transformers' CrossEncoder.predict under the
documented batching; token statistics; the shape audit."""

import json
import subprocess
import sys

import pytest

from conftest import FIXTURE, ROOT
from rerank_study import beir, models, scoring

MODEL_PINS = json.loads((ROOT / "lockfiles" / "model_pins.json").read_text())
SETTINGS = scoring.ScoringSettings(max_length=512, truncation="longest_first", batch_size=16, threads=4, seed=110,
                                   dtype="float32")


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("standin")
    models.build_standin(MODEL_PINS["bi_encoder"], MODEL_PINS["cross_encoder"], folder, 110, 0.02)
    scoring.setup_torch(SETTINGS)
    tok, model = scoring.load_cross_encoder(folder)
    return folder, tok, model


@pytest.fixture(scope="module")
def pairs():
    corpus = beir.read_corpus(FIXTURE / "corpus.jsonl")
    queries = beir.read_queries(FIXTURE / "queries.jsonl")
    docs = [d.full_text for d in corpus.values()][:37]  # 37 = 16 + 16 + 5: a short last batch
    return [queries["35"]] * len(docs), docs


BIT_IDENTITY_CHILD = r"""
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1] + "/workflow")
from rerank_study import beir, scoring
S = scoring.ScoringSettings(512, "longest_first", 16, 4, 110, "float32")
scoring.setup_torch(S)
folder, fixture = sys.argv[2], sys.argv[1] + "/tests/data/scifact_fixture"
docs = [d.full_text for d in beir.read_corpus(fixture + "/corpus.jsonl").values()][:37]  # 16 + 16 + 5
qs = [beir.read_queries(fixture + "/queries.jsonl")["35"]] * len(docs)
tok, model = scoring.load_cross_encoder(folder)
batches = scoring.chunks(list(range(len(docs))), S.batch_size)
ours = [x for idx in batches for x in scoring.score_batch(tok, model, [qs[i] for i in idx], [docs[i] for i in idx], S)]
from sentence_transformers import CrossEncoder
ce = CrossEncoder(folder, device="cpu")
up = [x for idx in batches for x in ce.predict([[qs[i], docs[i]] for i in idx], batch_size=S.batch_size).tolist()]
whole = ce.predict([[q, d] for q, d in zip(qs, docs)], batch_size=S.batch_size).tolist()
again = [x for idx in batches for x in scoring.score_batch(tok, model, [qs[i] for i in idx], [docs[i] for i in idx], S)]
print(json.dumps({"ours": [repr(x) for x in ours], "upstream": [repr(x) for x in up], "again": [repr(x) for x in again],
                  "whole": [repr(x) for x in whole], "activation": type(ce.activation_fn).__name__,
                  "max_len": ce.max_seq_length}))
"""


def test_scores_are_bit_identical_to_cross_encoder_predict_per_batch(loaded):
    """In a fresh process, as the scoring rule runs: our logits == CrossEncoder.predict(chunk, batch_size=16)
    on the same chunks, byte for byte (37 fixture pairs: batches of 16, 16 and 5, long pairs truncated)."""
    folder, _, _ = loaded
    out = subprocess.run([sys.executable, "-c", BIT_IDENTITY_CHILD, str(ROOT), str(folder)], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["activation"] == "Identity" and r["max_len"] == 512  # raw logits, as the pinned model is configured
    assert r["ours"] == r["upstream"], [(i, a, b) for i, (a, b) in enumerate(zip(r["ours"], r["upstream"])) if a != b]
    assert r["ours"] == r["again"]
    # the reason the batching is documented: predict() over the whole list length-sorts and re-batches,
    # which moves scores in the last bits (seen: up to ~6e-8)
    assert max(abs(float(a) - float(b)) for a, b in zip(r["ours"], r["whole"])) < 1e-5


def test_token_stats_and_truncation_flag(loaded, pairs):
    _, tok, _ = loaded
    qs, ds = pairs
    stats = scoring.token_stats(tok, qs, ds, 512)
    for q, d, s in zip(qs, ds, stats):
        assert s["query_tokens"] == len(tok.tokenize(q)) and s["doc_tokens"] == len(tok.tokenize(d))
        assert s["total_tokens"] == s["query_tokens"] + s["doc_tokens"] + 3  # [CLS] q [SEP] d [SEP]
        assert s["truncated"] == (s["total_tokens"] > 512)
    assert any(s["truncated"] for s in stats), "the fixture must contain a pair longer than 512 tokens"
    enc = tok(qs, ds, truncation="longest_first", max_length=512)
    assert all(len(ids) == min(s["total_tokens"], 512) for ids, s in zip(enc["input_ids"], stats))


def test_shape_audit(loaded, pairs):
    _, tok, model = loaded
    qs, ds = pairs
    shapes = scoring.shape_check(tok, model, qs[:2], ds[:2], SETTINGS)
    assert shapes["input_ids"] == [2, 512]
    assert shapes["last_hidden_state"] == [2, 512, 384]
    assert shapes["logits"] == [2, 1]


def test_scoring_twice_is_bitwise_stable(loaded, pairs):
    _, tok, model = loaded
    qs, ds = pairs
    a = scoring.score_batch(tok, model, qs[:16], ds[:16], SETTINGS)
    b = scoring.score_batch(tok, model, qs[:16], ds[:16], SETTINGS)
    assert a == b


def test_cache_key_changes_with_every_setting():
    base = scoring.batch_cache_key("m", SETTINGS, {"torch": "x"}, ["q"], ["d"])
    changed = [
        scoring.batch_cache_key("m2", SETTINGS, {"torch": "x"}, ["q"], ["d"]),
        scoring.batch_cache_key("m", scoring.ScoringSettings(256, "longest_first", 16, 4, 110, "float32"),
                                {"torch": "x"}, ["q"], ["d"]),
        scoring.batch_cache_key("m", scoring.ScoringSettings(512, "longest_first", 8, 4, 110, "float32"),
                                {"torch": "x"}, ["q"], ["d"]),
        scoring.batch_cache_key("m", scoring.ScoringSettings(512, "longest_first", 16, 2, 110, "float32"),
                                {"torch": "x"}, ["q"], ["d"]),
        scoring.batch_cache_key("m", scoring.ScoringSettings(512, "longest_first", 16, 4, 111, "float32"),
                                {"torch": "x"}, ["q"], ["d"]),
        scoring.batch_cache_key("m", SETTINGS, {"torch": "y"}, ["q"], ["d"]),
        scoring.batch_cache_key("m", SETTINGS, {"torch": "x"}, ["q"], ["d2"]),
    ]
    assert len({base, *changed}) == 1 + len(changed)


# ------------------------------------------------------------------------- the score cache --
def test_cache_entry_round_trips_exact_floats(tmp_path):
    cache = scoring.ScoreCache(tmp_path)
    vals = [0.1, -7.62939453125e-06, 3.4028234663852886e38, -2.5]
    cache.put("ab" + "0" * 62, vals)
    assert cache.get("ab" + "0" * 62, 4) == vals
    assert cache.get("cd" + "0" * 62, 4) is None  # absent: not an error, the batch is inferred


@pytest.mark.parametrize("damage, reason", [
    (lambda e: e["logits"].__setitem__(0, repr(float(e["logits"][0]) + 1e-9)), "checksum"),
    (lambda e: e.update(logits=e["logits"][:-1]), "logits (n=3) for a batch of 3"),
    (lambda e: e.update(key="ff" + "0" * 62), "is not its file name"),
    (lambda e: e.update(logits=["nan", "1.0", "2.0"], sha256=scoring.ScoreCache.checksum(e["key"], ["nan", "1.0", "2.0"])),
     "non-finite"),
    (lambda e: e.pop("sha256"), "not a cache entry of this version"),
])
def test_a_damaged_cache_entry_stops_naming_the_file_and_the_fix(tmp_path, damage, reason):
    cache = scoring.ScoreCache(tmp_path)
    key = "ab" + "1" * 62
    cache.put(key, [1.5, -0.25, 3.0])
    entry = json.loads(cache.path(key).read_text())
    damage(entry)
    cache.path(key).write_text(json.dumps(entry))
    with pytest.raises(scoring.CacheEntryError) as err:
        cache.get(key, 3)
    assert reason in str(err.value) and str(cache.path(key)) in str(err.value) and "Delete" in str(err.value)


def test_score_run_infers_then_reads_the_cache_and_never_loads_weights_for_cached_batches(tmp_path, loaded, pairs):
    _, tok, model = loaded
    qs, ds = pairs
    ranked = {"35": [f"d{i}" for i in range(len(ds))]}
    doc_text = {f"d{i}": d for i, d in enumerate(ds)}
    loads = []

    def load():
        loads.append(1)
        return model

    cache = scoring.ScoreCache(tmp_path)
    rows, counts = scoring.score_run(ranked, {"35": qs[0]}, doc_text, tok, load, SETTINGS, "m", {"v": 1}, cache)
    assert (counts.pairs_inferred, counts.pairs_from_cache, len(loads)) == (37, 0, 1)
    assert [r["r0"] for r in rows] == list(range(1, 38)) and [r["batch"] for r in rows] == [0] * 16 + [1] * 16 + [2] * 5
    again, counts2 = scoring.score_run(ranked, {"35": qs[0]}, doc_text, tok, load, SETTINGS, "m", {"v": 1}, cache)
    assert (counts2.pairs_inferred, counts2.pairs_from_cache, len(loads)) == (0, 37, 1)
    assert [r["logit"] for r in again] == [r["logit"] for r in rows]
    direct = [x for idx in scoring.chunks(list(range(37)), 16)
              for x in scoring.score_batch(tok, model, [qs[0]] * len(idx), [ds[i] for i in idx], SETTINGS)]
    assert [r["logit"] for r in rows] == direct
