"""Config validation names the bad key (types are strict); the shipped config is valid."""

import copy

import pytest
import yaml
from conftest import ROOT

from rerank_study.core.errors import ConfigError
from rerank_study.settings.config import load_config, run_name, run_shape, validate_config

BASE = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def cfg(**changes):
    c = copy.deepcopy(BASE)
    for dotted, value in changes.items():
        *path, last = dotted.split("__")
        node = c
        for p in path:
            node = node[p]
        node[last] = value
    return c


def test_shipped_config_is_valid_and_guards_its_key_values():
    """Validation is code; the value asserts guard EDITS of config/config.yaml (the experiment's settings)."""
    c = load_config(ROOT / "config" / "config.yaml")
    assert c["ce"]["batch_size"] == 16 and c["ce"]["threads"] == 4 and c["bootstrap"]["B"] == 10000
    assert run_name(c) == "dev" and run_shape(c) == (None, 50)


@pytest.mark.parametrize("changes,key", [
    ({"ce__bach_size": 16}, "ce.bach_size"),
    ({"ce__batch_size": 0}, "ce.batch_size"),
    ({"scorer": "standin"}, "scorer"),
    ({"bootstrap__B": "many"}, "bootstrap.B"),
    ({"candidates__bm25__b": 1.5}, "candidates.bm25.b"),
    ({"repin": "everything"}, "repin"),
])
def test_bad_values_name_the_key(changes, key):
    with pytest.raises(ConfigError) as exc:
        validate_config(cfg(**changes))
    assert f"config key '{key}'" in str(exc.value)


def test_missing_key_is_named():
    c = cfg()
    del c["threshold"]
    with pytest.raises(ConfigError, match="config key 'threshold': required key is missing"):
        validate_config(c)


def test_cross_key_rules():
    with pytest.raises(ConfigError, match="comparisons.primary"):
        validate_config(cfg(comparisons__primary="nope"))
    with pytest.raises(ConfigError, match="bootstrap.percentiles"):
        validate_config(cfg(bootstrap__percentiles=[97.5, 2.5]))


def test_command_line_boolean_strings():
    c = cfg(smoke="true", scorer="stand-in")
    validate_config(c)
    assert c["smoke"] is True and run_name(c) == "smoke-standin" and run_shape(c) == (5, 10)
    with pytest.raises(ConfigError, match="config key 'smoke'"):
        validate_config(cfg(smoke="maybe"))


def test_a_non_integer_bootstrap_size_stops_at_validation():
    with pytest.raises(ConfigError, match=r"config key 'bootstrap.B': 100.0 is not of type 'integer'"):
        load_config(ROOT / "config" / "config.yaml", {"bootstrap": {"B": 100.0}})
    with pytest.raises(ConfigError, match="config key 'verify.batches'"):
        load_config(ROOT / "config" / "config.yaml", {"verify": {"batches": True}})
