"""The audit's account of the scoring shards' measurement records (scripts/audit/checks/shard_records.py): a
shard's tokens and padded tokens recounted from its table's batches (by hand below), the cache verification
allowed only in an opening, and the gathered record as the sums and copies of the shard records."""

from __future__ import annotations

from conftest import audit_module

SHARDS = audit_module("checks.shard_records")


def _audit():
    return audit_module("core.bookkeeping").Audit()


def _failed(au) -> list[str]:
    return [f["item"] for c in au.checks.values() for f in c["failures"]]


# one shard's table: query 1 in batches 0 (lengths 600 -> cut to 512, and 100) and 1 (30); query 2 in
# batch 0 (7)
ROWS = [{"qid": "1", "batch": "0", "total_tokens": "600"}, {"qid": "1", "batch": "0", "total_tokens": "100"},
        {"qid": "1", "batch": "1", "total_tokens": "30"}, {"qid": "2", "batch": "0", "total_tokens": "7"}]
TOKENS = 512 + 100 + 30 + 7  # 649
PADDED = 2 * 512 + 1 * 30 + 1 * 7  # 1061: each batch's rows x its longest


def _shard(**kw):
    rec = {"pairs_inferred": 4, "pairs_from_cache": 0, "cache_entries_verified": 0, "tokens_inferred": TOKENS,
           "padded_tokens_inferred": PADDED, "fresh_inference": False, "threads": 2,
           "threads_granted_by_scheduler": 2}
    rec.update(kw)
    return rec


def test_a_shards_tokens_are_its_tables_batches_cut_to_max_length():
    au = _audit()
    SHARDS.check_counts(au, "s.json", _shard(), ROWS, 512, opening=False)
    assert _failed(au) == []
    for bad in ({"tokens_inferred": TOKENS + 1}, {"padded_tokens_inferred": TOKENS},
                {"tokens_inferred": 649.0}, {"cache_entries_verified": 1}, {"fresh_inference": True},
                {"threads": True}, {"pairs_inferred": 3}):
        au = _audit()
        SHARDS.check_counts(au, "s.json", _shard(**bad), ROWS, 512, opening=False)
        assert _failed(au), bad


def test_an_opening_infers_afresh_and_verifies_at_most_one_entry_per_batch():
    au = _audit()
    SHARDS.check_counts(au, "s.json", _shard(fresh_inference=True, cache_entries_verified=3), ROWS, 512,
                        opening=True)
    assert _failed(au) == []  # 3 batches: (1, 0), (1, 1), (2, 0)
    au = _audit()
    SHARDS.check_counts(au, "s.json", _shard(fresh_inference=True, cache_entries_verified=4), ROWS, 512,
                        opening=True)
    assert _failed(au) == ["cache_entries_verified"]


def test_with_pairs_from_the_cache_the_tokens_are_at_most_the_tables():
    au = _audit()
    SHARDS.check_counts(au, "s.json", _shard(pairs_inferred=1, pairs_from_cache=3, tokens_inferred=30,
                                             padded_tokens_inferred=30), ROWS, 512, opening=False)
    assert _failed(au) == []
    au = _audit()
    SHARDS.check_counts(au, "s.json", _shard(pairs_inferred=1, pairs_from_cache=3, tokens_inferred=31,
                                             padded_tokens_inferred=30), ROWS, 512, opening=False)
    assert _failed(au) == ["tokens_inferred <= padded_tokens_inferred (at most the table's)"]


def _figures(i, seconds):
    return {"shard": i, "queries": 1, "pairs": 10, "pairs_inferred": 10, "pairs_from_cache": 0,
            "cache_entries_verified": 0, "tokens_inferred": 100, "padded_tokens_inferred": 120,
            "threads": 2, "threads_granted_by_scheduler": 2, "fresh_inference": False,
            "inference_seconds": seconds, "stage_seconds": 1.5, "shape_check_seconds": 0.25,
            "peak_rss_mib": 700.0, "model_load_seconds": 0.5, "useful_gflop_inferred": 1.25}


