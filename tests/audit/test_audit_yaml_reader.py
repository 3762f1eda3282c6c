"""The audit's standard-library YAML reader, tested against the library it mirrors: PyYAML on the project's
config and study files, in process and through the audit's --read-yaml (canonical JSON); what it does not
understand is refused, naming the line."""

import json
import subprocess
import sys

import pytest
import yaml
from conftest import AUDIT, DATA, ROOT, audit_module

yamlsubset = audit_module("read.yamlsubset")
problems = audit_module("core.problems")


@pytest.mark.parametrize("path", [ROOT / "config" / "config.yaml", DATA / "fixture_config.yaml"])
def test_the_audits_yaml_reader_equals_pyyaml_on_the_project_configs(path):
    assert yamlsubset.read_simple_yaml(path) == yaml.safe_load(path.read_text())


@pytest.mark.parametrize("text", ["a:\n  - 1\n", "a: &x 1\n", "a: [1, [2]]\n", "a: {b: {c: 1}}\n",
                                  "just text\n"])
def test_the_audits_yaml_reader_refuses_what_it_does_not_understand(tmp_path, text):
    p = tmp_path / "c.yaml"
    p.write_text(text)
    with pytest.raises(problems.Unreadable):
        yamlsubset.read_simple_yaml(p)


def read_yaml(path):
    """The audit's --read-yaml: what its reader reads from a file, as canonical JSON (the library's check)."""
    return subprocess.run([sys.executable, "-I", "-S", "-B", str(AUDIT), "--read-yaml", str(path)],
                          capture_output=True, text=True)


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
