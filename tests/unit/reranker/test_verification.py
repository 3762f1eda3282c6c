"""The verifier's sample of batches to re-infer, by hand: sha256 of seed, query and batch, in key order."""

import hashlib

from rerank_study.reranker import verification


def test_sample_rule_by_hand():
    batches = [("1", 0), ("1", 1), ("2", 0), ("3", 0)]
    key = {b: hashlib.sha256(f"110\t{b[0]}\t{b[1]}".encode()).hexdigest() for b in batches}
    by_key = sorted(batches, key=key.get)
    assert verification.sample_batches(batches, 110, 2) == by_key[:2]
    assert verification.sample_batches(batches + batches, 110, None) == by_key  # every batch, once
    assert verification.sample_batches(batches, 110, 99) == by_key
