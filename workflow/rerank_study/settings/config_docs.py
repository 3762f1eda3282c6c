"""config/README.md, generated from the config schema: every key's meaning has one home.

The meaning of each configuration key is the ``description`` of its property in
``workflow/schemas/config.schema.yaml``; this module renders ``config/README.md`` from them: the hand-written
``config/README.preamble.md``, one table per top-level block (key, default from ``config/config.yaml``,
type / allowed values from the schema's constraints, description), the shared ``definitions``, then the
hand-written ``config/README.appendix.md``. The output depends only on those files' bytes (same input, same
bytes). Standard library + PyYAML; from this package only ``config`` (its YAML reader and the keys that
cannot change a result).

    PYTHONPATH=workflow .venv/bin/python -B -m rerank_study.settings.config_docs           # rewrite
    config/README.md
    PYTHONPATH=workflow .venv/bin/python -B -m rerank_study.settings.config_docs --check   # exit 1 with a
    diff
                                                                                  # when stale

(``-B``: no byte-code cache is written beside the code, which an opening would refuse.)
``tests/unit/settings/test_config_docs.py`` fails when a schema key has no description, when config/README.md
differs
from what this renders, or when config/config.yaml and the schema name different keys.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from .config import NOT_RESULT_FOR_A_RUN_FILE, NOT_RESULT_KEYS, load_yaml

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
CONFIG = ROOT / "config" / "config.yaml"
PREAMBLE = ROOT / "config" / "README.preamble.md"
APPENDIX = ROOT / "config" / "README.appendix.md"
OUTPUT = ROOT / "config" / "README.md"
COMMAND = "PYTHONPATH=workflow .venv/bin/python -B -m rerank_study.settings.config_docs"
DEF_PREFIX = "#/definitions/"
ABSENT = object()  # a key config.yaml does not hold


# ------------------------------------------------------------------------------ the schema's keys --

def resolve(node: dict, schema: dict) -> dict:
    """``node`` with a ``$ref`` to ``#/definitions/<name>`` merged in (the node's own keywords win)."""
    ref = node.get("$ref")
    if ref is None:
        return node
    if not ref.startswith(DEF_PREFIX) or ref[len(DEF_PREFIX):] not in schema.get("definitions", {}):
        raise ValueError(f"unsupported $ref {ref!r} (only {DEF_PREFIX}<name> of this schema)")
    target = resolve(schema["definitions"][ref[len(DEF_PREFIX):]], schema)
    return {**target, **{k: v for k, v in node.items() if k != "$ref"}}


def placeholder(node: dict) -> str:
    """The dotted-key part that stands for a free key of a mapping (its sub-schema's ``title``)."""
    return f"<{node.get('title', 'key')}>"


def children(node: dict, schema: dict):
    """(key part, sub-schema) of each key a mapping can hold: its properties, then its free keys."""
    node = resolve(node, schema)
    yield from node.get("properties", {}).items()
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        yield placeholder(extra), extra


def walk(node: dict, schema: dict, prefix: str = ""):
    """(dotted key, sub-schema) of every key below ``node``, depth first in schema order."""
    for name, sub in children(node, schema):
        key = f"{prefix}{name}"
        yield key, sub
        yield from walk(sub, schema, key + ".")


def schema_keys(schema: dict) -> list[str]:
    """Every dotted key the schema defines (free keys as ``<title>``)."""
    return [key for key, _ in walk(schema, schema)]


def config_keys(cfg, node: dict, schema: dict, prefix: str = "") -> list[str]:
    """Every dotted key of the mapping ``cfg`` as the schema names it (a free key becomes ``<title>``; a key
    the schema does not know stays as written)."""
    out = []
    if not isinstance(cfg, dict):
        return out
    node = resolve(node, schema)
    props, extra = node.get("properties", {}), node.get("additionalProperties")
    for name, value in cfg.items():
        if name in props:
            key, sub = f"{prefix}{name}", props[name]
        elif isinstance(extra, dict):
            key, sub = f"{prefix}{placeholder(extra)}", extra
        else:
            out.append(f"{prefix}{name}")
            continue
        if key not in out:
            out.append(key)
        out += [k for k in config_keys(value, sub, schema, key + ".") if k not in out]
    return out


# --------------------------------------------------------------------------------- cell texts --

