"""The pipeline's own errors: every message names the file, the expected and the actual value and the fix."""

import pytest

from rerank_study.core import errors
from rerank_study.core.errors import (
    MalformedInputError,
    NotRegularFileError,
    PinMismatchError,
    PipelineError,
    StudyError,
    fail_study,
)


def test_every_error_of_the_pipeline_is_a_pipeline_error():
    # rule.run ends a job without traceback exactly for these; an error outside the family would not be caught
    for cls in (errors.PinMismatchError, errors.MissingInputError, errors.NotRegularFileError,
                errors.MalformedInputError, errors.ConfigError, errors.StudyError, errors.SealError):
        assert issubclass(cls, PipelineError)
    assert issubclass(PipelineError, Exception) and not issubclass(PipelineError, ValueError)


def test_pin_mismatch_names_what_where_both_hashes_and_the_default_fix():
    exc = PinMismatchError("corpus", "data/corpus.jsonl", "sha256", "a" * 64, "b" * 64)
    assert str(exc) == ("PIN MISMATCH for corpus: data/corpus.jsonl\n"
                        f"  sha256 expected: {'a' * 64}\n"
                        f"  sha256 actual:   {'b' * 64}\n"
                        "  The file is not the pinned one; nothing was read from it or kept.")
    assert (exc.what, exc.path, exc.algo, exc.expected, exc.actual, exc.source) == (
        "corpus", "data/corpus.jsonl", "sha256", "a" * 64, "b" * 64, None)


def test_pin_mismatch_with_its_source_and_a_fix_of_its_own(tmp_path):
    exc = PinMismatchError("qrels", tmp_path / "q.tsv", "md5", "1", "2", source="https://x/y.zip",
                           fix="Delete the download and run again.")
    lines = str(exc).split("\n")
    assert lines[0] == f"PIN MISMATCH for qrels: {tmp_path / 'q.tsv'}"
    assert lines[3:] == ["  came from: https://x/y.zip", "  Delete the download and run again."]
    assert exc.path == str(tmp_path / "q.tsv")  # a Path is kept as text
    assert "nothing was read" not in str(exc)


def test_not_a_regular_file_names_the_path_the_kind_and_the_fix():
    exc = NotRegularFileError("in/queries.txt", "FIFO")
    msg = str(exc)
    assert msg.startswith("NOT A REGULAR FILE: in/queries.txt is a FIFO\n  expected: a regular file")
    assert "\n  found: a FIFO\n" in msg
    assert msg.endswith("fix: put the file itself at in/queries.txt (cp, not mkfifo, a device or a folder)")
    assert (exc.path, exc.kind) == ("in/queries.txt", "FIFO")


def test_malformed_input_names_file_line_and_problem():
    exc = MalformedInputError("runs/ce.trec", 7, "5 fields, expected 6")
    assert str(exc) == "MALFORMED INPUT runs/ce.trec, line 7: 5 fields, expected 6"
    assert (exc.path, exc.line_no, exc.problem) == ("runs/ce.trec", 7, "5 fields, expected 6")


def test_fail_study_raises_a_study_error_naming_study_file_and_fix():
    with pytest.raises(StudyError) as info:
        fail_study("scifact-ce", "config/studies.yaml", "the dataset 'nfcorpus' has no pins",
                   "pin it first (make pin-data)")
    assert str(info.value) == ("STUDY 'scifact-ce': the dataset 'nfcorpus' has no pins\n"
                               "  file: config/studies.yaml\n  fix: pin it first (make pin-data)")
