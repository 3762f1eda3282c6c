"""Rule score: gather the shards of the scoring (rule score_shard) into the run's one pairs.tsv, in
canonical order (queries as in the run's candidates, each query's candidates in rank order), run the
shape check, and sum the shards' measurements into measurements/scoring.json (timings, peak RSS,
threads: explicitly non-deterministic). The bytes of pairs.tsv do not depend on the shard count.

The numeric mode is set FIRST, before torch is imported (the shape check runs the model)."""

from rerank_study import numerics

PROCESS = numerics.configure_process()  # MKL_CBWR=AUTO,STRICT ... (before torch)

import logging  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from rerank_study import beir, candidates, models, scoring  # noqa: E402
from rerank_study.acquire import DataPins, verified_path  # noqa: E402
from rerank_study.errors import PipelineError  # noqa: E402
from rerank_study.fileio import read_json, read_tsv, write_json, write_tsv  # noqa: E402
from rerank_study.rule import peak_rss_mib, run  # noqa: E402

log = logging.getLogger("score")


def check_shapes(tok, load_model, ranked, queries, corpus, settings, n_pairs, identity, versions, cache_dir, arch,
                 label) -> dict:
    """Forward the first ``n_pairs`` pairs padded to max_length (this check only) and compare the tensor
    shapes with the pinned architecture; cached like the scores (an unchanged rerun loads no weights)."""
    first_q = next(iter(ranked))
    n = min(n_pairs, len(ranked[first_q]))
    qs, ds = [queries[first_q]] * n, [corpus[d].full_text for d in ranked[first_q][:n]]
    sfile = Path(cache_dir) / "shapes" / f"shape-{scoring.batch_cache_key(identity, settings, versions, qs, ds)}.json"
    if sfile.exists():
        shapes = read_json(sfile)
    else:
        model = load_model()
        shapes = scoring.shape_check(tok, model, qs, ds, settings)
        shapes["hidden_size"] = model.config.hidden_size  # what the loaded model says (compared below)
        write_json(sfile, shapes)
    expected = {"input_ids": [n, settings.max_length], "last_hidden_state": [n, settings.max_length, arch["hidden_size"]],
                "logits": [n, arch["num_labels"]]}
    shapes.update({"expected": expected, "ok": all(shapes[k] == v for k, v in expected.items()),
                   "model": label, "qid": first_q, "doc_ids": ranked[first_q][:n]})
    return shapes


def summed(shards: list[dict], key: str) -> float:
    return sum(m[key] for m in shards)


def main(sm):
    t_stage = time.perf_counter()
    settings = scoring.ScoringSettings.from_config(sm.params.ce)
    mode = scoring.setup_torch(settings, threads=sm.threads)
    ranked = candidates.read_candidates(sm.input.candidates)
    shard_files = list(sm.input.shards)
    rows = scoring.gather_shards(ranked, [(f, read_tsv(f, scoring.PAIR_HEADER)) for f in shard_files])
    pins = DataPins.load(sm.input.data_pins)
    corpus = beir.read_corpus(verified_path(sm.input.corpus, "corpus.jsonl", pins))
    queries = beir.read_queries(verified_path(sm.input.queries, "queries.jsonl", pins))
    model_dir = Path(sm.input.model).parent
    meta = models.load_model_meta(model_dir)  # re-verifies every file before anything is loaded
    label = f"{meta['identity']} weights-sha256:{meta['weights_sha256']}"
    if {r["model"] for r in rows} != {label}:
        raise PipelineError(f"SHARD MISMATCH: the shards were scored by {sorted({r['model'] for r in rows})}, this run's "
                            f"model is {label}: delete {Path(shard_files[0]).parent} and rerun.")
    versions = scoring.library_versions()
    cache_dir = Path(sm.params.cache) / scoring.CACHE_FORMAT / meta["identity_sha256"][:16]
    loaded = {}

    def load_model():  # the weights are loaded only if the shape check is not cached
        if "model" not in loaded:
            t0 = time.perf_counter()
            loaded["model"] = scoring.load_model(model_dir)
            loaded["seconds"] = time.perf_counter() - t0
        return loaded["model"]

    tok = scoring.load_tokenizer(model_dir)
    arch = read_json(sm.input.model_pins)["cross_encoder"]["architecture"]  # pinned = the verified config.json's
    shapes = check_shapes(tok, load_model, ranked, queries, corpus, settings, sm.params.ce["shape_check_pairs"],
                          meta["identity"], versions, cache_dir, arch, label)
    write_json(sm.output.shape_check, shapes)
    if not shapes["ok"]:
        raise PipelineError(f"SHAPE CHECK FAILED for {label}: found {shapes}; expected {shapes['expected']}. The model "
                            "is not the pinned architecture; nothing was published.")
    write_tsv(sm.output.pairs, scoring.PAIR_HEADER, [[r[c] for c in scoring.PAIR_HEADER] for r in rows])

    shards = [read_json(f) for f in sm.input.shard_measurements]
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
        "model_load_seconds": round(summed(shards, "model_load_seconds") + loaded.get("seconds", 0.0), 3),
        "inference_seconds": round(inference, 3),
        "stage_seconds": round(summed(shards, "stage_seconds") + time.perf_counter() - t_stage, 3),
        "pairs_per_second_inference": round(inferred / inference, 3) if inference > 0 else None,
        "tokens_inferred": summed(shards, "tokens_inferred"),
        "padded_tokens_inferred": summed(shards, "padded_tokens_inferred"),
        "useful_gflop_inferred": round(summed(shards, "useful_gflop_inferred"), 3),
        "peak_rss_mib": max([m["peak_rss_mib"] for m in shards] + [round(peak_rss_mib(), 1)]),
        "per_shard": [{k: m[k] for k in ("shard", "queries", "pairs", "pairs_inferred", "threads", "inference_seconds",
                                         "stage_seconds", "peak_rss_mib")} for m in shards],
        "gather": {"numerics": mode["mkl_cnr"], "peak_rss_mib": round(peak_rss_mib(), 1),
                   "seconds": round(time.perf_counter() - t_stage, 3)},
    }
    write_json(sm.output.measurements, measurements)
    log.info("gathered %d shards: %d pairs (%d inferred, %d cached, %d truncated); inference %.1f s; peak RSS %.0f MiB; "
             "threads %s; MKL CNR %s", len(shards), len(rows), inferred, measurements["pairs_from_cache"],
             measurements["truncated_pairs"], inference, measurements["peak_rss_mib"], measurements["threads"],
             measurements["numerics"])


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