def yaml_text(value) -> str:
    """A value as config.yaml writes it (flow style)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value if value else '""'
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(yaml_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {yaml_text(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no YAML text for {value!r}")


def code(text: str) -> str:
    return f"`{text}`"


def _bounds(node: dict) -> str:
    lo = (">", node["exclusiveMinimum"]) if "exclusiveMinimum" in node else ("≥", node.get("minimum"))
    hi = ("<", node["exclusiveMaximum"]) if "exclusiveMaximum" in node else ("≤", node.get("maximum"))
    if lo[1] is not None and hi[1] is not None:
        return f"{yaml_text(lo[1])} {'<' if lo[0] == '>' else '≤'} x {hi[0]} {yaml_text(hi[1])}"
    if lo[1] is not None:
        return f"{lo[0]} {yaml_text(lo[1])}"
    if hi[1] is not None:
        return f"{hi[0]} {yaml_text(hi[1])}"
    return ""


def _count(n_min, n_max, one: str, many: str) -> str:
    """E.g. "at least 1 item", "exactly 2 items" ("" without bounds)."""
    def n(k):
        return f"{k} {one if k == 1 else many}"
    if n_min is not None and n_min == n_max:
        return f"exactly {n(n_min)}"
    if n_min is not None and n_max is not None:
        return f"{n_min} to {n(n_max)}"
    if n_min is not None:
        return f"at least {n(n_min)}"
    return f"at most {n(n_max)}" if n_max is not None else ""


def type_text(node: dict, schema: dict) -> str:
    """The type and allowed values the schema states for one key (its constraints, in words)."""
    ref = node.get("$ref")
    node = resolve(node, schema)
    if "const" in node:
        text = f"only {code(yaml_text(node['const']))}"
    elif "enum" in node and len(node["enum"]) == 1:
        text = f"only {code(yaml_text(node['enum'][0]))}"
    elif "enum" in node:
        text = "one of " + ", ".join(code(yaml_text(v)) for v in node["enum"])
    elif "oneOf" in node:
        text = " or ".join(type_text(sub, schema) for sub in node["oneOf"])
    else:
        kind = node.get("type")
        if kind == "null":
            text = code("null")
        elif kind in ("integer", "number"):
            text = " ".join(x for x in (kind, _bounds(node)) if x)
        elif kind == "boolean":
            text = f"boolean ({code('true')} / {code('false')})"
        elif kind == "string":
            text = "string"
            if node.get("minLength"):
                text = "non-empty string" if node["minLength"] == 1 else ("string of at least "
                                                                          f"{node['minLength']} characters")
            if "pattern" in node:
                text += f" matching {code(node['pattern'])}"
        elif kind == "array":
            items = node.get("items")
            text = "list" + (f"; each item: {type_text(items, schema)}" if isinstance(items, dict) else "")
            extra = [x for x in (_count(node.get("minItems"), node.get("maxItems"), "item", "items"),
                                 "no repeats" if node.get("uniqueItems") else "") if x]
            if extra:
                text += "; " + ", ".join(extra)
        elif kind == "object":
            extra = node.get("additionalProperties")
            if isinstance(extra, dict):
                text = f"mapping {code(placeholder(extra))} → {_kind_word(extra, schema)}"
            else:
                text = "mapping (keys below)" if node.get("properties") else "mapping"
            count = _count(node.get("minProperties"), node.get("maxProperties"), "entry", "entries")
            if count:
                text += f"; {count}"
        elif kind is None:
            text = "any"
        else:
            raise ValueError(f"no words for the schema type {kind!r}")
    if ref:
        text += f" ({code(ref[len(DEF_PREFIX):])})"
    return text


def _kind_word(node: dict, schema: dict) -> str:
    node = resolve(node, schema)
    kind = node.get("type")
    if kind == "object":
        return "mapping (below)"
    if kind == "array":
        return "list (below)"
    return type_text(node, schema)


def describe(node: dict) -> str:
    """A description as one line of text (the schema wraps it)."""
    return " ".join(str(node.get("description", "")).split())


def cell(text: str) -> str:
    """Text safe in a Markdown table cell."""
    return text.replace("|", "\\|")


def default_of(cfg, dotted: str):
    node = cfg
    for part in dotted.split("."):
        if part.startswith("<") or not isinstance(node, dict) or part not in node:
            return ABSENT
        node = node[part]
    return node


def default_text(cfg, key: str, node: dict, schema: dict) -> str:
    node = resolve(node, schema)
    if node.get("properties"):  # a sub-block: its keys have their own rows
        return "(below)"
    value = default_of(cfg, key)
    return "—" if value is ABSENT else code(yaml_text(value))


# --------------------------------------------------------------------------------- the document --

HEADER = "| key | default | type / allowed values | description |\n|---|---|---|---|"


def table(rows) -> list[str]:
    return [HEADER] + [f"| {cell(code(key))} | {cell(default)} | {cell(kind)} | {cell(desc)} |"
                       for key, default, kind, desc in rows]


def rows_below(cfg, schema: dict, node: dict, prefix: str) -> list[tuple]:
    return [(key, default_text(cfg, key, sub, schema), type_text(sub, schema), describe(sub))
            for key, sub in walk(node, schema, prefix)]


def is_block(node: dict, schema: dict) -> bool:
    return bool(resolve(node, schema).get("properties"))


def render(schema: dict, cfg: dict, preamble: str, appendix: str) -> str:
    """config/README.md from the schema, the config's values and the two hand-written parts."""
    out = [f"<!-- GENERATED by `{COMMAND}` from workflow/schemas/config.schema.yaml (each key's "
           "description), config/config.yaml (defaults), config/README.preamble.md and "
           "config/README.appendix.md: do not edit this file, edit those. -->",
           preamble.strip("\n"), ""]
    top = [(name, sub) for name, sub in schema["properties"].items() if not is_block(sub, schema)]
    out += ["## Top-level keys", "",
            "The keys that are not blocks; `--config key=value` overrides any top-level key.", ""]
    out += table((name, default_text(cfg, name, sub, schema), type_text(sub, schema), describe(sub))
                 for name, sub in top)
    for name, sub in schema["properties"].items():
        if not is_block(sub, schema):
            continue
        title = sub.get("title")
        out += ["", f"## {title} ({code(name)})" if title else f"## {code(name)}", "", describe(sub), ""]
        out += table(rows_below(cfg, schema, sub, name + "."))
    defs = schema.get("definitions", {})
    if defs:
        out += ["", "## Shared types (`definitions`)", "",
                "Keys whose type column names one of these take its constraints.", "",
                "| name | type / allowed values | description |", "|---|---|---|"]
        out += [f"| {cell(code(name))} | {cell(type_text(sub, schema))} | {cell(describe(sub))} |"
                for name, sub in defs.items()]
    out += not_result_section()
    out += ["", appendix.strip("\n")]
    return "\n".join(out) + "\n"


