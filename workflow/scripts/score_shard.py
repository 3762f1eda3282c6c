"""Rule score_shard: the shape check of the shard's first query (``shape_check``; nothing is scored when it
fails), then the cross-encoder logits of one shard of the run's queries (I/O around ``scoring.score_run``),
and this job's measurements (timings, peak RSS, threads, numeric mode, the shape check's record) in a
separate, explicitly non-deterministic file. The rule ``score`` gathers the shards.

The numeric mode is set FIRST, before torch is imported: oneMKL reads MKL_CBWR at its first call."""

from rerank_study.reranker import numerics

PROCESS = numerics.configure_process()  # MKL_CBWR=AUTO,STRICT ...; fixed mmap threshold (before torch)

import logging  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from tqdm import tqdm  # noqa: E402

from rerank_study.core import machine
from rerank_study.core.fileio import read_json, write_json, write_tsv  # noqa: E402
from rerank_study.core.rule import peak_rss_mib, run  # noqa: E402
from rerank_study.data import beir
from rerank_study.data.acquire import verified_path  # noqa: E402
from rerank_study.data.pins import DataPins  # noqa: E402
from rerank_study.rankings import candidates
from rerank_study.reranker import backends, models, scoring, scoring_model, shape_check  # noqa: E402

log = logging.getLogger("score_shard")


class LoadedOnce:
    """The scorer, loaded once when first needed (by the shape check or the scoring), and its load seconds."""

    def __init__(self, load):
        self.load, self.model, self.seconds = load, None, 0.0

    def __call__(self):
        if self.model is None:
            t0 = time.perf_counter()
            self.model = self.load()
            self.seconds = time.perf_counter() - t0
        return self.model


def checked_shapes(sm, ranked, queries, doc_text, tok, model, settings, identity, label, cache_dir) -> dict:
    """The shape check of this shard's first query's first pairs (stops when the shapes are not the pinned
    architecture's); its record (None: a shard without queries scores nothing), with its seconds."""
    t0 = time.perf_counter()
    if not ranked:
        return {"record": None, "from_cache": False, "seconds": 0.0}
    qid = next(iter(ranked))
    docs = ranked[qid][:sm.params.ce["shape_check_pairs"]]
    qs, ds = [queries[qid]] * len(docs), [doc_text[d] for d in docs]
    cached = shape_check.cache_file(cache_dir, identity, settings, qs, ds)
    shapes, from_cache = shape_check.measured_shapes(tok, model, qs, ds, settings, cached,
                                                     fresh=bool(sm.params.fresh))
    arch = read_json(sm.input.model_pins)["cross_encoder"]["architecture"]  # the verified config.json's
    expected = shape_check.expected_shapes(len(docs), settings.max_length, arch)
    record = shape_check.checked_record(shapes, expected, label, qid, docs)
    log.info("shape check of %s passed: %s", label, {k: record[k] for k in expected})
    return {"record": record, "from_cache": from_cache, "seconds": round(time.perf_counter() - t0, 3)}


def shard_inputs(sm, shard: int, shards: int) -> tuple[dict, dict, dict]:
    """This shard's candidate lists, the queries and the text of only this shard's candidate documents, each
    data file re-verified against its pin before it is read."""
    ranked_all = candidates.read_candidates(sm.input.candidates)
    mine = scoring.assign_shards(list(ranked_all), shards)[shard]
    ranked = {q: ranked_all[q] for q in mine}
    pins = DataPins.load(sm.input.data_pins)
    queries = beir.read_queries(verified_path(sm.input.queries, "queries.jsonl", pins))
    corpus = beir.read_corpus(verified_path(sm.input.corpus, "corpus.jsonl", pins))
    return ranked, queries, {d: corpus[d].full_text for q in ranked for d in ranked[q]}


