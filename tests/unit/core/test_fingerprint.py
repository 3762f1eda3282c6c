"""The library's fingerprint: sha256 over the relative path and bytes of every module, in path order; written
out here with hashlib from the documented definition, on a small library of its own."""

import hashlib

from rerank_study.core.fingerprint import library_sha256


def make_library(root, files):
    lib = root / "workflow" / "rerank_study"
    for rel, text in files.items():
        (lib / rel).parent.mkdir(parents=True, exist_ok=True)
        (lib / rel).write_bytes(text)
    return lib


def by_hand(pairs):
    h = hashlib.sha256()
    for rel, data in pairs:
        h.update(rel.encode() + b"\0" + data)
    return h.hexdigest()


def test_the_fingerprint_is_the_documented_sha256_in_path_order(tmp_path):
    make_library(tmp_path, {"core/b.py": b"B = 2\n", "a.py": b"A = 1\n", "core/__init__.py": b""})
    # sorted as paths: a.py < core/__init__.py < core/b.py
    expected = by_hand([("a.py", b"A = 1\n"), ("core/__init__.py", b""), ("core/b.py", b"B = 2\n")])
    assert library_sha256(tmp_path) == expected == library_sha256(str(tmp_path))


def test_only_python_modules_outside_pycache_count(tmp_path):
    lib = make_library(tmp_path, {"a.py": b"A = 1\n"})
    before = library_sha256(tmp_path)
    (lib / "notes.md").write_text("not a module")
    (lib / "__pycache__").mkdir()
    (lib / "__pycache__" / "a.py").write_text("a stray copy")
    (tmp_path / "workflow" / "outside.py").write_text("X = 1")  # not under rerank_study/
    assert library_sha256(tmp_path) == before == by_hand([("a.py", b"A = 1\n")])


def test_a_changed_byte_or_a_renamed_module_changes_the_fingerprint(tmp_path):
    lib = make_library(tmp_path, {"a.py": b"A = 1\n"})
    first = library_sha256(tmp_path)
    (lib / "a.py").write_bytes(b"A = 2\n")
    second = library_sha256(tmp_path)
    (lib / "a.py").rename(lib / "c.py")
    third = library_sha256(tmp_path)
    assert len({first, second, third}) == 3
    assert third == by_hand([("c.py", b"A = 2\n")])


def test_an_empty_library_is_the_sha256_of_nothing(tmp_path):
    (tmp_path / "workflow" / "rerank_study").mkdir(parents=True)
    assert library_sha256(tmp_path) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
