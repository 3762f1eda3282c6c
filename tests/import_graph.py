"""The imports of a body of code, read from its source with ``ast``: which of its modules imports which
(those at module level and those inside functions, so a cycle that only a function-level import closes is
found too), the cycles among them, the private helpers used across modules, and whether each package's
``__all__`` lists its modules. The layout tests of the library (tests/unit/test_layout_of_the_library.py)
and of the audit (tests/audit/test_layout_of_the_audit.py) both walk their code with it. An import under
``if TYPE_CHECKING:`` is left out: annotations read it and no run executes it.
"""
from __future__ import annotations

import ast
from pathlib import Path


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


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


class Code:
    """The modules of a body of code: the ``.py`` files ``files`` under ``base`` (the folder on sys.path: a
    module's name is its path relative to it), whose own top-level names are ``tops`` (an absolute import of
    any other name is outside it); ``root`` (the repository) only shortens the paths of the messages."""

    def __init__(self, base: Path, tops, files, root: Path):
        self.base, self.tops, self.root = base, frozenset(tops), root
        self.modules = {self.module_name(p): p for p in sorted(files)}

    def module_name(self, path: Path) -> str:
        parts = list(path.relative_to(self.base).with_suffix("").parts)
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    def owns(self, name: str | None) -> bool:
        return bool(name) and name.split(".")[0] in self.tops

    def mine(self, path: Path) -> str | None:
        """The module ``path`` is, None when it is not one of them (a user of the code)."""
        if not path.is_relative_to(self.base):
            return None
        name = self.module_name(path)
        return name if self.modules.get(name) == path else None

    def shown(self, path: Path):
        return path.relative_to(self.root) if path.is_relative_to(self.root) else path.name

    def base_of(self, path: Path, node: ast.ImportFrom) -> str | None:
        """The absolute module an ``ImportFrom`` names (None: outside the code)."""
        if node.level == 0:
            return node.module if self.owns(node.module) else None
        here = self.module_name(path).split(".")
        package = here if path.name == "__init__.py" else here[:-1]
        package = package[:len(package) - (node.level - 1)]
        return ".".join(package + ([node.module] if node.module else []))

    def imports(self, path: Path) -> list[tuple[str, str | None, int]]:
        """(module imported, the name taken from it or None, line) of each executed import in ``path``."""
        out = []
        for node in executed_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                out += [(a.name, None, node.lineno) for a in node.names if self.owns(a.name)]
            elif isinstance(node, ast.ImportFrom) and (base := self.base_of(path, node)) is not None:
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    out.append((sub, None, node.lineno) if sub in self.modules
                               else (base, alias.name, node.lineno))
        return out

    def graph(self) -> dict[str, set[str]]:
        """Each module -> the modules it imports (itself left out)."""
        edges: dict[str, set[str]] = {m: set() for m in self.modules}
        for name, path in self.modules.items():
            for target, _, _ in self.imports(path):
                assert target in self.modules, f"{path}: imports {target}, which is not one of the modules"
                if target != name:
                    edges[name].add(target)
        return edges

    def private_uses(self, path: Path) -> list[str]:
        """``from <module> import _name`` and ``<imported module>._name`` in ``path`` (a module of the code
        using another's private helper, or a user of the code using one)."""
        tree = ast.parse(path.read_text(encoding="utf-8"))
        mine, where = self.mine(path), self.shown(path)
        out, aliases = [], {}
        for target, name, line in (self.imports(path) if mine else []):
            if name and private(name) and target != mine:
                out.append(f"{where}:{line}: {target}.{name}")
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and mine is None and self.owns(node.module):
                out += [f"{where}:{node.lineno}: {node.module}.{a.name}" for a in node.names
                        if private(a.name)]
            if isinstance(node, ast.ImportFrom):
                base = self.base_of(path, node) if mine else (node.module if self.owns(node.module) else None)
                for a in node.names if base else []:
                    if f"{base}.{a.name}" in self.modules:
                        aliases[a.asname or a.name] = f"{base}.{a.name}"
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in self.modules and a.asname:
                        aliases[a.asname] = a.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and private(node.attr) and aliases[node.value.id] != mine):
                out.append(f"{where}:{node.lineno}: {aliases[node.value.id]}.{node.attr}")
        return out


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


def unlisted(folder: Path, root: Path) -> list[str]:
    """Each package under ``folder`` whose ``__all__`` is not exactly its modules and subpackages (the index
    of the package)."""
    wrong = []
    for init in sorted(folder.rglob("__init__.py")):
        here = sorted([p.stem for p in init.parent.glob("*.py") if p.name != "__init__.py"]
                      + [d.name for d in init.parent.iterdir() if (d / "__init__.py").is_file()])
        body = ast.parse(init.read_text(encoding="utf-8")).body
        listed = next((ast.literal_eval(n.value) for n in body if isinstance(n, ast.Assign)
                       and [getattr(t, "id", None) for t in n.targets] == ["__all__"]), None)
        if listed is None or sorted(listed) != here:
            wrong.append(f"{init.relative_to(root)}: __all__ = {listed}, the folder holds {here}")
    return wrong


def unsaid(folder: Path, root: Path) -> list[str]:
    """Each package under ``folder`` whose ``__init__.py`` does not say in a docstring (two lines or more)
    what lives in it."""
    return [f"{init.relative_to(root)}: no docstring of what is there"
            for init in sorted(folder.rglob("__init__.py"))
            if len((ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or "").splitlines()) < 2]
