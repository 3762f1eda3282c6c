"""The rule glue: named containers like Snakemake's, the recorded job and its replay, and ``run``'s loud
exits. A stand-in for the ``snakemake`` object is built here; Snakemake itself is not imported."""

import json
import logging
import sys

import pytest

from rerank_study.core import rule
from rerank_study.core.errors import MissingInputError, PipelineError


@pytest.fixture(autouse=True)
def restore_root_logging():
    """setup_logging replaces the root logger's handlers; put pytest's back and close the ones it added."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    for h in root.handlers:
        if h not in handlers:
            h.close()
    root.handlers[:] = handlers
    root.setLevel(level)


class Named(list):
    """Snakemake's Namedlist in the part ``job_record`` reads: ``_get_names`` gives (name, (start, end))."""

    def __init__(self, items, names):
        super().__init__(items)
        self.names = names

    def _get_names(self):
        return iter(self.names.items())


class FakeSnakemake:
    def __init__(self, log):
        self.rule, self.threads, self.config = "score", 2, {"study": "s"}
        self.input = Named(["c.jsonl", "q.txt", "r1", "r2"], {"corpus": (0, None), "runs": (2, 4)})
        self.output = Named(["out.tsv"], {"scores": (0, None)})
        self.params = Named([7], {"seed": (0, None)})
        self.log = Named(log, {})


def test_items_reach_one_item_or_a_range_by_name():
    items = rule.Items(["a", "b", "c"], {"first": (0, None), "rest": [1, 3]})
    assert items == ["a", "b", "c"]
    assert items.first == "a" and items.rest == ["b", "c"]
    assert items.get("first") == "a" and items.get("none", "default") == "default"
    assert sorted(items.keys()) == ["first", "rest"]


def test_an_unknown_name_is_an_attribute_error_listing_the_names():
    items = rule.Items(["a"], {"x": (0, None), "b": (0, None)})
    with pytest.raises(AttributeError, match=r"no item named 'corpus'; names: \['b', 'x'\]"):
        _ = items.corpus
    with pytest.raises(AttributeError):
        _ = items._private  # never looked up among the names (copy and pickle probe such attributes)


def test_a_job_record_round_trips_through_its_file(tmp_path):
    sm = FakeSnakemake([str(tmp_path / "logs" / "score.log")])
    record = rule.job_record(sm)
    assert record["input"] == {"items": ["c.jsonl", "q.txt", "r1", "r2"],
                               "names": {"corpus": [0, None], "runs": [2, 4]}}
    assert (record["rule"], record["threads"], record["config"]) == ("score", 2, {"study": "s"})
    path = tmp_path / "score.job.json"
    path.write_text(json.dumps(record))
    job = rule.load_job(path)
    assert (job.rule, job.threads, job.config) == ("score", 2, {"study": "s"})
    assert job.input.corpus == "c.jsonl" and job.input.runs == ["r1", "r2"]
    assert job.output.scores == "out.tsv" and job.params.seed == 7 and list(job.log) == sm.log


def test_a_container_without_names_records_none():
    sm = FakeSnakemake([])
    sm.log = []  # a plain list
    assert rule.job_record(sm)["log"] == {"items": [], "names": {}}


def test_the_job_file_sits_next_to_the_log():
    assert str(rule.job_file("results/s/logs/score.log")) == "results/s/logs/score.job.json"


def test_a_missing_job_file_is_named(tmp_path):
    with pytest.raises(MissingInputError, match=r"MISSING FILE: .*nope\.job\.json \(a rule's <log>\.job"):
        rule.load_job(tmp_path / "nope.job.json")


def test_run_under_snakemake_records_the_job_logs_and_calls_main(tmp_path):
    log_path = tmp_path / "logs" / "score.log"  # the folder does not exist yet
    sm = FakeSnakemake([str(log_path)])
    seen = []
    rule.run(sm, lambda job: seen.append(job))
    assert seen == [sm]
    assert json.loads((tmp_path / "logs" / "score.job.json").read_text()) == rule.job_record(sm)
    text = log_path.read_text()
    assert "rule score started" in text and "rule score finished in" in text


def test_a_pipeline_error_stops_the_job_with_its_message_and_no_traceback(tmp_path):
    log_path = tmp_path / "score.log"
    sm = FakeSnakemake([str(log_path)])

    def main(job):
        raise PipelineError("PIN MISMATCH for corpus")
    with pytest.raises(SystemExit) as info:
        rule.run(sm, main)
    assert info.value.code == 1
    text = log_path.read_text()
    assert "rule score STOPPED:\nPIN MISMATCH for corpus" in text and "Traceback" not in text


def test_an_unexpected_error_stops_the_job_with_the_traceback(tmp_path):
    log_path = tmp_path / "score.log"
    sm = FakeSnakemake([str(log_path)])
    with pytest.raises(SystemExit) as info:
        rule.run(sm, lambda job: 1 / 0)
    assert info.value.code == 1
    text = log_path.read_text()
    assert "rule score failed with an unexpected error" in text and "ZeroDivisionError" in text
    assert "Traceback" in text


def test_run_outside_snakemake_replays_the_job_named_on_the_command_line(tmp_path, monkeypatch):
    sm = FakeSnakemake([])
    path = tmp_path / "score.job.json"
    path.write_text(json.dumps(rule.job_record(sm)))
    seen = []
    monkeypatch.setattr(sys, "argv", ["score.py", str(path)])
    rule.run(None, lambda job: seen.append(job.input.runs))
    assert seen == [["r1", "r2"]]
    monkeypatch.setattr(sys, "argv", ["score.py"])
    with pytest.raises(SystemExit, match=r"usage: score\.py <results/\.\.\./logs/RULE\.job\.json>"):
        rule.run(None, lambda job: None)


def test_peak_rss_is_the_kernels_high_water_mark_in_mib():
    with open("/proc/self/status", encoding="utf-8") as fh:
        hwm_kib = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
    assert rule.peak_rss_mib() == pytest.approx(hwm_kib / 1024, rel=0.05)
