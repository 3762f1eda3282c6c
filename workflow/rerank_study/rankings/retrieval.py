"""First-stage retrieval for the frozen candidates: BM25 (bm25s) and dense (all-MiniLM-L6-v2).

Both return, per query, the full score vector over the corpus; ``ranking.top_k`` applies the
project's tie rule (score desc, doc id string desc) so neither library's internal top-k
tie-breaking decides anything.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..core.fileio import atomic_open, sha256_text

log = logging.getLogger(__name__)


# ---------------------------------------------------------------- BM25 (bm25s + PyStemmer) --
def bm25_score_matrix(doc_texts: Sequence[str], query_texts: Sequence[str], k1: float, b: float,
                      method: str, stopwords: str, stemmer_lang: str) -> np.ndarray:
    """(n_queries, n_docs) float32 BM25 scores. Lowercased, English stop words, Snowball stemming."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer(stemmer_lang)
    corpus_tokens = bm25s.tokenize(list(doc_texts), lower=True, stopwords=stopwords, stemmer=stemmer,
                                   show_progress=False)
    retriever = bm25s.BM25(k1=k1, b=b, method=method)
    retriever.index(corpus_tokens, show_progress=False)
    q_tokens = bm25s.tokenize(list(query_texts), lower=True, stopwords=stopwords, stemmer=stemmer,
                              return_ids=False, show_progress=False)
    out = np.zeros((len(query_texts), len(doc_texts)), dtype=np.float32)
    for i, toks in enumerate(q_tokens):
        ids = retriever.get_tokens_ids(list(toks))
        if ids:  # a query with no in-vocabulary token scores 0 everywhere (ties -> doc id rule)
            out[i] = retriever.get_scores_from_ids(ids)
    return out


# ------------------------------------------------------------ dense (sentence-transformers) --
def load_bi_encoder(model_dir, max_seq_length: int):
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_dir), device="cpu")
    model.max_seq_length = max_seq_length
    model.eval()
    return model


def encode(model, texts: Sequence[str], batch_size: int, normalize: bool, progress: bool) -> np.ndarray:
    emb = model.encode(list(texts), batch_size=batch_size, normalize_embeddings=normalize,
                       convert_to_numpy=True, show_progress_bar=progress)
    return np.ascontiguousarray(emb, dtype=np.float32)


def embedding_cache_key(model_identity: dict, settings: dict, texts: Sequence[str]) -> str:
    text_hash = sha256_text("\x00".join(texts))
    return sha256_text(json.dumps({"model": model_identity, "settings": settings, "texts": text_hash},
                                  sort_keys=True))


def cached_embeddings(cache_dir, key: str, compute) -> tuple[np.ndarray, bool]:
    """Load ``<cache_dir>/<key>.npy`` or compute, store atomically and return (array, was_cached)."""
    path = Path(cache_dir) / f"{key}.npy"
    if path.exists():
        return np.load(path, allow_pickle=False), True
    arr = compute()
    with atomic_open(path, "wb") as fh:
        np.save(fh, arr, allow_pickle=False)
    return arr, False


def dense_score_matrix(q_emb: np.ndarray, d_emb: np.ndarray) -> np.ndarray:
    """Cosine similarities of L2-normalised embeddings (float32 matrix product)."""
    return q_emb @ d_emb.T
