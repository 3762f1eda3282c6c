"""Rule score: cross-encoder logits for every (query, candidate) pair of the run.

Batches: per query, candidate order, consecutive chunks of ce.batch_size. Each batch's logits
are cached under resources/cache/ce_scores by (model identity, settings, library versions,
batch pair texts); an unchanged configuration re-run does no inference (and loads no model
weights). Measurements (timings, peak RSS) go to a separate, explicitly non-deterministic file.
"""

import json
import logging
import time
from pathlib import Path

from tqdm import tqdm

from rerank_study import beir, candidates, models, scoring
from rerank_study.acquire import DataPins, verified_path
from rerank_study.fileio import atomic_write_text, fmt_float, read_json, write_json, write_tsv
from rerank_study.rule import peak_rss_mib, run_rule

log = logging.getLogger("score")
PAIR_HEADER = ("qid", "doc_id", "r0", "logit", "query_tokens", "doc_tokens", "total_tokens", "truncated",
               "batch", "model")


def main(sm):
    t_stage = time.perf_counter()
    c = sm.params.ce
    settings = scoring.ScoringSettings(c["max_length"], c["truncation"], c["batch_size"], c["threads"], c["seed"],
                                       c["dtype"])
    scoring.setup_torch(settings)
    import torch

    pins = DataPins.load(sm.params.pins)
    corpus = beir.read_corpus(verified_path(sm.input.corpus, "corpus.jsonl", pins))
    queries = beir.read_queries(verified_path(sm.input.queries, "queries.jsonl", pins))
    ranked = candidates.read_candidates(sm.input.candidates)
    model_dir = Path(sm.input.model).parent
    meta = models.load_model_meta(model_dir)  # re-verifies every file before anything is loaded
    identity = meta["identity"]
    label = f"{identity} weights-sha256:{meta['weights_sha256']}"
    versions = scoring.library_versions()
    cache_dir = Path(sm.params.cache) / meta["identity_sha256"][:16]

    n_pairs = sum(len(v) for v in ranked.values())
    tok = model = None
    t_load = t_infer = 0.0
    hits = inferred = 0
    rows = []
    t0 = time.perf_counter()
    tok = scoring.load_tokenizer(model_dir)  # the weights are loaded only if a batch is not cached
    t_load += time.perf_counter() - t0
    with tqdm(total=n_pairs, desc="cross-encoder pairs", unit="pair") as bar:
        for qid, docs in ranked.items():
            qtext = queries[qid]
            dtexts = [corpus[d].full_text for d in docs]
            stats = scoring.token_stats(tok, [qtext] * len(docs), dtexts, settings.max_length)
            logits: list[float] = []
            for b, idx in enumerate(scoring.chunks(list(range(len(docs))), settings.batch_size)):
                qs, ds = [qtext] * len(idx), [dtexts[i] for i in idx]
                key = scoring.batch_cache_key(identity, settings, versions, qs, ds)
                cfile = cache_dir / key[:2] / f"{key}.json"
                if cfile.exists():
                    cached = read_json(cfile)
                    batch_logits = [float(x) for x in cached["logits"]]
                    hits += len(idx)
                else:
                    if model is None:
                        t0 = time.perf_counter()
                        model = scoring.load_model(model_dir)
                        t_load += time.perf_counter() - t0
                    t0 = time.perf_counter()
                    batch_logits = scoring.score_batch(tok, model, qs, ds, settings)
                    t_infer += time.perf_counter() - t0
                    inferred += len(idx)
                    write_json(cfile, {"logits": [fmt_float(x) for x in batch_logits], "key": key})
                logits.extend(batch_logits)
                for i, lg in zip(idx, batch_logits):
                    s = stats[i]
                    rows.append((qid, docs[i], i + 1, lg, s["query_tokens"], s["doc_tokens"], s["total_tokens"],
                                 s["truncated"], b, label))
                bar.update(len(idx))
    write_tsv(sm.output.pairs, PAIR_HEADER, rows)

    # shape audit on the first pairs, padded to max_length for this check only (not part of the budget);
    # cached like the scores, so an unchanged re-run loads no model weights at all
    first_q = next(iter(ranked))
    n_check = min(sm.params.ce["shape_check_pairs"], len(ranked[first_q]))
    check_q = [queries[first_q]] * n_check
    check_d = [corpus[d].full_text for d in ranked[first_q][:n_check]]
    skey = "shape-" + scoring.batch_cache_key(identity, settings, versions, check_q, check_d)
    sfile = cache_dir / "shapes" / f"{skey}.json"
    if sfile.exists():
        shapes = read_json(sfile)
    else:
        if model is None:
            t0 = time.perf_counter()
            model = scoring.load_model(model_dir)
            t_load += time.perf_counter() - t0
        shapes = scoring.shape_check(tok, model, check_q, check_d, settings)
        shapes["hidden_size"] = model.config.hidden_size
        write_json(sfile, shapes)
    hidden = sm.params.hidden_size  # from the pinned architecture, not from the loaded model
    expected = {"input_ids": [n_check, settings.max_length], "last_hidden_state": [n_check, settings.max_length, hidden],
                "logits": [n_check, 1]}
    shapes.update({"expected": expected, "ok": all(shapes[k] == v for k, v in expected.items()),
                   "model": label, "qid": first_q, "doc_ids": ranked[first_q][:n_check]})
    write_json(sm.output.shape_check, shapes)
    if not shapes["ok"]:
        raise RuntimeError(f"shape audit failed: {shapes}")

    n_trunc = sum(1 for r in rows if r[7])
    stage = time.perf_counter() - t_stage
    measurements = {
        "_note": "measurements of this execution; NOT reproducible byte for byte (timings, memory)",
        "model": label, "kind": meta["kind"], "pairs": len(rows), "pairs_inferred": inferred, "pairs_from_cache": hits,
        "truncated_pairs": n_trunc, "threads": torch.get_num_threads(), "settings": settings.as_dict(),
        "versions": versions, "model_load_seconds": round(t_load, 3), "inference_seconds": round(t_infer, 3),
        "stage_seconds": round(stage, 3),
        "pairs_per_second_inference": round(inferred / t_infer, 3) if t_infer > 0 else None,
        "peak_rss_mib": round(peak_rss_mib(), 1),
    }
    write_json(sm.output.measurements, measurements)
    log.info("scored %d pairs (%d inferred, %d cached, %d truncated) in %.1f s; %s", len(rows), inferred, hits, n_trunc,
             stage, json.dumps({k: measurements[k] for k in ("inference_seconds", "peak_rss_mib")}))


run_rule(snakemake, main)  # noqa: F821
