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
from dataclasses import dataclass
from typing import Iterable, Sequence

from .fileio import sha256_text

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScoringSettings:
    max_length: int
    truncation: str
    batch_size: int
    threads: int
    seed: int
    dtype: str

    def as_dict(self) -> dict:
        return {"max_length": self.max_length, "truncation": self.truncation, "batch_size": self.batch_size,
                "threads": self.threads, "seed": self.seed, "dtype": self.dtype,
                "batching": "per query, candidate order, consecutive chunks of batch_size, pad to longest; rows inside a "
                            "batch longest first by characters (as sentence-transformers 6.2 predict)"}


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
