"""Checks of the layout: the manifest lists exactly the documented artefacts (keys, paths, roles, whether they
are reproducible), the run folder holds nothing the layout does not name, the run names the lock folder the
audit is anchored to, and the splits have the committed sizes. Signature: see checks.provenance."""

from __future__ import annotations

import os
from pathlib import Path

from anchor.anchors import pinned_role
from read import layout
from read.readers import resolve


def _check_entries(run, want, au, f: str, want_keys: list[str]) -> None:
    for a in run.manifest["artefacts"]:
        key = a.get("key")
        if key not in want_keys:
            continue
        au.check("layout", a.get("role") == layout.role_of(key), f, f"{key} role", layout.role_of(key),
                 a.get("role"))
        if key in layout.RUN_ARTEFACTS:
            path, _, deterministic = layout.RUN_ARTEFACTS[key]
            au.check("layout", a.get("path") == path, f, f"{key} path", path, a.get("path"))
            au.check("layout", a.get("deterministic") is deterministic, f, f"{key} deterministic",
                     deterministic, a.get("deterministic"))
            au.check("layout", a.get("scope") == "run", f, f"{key} scope", "run", a.get("scope"))
        elif key == "qrels_confirm":  # an opening's sealed judgements: the copy it made, sealed/<pinned name>
            where = run.rundir / layout.SEALED_FOLDER / sealed_name(run, want)
            found = resolve(a.get("path", ""), run.rundir)
            au.check("layout", a.get("scope") == "input" and a.get("deterministic") is True
                     and found.resolve() == where.resolve(), f, f"{key} (the opened copy)",
                     f"scope input, deterministic, path {where.relative_to(run.rundir)}",
                     f"scope {a.get('scope')}, deterministic {a.get('deterministic')}, path {a.get('path')}")
        else:
            inside = resolve(a.get("path", ""), run.rundir).resolve().is_relative_to(run.rundir.resolve())
            au.check("layout", a.get("scope") == "input" and a.get("deterministic") is True and not inside, f,
                     f"{key} (an input)", "scope input, deterministic, outside the run folder",
                     f"scope {a.get('scope')}, deterministic {a.get('deterministic')}, path {a.get('path')}")


def sealed_name(run, want) -> str | None:
    """The sealed judgements' pinned file name (an opening copies them to sealed/<it>); none for a development
    run."""
    if run.kind != "confirmation":
        return None
    return pinned_role(want.anchor.lock("data_pins.json")["files"], "qrels_confirm")


def _check_files(run, want, au) -> None:
    """Every entry of the run folder is a regular file the layout names (the shard files: exactly those of
    the anchor's ce.shards) or a folder holding one; nothing else, not even an empty folder."""
    sealed = sealed_name(run, want)
    shards = 0 if run.reranker_kind == layout.RUN_FILE else want.anchor.config["ce"]["shards"]
    for p in sorted(run.rundir.rglob("*")):
        if p.is_symlink() or not (p.is_file() or p.is_dir()):  # the run must HOLD its bytes
            au.check("layout", False, str(p), "a file of the run folder", "a regular file or folder",
                     f"a symbolic link to {os.readlink(p)}" if p.is_symlink() else "another kind of file")
        elif p.is_file():
            rel = p.relative_to(run.rundir).as_posix()
            au.check("layout", layout.allowed_file(rel, run.kind, sealed, run.reranker_kind, shards=shards),
                     str(p), "a file of the run folder", "a file the documented layout names",
                     "not in the documented layout")
        elif not any(q.is_file() for q in p.rglob("*")):
            au.check("layout", False, str(p), "a folder of the run folder", "a folder holding a documented "
                     "file", "an empty folder (not in the documented layout)")


def check_layout(run, want, au) -> None:
    f = str(run.manifest_path)
    keys = [a.get("key") for a in run.manifest["artefacts"]]
    want_keys = layout.manifest_keys(run.kind, run.reranker_kind)
    au.check("layout", keys == want_keys, f, "artefact keys (in the documented order)",
             f"the documented {len(want_keys)}: {want_keys}",
             f"missing {sorted(set(want_keys) - set(keys))}, extra {sorted(set(keys) - set(want_keys))}, "
             f"repeated {sorted(k for k in set(keys) if keys.count(k) > 1)}, in the order {keys}")
    _check_entries(run, want, au, f, want_keys)
    _check_files(run, want, au)
    named = resolve(run.manifest.get("lockdir", ""), run.rundir).resolve()
    au.check("layout", named == Path(want.anchor.lockdir).resolve(), f, "lock folder",
             f"{want.anchor.lockdir} (the audit's anchor: {want.anchor.lockdir_source})", str(named))
    splits = want.anchor.config["splits"]
    given = "the committed config" + (" + --configfile " + ", ".join(map(str, want.anchor.config_files))
                                      if want.anchor.config_files else " (a run made with --configfile: "
                                      "pass it too)")
    if run.kind == "confirmation":  # an opening's anchor is its frozen protocol
        splits, given = want.anchor.lock("protocol.json")["splits"], "the frozen protocol"
    for name, ids, key in (("split_dev", run.split_dev, "dev_size"), ("split_confirm", run.split_confirm,
                                                                      "confirm_size")):
        au.check("layout", len(ids) == splits[key], str(run.path(name)),
                 f"{name} size (splits.{key} of {given})", splits[key], len(ids))
