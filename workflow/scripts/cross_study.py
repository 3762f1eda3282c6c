"""Rule cross_study: one row per study (pandas) -> TSV (the table), Parquet and Markdown copies; then the
retention section (rerank_study.repro.retention_run): each study of a derived backend against the
invocation's fp32
torch study of the same model, inputs and settings -> cross_study_retention.tsv and a section of the Markdown.

Every study's run must have passed its audit (a cross-encoder's with its re-inference of a fresh sample), and
the audit must vouch for the files the row is read from: its manifest_sha256 is the manifest's (read once),
and the summary is the one that manifest lists. A failed audit, an audit that re-inferred no fresh sample,
or a manifest or summary changed after its audit, stops the table, naming the study and the file. A derived
study without a torch twin in the invocation gets a retention row that says so (never a silent gap).

Its section "Across datasets": when the invocation declares a synthesis (config synthesis.weighting; the
rule then has its synthesis.md and audit.json as inputs), synthesis.md's text, taken only when the
synthesis's audit passed and lists that file's sha256; otherwise a line saying no synthesis is declared (the
table never fails for want of one)."""

import os

from rerank_study.core.errors import PipelineError
from rerank_study.core.fileio import atomic_path, atomic_write_text, input_bytes, read_json
from rerank_study.core.names import CROSS_ENCODER
from rerank_study.core.rule import run
from rerank_study.data.pins import verify_against
from rerank_study.report.cross_table import (
    CROSS_STUDY_COLUMNS,
    RETENTION_COLUMNS,
    across_datasets_section,
    backend_of,
    cross_study_row,
    retention_row,
    torch_twin,
)
from rerank_study.repro import audited, retention_run


def study_rows(sm) -> tuple[list[dict], list[dict]]:
    """Each study's row and its audited manifest."""
    rows, manifests = [], []
    for cfg, run_name, summary, audit, manifest in zip(sm.params.studies, sm.params.runs, sm.input.summaries,
                                                       sm.input.audits, sm.input.manifests):
        name = f"study {cfg['study']['name']!r}"
        try:
            _, verdict = audited.verdict_of(audit)
        except PipelineError as exc:
            raise PipelineError(f"STUDY {cfg['study']['name']!r}: {exc}; no cross-study table is written.") \
                from None
        problem = audited.reinfer_problem(verdict) if cfg["study"]["reranker_kind"] == CROSS_ENCODER else None
        if problem:
            raise PipelineError(f"STUDY {cfg['study']['name']!r}: {audit}: {problem}: its logits are not "
                                "vouched for; no cross-study table is written. Fix: let the DAG's rule audit "
                                "write it (snakemake, without --reinfer-seed).")
        man = audited.audited_manifest(verdict, manifest, name)
        summ = audited.listed(man, "summary", summary, name)
        manifests.append(read_json(man))
        rows.append(cross_study_row(cfg, read_json(summ), verdict, run_name, manifests[-1]))
    return rows, manifests


def retention_rows(sm, manifests: list[dict]) -> list[dict]:
    """A row per derived study: its retention against its torch twin (a stop when the two are not what they
    claim), or a row saying there is no twin."""
    names = [c["study"]["name"] for c in sm.params.studies]

    def side(i):  # a scored study (a derived one, or its torch twin): its place among the scored inputs
        k = list(sm.params.scored).index(names[i])
        files = {"audit": sm.input.audits[i], "manifest": sm.input.manifests[i],
                 "per_query": sm.input.per_query[k], "pairs": sm.input.pairs[k], "groups": sm.input.groups[k],
                 "scoring": sm.input.scoring[k]}
        return retention_run.side(files, f"{names[i]}/{sm.params.runs[i]}")

    def scoring(i):  # a scored study's scoring settings, to choose a twin by (the chosen one's are checked)
        if names[i] not in sm.params.scored:
            return None
        return read_json(sm.input.scoring[list(sm.params.scored).index(names[i])]).get("settings")

    settings = [scoring(i) for i in range(len(manifests))]
    out = []
    for i, man in enumerate(manifests):
        backend = backend_of(man)
        if backend in ("torch", "none"):
            continue
        j = torch_twin(i, manifests, retention_run.INPUT_KEYS, settings)
        rec = None if j is None else retention_run.record(
            side(j), side(i), backend, sm.input.derived_pins[i],
            [f"{names[j]}/{sm.params.runs[j]}", f"{names[i]}/{sm.params.runs[i]}"])
        out.append(retention_row(names[i], backend, None if j is None else names[j], rec))
    return out


def synthesis_section(sm) -> str:
    """The section "Across datasets": the declared synthesis's synthesis.md as its passing audit lists it."""
    if not sm.input.synthesis:
        return across_datasets_section(None, "")
    md, audit = sm.input.synthesis
    fix = ("Fix: rerun `snakemake synthesis` with this invocation's --config and --configfile, or leave "
           "synthesis.weighting undeclared for a table without it.")
    try:
        _, verdict = audited.verdict_of(audit)
    except PipelineError as exc:
        raise PipelineError(f"SYNTHESIS {os.path.dirname(md)}: {exc}; no cross-study table is written. "
                            f"{fix}") from None
    listed = ((verdict.get("info") or {}).get("renderings") or {}).get("synthesis.md")
    if listed is None:
        raise PipelineError(f"SYNTHESIS {audit} lists no sha256 of synthesis.md (info.renderings): its audit "
                            f"did not check its pages; no cross-study table is written. {fix}")
    page = verify_against(md, listed, "the synthesis's synthesis.md (as its audit lists it)",
                          f"The file changed after its audit. {fix}")
    return across_datasets_section(input_bytes(page).decode("utf-8"),
                                   os.path.relpath(os.path.dirname(md), os.path.dirname(sm.output.md)), md)


def main(sm):
    import pandas as pd

    rows, manifests = study_rows(sm)
    table = pd.DataFrame(rows, columns=list(CROSS_STUDY_COLUMNS))
    kept = pd.DataFrame(retention_rows(sm, manifests), columns=list(RETENTION_COLUMNS))
    with atomic_path(sm.output.tsv) as tmp:
        table.to_csv(tmp, sep="\t", index=False, lineterminator="\n")  # floats as repr: shortest exact text
    with atomic_path(sm.output.retention) as tmp:
        kept.to_csv(tmp, sep="\t", index=False, lineterminator="\n")
    with atomic_path(sm.output.parquet) as tmp:
        table.to_parquet(tmp, index=False)
    section = ("\n## Conclusion retention (derived backends against fp32 torch)\n\n"
               + (kept.to_markdown(index=False, floatfmt=".6f") if len(kept) else
                  "No study of this invocation is scored by a derived backend.") + "\n")
    atomic_write_text(sm.output.md, "# Cross-study table\n\n" + table.to_markdown(index=False, floatfmt=".6f")
                      + "\n" + synthesis_section(sm) + section)


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
