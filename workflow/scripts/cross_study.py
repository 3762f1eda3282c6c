"""Rule cross_study: one row per study (pandas) -> TSV (the table), Parquet and Markdown copies.

Every study's run must have passed its audit, and the audit must vouch for the files the row is read from: its
manifest_sha256 is the manifest's (read once), and the summary is the one that manifest lists. A failed audit,
or a manifest or summary changed after its audit, stops the table, naming the study and the file."""

from rerank_study import audited
from rerank_study.cross_table import CROSS_STUDY_COLUMNS, cross_study_row
from rerank_study.errors import PipelineError
from rerank_study.fileio import atomic_path, atomic_write_text, read_json
from rerank_study.rule import run


def main(sm):
    import pandas as pd

    rows = []
    for cfg, run_name, summary, audit, manifest in zip(sm.params.studies, sm.params.runs, sm.input.summaries,
                                                       sm.input.audits, sm.input.manifests):
        name = f"study {cfg['study']['name']!r}"
        try:
            _, verdict = audited.verdict_of(audit)
        except PipelineError as exc:
            raise PipelineError(f"STUDY {cfg['study']['name']!r}: {exc}; no cross-study table is written.") \
                from None
        man = audited.audited_manifest(verdict, manifest, name)
        summ = audited.listed(man, "summary", summary, name)
        rows.append(cross_study_row(cfg, read_json(summ), verdict, run_name, read_json(man)))
    table = pd.DataFrame(rows, columns=list(CROSS_STUDY_COLUMNS))
    with atomic_path(sm.output.tsv) as tmp:
        table.to_csv(tmp, sep="\t", index=False, lineterminator="\n")  # floats as repr: shortest exact text
    with atomic_path(sm.output.parquet) as tmp:
        table.to_parquet(tmp, index=False)
    atomic_write_text(sm.output.md, "# Cross-study table\n\n" + table.to_markdown(index=False, floatfmt=".6f")
                      + "\n")


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
