"""The library's shape: no import cycle between its modules, no private helper used across modules, and
every module of a subpackage with its own unit-test file.

Every import is read from the source with ``ast`` (tests/import_graph.py, which the audit's layout test walks
its code with too) - those at module level and those inside functions - so a cycle that only a function-level
import closes is found too. An import under ``if TYPE_CHECKING:`` is left out: annotations read it and no run
executes it.
"""
from __future__ import annotations

import ast
from pathlib import Path

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


def missing_unit_tests(library: Path, unit: Path) -> list[str]:
    """Each module of a subpackage of ``library`` without its own ``unit/<subpackage>/test_<module>.py``
    (paths relative to the checkout: the folder above ``library``'s)."""
    root = library.parent.parent
    wanted = {p: unit / p.parent.name / f"test_{p.name}" for p in sorted(library.glob("*/*.py"))
              if p.name != "__init__.py"}
    return [f"{p.relative_to(root)}: no {t.relative_to(root)}" for p, t in wanted.items() if not t.is_file()]


def test_the_unit_test_finder_names_a_module_without_its_test_file(tmp_path):
    (tmp_path / "workflow/lib/pkg").mkdir(parents=True)
    for name in ("__init__.py", "tested.py", "untested.py"):
        (tmp_path / "workflow/lib/pkg" / name).write_text("")
    (tmp_path / "workflow/lib/top.py").write_text("")  # a module outside the subpackages: not asked for
    (tmp_path / "tests/unit/pkg").mkdir(parents=True)
    (tmp_path / "tests/unit/pkg/test_tested.py").write_text("")
    assert missing_unit_tests(tmp_path / "workflow/lib", tmp_path / "tests/unit") == \
        ["workflow/lib/pkg/untested.py: no tests/unit/pkg/test_untested.py"]


def test_every_module_of_a_subpackage_has_its_own_unit_test_file():
    """``tests/unit/<subpackage>/test_<module>.py`` for every ``rerank_study/<subpackage>/<module>.py`` (the
    top-level ``rerank_study.evalstats`` only re-exports ``stats.evalstats``'s command line, whose tests
    run it by that name)."""
    found = missing_unit_tests(LIBRARY, ROOT / "tests" / "unit")
    assert found == [], "a library module without its unit tests:\n" + "\n".join(found)
