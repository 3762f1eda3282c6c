"""The audit's standard-library re-implementations of what it anchors on, tested against the
libraries they mirror: numpy's default_rng(seed).integers (element by element) and PyYAML on the
project's config files."""

import json
import subprocess
import sys

import numpy as np
import pytest
import yaml

from conftest import AUDIT, DATA, ROOT, audit_module

rng = audit_module("rng")
yamlsubset = audit_module("yamlsubset")
problems = audit_module("problems")


@pytest.mark.parametrize("seed", [0, 1, 110, 111, 2**32 + 5, 2**63 + 7, 2**127 + 12345])
def test_default_rng_integers_equal_numpy_on_the_bootstrap_shapes(seed):
    """Grouped (B x G) then query-level (B x n) matrices from ONE generator, as the pipeline draws them."""
    B, G, n = 500, 94, 100
    npg = np.random.default_rng(seed)
    want_g = npg.integers(0, G, size=(B, G), dtype=np.int64).tolist()
    want_q = npg.integers(0, n, size=(B, n), dtype=np.int64).tolist()
    mine = rng.DefaultRng(seed)
    assert mine.integers_matrix(G, B, G) == want_g
    assert mine.integers_matrix(n, B, n) == want_q


@pytest.mark.parametrize("high", [1, 2, 3, 7, 2**31 + 11, 2**32 - 1, 2**32, 2**32 + 1, 2**40 + 3, 2**63])
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (17, 5)])
def test_default_rng_integers_equal_numpy_for_every_range_and_odd_shapes(high, shape):
    # odd counts leave a buffered 32-bit half in the generator: the second call must consume it as numpy does
    npg = np.random.default_rng(20261130)
    first = npg.integers(0, high, size=shape, dtype=np.int64).tolist()
    second = npg.integers(0, 5, size=shape, dtype=np.int64).tolist()
    mine = rng.DefaultRng(20261130)
    assert mine.integers_matrix(high, *shape) == first
    assert mine.integers_matrix(5, *shape) == second


@pytest.mark.parametrize("path", [ROOT / "config" / "config.yaml", DATA / "fixture_config.yaml"])
def test_the_audits_yaml_reader_equals_pyyaml_on_the_project_configs(path):
    assert yamlsubset.read_simple_yaml(path) == yaml.safe_load(path.read_text())


@pytest.mark.parametrize("text", ["a:\n  - 1\n", "a: &x 1\n", "a: [1, [2]]\n", "a: {b: {c: 1}}\n", "just text\n"])
def test_the_audits_yaml_reader_refuses_what_it_does_not_understand(tmp_path, text):
    p = tmp_path / "c.yaml"
    p.write_text(text)
    with pytest.raises(problems.Unreadable):
        yamlsubset.read_simple_yaml(p)


def read_yaml(path):
    """The audit's --read-yaml: what its reader reads from a file, as canonical JSON (the library's check)."""
    return subprocess.run([sys.executable, "-I", "-S", "-B", str(AUDIT), "--read-yaml", str(path)], capture_output=True,
                          text=True)


@pytest.mark.parametrize("path", [ROOT / "config" / "config.yaml", DATA / "fixture_config.yaml",
                                  *sorted((ROOT / "config" / "studies").glob("*.yaml"))])
def test_read_yaml_prints_canonical_json_equal_to_pyyaml(path):
    proc = read_yaml(path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == yaml.safe_load(path.read_text()) == yamlsubset.read_simple_yaml(path)
    assert proc.stdout == json.dumps(json.loads(proc.stdout), sort_keys=True, separators=(",", ":")) + "\n"


def test_read_yaml_names_the_line_it_refuses(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("a:\n  b: 1\n  c: &x 2\n")
    proc = read_yaml(p)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip() == f"{p}:3: unsupported YAML value '&x 2'"
