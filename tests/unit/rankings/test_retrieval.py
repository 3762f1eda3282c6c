"""First-stage retrieval (rerank_study.rankings.retrieval): BM25 scores against the Lucene formula worked out
by hand, cosine scores, the embedding cache. load_bi_encoder loads a sentence-transformers model and is left
to the workflow tests; ``encode`` is tested with a stand-in model."""

import math

import numpy as np
import pytest

from rerank_study.rankings import retrieval

K1, B = 1.5, 0.75  # config/config.yaml candidates.bm25


def lucene(tf, df, dl, n_docs, avgdl):
    """Lucene BM25 of one term: ln(1 + (N - df + .5)/(df + .5)) * tf / (tf + k1 (1 - b + b dl/avgdl))."""
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5)) * tf / (tf + K1 * (1 - B + B * dl / avgdl))


def test_bm25_equals_the_lucene_formula_after_stop_words_and_stemming():
    docs = ["The cat, dog.", "cats cat bird", "fish"]  # tokens: [cat dog] [cat cat bird] [fish]: avgdl 2
    queries = ["cat", "the bird", "unicorn", "the"]
    got = retrieval.bm25_score_matrix(docs, queries, K1, B, "lucene", "en", "english")
    assert got.shape == (4, 3) and got.dtype == np.float32
    expected = np.array([
        [lucene(1, 2, 2, 3, 2), lucene(2, 2, 3, 3, 2), 0.0],
        [0.0, lucene(1, 1, 3, 3, 2), 0.0],
        [0.0, 0.0, 0.0],  # no token in the vocabulary: 0 everywhere (the doc id rule orders them)
        [0.0, 0.0, 0.0],  # only a stop word
    ])
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=0)
    assert got[0, 0] == pytest.approx(math.log(1.6) * 0.4, rel=1e-6)  # tf 1 at average length: 1/2.5


def test_dense_scores_are_dot_products_of_the_embeddings():
    q = np.array([[1.0, 0.0], [0.6, 0.8]], dtype=np.float32)
    d = np.array([[0.0, 1.0], [1.0, 0.0], [0.6, 0.8]], dtype=np.float32)
    np.testing.assert_allclose(retrieval.dense_score_matrix(q, d),
                               [[0.0, 1.0, 0.6], [0.8, 0.6, 1.0]], rtol=1e-6)


class StandIn:
    def __init__(self):
        self.calls = []

    def encode(self, texts, **kw):
        self.calls.append((texts, kw))
        return np.arange(2 * len(texts), dtype=np.float64).reshape(len(texts), 2)[:, ::-1]  # not contiguous


def test_encode_passes_the_settings_and_gives_contiguous_float32():
    model = StandIn()
    emb = retrieval.encode(model, ("a", "b"), batch_size=8, normalize=True, progress=False)
    assert model.calls == [(["a", "b"], {"batch_size": 8, "normalize_embeddings": True,
                                         "convert_to_numpy": True, "show_progress_bar": False})]
    assert emb.dtype == np.float32 and emb.flags["C_CONTIGUOUS"]
    assert emb.tolist() == [[1.0, 0.0], [3.0, 2.0]]


def test_the_cache_key_changes_with_model_settings_and_texts_but_not_key_order():
    model, settings, texts = {"name": "m", "revision": "r"}, {"max_seq_length": 256}, ["a", "b"]
    key = retrieval.embedding_cache_key(model, settings, texts)
    assert len(key) == 64 and int(key, 16) >= 0
    assert key == retrieval.embedding_cache_key({"revision": "r", "name": "m"}, dict(settings), list(texts))
    others = {retrieval.embedding_cache_key({"name": "m", "revision": "s"}, settings, texts),
              retrieval.embedding_cache_key(model, {"max_seq_length": 512}, texts),
              retrieval.embedding_cache_key(model, settings, ["b", "a"]),
              retrieval.embedding_cache_key(model, settings, ["ab"])}
    assert len(others) == 4 and key not in others


def test_cached_embeddings_compute_once_then_load(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return np.array([[0.25, -1.5]], dtype=np.float32)

    first, was_cached = retrieval.cached_embeddings(tmp_path / "cache", "k", compute)
    assert not was_cached and calls == [1]
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["k.npy"]  # no temporary file left
    again, was_cached = retrieval.cached_embeddings(tmp_path / "cache", "k", compute)
    assert was_cached and calls == [1]
    assert again.dtype == np.float32 and again.tolist() == first.tolist() == [[0.25, -1.5]]
