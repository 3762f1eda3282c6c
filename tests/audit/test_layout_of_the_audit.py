"""The audit's shape, as the library's (tests/unit/test_layout_of_the_library.py, the same walker:
tests/import_graph.py): its modules live in rooms (one package per concept, whose ``__init__.py`` says what
lives there and whose ``__all__`` lists its modules) with only ``__main__.py`` beside them; no import cycle
between its modules (function-level imports included), and no private helper imported across modules."""
from __future__ import annotations

from conftest import AUDIT, ROOT
from import_graph import Code, strongly_connected, unlisted, unsaid

ROOMS = sorted(d.name for d in AUDIT.iterdir() if (d / "__init__.py").is_file())
CODE = Code(AUDIT, {*ROOMS, "__main__"}, AUDIT.rglob("*.py"), ROOT)


def test_every_module_lives_in_a_room_and_only_the_entry_point_beside_them():
    assert sorted(p.name for p in AUDIT.glob("*.py")) == ["__main__.py"]
    assert [d.name for d in AUDIT.iterdir() if d.is_dir() and d.name not in ROOMS] in ([], ["__pycache__"])
    assert len(ROOMS) >= 5 and len(CODE.modules) > 40


def test_no_import_cycle_between_the_audit_modules():
    edges = CODE.graph()
    assert sum(map(len, edges.values())) > 100  # the walk sees the imports (function-level ones included)
    assert strongly_connected(edges) == []


def test_no_private_helper_is_imported_across_the_audit_modules():
    found = [use for path in CODE.modules.values() for use in CODE.private_uses(path)]
    assert found == [], "a private helper used outside its module (make it public where it belongs):\n" + \
        "\n".join(found)


def test_every_audit_module_is_listed_in_its_room_index():
    wrong = unlisted(AUDIT, ROOT)
    assert wrong == [], "\n".join(wrong)


def test_every_room_says_what_lives_in_it():
    assert unsaid(AUDIT, ROOT) == []
