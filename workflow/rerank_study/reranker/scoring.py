"""Cross-encoder scoring of (query, candidate) pairs: the settings, the run loop, the score cache, shards.

Contract (documented in docs/scoring.md and SOURCE_MAP rows 9, 10, 28):
* pair text: the query text as given; the document ``(title + " " + text).strip()``;
* TOKENISE ONCE: the query and every document are tokenised once, without special tokens; the
  token statistics come from these counts and the model inputs from the same encodings, joined as
  ``[CLS] q [SEP] d [SEP]`` with joint ``truncation="longest_first"`` at ``max_length`` 512 by the
  tokenizer's own post-processor (tested equal to ``tokenizer(q, d, truncation=..., padding=True)``);
* BATCHING: per query, the candidates sorted by their truncated joint token length DESCENDING,
  ties by candidate rank ASCENDING, then cut into consecutive chunks of ``batch_size`` (16); a batch
  never mixes queries, so a query's scores do not depend on which other queries (or shards) are in
  the run. Each batch is padded to its longest pair. Inside a batch the rows are fed longest first
  by CHARACTER length (``numpy.argsort`` of ``-(len(query) + len(doc))``, exactly as
  sentence-transformers 6.2 ``CrossEncoder._inference`` orders them) and mapped back. With these
  chunks ``CrossEncoder.predict(chunk, batch_size=16)`` returns bit-identical scores (tested). The
  row order and the batch-mates change the last bits of a score (~1e-8), which is why both are fixed;
* NUMERICS: fp32, eval mode, ``torch.inference_mode``, ``torch.manual_seed(seed)``, oneMKL in strict
  conditional-numerical-reproducibility mode (``MKL_CBWR=AUTO,STRICT``, see ``numerics``): the
  scores are then the same bits at any torch thread count, so the thread count is a speed setting
  (what the scheduler grants), recorded but not part of the contract;
* the score is the raw logit (the model's activation is Identity).

Where each part lives: tokenising once and batching in ``scoring_batches`` (``PairEncoder``,
``batch_plan``, ``row_order``); the numeric setup, loading the model and the forward pass of one batch
in ``scoring_model``; here the settings (``ScoringSettings``), the score cache (``ScoreCache``), the
shards and ``score_run``, which scores a whole run.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from ..core.errors import PipelineError
from ..core.fileio import canonical_json, fmt_float, read_json, sha256_text, write_json
from ..core.names import TORCH_BACKEND
from . import numerics
from .scoring_batches import PairEncoder, batch_plan
from .scoring_model import score_rows

log = logging.getLogger(__name__)


BATCHING = ("per query: candidates sorted by truncated joint token length descending, ties by candidate rank "
            "ascending; consecutive chunks of batch_size; pad to longest; rows inside a batch longest first "
            "by characters (as sentence-transformers 6.2 predict)")
NUMERICS = f"fp32; oneMKL MKL_CBWR={numerics.CNR_ENV['MKL_CBWR']} (thread count: speed only)"
# a derived backend's numerics (backends.SESSION): its runtime's CPU kernels under fixed session settings
DERIVED_NUMERICS = ("ONNX Runtime CPU execution provider, ORT_ENABLE_ALL, sequential, one inter-op thread "
                    "(intra-op thread count: speed only)")


@dataclass(frozen=True)
class ScoringSettings:
    """Everything that decides a logit. The torch thread count is NOT one of them: in MKL's strict CNR
    mode the logits are the same bits at 1, 2, 3 and 4 threads for every batch shape the pipeline forms
    (measured; docs/scoring.md), so threads are a speed setting taken from the scheduler."""

    max_length: int
    truncation: str
    batch_size: int
    seed: int
    dtype: str
    backend: str = TORCH_BACKEND

    @classmethod
    def from_config(cls, ce: Mapping) -> ScoringSettings:
        """From the config's ``ce`` block (its ``threads`` and ``shards`` are speed/placement, not
        settings)."""
        return cls(ce["max_length"], ce["truncation"], ce["batch_size"], ce["seed"], ce["dtype"],
                   ce["backend"])

    @property
    def derived(self) -> bool:
        """Scored by a derived file (ONNX Runtime), not by the model itself."""
        return self.backend != TORCH_BACKEND

    def as_dict(self) -> dict:
        """The settings as recorded (a derived backend adds its name; the model's own keep their bytes)."""
        out = {"max_length": self.max_length, "truncation": self.truncation, "batch_size": self.batch_size,
               "seed": self.seed, "dtype": self.dtype, "batching": BATCHING, "numerics": NUMERICS}
        if self.derived:
            out.update(backend=self.backend, numerics=DERIVED_NUMERICS)
        return out


def contract(ce: Mapping) -> dict:
    """The scoring contract as the frozen confirmation protocol records it (one source: these settings)."""
    return ScoringSettings.from_config(ce).as_dict()


def pairs_model(meta: Mapping, identity: str) -> str:
    """The ``model`` column of pairs.tsv: the scorer's identity and the model's weights sha256."""
    return f"{identity} weights-sha256:{meta['weights_sha256']}"


def batch_cache_key(model_identity: str, settings: ScoringSettings, versions: dict,
                    queries: Iterable[str], docs: Iterable[str]) -> str:
    """A score depends on its batch-mates (padding), so the cache key is the whole batch's text."""
    pair_hash = sha256_text(json.dumps([[q, d] for q, d in zip(queries, docs)], ensure_ascii=True))
    return sha256_text(json.dumps({"model": model_identity, "settings": settings.as_dict(),
                                   "versions": versions, "pairs": pair_hash}, sort_keys=True))


def library_versions(settings: ScoringSettings | None = None) -> dict:
    """The libraries that decide a logit (a derived backend adds its runtime's)."""
    import tokenizers
    import torch
    import transformers

    out = {"torch": torch.__version__, "transformers": transformers.__version__,
           "tokenizers": tokenizers.__version__}
    if settings is not None and settings.derived:
        import onnx
        import onnxruntime

        out.update(onnx=onnx.__version__, onnxruntime=onnxruntime.__version__)
    return out


# ----------------------------------------------------------------------- the score cache --
class CacheEntryError(PipelineError):
    """A score-cache entry is not what its name promises; the message names the file and the fix."""


CACHE_FORMAT = "v2"  # part of the cache path: entries of another format are never looked up


class ScoreCache:
    """Per-batch logits on disk: ``<folder>/<key[:2]>/<key>.json`` holds ``{"key", "n", "logits",
    "sha256"}`` where ``sha256`` covers the key and the logits' exact text. Every entry is checked
    before use (name = key, length, finite values, checksum); a bad entry stops the run, naming the
    file and the fix (delete it), instead of being used or silently recomputed."""

    def __init__(self, folder):
        self.folder = Path(folder)

    def path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    @staticmethod
    def checksum(key: str, logits_text: Sequence[str]) -> str:
        return sha256_text(canonical_json({"key": key, "logits": list(logits_text)}))

    def get(self, key: str, n: int) -> list[float] | None:
        path = self.path(key)
        if not path.exists():
            return None
        fix = f"Delete {path} (a cache entry is only a shortcut) and rerun; it will be recomputed."
        try:
            entry = read_json(path)
        except PipelineError as exc:
            raise CacheEntryError(f"INVALID SCORE-CACHE ENTRY {path}: {exc}. {fix}") from None
        problems = []
        if not isinstance(entry, dict) or set(entry) != {"key", "n", "logits", "sha256"}:
            problems.append("not a cache entry of this version (keys key, n, logits, sha256)")
        else:
            texts = entry["logits"]
            if entry["key"] != key:
                problems.append(f"its key {entry['key']!r} is not its file name's {key!r}")
            if entry["n"] != n or not isinstance(texts, list) or len(texts) != n:
                problems.append(f"{len(texts) if isinstance(texts, list) else '?'} logits (n={entry['n']!r}) "
                                f"for a batch of {n} pairs")
            elif not all(isinstance(t, str) for t in texts):
                problems.append("logits are not exact float texts")
            else:
                if entry["sha256"] != self.checksum(key, texts):
                    problems.append("its checksum does not match its content (edited after it was written?)")
                try:
                    values = [float(t) for t in texts]
                except ValueError:
                    values = []
                    problems.append("a logit is not a number")
                if not all(math.isfinite(v) for v in values):
                    problems.append("non-finite logits")
                if not problems:
                    return values
        raise CacheEntryError(f"INVALID SCORE-CACHE ENTRY {path}: " + "; ".join(problems) + f". {fix}")

    def put(self, key: str, logits: Sequence[float]) -> None:
        texts = [fmt_float(x) for x in logits]
        write_json(self.path(key), {"key": key, "n": len(texts), "logits": texts,
                                    "sha256": self.checksum(key, texts)})


# ------------------------------------------------------------------------------- shards --
PAIR_HEADER = ("qid", "doc_id", "r0", "logit", "query_tokens", "doc_tokens", "total_tokens", "truncated",
               "batch", "model")


def assign_shards(qids: Sequence[str], shards: int) -> list[list[str]]:
    """The deterministic shard assignment: the query at position i (0-based) of the run's canonical
    query order goes to shard ``i mod shards``; each shard keeps the canonical order. A query's
    batches never depend on its shard (batches are per query), so the assignment moves no score."""
    if shards < 1:
        raise ValueError(f"shards must be >= 1, got {shards}")
    return [list(qids[k::shards]) for k in range(shards)]


def gather_shards(ranked: Mapping[str, Sequence[str]], shard_tables: Sequence[tuple[str, Sequence[Mapping]]]
                  ) -> list[Mapping]:
    """The rows of every shard table concatenated in canonical order (queries as in ``ranked``, each
    query's candidates in rank order). ``shard_tables`` is ``[(file name, rows)]`` for shards 0..N-1.
    Fails closed, naming the shard file, when a shard does not hold exactly its assigned queries'
    candidates in canonical order."""
    assigned = assign_shards(list(ranked), len(shard_tables))
    by_query: dict[str, list[Mapping]] = {}
    for (name, rows), qids in zip(shard_tables, assigned):
        want = [(q, d, str(r)) for q in qids for r, d in enumerate(ranked[q], start=1)]
        got = [(row["qid"], row["doc_id"], row["r0"]) for row in rows]
        if got != want:
            first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            raise PipelineError(
                f"SHARD MISMATCH {name}: {len(got)} rows for {len(want)} expected pairs of queries {qids}; "
                f"first difference at row {first + 1}: found "
                f"{got[first] if first < len(got) else 'nothing'}, expected "
                f"{want[first] if first < len(want) else 'nothing'}. The shard file does not belong to this "
                "run's candidates or shard count: delete it and rerun (it is an intermediate file).")
        for row in rows:
            by_query.setdefault(row["qid"], []).append(row)
    return [row for q in ranked for row in by_query.get(q, [])]


# ------------------------------------------------------------------- scoring a whole run --
def _require_equal(cached: Sequence[float], fresh: Sequence[float], path, qid: str, batch: int) -> None:
    """Fresh logits must equal a cached entry's byte for byte (their exact float texts)."""
    a, b = [fmt_float(x) for x in cached], [fmt_float(x) for x in fresh]
    if a != b:
        i = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
        raise PipelineError(f"FRESH INFERENCE DIFFERS FROM THE SCORE CACHE: query {qid} batch {batch}, row "
                            f"{i}: fresh {b[i]}, cached {a[i]} in {path}. The cached score was not "
                            "reproduced; nothing was published. Find out why (another machine, library or "
                            "thread count?) before trusting either; the cache entry is evidence, do not "
                            "delete it blindly.")


@dataclass
class ScoringCounts:
    pairs_inferred: int = 0
    pairs_from_cache: int = 0
    cache_entries_verified: int = 0  # fresh mode: cached batches proven equal to the fresh inference
    model_load_seconds: float = 0.0
    inference_seconds: float = 0.0
    tokens_inferred: int = 0  # real (unpadded) tokens of the inferred batches
    padded_tokens_inferred: int = 0  # rows x padded width, summed over the inferred batches
    inferred_lengths: list[int] = field(default_factory=list)  # each inferred pair's real tokens, in order


def useful_flops(n_tokens: int, layers: int = 6, hidden: int = 384, intermediate: int = 1536) -> float:
    """Matrix-product FLOPs (2 per multiply-add) of one pair of ``n_tokens`` real tokens through the
    encoder, no padding: per layer ``2 n (4 h^2 + 2 h f)`` (Q, K, V, O projections and the two FFN
    products) plus ``4 n^2 h`` (scores Q K^T and the weighted sum P V over all heads). Embeddings,
    LayerNorm, GELU, softmax, pooler and classifier are left out (< 1 %)."""
    n = n_tokens
    return layers * (2.0 * n * (4 * hidden * hidden + 2 * hidden * intermediate) + 4.0 * n * n * hidden)


def useful_gflop(lengths: Iterable[int], architecture: dict) -> float:
    """``useful_flops`` of pairs of these real token counts through the pinned encoder (its
    ``architecture`` block in model_pins.json: layers, hidden and intermediate size), in GFLOP, to 3
    decimals."""
    shape = [architecture[k] for k in ("num_hidden_layers", "hidden_size", "intermediate_size")]
    return round(sum(useful_flops(n, *shape) for n in lengths) / 1e9, 3)


def _batch_logits(key: str, n: int, cache: ScoreCache | None, infer: Callable[[], list[float]],
                  counts: ScoringCounts, *, fresh: bool = False, where: tuple[str, int] = ("", 0)
                  ) -> tuple[list[float], bool]:
    """The ONE place where the score cache is consulted: a validated entry, or ``infer()`` (stored).
    Returns (logits, came from the cache). ``fresh``: always ``infer()``; an existing entry must be
    equal to it byte for byte (counted in ``cache_entries_verified``), a missing one is stored."""
    logits = cache.get(key, n) if cache is not None else None
    if logits is not None and not fresh:
        counts.pairs_from_cache += n
        return logits, True
    fresh_logits = infer()
    if logits is not None:
        _require_equal(logits, fresh_logits, cache.path(key), *where)
        counts.cache_entries_verified += 1
    elif cache is not None:
        cache.put(key, fresh_logits)
    return fresh_logits, False


class _RunScorer:
    """The state of one ``score_run``: the pair encoder, the model (``load_model()`` called at most
    once, on first use), the counts; scores one query at a time."""

    def __init__(self, tok, load_model: Callable[[], object], settings: ScoringSettings, identity: str,
                 versions: dict, cache: ScoreCache | None, progress, fresh: bool):
        self.tok, self.load_model, self.settings = tok, load_model, settings
        self.identity, self.versions, self.cache = identity, versions, cache
        self.progress, self.fresh = progress, fresh
        self.counts = ScoringCounts()
        self.encoder = PairEncoder(tok, settings.max_length, settings.truncation)
        self.state: dict = {}

    def model(self):
        """The model, loaded on first use (the load time counted)."""
        if "model" not in self.state:
            t0 = time.perf_counter()
            self.state["model"] = self.load_model()
            self.counts.model_load_seconds += time.perf_counter() - t0
        return self.state["model"]

    def infer(self, qs, ds, features, lengths, idx) -> list[float]:
        """The logits of one batch from the model, timed and counted (pairs, real and padded tokens,
        FLOPs)."""
        m = self.model()
        t0 = time.perf_counter()
        out = score_rows(self.tok, m, qs, ds, [features[i] for i in idx])
        counts = self.counts
        counts.inference_seconds += time.perf_counter() - t0
        counts.pairs_inferred += len(idx)
        counts.tokens_inferred += sum(lengths[i] for i in idx)
        counts.padded_tokens_inferred += len(idx) * max(lengths[i] for i in idx)
        counts.inferred_lengths += [lengths[i] for i in idx]
        return out

    def query_rows(self, qid: str, qtext: str, docs: Sequence[str], dtexts: Sequence[str],
                   only: Container[int] | None = None) -> list[dict]:
        """One query's rows in candidate order: tokenised once, its batches (``batch_plan``) taken from
        the cache or inferred (``_batch_logits``); ``progress(n)`` after each batch. ``only``: the batch
        numbers to score (the rows of the other batches are left out)."""
        features, stats = self.encoder.pairs([qtext] * len(docs), dtexts)
        lengths = [len(f["input_ids"]) for f in features]
        batch_of: list[int | None] = [None] * len(docs)
        logit_of = [0.0] * len(docs)
        for b, idx in enumerate(batch_plan(lengths, self.settings.batch_size)):
            if only is not None and b not in only:
                continue
            qs, ds = [qtext] * len(idx), [dtexts[i] for i in idx]
            infer = partial(self.infer, qs, ds, features, lengths, idx)
            logits, _ = _batch_logits(batch_cache_key(self.identity, self.settings, self.versions, qs, ds),
                                      len(idx), self.cache, infer, self.counts, fresh=self.fresh,
                                      where=(qid, b))
            for i, lg in zip(idx, logits):
                batch_of[i], logit_of[i] = b, lg
            if self.progress is not None:
                self.progress(len(idx))
        return [{"qid": qid, "doc_id": d, "r0": i + 1, "logit": logit_of[i], "batch": batch_of[i], **stats[i]}
                for i, d in enumerate(docs) if batch_of[i] is not None]


def score_run(ranked: Mapping[str, Sequence[str]], query_text: Mapping[str, str], doc_text: Mapping[str, str],
              tok, load_model: Callable[[], object], settings: ScoringSettings, identity: str, versions: dict,
              cache: ScoreCache | None, progress=None, *, fresh: bool = False,
              after_query: Callable[[], None] | None = None) -> tuple[list[dict], ScoringCounts]:
    """Score every (query, candidate) pair: one dict per pair, queries in ``ranked`` order and each
    query's candidates in candidate order, with the logit, the candidate rank, the batch number and
    the token counts. Each query is tokenised once (``PairEncoder``); its batches come from
    ``batch_plan`` of the truncated token lengths; a cached batch is taken from ``cache`` (validated),
    others are inferred (``load_model()`` is called at most once, only if a batch is not cached) and
    stored. ``progress(n)`` after each batch, ``after_query()`` after each query (e.g. malloc_trim).

    ``fresh`` (a confirmation opening): the cache is never a source of logits; every batch is
    inferred, and where a cache entry exists its logits must equal the fresh ones byte for byte
    (else PipelineError naming the batch and the file); those entries are counted as verified."""
    run = _RunScorer(tok, load_model, settings, identity, versions, cache, progress, fresh)
    rows: list[dict] = []
    for qid, docs in ranked.items():
        rows += run.query_rows(qid, query_text[qid], docs, [doc_text[d] for d in docs])
        if after_query is not None:
            after_query()
    expected = sum(len(v) for v in ranked.values())
    if len(rows) != expected:
        raise PipelineError(f"scored {len(rows)} pairs for {expected} candidates: nothing was published")
    return rows, run.counts


def reinfer_batches(ranked: Mapping[str, Sequence[str]], query_text: Mapping[str, str],
                    doc_text: Mapping[str, str], tok, load_model: Callable[[], object],
                    settings: ScoringSettings, identity: str, versions: dict,
                    sample: Iterable[tuple[str, int]]
                    ) -> tuple[list[dict], ScoringCounts]:
    """Re-infer exactly the ``sample``'s batches ((qid, batch number)) from scratch, no cache: each sampled
    query is tokenised and its batches planned as ``score_run`` does them, and only its sampled batches are
    inferred. Returns the rows of those batches (as ``score_run``'s) and the counts."""
    wanted: dict[str, set[int]] = {}
    for qid, batch in sample:
        wanted.setdefault(qid, set()).add(batch)
    run = _RunScorer(tok, load_model, settings, identity, versions, None, None, False)
    rows: list[dict] = []
    for qid, batches in wanted.items():
        docs = ranked[qid]
        rows += run.query_rows(qid, query_text[qid], docs, [doc_text[d] for d in docs], only=batches)
    return rows, run.counts
