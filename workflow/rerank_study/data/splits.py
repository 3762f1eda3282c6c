"""Development / confirmation query splits.

* Confirmation set = every query of ``queries.jsonl`` that has no judgement in the training
  qrels (for SciFact: exactly BEIR's ``test`` split, 300 claims). It is derived WITHOUT reading
  the sealed confirmation qrels; the unsealing step later checks it equals that file's queries.
* Development set = ``dev_size`` queries drawn without replacement from the training-qrels
  queries (sorted canonically) with ``numpy.random.default_rng(seed).choice``.

Both lists are written once into the lockfile folder and pinned by sha256; later runs verify
them and never redraw. Canonical query order: integer value when every id is a decimal
integer, else the id string.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..core.errors import MalformedInputError
from ..core.fileio import input_text


def query_sort_key(qid: str):
    return (0, int(qid), qid) if qid.isdigit() else (1, 0, qid)


def canonical_order(qids: Iterable[str]) -> list[str]:
    return sorted(qids, key=query_sort_key)


def draw_dev_split(train_qids: Iterable[str], dev_size: int, seed: int) -> list[str]:
    import numpy as np

    pool = canonical_order(set(train_qids))
    if dev_size > len(pool):
        raise ValueError(f"dev_size {dev_size} > {len(pool)} training queries")
    idx = np.random.default_rng(seed).choice(len(pool), size=dev_size, replace=False)
    return canonical_order(pool[i] for i in idx)


def confirmation_ids(all_qids: Iterable[str], train_qids: Iterable[str]) -> list[str]:
    return canonical_order(set(all_qids) - set(train_qids))


def confirmation_set(all_qids: Iterable[str], dev_qids: Iterable[str], sealed_pin: dict) -> list[str]:
    """The confirmation queries: the sealed file's query ids as its pin lists them (repin=data pins them: a
    dataset whose queries.jsonl also holds other splits' queries, e.g. NFCorpus), the drawn sealed part's
    queries (a dataset with ONE qrels file), or else (SciFact's pins) the queries without development
    judgements."""
    if "derived_from" in sealed_pin:
        return canonical_order(sealed_pin["derived_from"]["queries"])
    if "queries" in sealed_pin:
        return canonical_order(sealed_pin["queries"])
    return confirmation_ids(all_qids, dev_qids)


def split_text(qids: Sequence[str]) -> str:
    return "".join(f"{q}\n" for q in qids)


def read_split(path) -> list[str]:
    text = input_text(path)
    if text and not text.endswith("\n"):
        raise MalformedInputError(path, text.count("\n") + 1, "last line is not terminated (truncated file?)")
    qids = text.splitlines()
    for i, q in enumerate(qids, start=1):
        if not q or q != q.strip():
            raise MalformedInputError(path, i, f"bad query id {q!r}")
    if len(set(qids)) != len(qids):
        raise MalformedInputError(path, 0, "duplicate query ids")
    if qids != canonical_order(qids):
        raise MalformedInputError(path, 0, "ids are not in canonical order")
    return qids


DRAWN_FROM = ("canonically sorted training-qrels query ids, numpy default_rng(seed).choice without "
              "replacement; confirmation = queries without training judgements")


def split_settings(dev_size: int, seed: int, confirm_size: int, data_pins, qrels_dev: str) -> dict:
    """The values a split pin records and every run re-checks (sizes, seed, the data they came from);
    ``qrels_dev``: the pinned name of the development qrels file (study.qrels_dev)."""
    return {"dev_size": dev_size, "seed": seed, "confirm_size": confirm_size,
            "qrels_dev_sha256": data_pins.pin(qrels_dev)["sha256"],
            "queries_sha256": data_pins.pin("queries.jsonl")["sha256"]}
