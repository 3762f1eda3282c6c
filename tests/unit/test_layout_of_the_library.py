"""The library's shape: no import cycle between its modules, no private helper used across modules, and
every module of a subpackage with its own unit-test file.

Every import is read from the source with ``ast`` - those at module level and those inside functions - so a
cycle that only a function-level import closes is found too. An import under ``if TYPE_CHECKING:`` is left
out: annotations read it and no run executes it.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "workflow" / "rerank_study"
PACKAGE = LIBRARY.name
# the code that uses the library: its rule scripts and the user tools (the audit imports nothing of it)
USERS = sorted((ROOT / "workflow" / "scripts").glob("*.py")) + sorted((ROOT / "scripts").glob("*.py"))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(LIBRARY.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(LIBRARY.rglob("*.py"))}


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def executed_nodes(tree: ast.AST):
    """Every node of ``tree`` outside ``if TYPE_CHECKING:`` blocks (their ``else`` branch included)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and is_type_checking(node):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def base_of(path: Path, node: ast.ImportFrom) -> str | None:
    """The absolute module an ``ImportFrom`` names (None: outside the library)."""
    if node.level == 0:
        return node.module if node.module and node.module.split(".")[0] == PACKAGE else None
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    package = package[:len(package) - (node.level - 1)]
    return ".".join(package + ([node.module] if node.module else []))


def imports(path: Path) -> list[tuple[str, str | None, int]]:
    """(library module imported, the name taken from it or None, line) of each executed import in ``path``."""
    out = []
    for node in executed_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, None, node.lineno) for a in node.names if a.name.split(".")[0] == PACKAGE]
        elif isinstance(node, ast.ImportFrom) and (base := base_of(path, node)) is not None:
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.append((sub, None, node.lineno) if sub in MODULES else (base, alias.name, node.lineno))
    return out


def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for name, path in MODULES.items():
        for target, _, _ in imports(path):
            assert target in MODULES, f"{path}: imports {target}, which is not a module of the library"
            if target != name:
                edges[name].add(target)
    return edges


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module (each one is a cycle or several)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle_closed_by_a_function_level_import():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected(edges) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []
    tree = ast.parse("import x\ndef f():\n    from . import y\nif TYPE_CHECKING:\n    from . import z\n")
    names = [a.name for n in executed_nodes(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
             for a in n.names]
    assert sorted(names) == ["x", "y"]


def test_no_import_cycle_between_the_library_modules():
    edges = graph()
    assert sum(map(len, edges.values())) > 100  # the walk sees the imports (function-level ones included)
    assert strongly_connected(edges) == []


def private_uses(path: Path) -> list[str]:
    """``from <library module> import _name`` and ``<imported library module>._name`` in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    mine = module_name(path) if path.is_relative_to(LIBRARY) else None
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    out, aliases = [], {}
    for target, name, line in (imports(path) if mine else []):
        if name and name.startswith("_") and not name.startswith("__") and target != mine:
            out.append(f"{where}:{line}: {target}.{name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and mine is None and node.module \
                and node.module.split(".")[0] == PACKAGE:
            out += [f"{where}:{node.lineno}: {node.module}.{a.name}" for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")]
        if isinstance(node, ast.ImportFrom):
            base = base_of(path, node) if mine else (node.module if node.module and
                                                      node.module.split(".")[0] == PACKAGE else None)
            for a in node.names if base else []:
                if f"{base}.{a.name}" in MODULES:
                    aliases[a.asname or a.name] = f"{base}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in MODULES and a.asname:
                    aliases[a.asname] = a.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr.startswith("_") and not node.attr.startswith("__")
                and aliases[node.value.id] != mine):
            out.append(f"{where}:{node.lineno}: {aliases[node.value.id]}.{node.attr}")
    return out


def test_the_private_use_finder_sees_both_spellings(tmp_path):
    module = next(m for m in MODULES if m.count(".") == 2)  # a module of a subpackage
    package, leaf = module.rsplit(".", 1)
    user = tmp_path / "user.py"
    user.write_text(f"from {module} import _hidden, public\nfrom {package} import {leaf}\n"
                    f"{leaf}._x, {leaf}.y\n")
    assert private_uses(user) == [f"user.py:1: {module}._hidden", f"user.py:3: {module}._x"]


def test_no_private_helper_is_used_across_modules():
    found = [use for path in [*MODULES.values(), *USERS] for use in private_uses(path)]
    assert found == [], "a private helper used outside its module (make it public where it belongs):\n" + \
        "\n".join(found)


def test_every_module_is_listed_in_its_package_index():
    """Each package's ``__all__`` lists exactly its modules and subpackages (the index of the package)."""
    wrong = []
    for init in sorted(LIBRARY.rglob("__init__.py")):
        folder = init.parent
        here = sorted([p.stem for p in folder.glob("*.py") if p.name != "__init__.py"]
                      + [d.name for d in folder.iterdir() if (d / "__init__.py").is_file()])
        body = ast.parse(init.read_text(encoding="utf-8")).body
        listed = next((ast.literal_eval(n.value) for n in body if isinstance(n, ast.Assign)
                       and [getattr(t, "id", None) for t in n.targets] == ["__all__"]), None)
        if listed is None or sorted(listed) != here:
            wrong.append(f"{init.relative_to(ROOT)}: __all__ = {listed}, the folder holds {here}")
    assert wrong == [], "\n".join(wrong)


def test_every_package_says_what_lives_in_it():
    for init in sorted(LIBRARY.rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and len(doc.splitlines()) >= 2, f"{init.relative_to(ROOT)}: no docstring of what is there"


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
