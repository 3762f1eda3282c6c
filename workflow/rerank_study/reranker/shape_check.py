"""The shape check each scoring shard makes before it scores: one forward of its first query's first
``ce.shape_check_pairs`` pairs padded to max_length (this check only), whose tensor shapes must be the
pinned architecture's (``model_pins.json``: hidden_size, num_labels). The forward's shapes are cached like
the scores (an unchanged rerun loads no weights; a confirmation opening always runs the forward); the record
of shard 0 (the run's first query) is the run's ``shape_check.json``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ..core.errors import PipelineError
from ..core.fileio import read_json, write_json
from . import scoring, scoring_model


def expected_shapes(n: int, max_length: int, arch: Mapping) -> dict:
    """The shapes ``n`` pairs padded to ``max_length`` must give under the pinned architecture."""
    return {"input_ids": [n, max_length], "last_hidden_state": [n, max_length, arch["hidden_size"]],
            "logits": [n, arch["num_labels"]]}


def cache_file(cache_dir: Path, identity: str, settings, qs: Sequence[str], ds: Sequence[str]) -> Path:
    """Where the forward's shapes of these pairs are cached (beside the model's score cache)."""
    key = scoring.batch_cache_key(identity, settings, scoring.library_versions(settings), qs, ds)
    return Path(cache_dir) / "shapes" / f"shape-{key}.json"


def measured_shapes(tok, model: Callable[[], object], qs, ds, settings, cached: Path,
                    fresh: bool = False) -> tuple[dict, bool]:
    """The shapes of one forward of (qs, ds), and whether they came from the cache: from ``cached`` when this
    exact check ran before (the model is then not loaded), never when ``fresh`` (a confirmation opening runs
    the forward)."""
    if cached.exists() and not fresh:
        return read_json(cached), True
    m = model()
    shapes = scoring_model.shape_check(tok, m, qs, ds, settings)
    shapes["hidden_size"] = m.config.hidden_size  # what the loaded model says (compared below)
    write_json(cached, shapes)
    return shapes, False


def checked_record(shapes: dict, expected: dict, label: str, qid: str, doc_ids: Sequence[str]) -> dict:
    """The check's record: the measured shapes, the expected ones, whether they agree, what was checked;
    stops (PipelineError) when they do not agree."""
    record = {**shapes, "expected": expected, "ok": all(shapes[k] == v for k, v in expected.items()),
              "model": label, "qid": qid, "doc_ids": list(doc_ids)}
    if not record["ok"]:
        raise PipelineError(f"SHAPE CHECK FAILED for {label}: found {record}; expected {expected}. The model "
                            "is not the pinned architecture; nothing was scored.")
    return record


def run_record(shards: Sequence[Mapping], files: Sequence, label: str) -> dict:
    """The run's shape_check.json: shard 0's record (the run's first query), once every shard's own check
    passed for this run's model (a shard without queries checked nothing); stops otherwise."""
    for m, f in zip(shards, files, strict=True):
        shapes = m.get("shape_check")
        passed = isinstance(shapes, dict) and shapes.get("ok") is True and shapes.get("model") == label
        if not (passed or (shapes is None and m.get("queries") == 0)):
            raise PipelineError(f"SHAPE CHECK of {f} did not pass for {label} (found {shapes}): nothing was "
                                "published; rerun the scoring")
    if not shards or shards[0].get("shape_check") is None:
        raise PipelineError(f"SHAPE CHECK: shard 0 ({files[0] if files else 'no shard'}) checked no pairs; "
                            "expected the run's first query's record")
    return shards[0]["shape_check"]
