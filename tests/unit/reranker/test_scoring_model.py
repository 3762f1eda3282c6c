"""reranker.scoring_model without model weights: a tokenizer and a classifier made here (torch tensors built
by hand) show that a batch is fed longest first and mapped back to the given order, that the relevance column
is the only logit or the declared label index, that other logits are refused, and that only float32 is set
up. The real model's bits: tests/unit/reranker/test_scoring.py."""

from __future__ import annotations

import json

import pytest
import torch

from rerank_study.reranker import scoring_model
from rerank_study.reranker.scoring import ScoringSettings


class PadTokenizer:
    """Pads each feature to the batch's longest row with zeros, as a tokenizer's ``pad`` does."""

    def pad(self, batch, padding, return_tensors):
        assert padding is True and return_tensors == "pt"
        width = max(len(row) for row in batch["input_ids"])
        return {k: torch.tensor([row + [0] * (width - len(row)) for row in rows])
                for k, rows in batch.items()}


class SumModel:
    """Logits: each row's columns are (sum of its ids, 10 x that, -1); records the rows it was fed."""

    def __init__(self, columns=1, dtype=torch.float32, relevance_index=None):
        self.columns, self.dtype, self.relevance_index, self.fed = columns, dtype, relevance_index, []

    def __call__(self, input_ids, token_type_ids, attention_mask):
        self.fed.append(input_ids.tolist())
        s = input_ids.sum(dim=1).to(self.dtype)
        logits = torch.stack([s, 10 * s, -torch.ones_like(s)], dim=1)[:, :self.columns]
        return type("Output", (), {"logits": logits})()


def features(*ids):
    """Encoded pairs with the given token ids (one segment, no padding)."""
    return [{"input_ids": list(i), "token_type_ids": [0] * len(i), "attention_mask": [1] * len(i)}
            for i in ids]


def test_a_batch_is_fed_longest_first_and_its_logits_return_in_the_given_order():
    queries, docs = ["q", "query", "qu"], ["d", "document", "do"]  # pair lengths 2, 13, 4
    model = SumModel()
    out = scoring_model.score_rows(PadTokenizer(), model, queries, docs, features([1], [2, 3, 4], [5, 6]))
    assert out == [1.0, 9.0, 11.0]
    assert model.fed == [[[2, 3, 4], [5, 6, 0], [1, 0, 0]]]  # rows 1, 2, 0, padded to the longest


def test_a_several_output_model_gives_its_declared_column():
    model = SumModel(columns=3, relevance_index=1)
    assert scoring_model.score_rows(PadTokenizer(), model, ["a"], ["b"], features([2, 5])) == [70.0]


def test_logits_of_another_shape_or_type_are_refused():
    with pytest.raises(ValueError, match=r"expected logits of shape \[batch, 1\].*got \[1, 3\]"):
        scoring_model.score_rows(PadTokenizer(), SumModel(columns=3), ["a"], ["b"], features([1]))
    with pytest.raises(ValueError, match="expected float32 logits, got torch.float64"):
        scoring_model.score_rows(PadTokenizer(), SumModel(dtype=torch.float64), ["a"], ["b"], features([1]))


def test_relevance_column_of_one_or_several_logits():
    assert scoring_model.relevance_column(None, [4, 1]) == 0
    assert scoring_model.relevance_column(2, [4, 3]) == 2
    with pytest.raises(ValueError, match="label_index"):
        scoring_model.relevance_column(None, [4, 3])
    with pytest.raises(ValueError, match="not a column"):
        scoring_model.relevance_column(3, [4, 3])
    with pytest.raises(ValueError, match="shape"):
        scoring_model.relevance_column(None, [4])


def test_the_label_index_is_read_from_model_json_when_there_is_one(tmp_path):
    assert scoring_model.label_index(tmp_path) is None
    (tmp_path / "MODEL.json").write_text(json.dumps({"repo": "x"}))
    assert scoring_model.label_index(tmp_path) is None
    (tmp_path / "MODEL.json").write_text(json.dumps({"label_index": 2}))
    assert scoring_model.label_index(tmp_path) == 2


def test_only_float32_is_set_up():
    with pytest.raises(ValueError, match="only float32 is supported, got float16"):
        scoring_model.setup_torch(ScoringSettings(512, "longest_first", 16, 110, "float16"))
