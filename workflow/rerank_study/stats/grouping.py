"""Evidence groups: connected components of queries that share a judged relevant document.

Inputs are ONLY the analysed query ids (in their canonical order) and the qrels; no score of
any method can influence the grouping. Relevant documents outside the candidate lists count.
Two queries are linked when they share >= 1 relevant document (relevance > 0); groups are the
connected components of that graph (scipy.sparse.csgraph; the audit re-implements it by BFS).

Canonical order: members of a group keep the order of ``query_ids``; groups are ordered by
their first member. Group g is index g-1 in every bootstrap index matrix.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence


def evidence_groups(query_ids: Sequence[str], qrels: Mapping[str, Mapping[str, int]]) -> list[list[str]]:
    """Connected components of the query graph (edge = a shared judged relevant document), computed by
    the field's reference, ``scipy.sparse.csgraph.connected_components``, on the query x document
    incidence graph; then put in canonical order (members in ``query_ids`` order, groups by first member)."""
    import numpy as np
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    if len(set(query_ids)) != len(query_ids):
        raise ValueError("duplicate query ids in the analysed set")
    missing = [q for q in query_ids if q not in qrels]
    if missing:
        raise ValueError(f"analysed queries without judgements: {missing[:10]}")
    doc_index: dict[str, int] = {}
    rows, cols = [], []
    for i, q in enumerate(query_ids):
        for d, r in qrels[q].items():
            if r > 0:
                rows.append(i)
                cols.append(len(query_ids) + doc_index.setdefault(d, len(doc_index)))
    n = len(query_ids) + len(doc_index)
    graph = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    members: dict[int, list[str]] = {}
    for i, q in enumerate(query_ids):
        members.setdefault(int(labels[i]), []).append(q)
    position = {q: i for i, q in enumerate(query_ids)}
    return sorted(members.values(), key=lambda g: position[g[0]])


def group_ids(groups: Sequence[Sequence[str]]) -> list[str]:
    width = max(3, len(str(len(groups))))
    return [f"G{i:0{width}d}" for i in range(1, len(groups) + 1)]


def size_histogram(groups: Sequence[Sequence[str]]) -> dict[int, int]:
    """{group size: number of groups}, sizes ascending."""
    return dict(sorted(Counter(len(g) for g in groups).items()))
