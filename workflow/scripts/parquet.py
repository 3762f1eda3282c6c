"""Rule parquet: Parquet copies of pairs.tsv and per_query.tsv, checked equal to the TSVs after writing."""

from rerank_study.core.errors import PipelineError
from rerank_study.core.fileio import atomic_path
from rerank_study.core.rule import run

ID_COLUMNS = {"qid": str, "doc_id": str}


def read_table(path):
    import pandas as pd

    return pd.read_csv(path, sep="\t", dtype=ID_COLUMNS, keep_default_na=False, float_precision="round_trip")


def main(sm):
    import pandas as pd

    for key in ("pairs", "per_query"):
        src, dest = getattr(sm.input, key), getattr(sm.output, key)
        table = read_table(src)
        with atomic_path(dest) as tmp:
            table.to_parquet(tmp, index=False)
            back = pd.read_parquet(tmp)
            if not back.equals(table):
                raise PipelineError(f"the Parquet copy of {src} does not read back equal; nothing published")


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
