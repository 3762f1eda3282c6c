"""Rule synthesis: one declared answer across the datasets of one invocation's studies
(rerank_study.synthesis) -> synthesis.json, synthesis.tsv, synthesis.tex, forest.png, synthesis.md,
synthesis.html (synthesis.md as one self-contained page, forest.png inlined) and each dataset's bootstrap
index matrix (indices/<study>.tsv); then its own audit on all of them (audit.json; a failed audit removes
synthesis.md and synthesis.html, which show its verdict, and stops the rule).

Every study's run must have passed its audit, and its summary and per-query table must be the ones the audited
manifest lists; every study must analyse the same primary comparison and metric; the weighting must be
declared (config synthesis.weighting); two or more datasets, none twice. Each refusal names the study, the
file and the fix. Every comparison the studies share is tested in every dataset (synthesis.json "family": the
declared family adjusted, the others exploratory).

Rule synthesis_confirm runs it too, on each study's completed opening of a frozen family (params ``family``,
rerank_study.seal.family): then the family's decision (the pooled interval's lower bound above the threshold)
goes into decision.json and synthesis.md, and a completed line into the family's ledger."""

import datetime as dt
import logging

from rerank_study.core.errors import PipelineError
from rerank_study.core.fileio import (
    atomic_path,
    atomic_write_text,
    input_bytes,
    read_json,
    read_tsv,
    sha256_file,
    write_index_matrix,
    write_json,
)
from rerank_study.core.names import column
from rerank_study.core.rule import run
from rerank_study.repro import audited
from rerank_study.seal import family
from rerank_study.synthesis import synthesis, synthesis_audit, synthesis_report

log = logging.getLogger("synthesis")


def declared(sm) -> dict:
    block = dict(sm.params.synthesis)
    try:
        synthesis.check_declared(block)
    except ValueError as exc:
        raise PipelineError(f"REFUSED: {exc}.") from None
    return block


def audited_files(cfg: dict, audit, manifest, summary, per_query, groups) -> tuple[dict, list, list]:
    """(summary, per-query rows, group rows) of a study whose audit passed and vouches for them."""
    what = f"study {cfg['study']['name']!r}"
    try:
        _, verdict = audited.verdict_of(audit)
    except PipelineError as exc:
        raise PipelineError(f"STUDY {cfg['study']['name']!r}: {exc}; no synthesis is written. Fix: rerun the "
                            "study until its audit passes, or leave it out of studies=[...].") from None
    listed = audited.audited_manifest(verdict, manifest, what)
    return (read_json(audited.listed(listed, "summary", summary, what)),
            read_tsv(audited.listed(listed, "per_query", per_query, what)),
            read_tsv(audited.listed(listed, "groups", groups, what)))


def dataset_of(cfg: dict, summary: dict, rows: list, group_rows: list, comparison: str) -> synthesis.Dataset:
    a, b = summary["comparisons"][comparison]["a"], summary["comparisons"][comparison]["b"]
    deltas = {r["qid"]: float(r[column(a, summary["metric"])]) - float(r[column(b, summary["metric"])])
              for r in rows}
    members: dict[int, list[str]] = {}
    for g in group_rows:
        members.setdefault(int(g["group_index"]), []).append(g["qid"])
    return synthesis.study_dataset(cfg["study"]["dataset"], deltas, [members[i] for i in sorted(members)])


def same_question(studies: list, summaries: list) -> None:
    asked = {(s["primary"], s["metric"]) for s in summaries}
    if len(asked) > 1:
        named = ", ".join(f"{c['study']['name']}: {s['primary']} in {s['metric']}"
                          for c, s in zip(studies, summaries))
        raise PipelineError(f"REFUSED: the studies answer different questions ({named}). A synthesis pools "
                            "one primary comparison in one metric: give the studies the same "
                            "comparisons.primary and metrics, or synthesise them separately.")


def main(sm):
    block = declared(sm)
    studies, inp = sm.params.studies, sm.input
    read = [audited_files(*x) for x in zip(studies, inp.audits, inp.manifests, inp.summaries, inp.per_query,
                                           inp.groups)]
    same_question(studies, [r[0] for r in read])
    shared = synthesis.shared_comparisons([list(r[0]["comparisons"]) for r in read])
    try:
        tests = {k: [dataset_of(c, *r, k) for c, r in zip(studies, read)] for k in shared}
        intervals = [r[0]["comparisons"][r[0]["primary"]]["grouped_interval"] for r in read]
        result, idx = synthesis.synthesize(tests[read[0][0]["primary"]], intervals, block, tests)
    except ValueError as exc:
        raise PipelineError(f"REFUSED: {exc} (studies={[c['study']['name'] for c in studies]}). Fix: one "
                            "study per dataset, two or more datasets.") from None
    result["studies"] = [c["study"]["name"] for c in studies]
    result["comparison"], result["metric"] = read[0][0]["primary"], read[0][0]["metric"]
    for path, i in zip(sm.output.indices, idx):
        write_index_matrix(path, i)
    write_json(sm.output.json, result)
    atomic_write_text(sm.output.tsv, synthesis_report.tsv(result))
    atomic_write_text(sm.output.tex, synthesis_report.tex(result))
    fam = sm.params.family if "family" in sm.params.keys() else None
    decided = family.decision(result["pooled"], fam["protocol"]["threshold"],
                              fam["protocol"]["decision_rule"]) if fam else None
    with atomic_path(sm.output.forest) as tmp:
        synthesis_report.forest(result, tmp)
    lines = synthesis_report.markdown(result) + (family_section(fam, decided) if fam else [])
    text = "\n".join(lines + synthesis_audit.VERDICT) + "\n"
    atomic_write_text(sm.output.md, text)
    atomic_write_text(sm.output.html, synthesis_report.page(text, input_bytes(sm.output.forest),
                                                            result["studies"]))
    synthesis_audit.audited(sm)  # its own audit, on every file just written (a failure removes the pages)
    if fam:
        record_decision(sm, fam, decided)


def family_section(fam: dict, decided: dict) -> list[str]:
    """The decision of a family's confirmation, for synthesis.md."""
    runs = ", ".join(f"{s}: {o['run']}" for s, o in fam["openings"].items())
    return ["## The family's decision", "", f"Family `{fam['name']}` (protocol {fam['sha256']}), on the "
            f"studies' completed openings ({runs}).", "", f"Rule: {decided['rule']}", "",
            f"**{family.decision_text(fam['name'], decided)}**", ""]


def record_decision(sm, fam: dict, decided: dict) -> None:
    """decision.json, then the completed line of the family's ledger (after the audit passed)."""
    now = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()
    entry = family.completed_entry(fam, sha256_file(sm.output.json), decided, now)
    write_json(sm.output.decision, {**entry, "family_folder": fam["folder"]})
    line = family.record_completed(fam["folder"], entry)
    log.warning("%s Recorded in %s line %d: commit and push it.", family.decision_text(fam["name"], decided),
                fam["folder"], line)


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
