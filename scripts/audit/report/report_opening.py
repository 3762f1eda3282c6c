"""A confirmation opening's facts in report.md: its number (the run's OPENING_STARTED.json, held to the lock
folder's ledger line it names and to the manifest and the frozen protocol), the decision under the frozen
protocol (the audit's recomputed primary comparison: its numbers and the REACHED / NOT REACHED verdict) and
the first-stage retrievers' nDCG@10 on the confirmation queries (recomputed from the frozen ranked lists)."""

from __future__ import annotations

import gzip
import json

from anchor.anchors import pinned_role
from core.problems import Unreadable
from expected.definitions import mean, ndcg
from read.readers import bytes_of, read_json, sha256_of, text_of

from report.report_numbers import ANY

CHECK = "report"
LEDGER = "confirmation_ledger.jsonl"
STARTED = "OPENING_STARTED.json"
RETRIEVERS = ("bm25", "dense")


def ledger_line(lockdir, number: int) -> dict:
    lines = text_of(lockdir / LEDGER).split("\n")
    if not 1 <= number <= len(lines) or not lines[number - 1].strip():
        raise Unreadable(lockdir / LEDGER, f"has no line {number}")
    return json.loads(lines[number - 1])


def opening_record(run, want, au) -> dict:
    """OPENING_STARTED.json, its entry checked against the ledger line it names, the manifest and the
    protocol."""
    path, lockdir = run.rundir / STARTED, want.anchor.lockdir
    started, f = read_json(path), str(path)
    e = started["entry"]
    au.check(CHECK, ledger_line(lockdir, started["line"]) == e, f, f"entry = {LEDGER} line {started['line']}",
             "the ledger's 'started' line", "a different entry")
    protocol = read_json(lockdir / "protocol.json")
    sealed = pinned_role(protocol["data"], "qrels_confirm")
    facts = {"event": "started", "run": run.manifest.get("run"),
             "protocol_sha256": run.manifest.get("protocol_sha256"), "labels": run.manifest.get("labels"),
             "sealed_file": sealed, "sealed_sha256": protocol["data"][sealed]["sha256"]}
    for key, val in facts.items():
        au.check(CHECK, e.get(key) == val, f, f"entry {key}", val, e.get(key))
    au.check(CHECK, isinstance(e.get("opening"), int), f, "entry opening", "an opening number",
             e.get("opening"))
    return started


def ranked_lists(path) -> dict[str, list[str]]:
    """A frozen retriever table (gzip; header qid, rank, doc_id; ranks 1.. in order per query)."""
    lines = gzip.decompress(bytes_of(path)).decode("utf-8").splitlines()
    if not lines or lines[0].split("\t") != ["qid", "rank", "doc_id"]:
        raise Unreadable(path, "not a ranked-list table (header qid, rank, doc_id)")
    out: dict[str, list[str]] = {}
    for i, line in enumerate(lines[1:], start=2):
        q, rank, d = line.split("\t")
        lst = out.setdefault(q, [])
        if int(rank) != len(lst) + 1:
            raise Unreadable(path, f"line {i}: rank {rank} out of order for query {q}")
        lst.append(d)
    return out


def retriever_rows(run, want, au, rrf: float) -> list:
    """nDCG@10 of the frozen candidates' retrievers on the analysed queries, then the RRF candidates' (the
    recomputed rrf mean); a TREC-run study: its run's only."""
    if want.settings["study"]["candidates"] != "frozen":
        return [[ANY, rrf, ANY, ANY]]
    pins = want.anchor.lock("derived_pins.json")["candidates"]["provenance"]["retrievers"]
    rows = []
    for key in RETRIEVERS:
        path = want.anchor.lockdir / pins[key]["file"]
        au.check(CHECK, sha256_of(path) == pins[key]["sha256"], str(path), f"{key} ranked lists sha256",
                 pins[key]["sha256"], sha256_of(path))
        top = ranked_lists(path)
        rows.append([ANY, mean(ndcg(top[q], run.qrels[q], 10) for q in run.qrels), ANY, ANY])
    return rows + [[ANY, rrf, ANY, ANY]]


def add_facts(out: dict, run, want, au, s: dict) -> None:
    """The opening's lines and tables added to ``out`` (report_facts.facts)."""
    e = opening_record(run, want, au)["entry"]
    prim, thr = s["comparisons"][s["primary"]], s["threshold"]
    reached = ["**REACHED**", "**NOT REACHED**"][::1 if prim["mean_reaches_threshold"] else -1]
    yn = {k: "yes" if prim[k] else "no" for k in ("grouped_covers_0", "grouped_covers_threshold",
                                                  "query_covers_0", "query_covers_threshold")}
    out["records"] = [e]  # the ledger entry the report shows
    out["lines"] += [("of protocol", [], [f"opening {e['opening']} "], []),
                     (f"{s['primary']} Δ", [prim["mean"], thr], reached[:1], reached[1:]),
                     ("Grouped interval [", [*prim["grouped_interval"], 0, thr],
                      [yn["grouped_covers_0"], yn["grouped_covers_threshold"]], []),
                     ("Query-level interval [", [*prim["query_interval"], 0, thr],
                      [yn["query_covers_0"], yn["query_covers_threshold"]], [])]
    out["tables"][("retriever", 0)] = retriever_rows(run, want, au, s["methods"]["rrf"]["mean"])
    out["labelled"][("item", 0)]["protocol sha256"] = run.manifest.get("protocol_sha256")
