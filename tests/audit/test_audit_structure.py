"""The audit's structure, read from its source: standard library only and nothing from the project (which
never imports it), small modules and functions, its checks registered once by name in order, every audit
function SOURCE_MAP.md cites defined."""

import ast
import sys
from pathlib import Path

from conftest import AUDIT, ROOT, audit_module

MODULES = sorted(AUDIT.rglob("*.py"))
# the audit's own top-level names: its rooms (a package per concept: tests/audit/test_layout_of_the_audit.py)
ROOMS = {d.name for d in AUDIT.iterdir() if (d / "__init__.py").is_file()}
# The ONE exemption from the standard-library rule: reinfer/child.py is not part of the standard-library
# audit but the process its optional second stage (--reinfer N, check 'reinfer') STARTS - with the
# environment's python, never imported - to re-infer the auditor's own sample with upstream
# sentence-transformers, which needs torch (and, for a derived backend's run, ONNX Runtime on the derived
# file, and the recipe's onnx). It may import those libraries and the standard library, and nothing of the
# audit or the project.
REINFER_CHILD = AUDIT / "reinfer" / "child.py"
REINFER_LIBRARIES = {"numpy", "torch", "sentence_transformers", "transformers", "onnx", "onnxruntime"}


def imported_modules(path: Path) -> set[str]:
    """The top-level names a module imports absolutely (a relative import is named '.')."""
    mods = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            mods |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            mods.add(node.module.split(".")[0] if node.level == 0 else ".")
    return mods


def imports_the_child(path: Path) -> bool:
    """Whether ``path`` imports the re-inference child (``reinfer.child``), in either spelling."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import) and any(a.name == "reinfer.child" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module == "reinfer.child" or (
                node.module == "reinfer" and any(a.name == "child" for a in node.names))):
            return True
    return False


def test_audit_imports_only_the_standard_library_and_its_own_modules_and_nothing_from_the_project():
    assert (AUDIT / "__main__.py").is_file() and len(MODULES) > 10
    for path in MODULES:
        name, mods = path.relative_to(AUDIT), imported_modules(path)
        assert "." not in mods, f"relative import in the audit: {name}"
        if path == REINFER_CHILD:  # the exemption above: its own libraries, nothing of the audit
            assert mods <= set(sys.stdlib_module_names) | REINFER_LIBRARIES, (name, mods)
            assert not mods & ROOMS and "rerank_study" not in path.read_text(encoding="utf-8"), name
            continue
        assert mods <= set(sys.stdlib_module_names) | ROOMS, (name, mods - set(sys.stdlib_module_names))
        assert not imports_the_child(path), f"{name} imports the re-inference child (it is only started)"
        assert "rerank_study" not in path.read_text(encoding="utf-8").replace("rerank_study/", ""), name
    shadowing = sorted(ROOMS & set(sys.stdlib_module_names))
    assert shadowing == [], f"audit rooms named as standard-library modules: {shadowing}"


def test_audit_modules_stay_small_enough_to_read():
    """No module over 400 lines, no function over 60: each can be read in one sitting."""
    for path in MODULES:
        text = path.read_text(encoding="utf-8")
        assert len(text.splitlines()) <= 400, path.relative_to(AUDIT)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno - node.lineno + 1 <= 60, f"{path.relative_to(AUDIT)}: {node.name}"


def test_the_checks_are_registered_once_by_name_in_order():
    registry = audit_module("checks.registry")
    names = [name for name, _ in registry.CHECKS]
    assert names == ["layout", "columns", "settings", "manifest", "manifest_hashes", "lockfile_pins",
                     "analysed_queries", "candidates", "pairs", "reranker_run", "scorer_label", "blend",
                     "runs", "qrels", "per_query", "groups", "bootstrap_indices", "replicates", "summary",
                     "calibration",
                     "verification", "shape_check", "measurements", "reference", "frozen_candidates",
                     "report", "report_browser", "tables", "run_metadata", "seal", "protocol", "reinfer"]
    assert len({fn for _, fn in registry.CHECKS}) == len(names)


def test_the_library_never_imports_the_audit():
    """The project runs the audit (rule audit; studies.check_audit_reads: ``--read-yaml``), never imports
    it."""
    for path in [*(ROOT / "workflow").rglob("*.py"), *(ROOT / "scripts").glob("*.py")]:
        text = path.read_text(encoding="utf-8")
        assert not imported_modules(path) & ROOMS, path
        assert not ("spec_from_file_location" in text and "audit" in text), path


def test_every_audit_function_source_map_cites_exists():
    """SOURCE_MAP cites the audit's functions by name ("audit `ndcg`", "audit `Expected.orders`"), or
    qualified by their module ("audit `checks.tables.check_tables`")."""
    import re

    cited = set()
    for m in re.finditer(r"audit ((?:`[\w./]+`(?:, )?)+)",
                         (ROOT / "SOURCE_MAP.md").read_text(encoding="utf-8")):
        cited |= set(re.findall(r"`([\w./]+)`", m.group(1)))
    defined = {str(p.relative_to(AUDIT)) for p in MODULES}  # a module cited as a file: `reinfer/child.py`
    for path in MODULES:
        names = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                names |= {node.name} | {f"{node.name}.{f.name}" for f in node.body
                                        if isinstance(f, ast.FunctionDef)}
            elif isinstance(node, ast.FunctionDef):
                names.add(node.name)
        names |= {t.id for node in tree.body if isinstance(node, ast.Assign)  # a module's table: `TABLES`
                  for t in node.targets if isinstance(t, ast.Name)}
        module = ".".join(path.relative_to(AUDIT).with_suffix("").parts)
        defined |= names | {f"{module}.{name}" for name in names}  # or qualified: `read.columns.TABLES`
    assert len(cited) > 10 and cited <= defined, sorted(cited - defined)