def not_result_section() -> list[str]:
    """The keys that cannot change a result (``config.NOT_RESULT_KEYS``): the confirmation protocol freezes
    every other key, so only these may change between freezing and opening."""
    return ["", "## Keys that cannot change a result", "",
            "The frozen confirmation protocol holds every other key (`settings` in protocol.json): after "
            "freezing, a change of any other key stops the opening, naming it. These may change: "
            + ", ".join(code(k) for k in NOT_RESULT_KEYS) + "; for a run-file study also the blocks "
            + ", ".join(code(k) for k in NOT_RESULT_FOR_A_RUN_FILE) + " (it infers nothing)."]


def render_files(schema_path=SCHEMA, config_path=CONFIG, preamble_path=PREAMBLE,
                 appendix_path=APPENDIX) -> str:
    return render(load_yaml(schema_path), load_yaml(config_path),
                  Path(preamble_path).read_text(encoding="utf-8"),
                  Path(appendix_path).read_text(encoding="utf-8"))


def diff(current: str, wanted: str, name: str = "config/README.md") -> str:
    return "".join(difflib.unified_diff(current.splitlines(keepends=True), wanted.splitlines(keepends=True),
                                        fromfile=f"{name} (committed)", tofile=f"{name} (generated)"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Render config/README.md from the config schema's descriptions.")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 with a diff when the "
                                                         "file is stale")
    args = ap.parse_args(argv)
    wanted = render_files()
    current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
    if args.check:
        if current == wanted:
            return 0
        sys.stdout.write(diff(current, wanted))
        sys.stderr.write(f"{OUTPUT} is stale: regenerate it with `{COMMAND}`\n")
        return 1
    if current != wanted:
        with open(OUTPUT, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
