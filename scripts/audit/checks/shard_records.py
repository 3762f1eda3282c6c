"""What each scoring shard's measurement record (measurements/score-of-<N>/<i>.json) and the gathered record
(measurements/scoring.json) must say beyond timings: every key is either recomputed here from the run's own
tables and the other records, or declared a timing or the machine's description (columns.py). Used by check
'measurements' (checks.measurements)."""

from __future__ import annotations

from core.compare import same_value
from read.columns import NUMERICS

MMAP_THRESHOLD_BYTES = 256 * 1024  # glibc's mmap threshold every scoring process sets (docs/scoring.md)
MKL_CNR_CODE = 2 | 0x10000  # MKL_CBWR_AUTO | MKL_CBWR_STRICT, as oneMKL reports NUMERICS
NUMERICS_ENV = {"MKL_CBWR": NUMERICS, "MKL_DYNAMIC": "FALSE", "OMP_DYNAMIC": "FALSE"}
# a shard's figures the gathered record copies into per_shard, in this order
PER_SHARD = ("shard", "queries", "pairs", "pairs_inferred", "threads", "inference_seconds", "stage_seconds",
             "shape_check_seconds", "peak_rss_mib")
SUMMED = ("pairs_inferred", "pairs_from_cache", "cache_entries_verified", "tokens_inferred",
          "padded_tokens_inferred")


def whole(x) -> bool:
    return type(x) is int and x >= 0


def inferred_lengths(rows, max_length: int) -> dict[tuple, list[int]]:
    """{(qid, batch): the token lengths the model saw}: each pair's joint length cut to max_length."""
    out: dict[tuple, list[int]] = {}
    for r in rows:
        out.setdefault((r["qid"], r["batch"]), []).append(min(int(r["total_tokens"]), max_length))
    return out


def check_numerics(au, f: str, numerics) -> None:
    """The process's numeric mode: oneMKL strict CNR (name and code), its environment, no dynamic threads,
    glibc's mmap threshold (null where glibc is absent); whether it had to switch modes: true or false."""
    n = numerics if isinstance(numerics, dict) else {}
    want = {"env": NUMERICS_ENV, "mkl_cnr": NUMERICS, "mkl_cnr_code": MKL_CNR_CODE, "omp_dynamic": False}
    for key, val in want.items():
        au.check("measurements", same_value(n.get(key), val), f, f"numerics.{key}", val, n.get(key))
    au.check("measurements", n.get("mmap_threshold_bytes") in (MMAP_THRESHOLD_BYTES, None)
             and type(n.get("mmap_threshold_bytes")) in (int, type(None)), f, "numerics.mmap_threshold_bytes",
             f"{MMAP_THRESHOLD_BYTES} (or null without glibc)", n.get("mmap_threshold_bytes"))
    au.check("measurements", type(n.get("switched_in_process")) is bool, f, "numerics.switched_in_process",
             "true or false", n.get("switched_in_process"))
    au.check("measurements", sorted(n) == sorted([*want, "mmap_threshold_bytes", "switched_in_process"]), f,
             "numerics keys", sorted([*want, "mmap_threshold_bytes", "switched_in_process"]), sorted(n))


def check_counts(au, f: str, rec: dict, rows, max_length: int, opening: bool) -> None:
    """A shard's counts of its own table. Every pair inferred or from the cache; an opening (the only fresh
    inference) takes nothing from the cache and may verify at most one cached entry per batch, any other
    run verifies none; with nothing from the cache the tokens and padded tokens are those of the table's
    batches (lengths cut to max_length), otherwise at most those."""
    batches = inferred_lengths(rows, max_length)
    tokens = sum(sum(v) for v in batches.values())
    padded = sum(len(v) * max(v) for v in batches.values())
    got = {k: rec.get(k) for k in ("pairs_inferred", "pairs_from_cache", "cache_entries_verified",
                                   "tokens_inferred", "padded_tokens_inferred")}
    if not au.check("measurements", all(whole(v) for v in got.values()), f, "counts", "whole numbers >= 0",
                    got):
        return
    au.check("measurements", got["pairs_inferred"] + got["pairs_from_cache"] == len(rows), f,
             "pairs_inferred + pairs_from_cache", len(rows), [got["pairs_inferred"], got["pairs_from_cache"]])
    au.check("measurements", rec.get("fresh_inference") is opening, f, "fresh_inference",
             f"{str(opening).lower()} (only an opening infers every pair afresh)", rec.get("fresh_inference"))
    most = len(batches) if opening else 0
    au.check("measurements", got["cache_entries_verified"] <= most, f, "cache_entries_verified",
             f"at most {most} (an opening: one per batch; otherwise none)", got["cache_entries_verified"])
    if got["pairs_from_cache"] == 0:
        au.check("measurements", [got["tokens_inferred"], got["padded_tokens_inferred"]] == [tokens, padded],
                 f, "tokens_inferred, padded_tokens_inferred (the table's batches, lengths cut to "
                 "max_length)",
                 [tokens, padded], [got["tokens_inferred"], got["padded_tokens_inferred"]])
    else:
        au.check("measurements", got["tokens_inferred"] <= tokens and got["padded_tokens_inferred"] <= padded
                 and got["tokens_inferred"] <= got["padded_tokens_inferred"], f,
                 "tokens_inferred <= padded_tokens_inferred (at most the table's)", [tokens, padded],
                 [got["tokens_inferred"], got["padded_tokens_inferred"]])
    for key in ("threads", "threads_granted_by_scheduler"):
        au.check("measurements", whole(rec.get(key)) and rec[key] >= 1, f, key, "a whole number >= 1",
                 rec.get(key))