def main(sm):
    import torch

    t_stage = time.perf_counter()
    settings = scoring.ScoringSettings.from_config(sm.params.ce)
    # verified strict CNR; threads are speed only
    mode = scoring_model.setup_torch(settings, threads=sm.threads)
    shard, shards = int(sm.params.shard), int(sm.params.shards)
    ranked, queries, doc_text = shard_inputs(sm, shard, shards)
    model_dir = Path(sm.input.model).parent
    meta = models.load_model_meta(model_dir)  # re-verifies every file before anything is loaded
    model_pins = read_json(sm.input.model_pins)
    models.check_pinned(meta, model_pins, sm.input.model_pins)  # ... against the lock
    models.check_architecture(model_pins["cross_encoder"], model_dir, meta["identity"])  # ... its config.json
    derived, identity = backends.scorer_of(sm.input, settings, model_dir, meta)
    label = scoring.pairs_model(meta, identity)
    versions = scoring.library_versions(settings)
    cache_dir = Path(sm.params.cache) / scoring.CACHE_FORMAT / meta["identity_sha256"][:16]

    t0 = time.perf_counter()
    tok = scoring_model.load_tokenizer(model_dir)
    t_tok = time.perf_counter() - t0
    model = LoadedOnce(lambda: scoring_model.load_scorer(model_dir, settings, sm.threads, derived))
    shapes = checked_shapes(sm, ranked, queries, doc_text, tok, model, settings, identity, label, cache_dir)
    n_pairs = sum(len(v) for v in ranked.values())
    with tqdm(total=n_pairs, desc=f"cross-encoder pairs (shard {shard + 1}/{shards})", unit="pair") as bar:
        rows, counts = scoring.score_run(ranked, queries, doc_text, tok, model, settings,
                                         identity, versions, scoring.ScoreCache(cache_dir),
                                         progress=bar.update, after_query=numerics.malloc_trim,
                                         fresh=bool(sm.params.fresh))
    write_tsv(sm.output.pairs, scoring.PAIR_HEADER,
              [(r["qid"], r["doc_id"], r["r0"], r["logit"], r["query_tokens"], r["doc_tokens"],
                r["total_tokens"], r["truncated"], r["batch"], label) for r in rows])
    stage = time.perf_counter() - t_stage
    measurements = {
        "_note": "measurements of this execution; NOT reproducible byte for byte (timings, memory)",
        "shard": shard, "shards": shards, "queries": len(ranked), "pairs": len(rows),
        "pairs_inferred": counts.pairs_inferred, "pairs_from_cache": counts.pairs_from_cache,
        "truncated_pairs": sum(1 for r in rows if r["truncated"]),
        "fresh_inference": bool(sm.params.fresh), "cache_entries_verified": counts.cache_entries_verified,
        "threads": torch.get_num_threads(), "threads_granted_by_scheduler": sm.threads,
        "numerics": {**mode, "mmap_threshold_bytes": PROCESS["mmap_threshold_bytes"]},
        "settings": settings.as_dict(), "versions": versions, "machine": machine.facts(),
        "tokenizer_load_seconds": round(t_tok, 3), "model_load_seconds": round(model.seconds, 3),
        "inference_seconds": round(counts.inference_seconds, 3), "stage_seconds": round(stage, 3),
        "tokens_inferred": counts.tokens_inferred, "padded_tokens_inferred": counts.padded_tokens_inferred,
        "useful_gflop_inferred": scoring.useful_gflop(counts.inferred_lengths,
                                                      model_pins["cross_encoder"]["architecture"]),
        "peak_rss_mib": round(peak_rss_mib(), 1),
        "shape_check": shapes["record"], "shape_check_from_cache": shapes["from_cache"],
        "shape_check_seconds": shapes["seconds"],
    }
    write_json(sm.output.measurements, measurements)
    log.info("shard %d/%d: %d queries, %d pairs (%d inferred, %d cached) in %.1f s; %d threads, MKL CNR %s, "
             "peak RSS %.0f MiB", shard + 1, shards, len(ranked), len(rows), counts.pairs_inferred,
             counts.pairs_from_cache, stage, measurements["threads"], mode["mkl_cnr"],
             measurements["peak_rss_mib"])


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
