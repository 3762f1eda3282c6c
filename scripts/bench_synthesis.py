"""bench.py synthesis: the synthesis across datasets of 15 synthetic studies in memory (prints; no asserts).

Each study: 250-350 queries in evidence groups (sizes 1, 2 or 3 with probabilities 0.8, 0.15, 0.05), per-query
deltas normal around a dataset effect, all from ``numpy.random.default_rng(2024)``; three comparisons. Timed:
``rerank_study.synthesis.synthesize`` with the config's declared B, seed, level and tau2 (config/config.yaml,
weighting ``datasets``), the datasets built from the per-query deltas by ``study_dataset`` inside the timer;
the best of 3 rounds (the first pays the imports). Target: 5 s on 2 cores; ratio = target / measured (> 1:
within the target).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 5.0
COMPARISONS = ("blend-ce", "blend-rrf", "ce-rrf")


def study(rng, k: int) -> tuple[dict, list[list[str]]]:
    """(qid -> delta per comparison, the evidence groups' member qids) of one synthetic study."""
    n = int(rng.integers(250, 351))
    qids = [f"d{k}q{i}" for i in range(n)]
    groups, i = [], 0
    while i < n:
        size = int(rng.choice([1, 2, 3], p=[0.8, 0.15, 0.05]))
        groups.append(qids[i:i + size])
        i += size
    effect = rng.normal(0.01, 0.01, len(COMPARISONS))
    deltas = {c: dict(zip(qids, rng.normal(e, 0.15, n).tolist())) for c, e in zip(COMPARISONS, effect)}
    return deltas, groups


def run(studies, declared: dict, tested) -> float:
    from rerank_study.synthesis import synthesis as syn

    t0 = time.perf_counter()
    tests = {c: [syn.study_dataset(f"d{k}", d[c], g) for k, (d, g) in enumerate(studies)] for c in tested}
    intervals = [[-0.01, 0.01]] * len(studies)  # the studies' own intervals are read, not computed
    syn.synthesize(tests[COMPARISONS[0]], intervals, declared, tests)
    return time.perf_counter() - t0


def main() -> int:
    sys.path.insert(0, str(ROOT / "workflow"))
    import numpy as np

    from rerank_study.settings.config import load_config

    rng = np.random.default_rng(2024)
    studies = [study(rng, k) for k in range(15)]
    declared = {**load_config(ROOT / "config" / "config.yaml")["synthesis"], "weighting": "datasets"}
    for tested in (declared["family"], list(COMPARISONS)):
        secs = min(run(studies, {**declared, "family": list(tested)}, tested) for _ in range(3))
        print(f"synthesis  15 studies x ~300 queries, B={declared['B']}, {len(tested)} comparison(s) tested: "
              f"{secs:.3f} s; target {TARGET_S:g} s on 2 cores; ratio target/measured {TARGET_S / secs:.2f}")
    return 0
