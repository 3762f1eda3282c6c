"""Tokenise once, then batch: the model inputs of the cross-encoder scoring (``scoring``'s contract).

* ``PairEncoder`` / ``encode_pairs``: the query and every document are tokenised once, without
  special tokens; each pair is joined as ``[CLS] q [SEP] d [SEP]`` with joint
  ``truncation="longest_first"`` at ``max_length`` by the tokenizer's own post-processor; the token
  statistics (``token_stats``) come from the same encodings;
* ``batch_plan``: one query's candidates sorted by truncated joint token length DESCENDING, ties by
  candidate rank ASCENDING, cut into consecutive chunks of ``batch_size`` (``chunks``);
* ``row_order``: inside a batch the rows are fed longest first by CHARACTER length, as
  sentence-transformers 6.2 ``CrossEncoder._inference`` orders them.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.errors import PipelineError


def chunks(seq: Sequence, size: int) -> list[Sequence]:
    if size < 1:
        raise ValueError("batch size must be >= 1")
    return [seq[i:i + size] for i in range(0, len(seq), size)]


def batch_plan(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """One query's batches as lists of candidate indices (0-based, index = rank - 1): the candidates
    sorted by token length descending, ties by index ascending, cut into consecutive chunks."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    return [list(c) for c in chunks(order, batch_size)]


# ------------------------------------------------------------------------ tokenise once --
class PairEncoder:
    """Tokenises every text once and joins pairs with the tokenizer's own truncation and special
    tokens (the Rust backend's ``post_process``: the same truncation and template code a joint
    ``tokenizer(q, d, truncation="longest_first", max_length=...)`` call runs).

    Two private copies of the backend tokenizer are used, so the caller's tokenizer is never changed:
    one without truncation or padding (the per-text encodings, untruncated: the token statistics) and
    one with ``longest_first`` truncation at ``max_length`` (joining a pair)."""

    def __init__(self, tok, max_length: int, truncation: str = "longest_first"):
        from tokenizers import Tokenizer

        if truncation != "longest_first":
            raise ValueError(f"only longest_first truncation is supported, got {truncation}")
        spec = tok.backend_tokenizer.to_str()
        self.raw, self.join = Tokenizer.from_str(spec), Tokenizer.from_str(spec)
        for t in (self.raw, self.join):
            t.no_padding()
            t.no_truncation()
            t.encode_special_tokens = bool(getattr(tok, "split_special_tokens", False))
        self.join.enable_truncation(max_length, stride=0, strategy="longest_first",
                                    direction=getattr(tok, "truncation_side", "right"))
        self.max_length = max_length
        self.special = self.raw.num_special_tokens_to_add(is_pair=True)

    def encode_texts(self, texts: Sequence[str]) -> list:
        """One tokenisation per text, no special tokens, no truncation."""
        return self.raw.encode_batch(list(texts), add_special_tokens=False)

    def pairs(self, queries: Sequence[str], docs: Sequence[str]) -> tuple[list[dict], list[dict]]:
        """(model features, token statistics) per pair; each distinct text is tokenised once."""
        distinct = list(dict.fromkeys([*queries, *docs]))
        enc = dict(zip(distinct, self.encode_texts(distinct)))
        features, stats = [], []
        for q, d in zip(queries, docs):
            eq, ed = enc[q], enc[d]
            joined = self.join.post_process(eq, ed, add_special_tokens=True)
            total = len(eq.ids) + len(ed.ids) + self.special
            n = len(joined.ids)
            if n != min(total, self.max_length):  # fail closed: the truncation is not what the contract says
                raise PipelineError(f"tokenisation: a pair of {total} tokens was cut to {n}, expected "
                                    f"{min(total, self.max_length)} (max_length {self.max_length}, "
                                    "longest_first)")
            features.append({"input_ids": joined.ids, "token_type_ids": joined.type_ids,
                             "attention_mask": joined.attention_mask})
            stats.append({"query_tokens": len(eq.ids), "doc_tokens": len(ed.ids), "total_tokens": total,
                          "truncated": total > self.max_length})
        return features, stats


def encode_pairs(tok, queries: Sequence[str], docs: Sequence[str], max_length: int,
                 truncation: str = "longest_first") -> tuple[list[dict], list[dict]]:
    """Model features (truncated, unpadded) and token statistics of each pair, from one tokenisation."""
    return PairEncoder(tok, max_length, truncation).pairs(queries, docs)


def token_stats(tok, queries: Sequence[str], docs: Sequence[str], max_length: int) -> list[dict]:
    """Untruncated token counts per pair: query, document, joint total (with special tokens)."""
    return encode_pairs(tok, queries, docs, max_length)[1]


def row_order(queries: Sequence[str], docs: Sequence[str]) -> list[int]:
    """Longest first by character length, computed as sentence-transformers 6.2 does."""
    import numpy as np

    return np.argsort([-(len(q) + len(d)) for q, d in zip(queries, docs)]).tolist()

