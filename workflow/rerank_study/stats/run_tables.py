"""Reading a run's per-query table and its evidence groups (rules analyse, calibrate, retention)."""

from __future__ import annotations

from collections.abc import Sequence

from ..core import names
from ..core.fileio import read_tsv


def read_groups(path) -> tuple[list[str], list[list[str]]]:
    """groups.tsv: the group ids in file order and each group's members in file order."""
    gids: list[str] = []
    groups: list[list[str]] = []
    for r in read_tsv(path):
        if not gids or gids[-1] != r["group_id"]:
            gids.append(r["group_id"])
            groups.append([])
        groups[-1].append(r["qid"])
    return gids, groups


def metric_table(rows: Sequence[dict]) -> dict[str, dict[str, float]]:
    """per_query.tsv's rows as ``table[qid][column]``: every metric column as a float (the counts and the
    first relevant ranks are left out)."""
    rank_col = str(names.FIRST_REL_RANK)
    return {r["qid"]: {k: float(v) for k, v in r.items() if k != "qid" and not k.endswith(rank_col)
                       and not k.startswith("n_")} for r in rows}


def first_relevant(rows: Sequence[dict]) -> dict[str, dict[str, int | None]]:
    """per_query.tsv's first relevant rank of each method (None: no relevant candidate)."""
    rank_col = str(names.FIRST_REL_RANK)
    return {r["qid"]: {m: (int(r[names.column(m, rank_col)]) if r[names.column(m, rank_col)] else None)
                       for m in names.METHODS} for r in rows}
