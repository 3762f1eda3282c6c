"""Re-inference of a seeded sample of scoring batches, bypassing the score cache.

The standard-library audit cannot run a model; this is the check that can. After the score
rule, ``verify_scores`` re-infers a sample of the run's batches from scratch (no cache read or
written) and requires every re-inferred logit to equal the one in ``pairs.tsv`` bit for bit.
The audit then requires the verification record to exist, to cover exactly the batches the
sample rule names, and to agree with ``pairs.tsv``.

Sample rule (reproducible with the standard library alone): every batch of the run is named
``(qid, batch)``; its key is ``sha256("<seed>\\t<qid>\\t<batch>")`` (hex); the sample is the
``k`` batches with the smallest keys, listed in key order (all batches when ``k`` is None or
at least their number — ``verify.every_batch``). A confirmation opening draws the same sample, frozen into its
protocol: its fresh scoring is the measurement; the audit's own re-inference of an opening covers every batch.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def batch_key(seed: int, qid: str, batch: int) -> str:
    return hashlib.sha256(f"{seed}\t{qid}\t{batch}".encode()).hexdigest()


def sample_batches(batches: Iterable[tuple[str, int]], seed: int, k: int | None) -> list[tuple[str, int]]:
    """The sampled ``(qid, batch)`` names, in key order (see the module doc)."""
    unique = sorted(set(batches), key=lambda qb: batch_key(seed, qb[0], qb[1]))
    return unique if k is None or k >= len(unique) else unique[:k]


def compare(sample: list[tuple[str, int]], recorded: dict[tuple[str, str], tuple[int, float]],
            reinferred: dict[tuple[str, str], tuple[int, float]]) -> list[dict]:
    """One entry per re-inferred pair of a sampled batch: its recorded and re-inferred logit and batch.

    ``recorded`` / ``reinferred``: {(qid, doc_id): (batch, logit)}."""
    wanted = set(sample)
    out = []
    for (qid, doc), (batch, logit) in sorted(recorded.items()):
        if (qid, batch) not in wanted:
            continue
        again = reinferred.get((qid, doc))
        out.append({"qid": qid, "batch": batch, "doc_id": doc, "logit": logit,
                    "reinferred_batch": None if again is None else again[0],
                    "reinferred_logit": None if again is None else again[1],
                    "equal": again is not None and again[0] == batch and again[1] == logit})
    return out
