"""Rule score: cross-encoder logits for every (query, candidate) pair of the run (I/O around
``scoring.score_run``), the shape check, and the measurements (timings, peak RSS, threads) in a
separate, explicitly non-deterministic file."""

import json
import logging
import time
from pathlib import Path

from tqdm import tqdm

from rerank_study import beir, candidates, models, scoring
from rerank_study.acquire import DataPins, verified_path
from rerank_study.errors import PipelineError
from rerank_study.fileio import read_json, write_json, write_tsv
from rerank_study.rule import peak_rss_mib, run

log = logging.getLogger("score")
PAIR_HEADER = ("qid", "doc_id", "r0", "logit", "query_tokens", "doc_tokens", "total_tokens", "truncated",
               "batch", "model")


def check_shapes(tok, load_model, ranked, queries, corpus, settings, n_pairs, identity, versions, cache_dir, hidden,
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
    expected = {"input_ids": [n, settings.max_length], "last_hidden_state": [n, settings.max_length, hidden],
                "logits": [n, 1]}
    shapes.update({"expected": expected, "ok": all(shapes[k] == v for k, v in expected.items()),
                   "model": label, "qid": first_q, "doc_ids": ranked[first_q][:n]})
    return shapes


def main(sm):
    import torch

    t_stage = time.perf_counter()
    settings = scoring.ScoringSettings.from_config(sm.params.ce)
    scoring.setup_torch(settings)  # the PINNED thread count: it changes logits (see ScoringSettings)
    pins = DataPins.load(sm.input.data_pins)
    corpus = beir.read_corpus(verified_path(sm.input.corpus, "corpus.jsonl", pins))
    queries = beir.read_queries(verified_path(sm.input.queries, "queries.jsonl", pins))
    ranked = candidates.read_candidates(sm.input.candidates)
    model_dir = Path(sm.input.model).parent
    meta = models.load_model_meta(model_dir)  # re-verifies every file before anything is loaded
    label = f"{meta['identity']} weights-sha256:{meta['weights_sha256']}"
    versions = scoring.library_versions()
    cache_dir = Path(sm.params.cache) / scoring.CACHE_FORMAT / meta["identity_sha256"][:16]
    loaded = {}

    def load_model():  # the weights are loaded only if a batch (or the shape check) is not cached
        if "model" not in loaded:
            t0 = time.perf_counter()
            loaded["model"] = scoring.load_model(model_dir)
            loaded["seconds"] = time.perf_counter() - t0
        return loaded["model"]

    t0 = time.perf_counter()
    tok = scoring.load_tokenizer(model_dir)
    t_tok = time.perf_counter() - t0
    n_pairs = sum(len(v) for v in ranked.values())
    with tqdm(total=n_pairs, desc="cross-encoder pairs", unit="pair") as bar:
        rows, counts = scoring.score_run(ranked, queries, {d: corpus[d].full_text for q in ranked for d in ranked[q]},
                                         tok, load_model, settings, meta["identity"], versions,
                                         scoring.ScoreCache(cache_dir), progress=bar.update, fresh=sm.params.fresh)
    hidden = read_json(sm.input.model_pins)["cross_encoder"]["architecture"]["hidden_size"]  # the pinned architecture
    shapes = check_shapes(tok, load_model, ranked, queries, corpus, settings, sm.params.ce["shape_check_pairs"],
                          meta["identity"], versions, cache_dir, hidden, label)
    write_json(sm.output.shape_check, shapes)
    if not shapes["ok"]:
        raise PipelineError(f"SHAPE CHECK FAILED for {label}: found {shapes}; expected {shapes['expected']}. The model "
                            "is not the pinned architecture; nothing was published.")
    write_tsv(sm.output.pairs, PAIR_HEADER, [(r["qid"], r["doc_id"], r["r0"], r["logit"], r["query_tokens"],
                                              r["doc_tokens"], r["total_tokens"], r["truncated"], r["batch"], label)
                                             for r in rows])
    n_trunc = sum(1 for r in rows if r["truncated"])
    stage = time.perf_counter() - t_stage
    measurements = {
        "_note": "measurements of this execution; NOT reproducible byte for byte (timings, memory)",
        "model": label, "kind": meta["kind"], "pairs": len(rows), "pairs_inferred": counts.pairs_inferred,
        "pairs_from_cache": counts.pairs_from_cache, "truncated_pairs": n_trunc,
        "fresh_inference": sm.params.fresh, "cache_entries_verified": counts.cache_entries_verified,
        "threads": torch.get_num_threads(), "threads_granted_by_scheduler": sm.threads,
        "settings": settings.as_dict(), "versions": versions,
        "tokenizer_load_seconds": round(t_tok, 3),
        "model_load_seconds": round(loaded.get("seconds", 0.0), 3),
        "inference_seconds": round(counts.inference_seconds, 3), "stage_seconds": round(stage, 3),
        "pairs_per_second_inference": (round(counts.pairs_inferred / counts.inference_seconds, 3)
                                       if counts.inference_seconds > 0 else None),
        "peak_rss_mib": round(peak_rss_mib(), 1),
    }
    write_json(sm.output.measurements, measurements)
    log.info("scored %d pairs (%d inferred, %d cached, %d truncated) in %.1f s; %s", len(rows), counts.pairs_inferred,
             counts.pairs_from_cache, n_trunc, stage,
             json.dumps({k: measurements[k] for k in ("inference_seconds", "peak_rss_mib", "threads")}))


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
