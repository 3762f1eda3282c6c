"""Rule calibrate: coverage, type I error, randomization test and power of the run's own data
(rerank_study.calibration.calibration_run) -> calibration.json."""

from rerank_study.calibration import calibration_run
from rerank_study.core.errors import PipelineError
from rerank_study.core.fileio import read_json, read_tsv, write_json
from rerank_study.core.rule import run
from rerank_study.data import splits
from rerank_study.stats import bootstrap, run_tables


def main(sm):
    qids = splits.read_split(sm.input.queries)
    rows = read_tsv(sm.input.per_query)
    if [r["qid"] for r in rows] != qids:
        raise PipelineError(f"{sm.input.per_query}: its queries are not the analysed list {sm.input.queries} "
                            "(expected the same ids in the same order); rerun rule evaluate")
    summary = read_json(sm.input.summary)
    p = sm.params
    if summary["primary"] != p.comparisons["primary"]:
        raise PipelineError(f"{sm.input.summary}: primary comparison {summary['primary']!r}, expected "
                            f"{p.comparisons['primary']!r} (the run settings); rerun rule analyse")
    settings = calibration_run.settings_of(p.calibration, p.percentiles, p.threshold)
    deltas = calibration_run.run_deltas(rows, p.comparisons["all"], summary["metric"])
    positions = bootstrap.group_positions(qids, run_tables.read_groups(sm.input.groups)[1])
    record = calibration_run.calibration_record(deltas, positions, settings, primary=summary["primary"],
                                                metric=summary["metric"],
                                                confirmation_n=p.calibration["confirmation_n"],
                                                workers=sm.threads)
    write_json(sm.output[0], record)


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
