"""A confirmation opening's part of report.md, as the audit expects it: the title, the test-only labels, what
was opened and when (the run's OPENING_STARTED.json, cross-checked line for line with the lock folder's ledger
and with the frozen protocol's pins), the decision under the frozen protocol (the audit's recomputed primary
comparison) and the first-stage retrievers' nDCG@10 on the confirmation queries (recomputed from the frozen
retriever lists of the lock folder). Lines: strings (exact), ``report_lines.Row`` and ``Free``."""

from __future__ import annotations

import gzip
import json
import re

import report_prose as prose
from anchors import pinned_role
from definitions import mean, ndcg
from layout import RUN_FILE
from problems import Unreadable
from readers import bytes_of, read_json, sha256_of, text_of
from report_lines import Free, row
from report_text import f6, interval_text, yn

CHECK = "report"
LEDGER = "confirmation_ledger.jsonl"
STARTED = "OPENING_STARTED.json"
RETRIEVERS = (("BM25 (bm25s) top-100", "bm25"), ("dense all-MiniLM-L6-v2 top-100", "dense"))


def ledger_line(lockdir, number: int) -> dict:
    lines = text_of(lockdir / LEDGER).split("\n")
    if not 1 <= number <= len(lines) or not lines[number - 1].strip():
        raise Unreadable(lockdir / LEDGER, f"has no line {number}")
    return json.loads(lines[number - 1])


def opening_record(run, want, au) -> dict:
    """OPENING_STARTED.json, its entry checked against the ledger line it names, the manifest and the
    protocol."""
    path, lockdir = run.rundir / STARTED, want.anchor.lockdir
    started, f = read_json(path), str(run.rundir / STARTED)
    e = started["entry"]
    au.check(CHECK, ledger_line(lockdir, started["line"]) == e, f, f"entry = {LEDGER} line {started['line']}",
             "the ledger's 'started' line", "a different entry")
    protocol = read_json(lockdir / "protocol.json")
    sealed = pinned_role(protocol["data"], "qrels_confirm")
    zip_pin = want.anchor.lock("data_pins.json").get("zip") or {}
    facts = {"event": "started", "run": run.manifest.get("run"),
             "protocol_sha256": run.manifest.get("protocol_sha256"), "labels": run.manifest.get("labels"),
             "sealed_file": sealed, "sealed_sha256": protocol["data"][sealed]["sha256"],
             "sealed_content_sha256": protocol["data"][sealed].get("content_sha256"),
             "data_url": zip_pin.get("url")}
    for key, val in facts.items():
        au.check(CHECK, e.get(key) == val, f, f"entry {key}", val, e.get(key))
    au.check(CHECK, isinstance(e.get("opening"), int), f, "entry opening", "an opening number",
             e.get("opening"))
    return started


def title(run, started) -> str:
    e = started["entry"]
    sha = str(run.manifest.get("protocol_sha256"))
    return (f"# Confirmation analysis — opening {e['opening']} of protocol {sha[:12]} — "
            f"`{run.manifest.get('run')}`")


def opened_rows(run, started) -> list:
    """The pins table's rows of what was opened (after the data archive's rows)."""
    e = started["entry"]
    return [row("sealed confirmation judgements OPENED", f"{e['sealed_file']} sha256 {e['sealed_sha256']}"),
            Free("| opened at (ledger 'started' line, written before the copy) | `" + f"{e['time']}, ",
                 f" line {started['line']}` |", r"[^`|]+", "the ledger's path as the opening wrote it"),
            row("protocol sha256", run.manifest.get("protocol_sha256"))]


def earlier_openings(want, started) -> Free:
    """The line naming earlier openings of the protocol. Their record spans every ledger of the sealed set
    (and its git history), which the audit does not read: the line must be well formed, name only earlier
    openings, and name every opening the lock folder's ledger completed before this one started."""
    me, done = started["entry"]["opening"], completed_before(want, started)
    listed = r"\[\d+(?:, \d+)*\]"
    unfinished = r"\d+ \(started [^)]*, ledger line \d+\)"

    def verify(part: str):
        completed = part.split(";")[0]
        named = [int(x) for x in re.findall(r"\d+", completed)]
        later = [x for x in named + [int(m) for m in re.findall(r"(\d+) \(started", part)] if x >= me]
        missing = [x for x in done if x not in named]
        return (f"openings {later} are not earlier than opening {me}" if later else
                f"the ledger completed {missing} before this opening" if missing else None)

    return Free("- Earlier openings of this protocol: completed ", ".",
                rf"(?:none|{listed}); started and never completed: (?:none|{unfinished}(?:, {unfinished})*)",
                f"openings before opening {me} (every ledger of the sealed set)", verify=verify)


def completed_before(want, started) -> list:
    """Openings of this protocol the lock folder's ledger records as completed before this opening started."""
    e, out = started["entry"], []
    for line in text_of(want.anchor.lockdir / LEDGER).split("\n")[: started["line"] - 1]:
        entry = json.loads(line) if line.strip() else {}
        if entry.get("event") == "completed" and entry.get("protocol_sha256") == e["protocol_sha256"]:
            out.append(entry.get("opening"))
    return out


