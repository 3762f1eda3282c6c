"""Cross-encoder scoring of (query, candidate) pairs.

Contract (documented in README and SOURCE_MAP):
* pair text: the query text as given; the document ``(title + " " + text).strip()``;
* joint tokenisation, ``truncation="longest_first"``, ``max_length`` 512, padding to the longest
  pair of the batch;
* fp32, eval mode, ``torch.inference_mode``, ``torch.set_num_threads(threads)``,
  ``torch.manual_seed(seed)``;
* BATCHING: each query's candidates, in candidate order, split into consecutive chunks of
  ``batch_size`` (16): for 50 candidates the batches are ranks 1-16, 17-32, 33-48, 49-50. A batch
  never mixes queries, so a query's scores do not depend on which other queries are in the run.
  Inside a batch the rows are fed longest first by character length (``numpy.argsort`` of
  ``-(len(query) + len(doc))``, exactly as sentence-transformers 6.2 ``CrossEncoder._inference``
  orders them) and mapped back: the row order inside a batch changes the last bits of a score
  (measured here: up to ~1e-8), and with this order ``CrossEncoder.predict(chunk, batch_size=16)``
  on the same chunks returns bit-identical scores (tested). ``predict`` on a whole query would
  length-sort and re-batch across chunks (differences up to ~6e-8), which is why the batches are
  fixed here;
* the score is the raw logit (the model's activation is Identity).
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from .errors import PipelineError
from .fileio import canonical_json, fmt_float, read_json, sha256_text, write_json

log = logging.getLogger(__name__)


BATCHING = ("per query, candidate order, consecutive chunks of batch_size, pad to longest; rows inside a batch "
            "longest first by characters (as sentence-transformers 6.2 predict)")


@dataclass(frozen=True)
class ScoringSettings:
    """Everything that decides a logit. The torch thread count is one of them: measured here, a batch
    of 10 pairs scored with 2 threads differs from 4 threads in the last bits of 9 of 50 logits (MKL
    partitions the matrix products by thread count), so it is pinned, not taken from the scheduler."""

    max_length: int
    truncation: str
    batch_size: int
    threads: int
    seed: int
    dtype: str

    @classmethod
    def from_config(cls, ce: Mapping) -> "ScoringSettings":
        return cls(ce["max_length"], ce["truncation"], ce["batch_size"], ce["threads"], ce["seed"], ce["dtype"])

    def as_dict(self) -> dict:
        return {"max_length": self.max_length, "truncation": self.truncation, "batch_size": self.batch_size,
                "threads": self.threads, "seed": self.seed, "dtype": self.dtype, "batching": BATCHING}


def chunks(seq: Sequence, size: int) -> list[Sequence]:
    if size < 1:
        raise ValueError("batch size must be >= 1")
    return [seq[i:i + size] for i in range(0, len(seq), size)]


def setup_torch(settings: ScoringSettings) -> None:
    import torch

    if settings.dtype != "float32":
        raise ValueError(f"only float32 is supported, got {settings.dtype}")
    torch.set_num_threads(settings.threads)
    torch.manual_seed(settings.seed)


def load_tokenizer(model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(model_dir))


def load_model(model_dir):
    """The sequence classifier from a verified folder, fp32, eval mode."""
    import torch
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir), dtype=torch.float32)
    model.eval()
    return model


def load_cross_encoder(model_dir):
    """(tokenizer, model) from a verified folder."""
    return load_tokenizer(model_dir), load_model(model_dir)


def token_stats(tok, queries: Sequence[str], docs: Sequence[str], max_length: int) -> list[dict]:
    """Untruncated token counts per pair: query, document, joint total (with special tokens)."""
    q_ids = tok(list(queries), add_special_tokens=False)["input_ids"]
    d_ids = tok(list(docs), add_special_tokens=False)["input_ids"]
    joint = tok(list(queries), list(docs), truncation=False)["input_ids"]
    out = []
    for qi, di, ji in zip(q_ids, d_ids, joint):
        total = len(ji)
        out.append({"query_tokens": len(qi), "doc_tokens": len(di), "total_tokens": total,
                    "truncated": total > max_length})
    return out


def row_order(queries: Sequence[str], docs: Sequence[str]) -> list[int]:
    """Longest first by character length, computed as sentence-transformers 6.2 does."""
    import numpy as np

    return np.argsort([-(len(q) + len(d)) for q, d in zip(queries, docs)]).tolist()


def score_batch(tok, model, queries: Sequence[str], docs: Sequence[str], settings: ScoringSettings) -> list[float]:
    """Raw logits of one batch, in the given pair order (float32 values as exact Python floats)."""
    order = row_order(queries, docs)
    logits = _forward(tok, model, [queries[i] for i in order], [docs[i] for i in order], settings)
    out = [0.0] * len(order)
    for pos, i in enumerate(order):
        out[i] = logits[pos]
    return out


def _forward(tok, model, queries: Sequence[str], docs: Sequence[str], settings: ScoringSettings) -> list[float]:
    import torch

    enc = tok(list(queries), list(docs), padding=True, truncation=settings.truncation,
              max_length=settings.max_length, return_tensors="pt")
    with torch.inference_mode():
        logits = model(**enc).logits
    if logits.ndim != 2 or logits.shape[1] != 1:
        raise ValueError(f"expected logits of shape [batch, 1], got {list(logits.shape)}")
    if logits.dtype != torch.float32:
        raise ValueError(f"expected float32 logits, got {logits.dtype}")
    return [float(x) for x in logits[:, 0].tolist()]


def shape_check(tok, model, queries: Sequence[str], docs: Sequence[str], settings: ScoringSettings) -> dict:
    """Forward pass of a few pairs padded to max_length (this check only): report tensor shapes."""
    import torch

    enc = tok(list(queries), list(docs), padding="max_length", truncation=settings.truncation,
              max_length=settings.max_length, return_tensors="pt")
    with torch.inference_mode():
        out = model(**enc, output_hidden_states=True)
    return {"input_ids": list(enc["input_ids"].shape), "last_hidden_state": list(out.hidden_states[-1].shape),
            "logits": list(out.logits.shape), "pairs": len(queries),
            "padding": "max_length (this check only; scoring pads to the longest pair of each batch)"}


def batch_cache_key(model_identity: str, settings: ScoringSettings, versions: dict,
                    queries: Iterable[str], docs: Iterable[str]) -> str:
    """A score depends on its batch-mates (padding), so the cache key is the whole batch's text."""
    pair_hash = sha256_text(json.dumps([[q, d] for q, d in zip(queries, docs)], ensure_ascii=True))
    return sha256_text(json.dumps({"model": model_identity, "settings": settings.as_dict(), "versions": versions,
                                   "pairs": pair_hash}, sort_keys=True))


