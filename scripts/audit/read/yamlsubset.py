"""The YAML subset the project's config and study files use, read with the standard library: block
mappings indented by spaces, scalars, one-level flow lists ``[a, b]`` and flow mappings ``{k: v}``,
``#`` comments. Anything else is refused (``Unreadable``). The library checks at start that the audit
reads every study file as PyYAML does: it runs ``python3 -I -S scripts/audit --read-yaml FILE``, which
prints ``yaml_as_compact_json`` of the file, and compares that with ``yaml.safe_load``."""

from __future__ import annotations

import json
from pathlib import Path

from core.problems import Unreadable

from read.readers import text_of


def _yaml_scalar(text: str, where: str):
    t = text.strip()
    if t == "":
        return None
    if t in ('""', "''"):
        return ""
    if (t[0] == t[-1]) and t[0] in "\"'" and len(t) >= 2:
        return t[1:-1]
    if t in ("true", "True"):
        return True
    if t in ("false", "False"):
        return False
    if t in ("null", "~"):
        return None
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        pass
    if t[0] in "[]{}&*!|>%@`" or ": " in t or " #" in t:  # YAML indicators a plain scalar cannot hold
        raise Unreadable(where, f"unsupported YAML value {t!r}")
    return t


def _yaml_flow(text: str, where: str):
    t = text.strip()
    inner = t[1:-1].strip()
    items = [x.strip() for x in inner.split(",")] if inner else []
    if t[0] == "[":
        return [_yaml_scalar(x, where) for x in items]
    out = {}
    for x in items:
        k, sep, val = x.partition(":")
        if not sep:
            raise Unreadable(where, f"flow mapping item {x!r} has no ':'")
        out[k.strip()] = _yaml_scalar(val, where)
    return out


def _without_comment(raw: str) -> str:
    """The line up to a ``#`` comment that is not inside quotes."""
    quote = None
    for i, c in enumerate(raw):
        if c in "\"'" and quote in (None, c):
            quote = None if quote else c
        elif c == "#" and quote is None and (i == 0 or raw[i - 1] in " \t"):
            return raw[:i]
    return raw


def read_simple_yaml(path: Path) -> dict:
    """The YAML subset the project's config uses (see the module's text). Anything else is refused (this
    reader is the standard-library audit's own; tests compare it with PyYAML on the committed config)."""
    root: dict = {}
    stack = [(-1, root)]
    for no, raw in enumerate(text_of(path).splitlines(), start=1):
        where = f"{path}:{no}"
        line = _without_comment(raw)
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        if "\t" in line[:indent] or line.lstrip().startswith("- "):
            raise Unreadable(where, "tabs and block sequences are not supported")
        key, sep, value = line.strip().partition(":")
        if not sep or not key:
            raise Unreadable(where, f"not a 'key: value' line: {raw!r}")
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        value = value.strip()
        if value == "":
            parent[key] = {}
            stack.append((indent, parent[key]))
        elif value[0] in "[{":
            if value[-1] != {"[": "]", "{": "}"}[value[0]]:
                raise Unreadable(where, "a flow collection must end on its own line")
            parent[key] = _yaml_flow(value, where)
        else:
            parent[key] = _yaml_scalar(value, where)
    return root


def yaml_as_compact_json(path: Path) -> str:
    """What the audit reads from a YAML file, as canonical JSON (sorted keys, no spaces, ASCII)."""
    return json.dumps(read_simple_yaml(path), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
