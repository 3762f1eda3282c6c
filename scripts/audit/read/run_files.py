"""What the run says: the finished run folder's manifest and every artefact it lists, each file read
once, on first use, and handed over as it is written (no recomputation here: ``expected`` says what
the files should hold)."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from core.problems import Unauditable, Unreadable

from read import layout
from read.readers import docs_by_query, read_ids, read_json, read_qrels, read_run, read_table, resolve


class RunFiles:
    def __init__(self, rundir: Path, lockdir: Path):
        self.rundir = rundir
        manifest_path = rundir / "manifest.json"
        if not manifest_path.exists():
            raise Unauditable(f"{manifest_path} does not exist: not a finished run")
        try:
            self.manifest = read_json(manifest_path)
            self.manifest_settings = self.manifest["settings"]
            self.art = {a["key"]: a for a in self.manifest["artefacts"]}
        except (Unreadable, KeyError, TypeError) as exc:
            raise Unauditable(f"{manifest_path} is not a run manifest: {type(exc).__name__}: {exc}") from None
        self.manifest_path = manifest_path
        # the audit's anchor (never the folder the run names: check_layout compares them)
        self.lockdir = lockdir
        self.kind = self.manifest.get("kind", "development")
        self.scorer = self.manifest.get("scorer")
        # the ANCHOR's (audit_run sets it; never the run's own word)
        self.reranker_kind = layout.CROSS_ENCODER
        self._trec_runs: dict[str, dict] = {}

    def path(self, key: str) -> Path:
        """Where an artefact is: a run artefact at its DOCUMENTED path (whatever the manifest says:
        check_layout compares them), an input outside the run folder where the manifest says (its sha256 is
        checked against the pins)."""
        if key in layout.RUN_ARTEFACTS:
            return self.rundir / layout.RUN_ARTEFACTS[key][0]
        if key not in self.art:
            raise Unreadable(self.manifest_path, f"the manifest lists no artefact {key!r}")
        return resolve(self.art[key]["path"], self.rundir)

    @cached_property
    def split_dev(self):
        return read_ids(self.path("split_dev"))

    @cached_property
    def split_confirm(self):
        return read_ids(self.path("split_confirm"))

    @cached_property
    def analysed(self):
        return read_ids(self.path("run_queries"))

    @cached_property
    def frozen_rows(self):
        return read_table(self.path("candidates"))

    @cached_property
    def frozen(self) -> dict[str, list[str]]:
        return docs_by_query(self.frozen_rows)

    @cached_property
    def cand_rows(self):
        return read_table(self.path("run_candidates"))

    @cached_property
    def cands(self) -> dict[str, list[str]]:
        return docs_by_query(self.cand_rows)

    @cached_property
    def pair_rows(self):
        return read_table(self.path("pairs"))

    @cached_property
    def score_rows(self):
        """A run-file reranker's reranker_scores.tsv."""
        return read_table(self.path("reranker_scores"))

    @cached_property
    def reranker_record(self) -> dict:
        """A run-file reranker's reranker_run.json."""
        return read_json(self.path("reranker_run"))

    @property
    def n_pairs(self) -> int:
        return len(self.score_rows if self.reranker_kind == layout.RUN_FILE else self.pair_rows)

    @cached_property
    def logits(self) -> dict[str, dict[str, float]]:
        """The reranker's score of every pair: a cross-encoder's logits (pairs.tsv), or a run file's scores
        (reranker_scores.tsv)."""
        rows, col = (self.score_rows, "score") if self.reranker_kind == layout.RUN_FILE else (self.pair_rows,
                                                                                              "logit")
        out: dict[str, dict[str, float]] = {}
        for row in rows:
            out.setdefault(row["qid"], {})[row["doc_id"]] = float(row[col])
        return out

    @cached_property
    def ranking_rows(self):
        return read_table(self.path("rankings"))

    def trec_run(self, key: str) -> dict[str, list[tuple[str, int, str]]]:
        """One of the run's TREC runs (run_rrf / run_ce / run_blend), read on first use."""
        if key not in self._trec_runs:
            self._trec_runs[key] = read_run(self.path(key))
        return self._trec_runs[key]

    @cached_property
    def qrels(self):
        return read_qrels(self.path("run_qrels"))

    @cached_property
    def source_qrels(self):
        return read_qrels(self.path("qrels_confirm" if self.kind == "confirmation" else "qrels_dev"))

    @cached_property
    def per_query_rows(self):
        return read_table(self.path("per_query"))

    @cached_property
    def group_rows(self):
        return read_table(self.path("groups"))

    @cached_property
    def groups_meta(self):
        return read_json(self.path("groups_meta"))

    def index_matrix(self, key: str) -> list[list[int]]:
        """A saved bootstrap index matrix: row b = replicate b's draws."""
        out = []
        for b, row in enumerate(read_table(self.path(key))):
            if int(row["replicate"]) != b:
                raise Unreadable(self.path(key), f"row {b + 2}: replicate {row['replicate']}, expected {b}")
            out.append([int(row[f"draw{j}"]) for j in range(len(row) - 1)])
        return out

    @cached_property
    def grouped_idx(self):
        return self.index_matrix("grouped_indices")

    @cached_property
    def query_idx(self):
        return self.index_matrix("query_indices")

    @cached_property
    def replicate_rows(self):
        return read_table(self.path("replicates"))

    @cached_property
    def summary(self):
        return read_json(self.path("summary"))

    @cached_property
    def verification(self):
        return read_json(self.path("verification"))

    def measurements(self, key: str) -> dict:
        """A measurement record (scoring_measurements, verification_measurements, report_measurements)."""
        found = read_json(self.path(key))
        if not isinstance(found, dict):
            raise Unreadable(self.path(key), f"a JSON object expected, found {type(found).__name__}")
        return found

    @cached_property
    def shape_check(self):
        return read_json(self.path("shape_check"))