def library_versions() -> dict:
    import tokenizers
    import torch
    import transformers

    return {"torch": torch.__version__, "transformers": transformers.__version__, "tokenizers": tokenizers.__version__}


# ----------------------------------------------------------------------- the score cache --
class CacheEntryError(PipelineError):
    """A score-cache entry is not what its name promises; the message names the file and the fix."""


CACHE_FORMAT = "v2"  # part of the cache path: entries of another format are never looked up


class ScoreCache:
    """Per-batch logits on disk: ``<folder>/<key[:2]>/<key>.json`` holds ``{"key", "n", "logits",
    "sha256"}`` where ``sha256`` covers the key and the logits' exact text. Every entry is checked
    before use (name = key, length, finite values, checksum); a bad entry stops the run, naming the
    file and the fix (delete it), instead of being used or silently recomputed."""

    def __init__(self, folder):
        self.folder = Path(folder)

    def path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    @staticmethod
    def checksum(key: str, logits_text: Sequence[str]) -> str:
        return sha256_text(canonical_json({"key": key, "logits": list(logits_text)}))

    def get(self, key: str, n: int) -> list[float] | None:
        path = self.path(key)
        if not path.exists():
            return None
        fix = f"Delete {path} (a cache entry is only a shortcut) and rerun; it will be recomputed."
        try:
            entry = read_json(path)
        except PipelineError as exc:
            raise CacheEntryError(f"INVALID SCORE-CACHE ENTRY {path}: {exc}. {fix}") from None
        problems = []
        if not isinstance(entry, dict) or set(entry) != {"key", "n", "logits", "sha256"}:
            problems.append("not a cache entry of this version (keys key, n, logits, sha256)")
        else:
            texts = entry["logits"]
            if entry["key"] != key:
                problems.append(f"its key {entry['key']!r} is not its file name's {key!r}")
            if entry["n"] != n or not isinstance(texts, list) or len(texts) != n:
                problems.append(f"{len(texts) if isinstance(texts, list) else '?'} logits (n={entry['n']!r}) for a "
                                f"batch of {n} pairs")
            elif not all(isinstance(t, str) for t in texts):
                problems.append("logits are not exact float texts")
            else:
                if entry["sha256"] != self.checksum(key, texts):
                    problems.append("its checksum does not match its content (edited after it was written?)")
                try:
                    values = [float(t) for t in texts]
                except ValueError:
                    values = []
                    problems.append("a logit is not a number")
                if not all(math.isfinite(v) for v in values):
                    problems.append("non-finite logits")
                if not problems:
                    return values
        raise CacheEntryError(f"INVALID SCORE-CACHE ENTRY {path}: " + "; ".join(problems) + f". {fix}")

    def put(self, key: str, logits: Sequence[float]) -> None:
        texts = [fmt_float(x) for x in logits]
        write_json(self.path(key), {"key": key, "n": len(texts), "logits": texts,
                                    "sha256": self.checksum(key, texts)})


