"""Rule record_opening: append this opening's 'completed' line to the ledger (its 'started' line was
written before the sealed judgements were copied); a re-opening must reproduce the first completed
opening byte for byte, from freshly inferred scores."""

import datetime as dt
import logging

from rerank_study.core.errors import PipelineError
from rerank_study.core.fileio import read_json, sha256_file, write_json
from rerank_study.core.rule import run
from rerank_study.repro import audited
from rerank_study.seal import ledger
from rerank_study.seal.locations import LEDGER

log = logging.getLogger("confirm")


def scoring_entry(scoring: dict) -> dict:
    """How the opening's scores were made: a cross-encoder's fresh inference counts, or (a run-file
    reranker's record) the frozen run file that was read, nothing inferred."""
    if "identity" in scoring:
        return {k: scoring[k] for k in ("file", "sha256", "pairs", "queries")}
    return {k: scoring.get(k) for k in ("fresh_inference", "pairs", "pairs_inferred", "pairs_from_cache",
                                        "cache_entries_verified")}


def completed_entry(sm, u: dict, files: dict, started: dict, arte: dict) -> dict:
    """The ledger's 'completed' record of this opening: what ran, on what, and its primary result (from the
    files its audit vouches for: ``files``)."""
    manifest, summary, scoring = (read_json(files[k]) for k in ("manifest", "summary", "scoring"))
    prim = summary["comparisons"][summary["primary"]]
    return {
        "event": ledger.COMPLETED,
        "time": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        "protocol_sha256": u["sha256"],
        "opening": u["opening"],
        "run": sm.params.run,
        "started_line": started["line"],
        "sealed_set": started["entry"]["sealed_set"],
        "started_time": started["entry"]["time"],
        "labels": u["labels"],
        "code_commit": u["git"]["commit"],
        "code_uncommitted_paths": u["git"]["dirty"],
        "code_sha256": manifest["code_sha256"],
        "method_sha256": u["method_sha256"],
        "model_identity": manifest["model_identity"],
        "model_weights_sha256": manifest["model_weights_sha256"],
        "data_sha256": {k: arte[k] for k in ("corpus", "queries", "qrels_confirm")},
        "candidates_sha256": arte["candidates"],
        "split_confirm_sha256": arte["split_confirm"],
        "summary_sha256": sha256_file(files["summary"]),
        "audit_sha256": sha256_file(files["audit"]),
        "artefacts_sha256": arte,
        "scoring": scoring_entry(scoring),
        "primary": {"comparison": summary["primary"], "mean": prim["mean"],
                    "grouped_interval": prim["grouped_interval"], "query_interval": prim["query_interval"],
                    "reaches_threshold": prim["mean_reaches_threshold"], "threshold": summary["threshold"]},
    }


def audited_files(sm) -> dict:
    """audit.json, the manifest it vouches for, and the summary and scoring record as that manifest lists
    them, each read once; a failed audit, or a file changed after it, is not recorded as completed."""
    try:
        audit, verdict = audited.verdict_of(sm.input.audit)
    except PipelineError as exc:
        raise PipelineError(f"{exc}: the opening's 'started' line stays the only record; it is not recorded "
                            "as completed") from None
    manifest = audited.audited_manifest(verdict, sm.input.manifest, "this opening")
    keys = {a["key"] for a in read_json(manifest)["artefacts"]}
    scoring_key = "reranker_run" if "reranker_run" in keys else "scoring_measurements"  # the reranker's kind
    return {"audit": audit, "manifest": manifest,
            "summary": audited.listed(manifest, "summary", sm.input.summary, "this opening"),
            "scoring": audited.listed(manifest, scoring_key, sm.input.scoring, "this opening")}


def main(sm):
    u = sm.params.unseal
    started = read_json(sm.input.started)
    files = audited_files(sm)
    arte = {a["key"]: a["sha256"] for a in read_json(files["manifest"])["artefacts"] if a["deterministic"]}
    entry = completed_entry(sm, u, files, started, arte)
    differences = []
    if u["previous"]:
        first = u["previous"][0]
        differences = sorted(k for k in set(first["artefacts_sha256"]) | set(arte)
                             if first["artefacts_sha256"].get(k) != arte.get(k))
        entry["reproduces_opening"] = first["opening"]
        entry["reproduced_byte_identical"] = not differences
        entry["differences"] = differences
    ledger.append_ledger(sm.params.lockdir, entry)
    entry["ledger_commit"] = ledger.commit_ledger(sm.params.root, sm.params.lockdir,
                                                  f"seal: opening {u['opening']} of protocol "
                                                  f"{u['sha256'][:12]} completed")
    write_json(sm.output[0], entry)
    if differences:
        raise PipelineError(f"RE-OPENING {u['opening']} DID NOT REPRODUCE opening {first['opening']}: "
                            f"artefacts differ: {differences}. Recorded in the ledger; the first result "
                            "stands and was not touched.")
    if u["previous"]:
        log.warning("RE-OPENING %d REPRODUCED opening %d byte for byte (%d deterministic artefacts, scores "
                    "inferred fresh); the first result was not touched", u["opening"],
                    u["previous"][0]["opening"], len(arte))
    else:
        log.warning("CONFIRMATION OPENED (opening %d of protocol %s), recorded in %s/%s and committed: push "
                    "it now (git push), and tag it", u["opening"], u["sha256"], sm.params.lockdir, LEDGER)


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