def useful_flops(n: int, arch: dict) -> float:
    """Matrix-product FLOPs of one pair of n real tokens through the pinned encoder (docs: SOURCE_MAP, "Useful
    FLOPs"): per layer 2n(4h^2 + 2hf) for the projections and the feed-forward, 4n^2h for attention."""
    h, f = arch["hidden_size"], arch["intermediate_size"]
    return arch["num_hidden_layers"] * (2.0 * n * (4 * h * h + 2 * h * f) + 4.0 * n * n * h)


def check_useful_gflop(au, f: str, rec: dict, rows, max_length: int, arch: dict) -> None:
    """useful_gflop_inferred: the table's pairs (lengths cut to max_length) through the pinned architecture,
    to 3 decimals (within 0.001: another summation order may round the other way); at most that when some
    pairs came from the cache."""
    lengths = [n for v in inferred_lengths(rows, max_length).values() for n in v]
    most = round(sum(useful_flops(n, arch) for n in lengths) / 1e9, 3)
    found = rec.get("useful_gflop_inferred")
    ok = type(found) in (int, float) and (abs(found - most) <= 0.0011 if rec.get("pairs_from_cache") == 0
                                   else -1e-12 <= found <= most + 0.0011)
    au.check("measurements", ok, f, "useful_gflop_inferred (the inferred pairs through the pinned "
             f"architecture{'' if rec.get('pairs_from_cache') == 0 else ': at most'})", most, found)


def _sum(shards: list[dict], key: str):
    """The shards' values of ``key`` summed; None when one is not a number."""
    values = [s.get(key) for s in shards]
    if not all(type(v) in (int, float) for v in values):
        return None
    return sum(values)


def _threads(shards: list[dict]):
    found = sorted({s.get("threads") for s in shards if whole(s.get("threads"))})
    return found[0] if len(found) == 1 else found


def check_gathered(au, f: str, scoring: dict, shards: list[dict]) -> None:
    """measurements/scoring.json gathers the shard records: their number, per_shard (each shard's figures
    copied), the sums of their counts and seconds, the rate, the thread counts, the flags; the peak memory at
    least each shard's."""
    inferred, seconds = _sum(shards, "pairs_inferred"), _sum(shards, "inference_seconds")
    rounded = {k: _sum(shards, k) for k in ("useful_gflop_inferred", "model_load_seconds",
                                            "inference_seconds")}
    want = {"shards": len(shards),
            "per_shard": [{k: s.get(k) for k in PER_SHARD} for s in shards],
            **{k: _sum(shards, k) for k in SUMMED},
            **{k: None if v is None else round(v, 3) for k, v in rounded.items()},
            "pairs_per_second_inference": (round(inferred / seconds, 3) if None not in (inferred, seconds)
                                           and seconds > 0 else None),
            "fresh_inference": all(s.get("fresh_inference") is True for s in shards),
            "threads": _threads(shards),
            "threads_granted_by_scheduler": sorted({s.get("threads_granted_by_scheduler") for s in shards
                                                    if whole(s.get("threads_granted_by_scheduler"))})}
    for key, val in want.items():
        au.check("measurements", same_value(scoring.get(key), val), f, f"{key} (the shard records')", val,
                 scoring.get(key))
    peak = [s.get("peak_rss_mib") for s in shards]
    au.check("measurements", all(isinstance(p, (int, float)) for p in peak + [scoring.get("peak_rss_mib")])
             and scoring["peak_rss_mib"] >= max(peak, default=0), f, "peak_rss_mib",
             f"at least every shard's {peak}", scoring.get("peak_rss_mib"))