# ------------------------------------------------------------------- scoring a whole run --
def _require_equal(cached: Sequence[float], fresh: Sequence[float], path, qid: str, batch: int) -> None:
    """Fresh logits must equal a cached entry's byte for byte (their exact float texts)."""
    a, b = [fmt_float(x) for x in cached], [fmt_float(x) for x in fresh]
    if a != b:
        i = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
        raise PipelineError(f"FRESH INFERENCE DIFFERS FROM THE SCORE CACHE: query {qid} batch {batch}, row {i}: fresh "
                            f"{b[i]}, cached {a[i]} in {path}. The cached score was not reproduced; nothing was "
                            "published. Find out why (another machine, library or thread count?) before trusting "
                            "either; the cache entry is evidence, do not delete it blindly.")


@dataclass
class ScoringCounts:
    pairs_inferred: int = 0
    pairs_from_cache: int = 0
    cache_entries_verified: int = 0  # fresh mode: cached batches proven equal to the fresh inference
    model_load_seconds: float = 0.0
    inference_seconds: float = 0.0


def score_run(ranked: Mapping[str, Sequence[str]], query_text: Mapping[str, str], doc_text: Mapping[str, str],
              tok, load_model: Callable[[], object], settings: ScoringSettings, identity: str, versions: dict,
              cache: ScoreCache | None, progress=None, *, fresh: bool = False) -> tuple[list[dict], ScoringCounts]:
    """Score every (query, candidate) pair: one dict per pair in candidate order, with the logit, the
    candidate rank, the batch number and the token counts. Batches come from ``chunks`` of each
    query's candidates; a cached batch is taken from ``cache`` (validated), others are inferred
    (``load_model()`` is called at most once, only if a batch is not cached) and stored.

    ``fresh`` (a confirmation opening): the cache is never a source of logits; every batch is
    inferred, and where a cache entry exists its logits must equal the fresh ones byte for byte
    (else PipelineError naming the batch and the file); those entries are counted as verified."""
    import time

    counts = ScoringCounts()
    model = None
    rows: list[dict] = []
    for qid, docs in ranked.items():
        qtext = query_text[qid]
        dtexts = [doc_text[d] for d in docs]
        stats = token_stats(tok, [qtext] * len(docs), dtexts, settings.max_length)
        for b, idx in enumerate(chunks(list(range(len(docs))), settings.batch_size)):
            qs, ds = [qtext] * len(idx), [dtexts[i] for i in idx]
            key = batch_cache_key(identity, settings, versions, qs, ds)
            cached = cache.get(key, len(idx)) if cache is not None else None
            if cached is not None and not fresh:
                logits = cached
                counts.pairs_from_cache += len(idx)
            else:
                if model is None:
                    t0 = time.perf_counter()
                    model = load_model()
                    counts.model_load_seconds += time.perf_counter() - t0
                t0 = time.perf_counter()
                logits = score_batch(tok, model, qs, ds, settings)
                counts.inference_seconds += time.perf_counter() - t0
                counts.pairs_inferred += len(idx)
                if cached is not None:
                    _require_equal(cached, logits, cache.path(key), qid, b)
                    counts.cache_entries_verified += 1
                elif cache is not None:
                    cache.put(key, logits)
            for i, lg in zip(idx, logits):
                rows.append({"qid": qid, "doc_id": docs[i], "r0": i + 1, "logit": lg, "batch": b, **stats[i]})
            if progress is not None:
                progress(len(idx))
    expected = sum(len(v) for v in ranked.values())
    if len(rows) != expected:
        raise PipelineError(f"scored {len(rows)} pairs for {expected} candidates: nothing was published")
    return rows, counts
