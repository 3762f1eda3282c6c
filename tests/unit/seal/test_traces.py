"""seal.traces: a look leaves traces outside the ledger (a trace file, a sealed copy in the cache, a results
folder, a started line in the git history); each one the current ledgers do not know is named with its fix,
and none is once a ledger holds the look."""

from __future__ import annotations

import hashlib
import json

from seal_world import commit_all, git
from test_registry import sealed_set

from rerank_study.seal import ledger, traces
from rerank_study.seal.registry import SealedSet

STARTED = {"event": "started", "protocol_sha256": "p" * 64, "opening": 1, "run": "confirm-pppppppppppp-1"}


def held(entry: dict, source: str = "lockfiles/confirmation_ledger.jsonl") -> list[ledger.Line]:
    """The current ledgers holding ``entry`` on their first line."""
    return [ledger.Line(source, 1, entry, "S")]


def test_a_fixtures_traces_are_in_its_folder_and_the_repositorys_in_the_git_directory(tmp_path):
    assert traces.trace_path(tmp_path, tmp_path / "fixture") == tmp_path / "fixture" / ".seal-traces.jsonl"
    lock = tmp_path / "lockfiles"
    lock.mkdir()
    assert traces.trace_path(tmp_path, lock) == lock / ".seal-traces.jsonl"  # not (yet) in a repository
    git(tmp_path, "init", "-q")  # a repository: out of reach of a checkout, stash or reset
    assert traces.trace_path(tmp_path, lock) == \
        (tmp_path / ".git" / "rerank-study" / "seal-traces.jsonl").resolve()


def test_a_trace_no_ledger_holds_is_named_with_the_line_to_append(tmp_path):
    lock = tmp_path / "fixture"
    path = traces.write_trace(tmp_path, lock, STARTED)
    [line] = traces.trace_lines(tmp_path, [lock])
    assert (line.source, line.number, line.entry) == (str(path), 1, {**STARTED, "lockdir": "fixture"})
    s = sealed_set(lockdir=lock)
    [problem] = traces.trace_problems(tmp_path, [s], current=[])
    assert problem == (f"{path} line 1 records a look that no ledger holds; append this line to "
                       f"fixture/confirmation_ledger.jsonl exactly as it is and commit it:\n    "
                       + json.dumps(STARTED, sort_keys=True))
    assert traces.trace_problems(tmp_path, [s], current=held(STARTED)) == []


def test_a_sealed_copy_or_a_results_folder_no_ledger_records_is_named(tmp_path):
    cache, results = tmp_path / "cache", tmp_path / "results"
    (cache / "x").mkdir(parents=True)
    (cache / "x" / "test.tsv").write_bytes(b"sealed judgements\n")
    (cache / "x" / "acquisition.json").write_text("{}")
    (results / "confirm-pppppppppppp-1").mkdir(parents=True)
    (results / "dev").mkdir()
    s = SealedSet(tmp_path / "lock", "d", "c", "qrels/test.tsv",
                  hashlib.sha256(b"sealed judgements\n").hexdigest(), "h", frozenset({"1"}), frozenset())
    found = traces.trace_problems(tmp_path, [s], [], caches=[cache], results=[results])
    assert found == [
        f"{cache / 'x' / 'test.tsv'} is a verified copy of the sealed judgements of {s.lockdir} "
        "(qrels/test.tsv), but no ledger records a started opening of that set: restore the ledger line of "
        "that look from git (or from the trace above); a copy made by hand must be removed by hand",
        f"{results / 'confirm-pppppppppppp-1'} is a confirmation results folder that no ledger records: "
        "restore the ledger from git; a folder made by hand must be removed by hand"]
    known = held({**STARTED, "sealed_query_ids": ["1"], "dataset": "d"})
    assert traces.trace_problems(tmp_path, [s], known, caches=[cache], results=[results]) == []


def test_a_started_line_the_history_holds_but_the_current_ledger_lost_is_named(tmp_path):
    book = tmp_path / "lockfiles" / "confirmation_ledger.jsonl"
    book.parent.mkdir()
    book.write_text(json.dumps(STARTED) + "\n")
    git(tmp_path, "init", "-q")
    commit_all(tmp_path, "a look")
    book.write_text("")
    commit_all(tmp_path, "the look rewritten away")
    [line] = traces.history_lines(tmp_path)
    assert line.entry == STARTED and line.source.endswith(":lockfiles/confirmation_ledger.jsonl")
    [problem] = traces.trace_problems(tmp_path, [], current=[])
    assert problem == (f"{line.source} line 1 records opening 1 of protocol pppppppppppp, which the current "
                       "lockfiles/confirmation_ledger.jsonl does not hold: restore it from that commit (git "
                       "checkout <branch or commit> -- the ledger) and commit it")
    assert traces.trace_problems(tmp_path, [], current=held(STARTED)) == []
    assert traces.history_lines(tmp_path / "lockfiles") == []  # not the top of a repository