def _gathered(shards, **kw):
    rec = {"shards": len(shards), "per_shard": [{k: s[k] for k in SHARDS.PER_SHARD} for s in shards],
           "pairs_inferred": 20, "pairs_from_cache": 0, "cache_entries_verified": 0, "tokens_inferred": 200,
           "padded_tokens_inferred": 240, "useful_gflop_inferred": 2.5, "model_load_seconds": 1.0,
           "inference_seconds": 3.0, "pairs_per_second_inference": 6.667, "fresh_inference": False,
           "threads": 2, "threads_granted_by_scheduler": [2], "peak_rss_mib": 710.0}
    rec.update(kw)
    return rec


def test_the_gathered_record_is_the_sums_and_copies_of_the_shard_records():
    shards = [_figures(0, 1.0), _figures(1, 2.0)]
    au = _audit()
    SHARDS.check_gathered(au, "scoring.json", _gathered(shards), shards)
    assert _failed(au) == []  # 20 pairs / 3.0 s = 6.667 pairs/s
    for bad in ({"tokens_inferred": 201}, {"threads": [2]}, {"peak_rss_mib": 600.0},
                {"pairs_inferred": 21}, {"per_shard": []}, {"fresh_inference": True}):
        au = _audit()
        SHARDS.check_gathered(au, "scoring.json", {**_gathered(shards), **bad}, shards)
        assert _failed(au), bad
    for bad in ({"shards": 1}, {"shards": 3}):  # the record's own count of shards
        au = _audit()
        SHARDS.check_gathered(au, "scoring.json", {**_gathered(shards), **bad}, shards)
        assert _failed(au), bad


def test_a_fully_cached_rerun_sums_to_zeros_and_no_rate():
    shards = [{**_figures(i, 0.0), "pairs_inferred": 0, "pairs_from_cache": 10, "tokens_inferred": 0,
               "padded_tokens_inferred": 0, "useful_gflop_inferred": 0.0, "model_load_seconds": 0.0}
              for i in range(2)]
    rec = _gathered(shards, pairs_inferred=0, pairs_from_cache=20, tokens_inferred=0,
                    padded_tokens_inferred=0, useful_gflop_inferred=0.0, model_load_seconds=0.0,
                    inference_seconds=0.0, pairs_per_second_inference=None)
    au = _audit()
    SHARDS.check_gathered(au, "scoring.json", rec, shards)
    assert _failed(au) == []


MINILM = {"num_hidden_layers": 6, "hidden_size": 384, "intermediate_size": 1536}


def test_a_shards_useful_gflop_is_its_tables_pairs_through_the_pinned_architecture():
    """By hand, per pair 6 (2n (4 h^2 + 2 h f) + 4 n^2 h) = 21,233,664 n + 9,216 n^2 at h = 384, f = 1536:
    n = 512, 100, 30, 7 give 13,287,555,072 + 2,215,526,400 + 645,304,320 + 149,087,232 = 16,297,473,024
    FLOPs: 16.297 GFLOP. With half the layers: 8.149 (8.1487...)."""
    for arch, gflop in ((MINILM, 16.297), ({**MINILM, "num_hidden_layers": 3}, 8.149)):
        au = _audit()
        SHARDS.check_useful_gflop(au, "s.json", _shard(useful_gflop_inferred=gflop), ROWS, 512, arch)
        assert _failed(au) == [], arch
    for found in (16.299, 8.149, True, None):  # off by 0.002; the wrong architecture; a flag; missing
        au = _audit()
        SHARDS.check_useful_gflop(au, "s.json", _shard(useful_gflop_inferred=found), ROWS, 512, MINILM)
        assert _failed(au), found
    au = _audit()  # some pairs from the cache: at most the table's
    SHARDS.check_useful_gflop(au, "s.json", _shard(pairs_from_cache=1, useful_gflop_inferred=2.5), ROWS, 512,
                              MINILM)
    assert _failed(au) == []
    au = _audit()
    SHARDS.check_useful_gflop(au, "s.json", _shard(pairs_from_cache=1, useful_gflop_inferred=16.4), ROWS, 512,
                              MINILM)
    assert _failed(au)
