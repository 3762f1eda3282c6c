"""Rule score: gather the shards of the scoring (rule score_shard) into the run's one pairs.tsv, in
canonical order (queries as in the run's candidates, each query's candidates in rank order), after every
shard's shape check passed (shard 0's record, the run's first query, is written as shape_check.json), and
sum the shards' measurements into measurements/scoring.json (timings, peak RSS, threads: explicitly
non-deterministic). The bytes of pairs.tsv do not depend on the shard count."""

import logging
import time
from pathlib import Path

from rerank_study.core.errors import PipelineError
from rerank_study.core.fileio import read_json, read_tsv, write_json, write_tsv
from rerank_study.core.rule import peak_rss_mib, run
from rerank_study.rankings import candidates
from rerank_study.reranker import backends, models, scoring, shape_check

log = logging.getLogger("score")


def summed(shards: list[dict], key: str) -> float:
    return sum(m[key] for m in shards)


def main(sm):
    t_stage = time.perf_counter()
    settings = scoring.ScoringSettings.from_config(sm.params.ce)
    ranked = candidates.read_candidates(sm.input.candidates)
    shard_files = list(sm.input.shards)
    rows = scoring.gather_shards(ranked, [(f, read_tsv(f, scoring.PAIR_HEADER)) for f in shard_files])
    meta = models.load_model_meta(Path(sm.input.model).parent)  # re-verifies every file
    pins = sm.input.derived_pins if settings.derived else None
    label = scoring.pairs_model(meta, backends.pinned_identity(settings, meta, pins))
    if {r["model"] for r in rows} != {label}:
        raise PipelineError("SHARD MISMATCH: the shards were scored by "
                            f"{sorted({r['model'] for r in rows})}, this run's model is {label}: delete "
                            f"{Path(shard_files[0]).parent} and rerun.")
    shards = [read_json(f) for f in sm.input.shard_measurements]
    shapes = shape_check.run_record(shards, sm.input.shard_measurements, label)
    write_tsv(sm.output.pairs, scoring.PAIR_HEADER, [[r[c] for c in scoring.PAIR_HEADER] for r in rows])
    write_json(sm.output.shape_check, shapes)
    versions = scoring.library_versions(settings)

    threads = sorted({m["threads"] for m in shards})
    inference = summed(shards, "inference_seconds")
    inferred = summed(shards, "pairs_inferred")
    measurements = {
        "_note": "measurements of this execution; NOT reproducible byte for byte (timings, memory)",
        "model": label, "kind": meta["kind"], "pairs": len(rows), "shards": len(shards),
        "pairs_inferred": inferred, "pairs_from_cache": summed(shards, "pairs_from_cache"),
        "truncated_pairs": sum(1 for r in rows if r["truncated"] == "true"),
        "fresh_inference": all(m["fresh_inference"] for m in shards),
        "cache_entries_verified": summed(shards, "cache_entries_verified"),
        "threads": threads[0] if len(threads) == 1 else threads,
        "threads_granted_by_scheduler": sorted({m["threads_granted_by_scheduler"] for m in shards}),
        "numerics": shards[0]["numerics"]["mkl_cnr"] if len({m["numerics"]["mkl_cnr"] for m in shards}) == 1
        else sorted({m["numerics"]["mkl_cnr"] for m in shards}),
        "settings": settings.as_dict(), "versions": versions,
        "model_load_seconds": round(summed(shards, "model_load_seconds"), 3),
        "inference_seconds": round(inference, 3),
        "stage_seconds": round(summed(shards, "stage_seconds") + time.perf_counter() - t_stage, 3),
        "pairs_per_second_inference": round(inferred / inference, 3) if inference > 0 else None,
        "tokens_inferred": summed(shards, "tokens_inferred"),
        "padded_tokens_inferred": summed(shards, "padded_tokens_inferred"),
        "useful_gflop_inferred": round(summed(shards, "useful_gflop_inferred"), 3),
        "peak_rss_mib": max([m["peak_rss_mib"] for m in shards] + [round(peak_rss_mib(), 1)]),
        "per_shard": [{k: m[k] for k in ("shard", "queries", "pairs", "pairs_inferred", "threads",
                                         "inference_seconds", "stage_seconds", "shape_check_seconds",
                                         "peak_rss_mib")}
                      for m in shards],
        "gather": {"peak_rss_mib": round(peak_rss_mib(), 1),
                   "seconds": round(time.perf_counter() - t_stage, 3)},
    }
    write_json(sm.output.measurements, measurements)
    log.info("gathered %d shards: %d pairs (%d inferred, %d cached, %d truncated); inference %.1f s; peak "
             "RSS %.0f MiB; threads %s; MKL CNR %s", len(shards), len(rows), inferred,
             measurements["pairs_from_cache"], measurements["truncated_pairs"], inference,
             measurements["peak_rss_mib"], measurements["threads"], measurements["numerics"])


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
