"""Rule shape_check: forward the first ``ce.shape_check_pairs`` pairs of the run padded to max_length (this
check only) and compare the tensor shapes with the pinned architecture; cached like the scores (an unchanged
rerun loads no weights). The numeric mode is set FIRST, before torch is imported (the check runs the
model)."""

from rerank_study import numerics

PROCESS = numerics.configure_process()  # MKL_CBWR=AUTO,STRICT ... (before torch)

import logging  # noqa: E402
from pathlib import Path  # noqa: E402

from rerank_study import beir, candidates, models, scoring, scoring_model  # noqa: E402
from rerank_study.acquire import verified_path  # noqa: E402
from rerank_study.errors import PipelineError  # noqa: E402
from rerank_study.fileio import read_json, write_json  # noqa: E402
from rerank_study.pins import DataPins  # noqa: E402
from rerank_study.rule import run  # noqa: E402

log = logging.getLogger("shape_check")


def measured_shapes(model_dir: Path, qs, ds, settings, cache_file: Path) -> dict:
    """The shapes of one forward (from the cache when this exact check ran before)."""
    if cache_file.exists():
        return read_json(cache_file)
    model = scoring_model.load_model(model_dir)
    shapes = scoring_model.shape_check(scoring_model.load_tokenizer(model_dir), model, qs, ds, settings)
    shapes["hidden_size"] = model.config.hidden_size  # what the loaded model says (compared below)
    write_json(cache_file, shapes)
    return shapes


def main(sm):
    settings = scoring.ScoringSettings.from_config(sm.params.ce)
    scoring_model.setup_torch(settings, threads=sm.threads)
    ranked = candidates.read_candidates(sm.input.candidates)
    pins = DataPins.load(sm.input.data_pins)
    corpus = beir.read_corpus(verified_path(sm.input.corpus, "corpus.jsonl", pins))
    queries = beir.read_queries(verified_path(sm.input.queries, "queries.jsonl", pins))
    model_dir = Path(sm.input.model).parent
    meta = models.load_model_meta(model_dir)  # re-verifies every file before anything is loaded
    label = f"{meta['identity']} weights-sha256:{meta['weights_sha256']}"
    first_q = next(iter(ranked))
    n = min(sm.params.ce["shape_check_pairs"], len(ranked[first_q]))
    qs, ds = [queries[first_q]] * n, [corpus[d].full_text for d in ranked[first_q][:n]]
    key = scoring.batch_cache_key(meta["identity"], settings, scoring.library_versions(), qs, ds)
    cache_file = (Path(sm.params.cache) / scoring.CACHE_FORMAT / meta["identity_sha256"][:16] / "shapes"
                  / f"shape-{key}.json")
    shapes = measured_shapes(model_dir, qs, ds, settings, cache_file)
    # pinned = the verified config.json's
    arch = read_json(sm.input.model_pins)["cross_encoder"]["architecture"]
    expected = {"input_ids": [n, settings.max_length], "last_hidden_state": [n, settings.max_length,
                                                                             arch["hidden_size"]],
                "logits": [n, arch["num_labels"]]}
    shapes.update({"expected": expected, "ok": all(shapes[k] == v for k, v in expected.items()),
                   "model": label, "qid": first_q, "doc_ids": ranked[first_q][:n]})
    write_json(sm.output[0], shapes)
    if not shapes["ok"]:
        raise PipelineError(f"SHAPE CHECK FAILED for {label}: found {shapes}; expected {shapes['expected']}. "
                            "The model is not the pinned architecture; nothing was published.")
    log.info("shape check of %s passed: %s", label, {k: shapes[k] for k in expected})


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
