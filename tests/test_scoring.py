"""Cross-encoder scoring: bit-identical to sentence-transformers' CrossEncoder.predict under the
documented batching; token statistics; the shape audit."""

import json

import numpy as np
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


def test_scores_are_bit_identical_to_cross_encoder_predict_per_batch(loaded, pairs):
    from sentence_transformers import CrossEncoder

    folder, tok, model = loaded
    qs, ds = pairs
    ours = []
    for idx in scoring.chunks(list(range(len(ds))), SETTINGS.batch_size):
        ours += scoring.score_batch(tok, model, [qs[i] for i in idx], [ds[i] for i in idx], SETTINGS)
    ce = CrossEncoder(str(folder), device="cpu")
    assert type(ce.activation_fn).__name__ == "Identity"  # raw logits, as the pinned model is configured
    assert ce.max_seq_length == 512
    upstream = []
    for idx in scoring.chunks(list(range(len(ds))), SETTINGS.batch_size):
        upstream += ce.predict([[qs[i], ds[i]] for i in idx], batch_size=SETTINGS.batch_size).tolist()
    assert np.array(ours, dtype=np.float64).tobytes() == np.array(upstream, dtype=np.float64).tobytes()
    # the reason the batching is documented: predict() over the whole list length-sorts and
    # re-batches, which moves scores in the last bits (seen: up to ~6e-8)
    whole = ce.predict([[q, d] for q, d in zip(qs, ds)], batch_size=SETTINGS.batch_size).tolist()
    assert max(abs(a - b) for a, b in zip(ours, whole)) < 1e-5


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
        scoring.batch_cache_key("m", SETTINGS, {"torch": "y"}, ["q"], ["d"]),
        scoring.batch_cache_key("m", SETTINGS, {"torch": "x"}, ["q"], ["d2"]),
    ]
    assert len({base, *changed}) == 1 + len(changed)
