"""Tokenise once, then batch (rerank_study.reranker.scoring_batches) without a model: the batch plan and
chunks by hand, the row order of sentence-transformers by character length, and PairEncoder on a tiny
word-level tokenizer built here (a BERT-style template [CLS] q [SEP] d [SEP]), whose ids are written out by
hand. The same against the stand-in cross-encoder's real tokenizer is in test_scoring.py."""

from types import SimpleNamespace

import pytest
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace
from tokenizers.processors import TemplateProcessing

from rerank_study.core.errors import PipelineError
from rerank_study.reranker import scoring_batches

CLS, SEP, A, B, C, D = 1, 2, 3, 4, 5, 6


def tiny_tokenizer():
    """What the encoder reads of a transformers tokenizer: its backend (Rust) tokenizer."""
    t = Tokenizer(WordLevel({"[UNK]": 0, "[CLS]": CLS, "[SEP]": SEP, "a": A, "b": B, "c": C, "d": D},
                            unk_token="[UNK]"))
    t.pre_tokenizer = Whitespace()
    t.post_processor = TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                          special_tokens=[("[CLS]", CLS), ("[SEP]", SEP)])
    return SimpleNamespace(backend_tokenizer=t)


def test_batch_plan_sorts_by_token_length_descending_then_rank_ascending():
    # hand-made: lengths by candidate index 0..5; 9 and 9 tie -> lower index first; 7, 5, 5, 2
    assert scoring_batches.batch_plan([5, 9, 9, 2, 7, 5], 2) == [[1, 2], [4, 0], [5, 3]]
    assert scoring_batches.batch_plan([5, 9, 9, 2, 7, 5], 4) == [[1, 2, 4, 0], [5, 3]]
    assert scoring_batches.batch_plan([3] * 5, 16) == [[0, 1, 2, 3, 4]]
    assert scoring_batches.batch_plan([], 16) == []
    with pytest.raises(ValueError):
        scoring_batches.batch_plan([1], 0)


def test_chunks_are_consecutive_and_the_last_may_be_short():
    assert scoring_batches.chunks(list(range(37)), 16) == [list(range(16)), list(range(16, 32)),
                                                           list(range(32, 37))]
    assert scoring_batches.chunks("abc", 1) == ["a", "b", "c"]
    assert scoring_batches.chunks([], 4) == []
    with pytest.raises(ValueError, match="batch size must be >= 1"):
        scoring_batches.chunks([1, 2], 0)


def test_row_order_is_longest_first_by_characters():
    # joint lengths 1+3 = 4, 1+9 = 10, 2+5 = 7, 1+1 = 2
    docs = ["ddd", "ddddddddd", "ddddd", "d"]
    assert scoring_batches.row_order(["q", "q", "qq", "q"], docs) == [1, 2, 0, 3]
    assert scoring_batches.row_order([], []) == []


def test_pairs_are_joined_and_cut_longest_first_by_hand():
    tok = tiny_tokenizer()
    feats, stats = scoring_batches.encode_pairs(tok, ["a b", "a"], ["c d c d c", "b"], 8)
    # pair 1: 2 + 5 + 3 special = 10 > 8: longest_first cuts the longer (the document) to 3 tokens
    assert feats[0] == {"input_ids": [CLS, A, B, SEP, C, D, C, SEP],
                        "token_type_ids": [0, 0, 0, 0, 1, 1, 1, 1], "attention_mask": [1] * 8}
    assert feats[1] == {"input_ids": [CLS, A, SEP, B, SEP], "token_type_ids": [0, 0, 0, 1, 1],
                        "attention_mask": [1] * 5}
    assert stats == [{"query_tokens": 2, "doc_tokens": 5, "total_tokens": 10, "truncated": True},
                     {"query_tokens": 1, "doc_tokens": 1, "total_tokens": 5, "truncated": False}]
    assert scoring_batches.token_stats(tok, ["a b", "a"], ["c d c d c", "b"], 8) == stats


def test_the_callers_tokenizer_is_never_changed():
    tok = tiny_tokenizer()
    tok.backend_tokenizer.enable_truncation(100)
    before = (tok.backend_tokenizer.truncation, tok.backend_tokenizer.padding)
    scoring_batches.encode_pairs(tok, ["a b"], ["c d c d c"], 4)
    assert (tok.backend_tokenizer.truncation, tok.backend_tokenizer.padding) == before


def test_each_distinct_text_is_tokenised_once():
    enc = scoring_batches.PairEncoder(tiny_tokenizer(), 512)
    seen = []
    encode = enc.encode_texts
    enc.encode_texts = lambda texts: seen.append(list(texts)) or encode(texts)
    feats, _ = enc.pairs(["a", "a", "a"], ["b", "c", "b"])
    assert seen == [["a", "b", "c"]] and [f["input_ids"][3] for f in feats] == [B, C, B]


def test_only_longest_first_truncation_is_supported():
    with pytest.raises(ValueError, match="only longest_first truncation is supported, got only_second"):
        scoring_batches.encode_pairs(tiny_tokenizer(), ["a"], ["b"], 8, truncation="only_second")


def test_a_cut_that_is_not_the_contracts_fails_closed():
    # max_length 2 leaves no room for the 3 special tokens of a pair: the tokenizer cannot cut to 2
    with pytest.raises(PipelineError, match=r"tokenisation: a pair of 10 tokens was cut to \d+, expected 2 "
                                            r"\(max_length 2, longest_first\)"):
        scoring_batches.encode_pairs(tiny_tokenizer(), ["a b"], ["c d c d c"], 2)
