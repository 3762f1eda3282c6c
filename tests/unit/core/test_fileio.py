"""Atomic writes (nothing left on failure), exact float text, TSV reading with the line of a bad row, strict
JSON reading (no repeated key), type-strict JSON equality."""

import pytest

from rerank_study.core import fileio
from rerank_study.core.errors import MalformedInputError


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with fileio.atomic_open(target) as fh:
            fh.write("half")
            raise RuntimeError("interrupted")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_atomic_path_renames_only_after_the_check(tmp_path):
    target = tmp_path / "f.bin"
    with pytest.raises(ValueError):
        with fileio.atomic_path(target) as tmp:
            tmp.write_bytes(b"bad")
            raise ValueError("hash mismatch")
    assert not target.exists() and list(tmp_path.iterdir()) == []


def test_float_text_round_trips_exactly():
    for x in (0.1, 1 / 3, -7.62939453125e-06, 1e-300, 0.03252313490743415):
        assert float(fileio.fmt_float(x)) == x
    with pytest.raises(ValueError):
        fileio.fmt_float(float("nan"))


def test_read_tsv_reports_line_of_truncated_row(tmp_path):
    p = tmp_path / "t.tsv"
    p.write_text("a\tb\n1\t2\n3")
    with pytest.raises(MalformedInputError, match=r"line 3: last line is not terminated"):
        fileio.read_tsv(p)
    p.write_text("a\tb\n1\t2\t3\n")
    with pytest.raises(MalformedInputError, match="line 2: 3 cells"):
        fileio.read_tsv(p)


def test_read_json_refuses_a_key_repeated_in_one_object(tmp_path):
    p = tmp_path / "pins.json"
    p.write_text('{"backends": {"onnx": {}}, "backends": {}}\n')  # json.loads keeps the last one silently
    with pytest.raises(MalformedInputError, match=r"pins\.json.*a key repeated in one object \['backends'\]"):
        fileio.read_json(p)
    p.write_text('{"a": {"x": 1, "x": 2}}\n')
    with pytest.raises(MalformedInputError, match=r"\['x'\]"):
        fileio.read_json(p)
    p.write_text('{"a": {"x": 1}, "b": {"x": 2}}\n')  # the same key in two objects is not a repeat
    assert fileio.read_json(p) == {"a": {"x": 1}, "b": {"x": 2}}


def test_json_equal_is_type_strict():
    assert fileio.json_equal({"a": [1, "x"]}, {"a": [1, "x"]})
    assert not fileio.json_equal(17, 17.0) and not fileio.json_equal(1, True) and 17 == 17.0 and 1 == True  # noqa: E712
