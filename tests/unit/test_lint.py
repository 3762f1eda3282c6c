"""The code's shape, checked: ruff clean with the committed configuration (pyproject.toml), and no file over
400 lines or function over 60 lines in workflow/ and scripts/ (each exception named with its reason)."""

import ast
import subprocess
import sys

from conftest import ROOT

FILE_LIMIT, FUNCTION_LIMIT = 400, 60
# path (or path::function) -> why it may be longer
SIZE_EXCEPTIONS: dict[str, str] = {}


def code_files():
    files = [ROOT / "Snakefile"]
    for top in ("workflow", "scripts"):
        files += [p for p in (ROOT / top).rglob("*")
                  if p.suffix in (".py", ".smk") and "__pycache__" not in p.parts]
    return sorted(files)


def test_ruff_is_clean_with_the_committed_configuration():
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT)],
                          capture_output=True, text=True, cwd=ROOT)
    assert "No module named ruff" not in proc.stderr, (
        "ruff is not installed in this environment: python3.11 scripts/setup_env.py --dev "
        "(lockfiles/requirements-dev.lock pins it)")
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


def test_no_file_over_400_lines_and_no_function_over_60_lines():
    too_long = []
    for path in code_files():
        rel = str(path.relative_to(ROOT))
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > FILE_LIMIT and rel not in SIZE_EXCEPTIONS:
            too_long.append(f"{rel}: {len(text.splitlines())} lines")
        if path.suffix != ".py":
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > FUNCTION_LIMIT and f"{rel}::{node.name}" not in SIZE_EXCEPTIONS:
                    too_long.append(f"{rel}::{node.name}: {n} lines")
    assert len(code_files()) > 50
    assert too_long == [], too_long


# a Snakefile include whose target is computed, and why it stays inside the method
COMPUTED_INCLUDES = {
    "Snakefile": "config/config.yaml, by its absolute path in the checkout",
    "workflow/rules/studies.smk": "the studies' module file, written from config/ and the study files by "
                                  "rerank_study.settings.studies.modules_file (method code) into resources/",
}


def test_every_included_rule_file_is_part_of_the_method():
    """The method (seal.locations.METHOD_PATHS) is what can change a result: README, docs/ and tests/ are left
    out of it, so no Snakefile or rule file may include or read its configuration from there."""
    import re

    from rerank_study.seal.locations import METHOD_PATHS

    directive = re.compile(r"^\s*(include|configfile):\s*(.+?)\s*$")
    outside = []
    for path in [ROOT / "Snakefile", *sorted((ROOT / "workflow/rules").glob("*.smk"))]:
        for line in path.read_text(encoding="utf-8").splitlines():
            m = directive.match(line)
            if not m:
                continue
            rel = path.relative_to(ROOT).as_posix()
            literal = re.fullmatch(r'"([^"]+)"', m[2])
            if literal is None:
                assert rel in COMPUTED_INCLUDES, f"{rel}: a computed {m[1]} ({m[2]}): name it and why"
                continue
            target = (path.parent / literal[1]).resolve().relative_to(ROOT).as_posix()
            if not any(target == top or target.startswith(top + "/") for top in METHOD_PATHS):
                outside.append(f"{rel}: {m[1]} {target}")
    assert outside == []


def test_no_two_test_files_share_a_name():
    # pytest imports test files by their base name (rootdir-relative, no packages): a second
    # tests/*/test_x.py stops the whole collection with "import file mismatch".
    seen = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        assert path.name not in seen, f"{path.relative_to(ROOT)}, {seen[path.name]}: one name, rename one"
        seen[path.name] = path.relative_to(ROOT)
