"""Evidence groups: connected components of queries that share a judged relevant document.

Inputs are ONLY the analysed query ids (in their canonical order) and the qrels; no score of
any method can influence the grouping. Relevant documents outside the candidate lists count.
Two queries are linked when they share >= 1 relevant document (relevance > 0); groups are the
connected components of that graph (computed with union-find).

Canonical order: members of a group keep the order of ``query_ids``; groups are ordered by
their first member. Group g is index g-1 in every bootstrap index matrix.
"""

from __future__ import annotations

from collections import Counter
from typing import Mapping, Sequence


def evidence_groups(query_ids: Sequence[str], qrels: Mapping[str, Mapping[str, int]]) -> list[list[str]]:
    if len(set(query_ids)) != len(query_ids):
        raise ValueError("duplicate query ids in the analysed set")
    missing = [q for q in query_ids if q not in qrels]
    if missing:
        raise ValueError(f"analysed queries without judgements: {missing[:10]}")
    parent = {q: q for q in query_ids}

    def find(q):
        while parent[q] != q:
            parent[q] = parent[parent[q]]
            q = parent[q]
        return q

    position = {q: i for i, q in enumerate(query_ids)}
    first_query_of_doc: dict[str, str] = {}
    for q in query_ids:
        for d, r in qrels[q].items():
            if r <= 0:
                continue
            if d in first_query_of_doc:
                a, b = find(q), find(first_query_of_doc[d])
                if a != b:  # keep the earliest query as the root: deterministic
                    if position[a] < position[b]:
                        parent[b] = a
                    else:
                        parent[a] = b
            else:
                first_query_of_doc[d] = q
    members: dict[str, list[str]] = {}
    for q in query_ids:
        members.setdefault(find(q), []).append(q)
    return sorted(members.values(), key=lambda g: position[g[0]])


def group_ids(groups: Sequence[Sequence[str]]) -> list[str]:
    width = max(3, len(str(len(groups))))
    return [f"G{i:0{width}d}" for i in range(1, len(groups) + 1)]


def size_histogram(groups: Sequence[Sequence[str]]) -> dict[int, int]:
    """{group size: number of groups}, sizes ascending."""
    return dict(sorted(Counter(len(g) for g in groups).items()))