def scores_line(run, want, au) -> str:
    """How the opening's scores were made: inferred fresh (a cross-encoder), or read from the run file frozen
    in the protocol (a run-file reranker)."""
    if run.reranker_kind == RUN_FILE:
        pin = read_json(want.anchor.lockdir / "protocol.json")["model"]["confirmation_run"]
        n = sum(len(run.cands.get(q, [])) for q in run.analysed)
        return (f"- Scores read from the run file `{pin['file']}`, sha256 `{pin['sha256']}`: blind-submitted "
                f"and pinned in the protocol when it was frozen, before any opening ({n} scores of "
                f"{len(run.analysed)} queries; nothing was inferred).")
    sf, n = str(run.path("scoring_measurements")), run.n_pairs
    scoring = read_json(run.path("scoring_measurements"))
    au.check(CHECK, scoring.get("fresh_inference") is True, sf, "fresh_inference (the protocol: fresh at "
             "every opening)", True, scoring.get("fresh_inference"))
    return (f"- Scores inferred fresh for this opening: {scoring.get('pairs_inferred')} of {n} pairs (the "
            f"score cache was not read: fresh_inference {scoring.get('fresh_inference')}); "
            f"{scoring.get('cache_entries_verified')} cached batches were re-inferred and found "
            "byte-identical.")


def opened_lines(run, want, au, started) -> list:
    """What was opened, when, under which protocol; how the opening's scores were made."""
    e = started["entry"]
    sealed = (f"- Sealed confirmation judgements **`{e['sealed_file']}`**, sha256 `{e['sealed_sha256']}` "
              "(its pin in data_pins.json; order-independent content sha256 "
              f"`{e['sealed_content_sha256']}`), from the BEIR archive <{e['data_url']}>; this "
              "copy came from: ")
    opened = (f"- Opened at **{e['time']}** (UTC): opening {e['opening']} of protocol "
              f"`{e['protocol_sha256']}`, recorded BEFORE the judgements were copied, in `")
    return ["## What was opened, when, under which protocol", "",
            Free(sealed, ".", r".+", "where the copy came from (a local path)"),
            Free(opened, f"` line {started['line']}:", r"[^`]+", "the ledger's path as the opening wrote it"),
            "", "```json", json.dumps(e, sort_keys=True, ensure_ascii=True), "```", "",
            earlier_openings(want, started), scores_line(run, want, au), ""]


def decision_lines(s: dict, started) -> list[str]:
    prim, thr, bs = s["comparisons"][s["primary"]], s["threshold"], s["bootstrap"]
    reached = prim["mean_reaches_threshold"]
    return ["## Decision under the frozen protocol", "",
            f"Protocol sha256 `{started['entry']['protocol_sha256']}`, opening "
            f"{started['entry']['opening']}. Bootstrap seed {bs['seed']}, B = {bs['B']}.", "",
            f"- Mean {s['primary']} Δ {s['metric']} = **{f6(prim['mean'])}**; the practical threshold {thr} "
            f"is **{'REACHED' if reached else 'NOT REACHED'}** "
            f"({'supports' if reached else 'does not support'} the practical hypothesis).",
            f"- Grouped interval {interval_text(prim['grouped_interval'])}: covers 0 — "
            f"{yn(prim['grouped_covers_0'])}; covers {thr} — {yn(prim['grouped_covers_threshold'])}.",
            f"- Query-level interval {interval_text(prim['query_interval'])}: covers 0 — "
            f"{yn(prim['query_covers_0'])}; covers {thr} — {yn(prim['query_covers_threshold'])}.",
            prose.FINAL_NOTE, ""]


def retriever_lines(run, want, au, s: dict) -> list[str]:
    """nDCG@10 of the frozen candidates' retrievers on the analysed queries (their ranked lists, pinned in the
    lock folder's derived pins), beside the RRF candidates' (the recomputed rrf mean); a TREC-run study: its
    run's."""
    rrf = s["methods"]["rrf"]["mean"]
    if want.settings["study"]["candidates"] != "frozen":
        context = {"the study's own first-stage TREC run (r0)": rrf}
    else:
        pins = want.anchor.lock("derived_pins.json")["candidates"]["provenance"]["retrievers"]
        context = {}
        for name, key in RETRIEVERS:
            path = want.anchor.lockdir / pins[key]["file"]
            au.check(CHECK, sha256_of(path) == pins[key]["sha256"], str(path), f"{key} ranked lists sha256",
                     pins[key]["sha256"], sha256_of(path))
            top = ranked_lists(path)
            context[name] = mean(ndcg(top[q], run.qrels[q], 10) for q in run.qrels)
        context["RRF top-50 candidates"] = rrf
    out = ["### First-stage retrievers on the confirmation queries (context only)", "",
           "| retriever | nDCG@10 here | published | source |", "|---|---|---|---|"]
    for name, v in context.items():
        src, val = prose.PUBLISHED.get(name, ("—", None))
        out.append(f"| {name} | {f6(v)} | {'' if val is None else val} | {src} |")
    return out


def ranked_lists(path) -> dict[str, list[str]]:
    """A frozen retriever table (gzip; header qid, rank, doc_id; ranks 1.. in order per query)."""
    lines = gzip.decompress(bytes_of(path)).decode("utf-8").split("\n")
    if lines[0].split("\t") != ["qid", "rank", "doc_id"] or lines[-1] != "":
        raise Unreadable(path, "not a ranked-list table (header qid, rank, doc_id; a final newline)")
    out: dict[str, list[str]] = {}
    for i, line in enumerate(lines[1:-1], start=2):
        q, rank, d = line.split("\t")
        lst = out.setdefault(q, [])
        if rank != str(len(lst) + 1):
            raise Unreadable(path, f"line {i}: rank {rank} out of order for query {q}")
        lst.append(d)
    return out


def confirmation_lines(run, want, au, s: dict, started) -> list:
    """The opening's section (placed after the repair counts, before the evaluation statistics)."""
    labels = run.manifest.get("labels") or []
    out: list = [f"> **{' / '.join(labels)}** — {prose.TEST_ONLY_NOTE}", ""] if labels else []
    return out + opened_lines(run, want, au, started) + decision_lines(s, started) + \
        retriever_lines(run, want, au, s)
