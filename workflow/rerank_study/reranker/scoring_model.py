"""The cross-encoder model side of the scoring (``scoring``'s contract): torch's numeric setup, loading
the tokenizer and the sequence classifier from a verified folder, the forward pass of ONE batch
(padded to its longest pair, rows fed longest first and mapped back, the relevance logit taken as is)
and the shape check.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from . import numerics
from .scoring_batches import encode_pairs, row_order

if TYPE_CHECKING:
    from .scoring import ScoringSettings


def setup_torch(settings: ScoringSettings, threads: int | None = None) -> dict:
    """fp32 only; oneMKL in strict CNR mode (verified from MKL's own report, stops otherwise); the seed;
    ``threads`` torch threads when given (speed only). Returns the numeric mode, to be recorded."""
    import torch

    if settings.dtype != "float32":
        raise ValueError(f"only float32 is supported, got {settings.dtype}")
    mode = numerics.enforce_cnr()
    if threads is not None:
        torch.set_num_threads(int(threads))
    torch.manual_seed(settings.seed)
    return mode


def load_tokenizer(model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(model_dir))


def load_model(model_dir):
    """The sequence classifier from a verified folder, fp32, eval mode."""
    import torch
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir), dtype=torch.float32)
    model.eval()
    model.relevance_index = label_index(model_dir)
    return model


def label_index(model_dir) -> int | None:
    """The relevance logit of a several-output model, declared by the study (recorded in MODEL.json)."""
    meta = Path(model_dir) / "MODEL.json"
    return json.loads(meta.read_text(encoding="utf-8")).get("label_index") if meta.exists() else None


def load_scorer(model_dir, settings: ScoringSettings, threads: int, derived=None):
    """What computes the logits: the model itself, or (a derived backend) its verified derived file's bytes
    run by ONNX Runtime behind the same call (``backend_session.OrtClassifier``)."""
    if not settings.derived:
        return load_model(model_dir)
    from .backend_session import OrtClassifier

    return OrtClassifier(derived, threads, label_index(model_dir))


def load_cross_encoder(model_dir):
    """(tokenizer, model) from a verified folder."""
    return load_tokenizer(model_dir), load_model(model_dir)


def score_rows(tok, model, queries: Sequence[str], docs: Sequence[str],
               features: Sequence[dict]) -> list[float]:
    """Raw logits of ONE batch (the given pairs and their encoded features), in the given pair order:
    the rows are fed longest first by characters and mapped back."""
    order = row_order(queries, docs)
    logits = _forward(tok, model, [features[i] for i in order])
    out = [0.0] * len(order)
    for pos, i in enumerate(order):
        out[i] = logits[pos]
    return out


def score_batch(tok, model, queries: Sequence[str], docs: Sequence[str],
                settings: ScoringSettings) -> list[float]:
    """Raw logits of one batch of pairs, in the given pair order (float32 values as exact Python floats)."""
    features, _ = encode_pairs(tok, queries, docs, settings.max_length, settings.truncation)
    return score_rows(tok, model, queries, docs, features)


def _forward(tok, model, features: Sequence[dict]) -> list[float]:
    import torch

    enc = tok.pad({k: [f[k] for f in features] for k in ("input_ids", "token_type_ids", "attention_mask")},
                  padding=True, return_tensors="pt")
    with torch.inference_mode():
        logits = model(**enc).logits
    col = relevance_column(getattr(model, "relevance_index", None), list(logits.shape))
    if logits.dtype != torch.float32:
        raise ValueError(f"expected float32 logits, got {logits.dtype}")
    return [float(x) for x in logits[:, col].tolist()]


def relevance_column(label_index: int | None, shape: list[int]) -> int:
    """The logit column that is the relevance score: the only one, or the declared ``label_index``."""
    if len(shape) != 2 or (label_index is None and shape[1] != 1):
        raise ValueError("expected logits of shape [batch, 1] (or a declared "
                         f"study.label_index), got {shape}")
    if label_index is not None and not 0 <= label_index < shape[1]:
        raise ValueError(f"study.label_index {label_index} is not a column of logits of shape {shape}")
    return 0 if label_index is None else label_index


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
