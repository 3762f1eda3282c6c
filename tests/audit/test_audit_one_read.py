"""The audit reads every file once, from a regular file: a file's sha256 and every parse of it in one audit
are of the same bytes (readers.one_read_per_file), and a FIFO, socket, device or folder is unreadable (a check
that needs it fails, naming it). Without this a named pipe in the lock folder gave the hash check the pinned
run and the score check another."""

import os

import pytest
from conftest import audit_module

readers = audit_module("read.readers")
problems = audit_module("core.problems")


def test_a_fifo_is_unreadable_without_blocking(tmp_path):
    fifo = tmp_path / "dev.trec"
    os.mkfifo(fifo)
    for read in (readers.sha256_of, readers.read_run_lines, readers.read_table, readers.read_json):
        with pytest.raises(problems.Unreadable, match="not a regular file"):
            read(fifo)


def test_a_folder_is_unreadable(tmp_path):
    with pytest.raises(problems.Unreadable, match="not a regular file"):
        readers.sha256_of(tmp_path)


def test_within_one_audit_the_hash_and_the_parse_are_of_the_first_bytes_read(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text("a\tb\n1\t2\n")
    with readers.one_read_per_file():
        first = readers.sha256_of(path)
        path.write_text("a\tb\n9\t9\n")  # changed while the audit runs
        assert readers.read_table(path) == [{"a": "1", "b": "2"}]
        assert readers.sha256_of(path) == first
    assert readers.read_table(path) == [{"a": "9", "b": "9"}]  # the next audit reads the file afresh


def test_outside_an_audit_nothing_is_kept(tmp_path):
    path = tmp_path / "t.json"
    path.write_text('{"a": 1}\n')
    assert readers.read_json(path) == {"a": 1}
    path.write_text('{"a": 2}\n')
    assert readers.read_json(path) == {"a": 2}


def test_line_ends_crlf_cr_and_a_last_line_without_lf_are_read_as_lf(tmp_path):
    path = tmp_path / "x.txt"
    path.write_bytes(b"1\r\n2\r3\n")
    assert readers.text_of(path) == "1\n2\n3\n"
    path.write_bytes(b"a\tb\r\n1\t2")
    assert readers.read_table(path) == [{"a": "1", "b": "2"}]
    path.write_bytes(b"1\n2")
    assert readers.read_ids(path) == ["1", "2"]


def test_an_id_list_with_an_empty_line_is_unreadable(tmp_path):
    path = tmp_path / "ids.txt"
    path.write_bytes(b"1\n2\n")
    assert readers.read_ids(path) == ["1", "2"]
    path.write_bytes(b"1\n\n2\n")
    with pytest.raises(problems.Unreadable, match="line 2 is empty"):
        readers.read_ids(path)


def test_a_score_trec_eval_reads_otherwise_is_not_a_number():
    """float() takes these; C's atof reads "1_000" as 1 and full-width digits as 0, so they are not scores."""
    for bad in ("1_000", "\uff11\uff12", "\u0661", "infinity", "nan", " 1", "1e"):
        assert readers.plain_number(bad) != readers.plain_number(bad), bad  # NaN
    assert [readers.plain_number(t) for t in ("+1.5", "-.5", "7.", "1E-3")] == [1.5, -0.5, 7.0, 0.001]
