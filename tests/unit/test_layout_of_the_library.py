"""The library's shape: no import cycle between its modules, and no private helper used across modules.

Every import is read from the source with ``ast`` (tests/import_graph.py, which the audit's layout test walks
its code with too) - those at module level and those inside functions - so a cycle that only a function-level
import closes is found too. An import under ``if TYPE_CHECKING:`` is left out: annotations read it and no run
executes it.
"""
from __future__ import annotations

import ast

from conftest import ROOT
from import_graph import Code, executed_nodes, strongly_connected, unlisted, unsaid

LIBRARY = ROOT / "workflow" / "rerank_study"
CODE = Code(LIBRARY.parent, {LIBRARY.name}, LIBRARY.rglob("*.py"), ROOT)
MODULES = CODE.modules
# the code that uses the library: its rule scripts and the user tools (the audit imports nothing of it)
USERS = sorted((ROOT / "workflow" / "scripts").glob("*.py")) + sorted((ROOT / "scripts").glob("*.py"))


def test_the_cycle_finder_finds_a_cycle_closed_by_a_function_level_import():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected(edges) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []
    tree = ast.parse("import x\ndef f():\n    from . import y\nif TYPE_CHECKING:\n    from . import z\n")
    names = [a.name for n in executed_nodes(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
             for a in n.names]
    assert sorted(names) == ["x", "y"]


def test_no_import_cycle_between_the_library_modules():
    edges = CODE.graph()
    assert sum(map(len, edges.values())) > 100  # the walk sees the imports (function-level ones included)
    assert strongly_connected(edges) == []


def test_the_private_use_finder_sees_both_spellings(tmp_path):
    module = next(m for m in MODULES if m.count(".") == 2)  # a module of a subpackage
    package, leaf = module.rsplit(".", 1)
    user = tmp_path / "user.py"
    user.write_text(f"from {module} import _hidden, public\nfrom {package} import {leaf}\n"
                    f"{leaf}._x, {leaf}.y\n")
    assert CODE.private_uses(user) == [f"user.py:1: {module}._hidden", f"user.py:3: {module}._x"]


def test_no_private_helper_is_used_across_modules():
    found = [use for path in [*MODULES.values(), *USERS] for use in CODE.private_uses(path)]
    assert found == [], "a private helper used outside its module (make it public where it belongs):\n" + \
        "\n".join(found)


def test_every_module_is_listed_in_its_package_index():
    """Each package's ``__all__`` lists exactly its modules and subpackages (the index of the package)."""
    wrong = unlisted(LIBRARY, ROOT)
    assert wrong == [], "\n".join(wrong)


def test_every_package_says_what_lives_in_it():
    assert unsaid(LIBRARY, ROOT) == []
