"""The documentation names tests and files as evidence: every ``tests/...py`` path and every ``test_...`` name
it mentions exists (a renamed or deleted test must take its mention along)."""

from __future__ import annotations

import re

from conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _test_sources() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("*.py"))


def test_every_test_path_the_docs_name_exists():
    for doc in DOCS:
        for rel in re.findall(r"tests/[\w/]+\.py", doc.read_text(encoding="utf-8")):
            assert (ROOT / rel).is_file(), f"{doc.name} names {rel}, which does not exist"


def test_every_test_name_the_docs_give_is_a_test():
    sources = _test_sources()
    missing = [f"{doc.name}: {name}" for doc in DOCS
               for name in sorted(set(re.findall(r"`(test_\w+)`", doc.read_text(
        encoding="utf-8")))) if not re.search(rf"def {name}\b", sources)
               and not list((ROOT / "tests").rglob(f"{name}.py"))]
    assert not missing, f"the docs name tests that do not exist: {missing}"
