"""Inputs are read once, from regular files: the bytes a pin check hashed are the bytes every reader parses.

The attack this closes: a named pipe (FIFO) in place of a pinned file gives the hash check the pinned bytes
and the parser, which opened the file a second time, other bytes; a file swapped between the check and the
parse does the same without a FIFO. Every reader of the pipeline goes through ``fileio.input_bytes`` (a
regular file only, one descriptor), and a check returns a ``VerifiedFile`` whose bytes the readers parse."""

import os

import pytest

from rerank_study.core import fileio
from rerank_study.core.errors import MalformedInputError, NotRegularFileError, PinMismatchError
from rerank_study.data import beir, pins, splits
from rerank_study.rankings import candidates, trec

READERS = {
    "fileio.read_tsv": lambda p: fileio.read_tsv(p),
    "fileio.read_json": fileio.read_json,
    "fileio.sha256_file": fileio.sha256_file,
    "trec.read_run": trec.read_run,
    "candidates.read_user_run": candidates.read_user_run,
    "candidates.candidate_header": candidates.candidate_header,
    "splits.read_split": splits.read_split,
    "beir.read_qrels": beir.read_qrels,
    "beir.read_queries": beir.read_queries,
    "beir.read_corpus": beir.read_corpus,
}


@pytest.mark.parametrize("name", sorted(READERS))
def test_every_reader_refuses_a_fifo_without_blocking_and_names_it(tmp_path, name):
    fifo = tmp_path / "pinned.tsv"
    os.mkfifo(fifo)  # no writer: an open without O_NONBLOCK would hang here
    with pytest.raises(NotRegularFileError) as exc:
        READERS[name](fifo)
    msg = str(exc.value)
    assert f"NOT A REGULAR FILE: {fifo} is a FIFO" in msg and "fix: put the file itself" in msg


@pytest.mark.parametrize("name", sorted(READERS))
def test_every_reader_refuses_a_folder(tmp_path, name):
    with pytest.raises(NotRegularFileError, match=r"is a folder"):
        READERS[name](tmp_path)


def test_a_checked_split_is_parsed_from_the_checked_bytes_even_when_the_file_changes_afterwards(tmp_path):
    path = tmp_path / "dev.txt"
    path.write_text("1\n2\n3\n")
    checked = pins.verify_against(path, fileio.sha256_bytes(b"1\n2\n3\n"), "dev split list", "restore it")
    path.write_text("1\n2\n4\n")  # a swap after the check
    assert splits.read_split(checked) == ["1", "2", "3"]
    assert fileio.sha256_file(checked) == fileio.sha256_bytes(b"1\n2\n3\n")
    with pytest.raises(PinMismatchError):  # a fresh check sees the swap
        pins.verify_against(path, fileio.sha256_bytes(b"1\n2\n3\n"), "dev split list", "restore it")


def test_a_checked_table_gives_its_rows_and_header_from_the_checked_bytes(tmp_path):
    text = "qid\tsplit\trank\tdoc_id\trun_score\nq1\tdev\t1\td1\t0.5\n"
    path = tmp_path / "candidates.tsv"
    path.write_text(text)
    checked = pins.verify_against(path, fileio.sha256_bytes(text.encode()), "the frozen candidate table", "x")
    path.write_text("something\telse\n")
    assert candidates.candidate_header(checked) == ("qid", "split", "rank", "doc_id", "run_score")
    assert fileio.read_tsv(checked)[0]["doc_id"] == "d1"


def test_a_byte_that_is_not_utf8_names_its_line(tmp_path):
    path = tmp_path / "run.trec"
    path.write_bytes(b"q1 Q0 d1 1 1.0 t\nq1 Q0 d\xff 2 0.5 t\n")
    with pytest.raises(MalformedInputError, match="line 2: byte 24 is not UTF-8"):
        trec.read_run(path)


def test_line_ends_are_kept_as_open_with_newline_empty_gives_them(tmp_path):
    path = tmp_path / "q.tsv"
    path.write_bytes(b"a\tb\r\n1\t2\r\n")
    assert fileio.read_tsv(path) == [{"a": "1", "b": "2"}]
    assert fileio.input_lines(path).readlines() == ["a\tb\r\n", "1\t2\r\n"]
