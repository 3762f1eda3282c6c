"""Rule tables: the methods and comparisons tables of the run (tables/*.csv, tables/*.tex), from summary.json
only (rerank_study.report.paper_tables; the layout is docs/outputs.md)."""

from rerank_study.core.fileio import atomic_write_text, read_json
from rerank_study.core.rule import run
from rerank_study.report import paper_tables

OUTPUT_OF = {"methods.csv": "methods_csv", "methods.tex": "methods_tex", "comparisons.csv": "comparisons_csv",
             "comparisons.tex": "comparisons_tex"}


def main(sm):
    for name, text in paper_tables.render_all(read_json(sm.input.summary)).items():
        atomic_write_text(getattr(sm.output, OUTPUT_OF[name]), text)


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
