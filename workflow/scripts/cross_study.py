"""Rule cross_study: one row per study (pandas) -> TSV (the table), Parquet and Markdown copies.

Every study's run must have passed its audit, and the audit must vouch for the files the row is read from: its
manifest_sha256 is the manifest's (read once), and the summary is the one that manifest lists. A failed audit,
or a manifest or summary changed after its audit, stops the table, naming the study and the file."""

from rerank_study import pins
from rerank_study.cross_table import CROSS_STUDY_COLUMNS, cross_study_row
from rerank_study.errors import PipelineError
from rerank_study.fileio import VerifiedFile, atomic_path, atomic_write_text, read_json
from rerank_study.rule import run


def audited(study: str, verdict: dict, manifest, summary) -> tuple[VerifiedFile, VerifiedFile]:
    """The manifest the audit vouches for (info.manifest_sha256) and the summary that manifest lists, each
    with its checked bytes; a file changed after the audit stops the table."""
    man = pins.verify_against(manifest, (verdict.get("info") or {}).get("manifest_sha256"),
                              f"study {study!r}'s manifest (the one its audit passed)",
                              "The manifest changed after its audit: re-run the study (snakemake) so that "
                              "its audit is of these files; no cross-study table is written.")
    listed = {a["key"]: a["sha256"] for a in read_json(man)["artefacts"]}.get("summary")
    summ = pins.verify_against(summary, listed, f"study {study!r}'s summary (as its audited "
                               "manifest lists it)",
                               "The summary changed after its audit: re-run the study; no cross-study table "
                               "is written.")
    return man, summ


def main(sm):
    import pandas as pd

    rows = []
    for cfg, run_name, summary, audit, manifest in zip(sm.params.studies, sm.params.runs, sm.input.summaries,
                                                       sm.input.audits, sm.input.manifests):
        verdict = read_json(audit)
        if verdict.get("ok") is not True:
            raise PipelineError(f"STUDY {cfg['study']['name']!r}: its audit {audit} did not pass "
                                f"(failed: {verdict.get('failed_checks')}); no cross-study table is written.")
        man, summ = audited(cfg["study"]["name"], verdict, manifest, summary)
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
