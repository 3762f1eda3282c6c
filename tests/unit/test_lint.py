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
