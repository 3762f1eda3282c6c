"""Rule check_candidates: how far do regenerated candidates drift from the frozen table?

Compares ranked lists per split (never bytes): queries with an identical ranked top-depth list,
with the same set, the largest rank shift of a document present in both, the mean overlap.
Reads the frozen table (verified against its pin) and the regenerated one; writes a table and
a JSON next to it. It never writes into the lockfiles."""

import logging

from rerank_study.core.fileio import atomic_write_text, read_json, sha256_file, write_json
from rerank_study.core.rule import run
from rerank_study.data import pins
from rerank_study.rankings import candidates

log = logging.getLogger("check_candidates")


def main(sm):
    pin, table = pins.verify_frozen_candidates(sm.input.derived, sm.input.frozen)
    frozen_rows = candidates.read_candidate_rows(table)
    split_of = {r["qid"]: r["split"] for r in frozen_rows}
    frozen = candidates.read_candidates(table)
    regenerated = candidates.read_candidates(sm.input.regenerated)
    rows = candidates.drift_table(frozen, regenerated, split_of)
    meta = read_json(sm.input.meta)
    settings_equal = all(meta["params"].get(k) == v for k, v in pin["params"].items())
    lines = ["\t".join(candidates.DRIFT_COLUMNS)]
    for r in rows:
        lines.append("\t".join([r["split"], str(r["queries"]), str(r["identical_ranked_lists"]),
                                str(r["same_set"]), str(r["largest_rank_shift"]), f"{r['mean_overlap']:.6f}",
                                ",".join(r["queries_changed"]) or "-"]))
    atomic_write_text(sm.output.table, "\n".join(lines) + "\n")
    total = rows[-1]
    verdict = ("IDENTICAL ranked lists" if total["identical_ranked_lists"] == total["queries"] else
               f"DRIFT in {total['queries'] - total['identical_ranked_lists']} of {total['queries']} queries")
    write_json(sm.output.json, {
        "verdict": verdict, "per_split": rows,
        "frozen": {"path": sm.input.frozen, "sha256": pin["sha256"], "params": pin["params"]},
        "regenerated": {"path": sm.input.regenerated, "sha256": sha256_file(sm.input.regenerated),
                        "params": meta["params"], "settings_equal_to_frozen": settings_equal},
        "bytes_identical": sha256_file(sm.input.regenerated) == pin["sha256"],
        "note": "a drift check: the run always uses the frozen table; re-freeze only with --config "
                "repin=candidates",
    })
    log.warning("check_candidates: %s (settings %s the frozen ones); table %s", verdict,
                "equal to" if settings_equal else "DIFFERENT from", sm.output.table)


if __name__ == "__main__":
    run(globals().get("snakemake"), main)
