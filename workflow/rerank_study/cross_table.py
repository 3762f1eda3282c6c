"""The cross-study table: one row per study of a multi-study invocation (rule ``cross_study``), read from each
study's audited run: the three method means, the primary delta with its grouped interval, n queries, n groups,
what the reranker is (its kind, identity and sha256: a cross-encoder's weights or a run file's bytes) and the
audit verdict."""

from __future__ import annotations

CROSS_STUDY_COLUMNS = ("study", "dataset", "reranker_kind", "reranker", "reranker_sha256", "scorer", "run",
                       "n_queries", "n_groups", "rrf_mean", "ce_mean", "blend_mean", "primary",
                       "primary_delta",
                       "primary_grouped_lo", "primary_grouped_hi", "audit")


def cross_study_row(cfg: dict, summary: dict, audit: dict, run: str, manifest: dict) -> dict:
    """One study's line of the cross-study table, read from its summary.json, audit.json and manifest.json
    (the reranker's sha256: a cross-encoder's weights, or a run file's bytes)."""
    primary = summary["primary"]
    comp = summary["comparisons"][primary]
    lo, hi = comp["grouped_interval"]
    methods = summary["methods"]
    st = cfg["study"]
    return {"study": st["name"], "dataset": st["dataset"], "reranker_kind": st["reranker_kind"],
            "reranker": manifest["model_identity"], "reranker_sha256": manifest["model_weights_sha256"],
            "scorer": summary["scorer"], "run": run, "n_queries": summary["n_queries"],
            "n_groups": summary["n_groups"],
            "rrf_mean": methods["rrf"]["mean"], "ce_mean": methods["ce"]["mean"],
            "blend_mean": methods["blend"]["mean"],
            "primary": f"{primary} ({summary['metric']})", "primary_delta": comp["mean"],
            "primary_grouped_lo": lo, "primary_grouped_hi": hi,
            "audit": "PASSED" if audit.get("ok") is True else "FAILED"}
