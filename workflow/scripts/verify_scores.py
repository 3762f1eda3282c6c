"""Rule verify_scores: re-infer a seeded sample of the run's scoring batches from scratch, exactly those
batches (the score cache is neither read nor written) and require bit equality with pairs.tsv. Writes the
verification record (deterministic) and its timing (a measurement).

The batches are rebuilt by the same code as the scoring (``scoring.score_run``: per query,
token-length-sorted chunks), in the same numeric mode, set FIRST, before torch is imported."""

from rerank_study.reranker import numerics

PROCESS = numerics.configure_process()  # MKL_CBWR=AUTO,STRICT ... (before torch), as score_shard

import logging  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from rerank_study.core.errors import PipelineError  # noqa: E402
from rerank_study.core.fileio import fmt_float, read_json, read_tsv, write_json  # noqa: E402
from rerank_study.core.rule import peak_rss_mib, run  # noqa: E402
from rerank_study.data import beir
from rerank_study.data.acquire import verified_path  # noqa: E402
from rerank_study.data.pins import DataPins  # noqa: E402
from rerank_study.rankings import candidates
from rerank_study.reranker import backends, models, scoring, scoring_model, verification  # noqa: E402

log = logging.getLogger("verify_scores")


def main(sm):
    t0 = time.perf_counter()
    settings = scoring.ScoringSettings.from_config(sm.params.ce)
    # verified strict CNR; threads are speed only
    mode = scoring_model.setup_torch(settings, threads=sm.threads)
    recorded = {(r["qid"], r["doc_id"]): (int(r["batch"]), float(r["logit"]))
                for r in read_tsv(sm.input.pairs)}
    k = None if sm.params.every_batch else sm.params.batches
    sample = verification.sample_batches(((q, b) for (q, _), (b, _) in recorded.items()), sm.params.seed, k)
    qids = list(dict.fromkeys(q for q, _ in sample))
    ranked = {q: lst for q, lst in candidates.read_candidates(sm.input.candidates).items() if q in set(qids)}
    missing = [q for q in qids if q not in ranked]
    if missing:
        raise PipelineError(f"{sm.input.pairs} names queries that {sm.input.candidates} does not hold: "
                            f"{missing[:5]}")
    pins = DataPins.load(sm.input.data_pins)
    corpus = beir.read_corpus(verified_path(sm.input.corpus, "corpus.jsonl", pins))
    queries = beir.read_queries(verified_path(sm.input.queries, "queries.jsonl", pins))
    model_dir = Path(sm.input.model).parent
    meta = models.load_model_meta(model_dir)
    models.check_pinned(meta, read_json(sm.input.model_pins), sm.input.model_pins)
    derived, identity = backends.scorer_of(sm.input, settings, model_dir, meta)
    tok = scoring_model.load_tokenizer(model_dir)
    rows, counts = scoring.reinfer_batches(ranked, queries,
                                           {d: corpus[d].full_text for q in ranked for d in ranked[q]}, tok,
                                           lambda: scoring_model.load_scorer(model_dir, settings, sm.threads,
                                                                             derived), settings,
                                           identity, scoring.library_versions(settings), sample)
    again = {(r["qid"], r["doc_id"]): (r["batch"], r["logit"]) for r in rows}
    pairs = verification.compare(sample, recorded, again)
    unequal = [p for p in pairs if not p["equal"]]
    write_json(sm.output.record, {
        "seed": sm.params.seed, "k": k, "sample": [list(x) for x in sample], "queries": qids,
        "pairs": [{**p, "logit": fmt_float(p["logit"]),
                   "reinferred_logit": None if p["reinferred_logit"] is None
                   else fmt_float(p["reinferred_logit"])}
                  for p in pairs],
        "pairs_compared": len(pairs), "all_equal": not unequal,
        "rule": "sample = the k batches with the smallest sha256('<seed>\\t<qid>\\t<batch>'); each "
                "re-inferred from scratch (exactly that batch, planned from its whole query as the scoring "
                "plans it; no cache) and compared bit for bit "
                "with pairs.tsv",
    })
    write_json(sm.output.measurements, {
        "_note": "measurements of this execution; NOT reproducible byte for byte", "batches": len(sample),
        "pairs_inferred": counts.pairs_inferred, "inference_seconds": round(counts.inference_seconds, 3),
        "stage_seconds": round(time.perf_counter() - t0, 3), "peak_rss_mib": round(peak_rss_mib(), 1),
        "threads": sm.threads, "numerics": mode["mkl_cnr"]})
    if unequal:
        log.error("re-inferred pairs that differ from %s:\n%s", sm.input.pairs, "\n".join(map(str, unequal)))
        raise PipelineError(f"RE-INFERENCE DIFFERS from {sm.input.pairs} in {len(unequal)} of {len(pairs)} "
                            f"pairs (first: {unequal[0]}): the recorded scores are not what the pinned "
                            f"scorer gives. Delete the score cache ({sm.params.cache}) and rerun "
                            "the score rule.")
    log.info("re-inferred %d sampled batches (%d pairs) from scratch: all bit-identical to pairs.tsv",
             len(sample), len(pairs))


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
