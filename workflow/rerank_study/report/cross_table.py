"""The cross-study table: one row per study of a multi-study invocation (rule ``cross_study``), read from each
study's audited run: the three method means, the primary delta with its grouped interval, n queries, n groups,
what the reranker is (its kind, identity and sha256: a cross-encoder's weights or a run file's bytes), the
backend that scored it (docs/backends.md) and the audit verdict. Its retention section: one row per study
scored by a derived backend, against the invocation's fp32 torch study of the same model, inputs and
settings. Its section "Across datasets": the invocation's declared synthesis (synthesis.md, as its passing
audit lists it), or a line saying none is declared."""

from __future__ import annotations

from collections.abc import Mapping

from ..core.errors import PipelineError
from ..core.fileio import json_equal
from ..repro.retention_run import scoring_but_backend, settings_but_backend
from .report_html import IMAGE

CROSS_STUDY_COLUMNS = ("study", "dataset", "reranker_kind", "reranker", "reranker_sha256", "backend",
                       "scorer", "run",
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
            "backend": backend_of(manifest),
            "scorer": summary["scorer"], "run": run, "n_queries": summary["n_queries"],
            "n_groups": summary["n_groups"],
            "rrf_mean": methods["rrf"]["mean"], "ce_mean": methods["ce"]["mean"],
            "blend_mean": methods["blend"]["mean"],
            "primary": f"{primary} ({summary['metric']})", "primary_delta": comp["mean"],
            "primary_grouped_lo": lo, "primary_grouped_hi": hi,
            "audit": "PASSED" if audit.get("ok") is True else "FAILED"}


def backend_of(manifest: dict) -> str:
    """What scored a run: a derived backend (its settings name it), ``torch`` (the model itself), or ``none``
    (a run file: nothing was scored)."""
    settings = manifest.get("settings") or {}
    return settings.get("backend", "torch") if "max_length" in settings else "none"


RETENTION_COLUMNS = ("study", "backend", "torch_study", "torch_primary_mean", "torch_grouped_lo",
                     "torch_grouped_hi", "primary_mean", "grouped_lo", "grouped_hi", "delta_difference",
                     "delta_difference_lo", "delta_difference_hi", "verdicts_changed", "conclusion_retained",
                     "kendall_tau_b_min", "kendall_tau_b_median", "top10_overlap_min", "top10_overlap_mean",
                     "max_abs_delta_logit", "note")


def torch_twin(i: int, manifests: list[dict], input_keys, scoring: list) -> int | None:
    """The first other study of the invocation that is study ``i``'s model scored by torch on the same
    inputs (their manifests' sha256 of ``input_keys``) with the same settings (the manifest's, and the scoring
    settings of ``scoring[j]``, each study's measurements/scoring.json ``settings``) but the backend (and the
    study's name), compared type-strictly as the retention compares them; or None: a torch study of other
    settings is passed over, not taken and then refused."""
    def inputs(m):
        return {a["key"]: a["sha256"] for a in m["artefacts"] if a["key"] in input_keys}

    def same(j):
        m, me = manifests[j], manifests[i]
        return (m["model_identity"] == me["model_identity"]
                and m["model_weights_sha256"] == me["model_weights_sha256"] and inputs(m) == inputs(me)
                and json_equal(settings_but_backend(m["settings"]), settings_but_backend(me["settings"]))
                and isinstance(scoring[j], Mapping) and isinstance(scoring[i], Mapping)
                and json_equal(scoring_but_backend(scoring[j], ""), scoring_but_backend(scoring[i], "")))

    return next((j for j in range(len(manifests)) if j != i and backend_of(manifests[j]) == "torch"
                 and same(j)), None)


def retention_row(study: str, backend: str, torch_study: str | None, rec: dict | None) -> dict:
    """One derived study's line of the retention section (``rec``: rerank_study.repro.retention_run.record);
    with
    no torch study of the same model, inputs and settings in the invocation, a line that says so."""
    row = dict.fromkeys(RETENTION_COLUMNS)
    row.update(study=study, backend=backend, torch_study=torch_study)
    if rec is None:
        row["note"] = ("no fp32 torch study of the same model, inputs and settings in this invocation: "
                       "add one to studies=[...] (the same study file without the backend)")
        return row
    c, a = rec["conclusion"], rec["agreement"]
    ref, oth, d = c["reference"], c["other"], c["difference"]
    row.update(torch_primary_mean=ref["primary_mean"], torch_grouped_lo=ref["grouped_interval"][0],
               torch_grouped_hi=ref["grouped_interval"][1], primary_mean=oth["primary_mean"],
               grouped_lo=oth["grouped_interval"][0], grouped_hi=oth["grouped_interval"][1],
               delta_difference=d["mean"], delta_difference_lo=d["grouped_interval"][0],
               delta_difference_hi=d["grouped_interval"][1],
               verdicts_changed=", ".join(c["verdicts_changed"]) or "none",
               conclusion_retained=bool(c["conclusion_retained"]),
               kendall_tau_b_min=a["kendall_tau_b"]["min"], kendall_tau_b_median=a["kendall_tau_b"]["median"],
               top10_overlap_min=a["top10_overlap"]["min"], top10_overlap_mean=a["top10_overlap"]["mean"],
               max_abs_delta_logit=a["max_abs_delta_logit"], note="")
    return row


ACROSS_HEADING = "## Across datasets"
NO_SYNTHESIS = ("No synthesis across datasets is declared for this invocation (config "
                "`synthesis.weighting` is empty): the table above sets the studies side by side and gives "
                "no pooled answer. Declare one before any result to have it here (docs/across-datasets.md).")


def across_datasets_section(synthesis_md: str | None, folder: str, source: str = "synthesis.md") -> str:
    """The cross-study report's section "Across datasets": with a declared synthesis, a line naming its
    files, then synthesis.md's text (``synthesis_md``, read from ``source``) with its figure links made
    relative to the cross-study report (``folder``: the synthesis folder relative to it); with none (None),
    a line that says so."""
    if synthesis_md is None:
        return f"\n{ACROSS_HEADING}\n\n{NO_SYNTHESIS}\n"
    lines = synthesis_md.rstrip("\n").split("\n")
    if lines[0] != ACROSS_HEADING:
        raise PipelineError(f"{source} does not begin with {ACROSS_HEADING!r} (found {lines[0][:60]!r}): "
                            "it is not a synthesis's section. Fix: rerun `snakemake synthesis` with this "
                            "invocation's --config and --configfile.")

    def rebased(line: str) -> str:
        m = IMAGE.fullmatch(line.strip())
        return f"![{m.group(1)}]({folder}/{m.group(2)})" if m else line

    named = (f"The declared synthesis of this invocation's studies: [synthesis.md]({folder}/synthesis.md), "
             f"one page [synthesis.html]({folder}/synthesis.html), every number in "
             f"[synthesis.json]({folder}/synthesis.json), its audit [audit.json]({folder}/audit.json).")
    return "\n" + "\n".join([lines[0], "", named, *(rebased(x) for x in lines[1:])]) + "\n"
