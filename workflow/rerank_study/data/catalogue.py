"""The public BEIR dataset catalogue and the explicit first verified acquisition of one dataset.

``lockfiles/datasets/beir.json`` lists each public BEIR archive by url, md5 and size. Sources:

* url, md5: the BEIR README "Available Datasets" table,
  beir-cellar/beir@17a4b4f8e606a118174c477a9cf4bc56fc483723:README.md;
* md5 cross-check and ``bytes`` (``size_hint``): ir_datasets downloads.json,
  allenai/ir_datasets@99d81800b2819b89ed536e21455cb3a57050ab7b:ir_datasets/etc/downloads.json;
* zip layout ``<top>/corpus.jsonl``, ``<top>/queries.jsonl``, ``<top>/qrels/<split>.tsv``: ir_datasets
  ``ir_datasets/datasets/beir.py`` (``ZipExtract`` member paths) and BEIR's ``GenericDataLoader``.

The catalogue carries no sha256. ``pin_first_acquisition`` is the only writer of one: it checks the
archive's size and md5 before opening it, parses every needed member with the project's strict
readers, and writes a pins file in the format of ``lockfiles/data_pins.json`` (read by
``acquire.DataPins``). It never overwrites an existing pins file.
"""

from __future__ import annotations

import datetime
import shutil
import tempfile
import zipfile
from pathlib import Path

from ..core.errors import ConfigError, MissingInputError, PipelineError
from ..core.fileio import CHUNK, read_json, sha256_file, write_json
from . import beir, splits
from .pins import download, verify_archive

CORPUS, QUERIES = "corpus.jsonl", "queries.jsonl"
ENTRY_KEYS = ("url", "md5", "bytes", "zip_top_folder", "qrels_splits", "sha256", "note")
_ZIP_FIX = ("The archive is not the one the catalogue lists (truncated download, or the file changed on the "
            "server); it was not opened and nothing was written. Download it again; if it still differs, "
            "investigate before editing the catalogue.")


def load_entry(catalogue_path, name: str) -> dict:
    """The catalogue entry of ``name`` (a copy, with ``"name"`` added); an unknown name is a ConfigError."""
    datasets = read_json(catalogue_path).get("datasets", {})
    if name not in datasets:
        raise ConfigError(
            f"UNKNOWN DATASET {name!r}: {catalogue_path} has no entry for it.\n"
            f"  known: {', '.join(sorted(datasets)) or '(none)'}\n"
            f"  To add one, add an object under \"datasets\" in {catalogue_path} with the keys "
            f"{', '.join(ENTRY_KEYS)} (sha256 null: only the first verified acquisition writes a sha256), "
            "and cite where url, md5 and bytes come from under \"sources\".")
    return dict(datasets[name], name=name)


def _qrels_member(split: str) -> str:
    return f"qrels/{split}.tsv"


def _check_request(entry: dict, pins_path: Path, dev_qrels: str, confirm_qrels: str | None,
                   split: dict | None = None) -> None:
    if pins_path.exists():
        raise PipelineError(f"ALREADY PINNED: {pins_path} exists, so the data is already pinned. "
                            "Nothing was downloaded or written. Delete it knowingly (in its own "
                            "commit) to re-pin.")
    if confirm_qrels is not None and confirm_qrels == dev_qrels and split is None:
        raise ConfigError(f"dev_qrels and confirm_qrels are both {dev_qrels!r}: the sealed confirmation "
                          "judgements must come from another split, or (a dataset with ONE qrels file) be "
                          "drawn from it: give the draw's seed and size (splits.seed, splits.confirm_size).")
    for name in filter(None, (dev_qrels, confirm_qrels)):
        if name not in entry["qrels_splits"]:
            raise ConfigError(f"split {name!r} is not among the qrels splits of {entry['url']}: "
                              f"{entry['qrels_splits']} (catalogue entry qrels_splits). Choose one of those.")


def _obtain_zip(entry: dict, workdir: Path, zip_path, url, timeout: float) -> tuple[Path, str]:
    """Path of the archive to check and a description of where it came from (local copy or download)."""
    if zip_path is not None:
        zp = Path(zip_path)
        if not zp.is_file():
            raise MissingInputError(f"MISSING FILE: the archive {zp} does not exist. Give an existing "
                                    f"zip_path, or none to download {url or entry['url']}.")
        return zp, f"local archive {zp}"
    url = url or entry["url"]
    dest = workdir / Path(entry["url"]).name
    download(url, dest, timeout)
    return dest, f"download {url}"


def _verify_zip(path: Path, entry: dict, source: str) -> dict:
    """Size and md5 against the catalogue (before the zip is opened); sha256 against the entry's, if any."""
    return verify_archive(path, Path(entry["url"]).name, entry, source, _ZIP_FIX)


def _extract(archive: Path, top: str, names: list[str], dest: Path) -> None:
    """Copy each ``<top>/<name>`` member to ``dest/<name>`` byte for byte; a missing member is named."""
    with zipfile.ZipFile(archive) as zf:
        for name in names:
            member = f"{top}/{name}"
            try:
                info = zf.getinfo(member)
            except KeyError:
                qrels = sorted(n for n in zf.namelist() if n.startswith(f"{top}/qrels/"))
                raise MissingInputError(f"MISSING FILE: {archive} has no member {member} (qrels members: "
                                        f"{qrels or 'none'}). Choose a split the archive has; nothing was "
                                        "written.") from None
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(dest / name, "wb") as out:
                shutil.copyfileobj(src, out)


def judged_tables(dest: Path, qrels_names: list[str], where: str) -> dict[str, dict]:
    """Parse queries.jsonl and the qrels files with the strict readers; every judged query id must be in
    queries.jsonl (``where``: how a message names the files' origin, e.g. ``scifact/… in scifact.zip``)."""
    queries = beir.read_queries(dest / QUERIES)
    tables = {}
    for name in qrels_names:
        tables[name] = beir.read_qrels(dest / name)
        missing = sorted(set(tables[name]) - set(queries))
        if missing:
            raise PipelineError(
                f"INCONSISTENT DATA: {where.format(name)} judges {len(missing)} query id(s) absent from "
                f"{where.format(QUERIES)}, e.g. {missing[:5]}.\n  expected: every judged query id in "
                f"{QUERIES}\n  found: {missing[:10]} absent\n  fix: use another split, or record the "
                "discrepancy and pin a corrected copy knowingly. Nothing was pinned.")
    return tables


def _check_parsed(dest: Path, qrels_names: list[str], top: str, archive: Path) -> dict[str, dict]:
    """Parse every file with the strict readers; every judged query id must be in queries.jsonl."""
    beir.read_corpus(dest / CORPUS)
    return judged_tables(dest, qrels_names, f"{top}/{{}} in {archive}")


def _count_lines(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(block.count(b"\n") for block in iter(lambda: fh.read(CHUNK), b""))


def _file_pin(path: Path, role: str) -> dict:
    """Size, newline count and sha256 of the extracted bytes (no newline normalisation)."""
    return {"bytes": path.stat().st_size, "lines": _count_lines(path), "role": role,
            "sha256": sha256_file(path)}


def _files_block(dest: Path, dev: str, confirm: str | None, tables: dict) -> dict:
    files = {CORPUS: _file_pin(dest / CORPUS, "corpus"), QUERIES: _file_pin(dest / QUERIES, "queries")}
    for name, role in ((dev, "qrels_dev"), (confirm, "qrels_confirm")):
        if name is None:
            continue
        files[name] = dict(_file_pin(dest / name, role),
                           content_sha256=beir.qrels_content_sha256(tables[name]))
        if role == "qrels_confirm":  # sealed; its query ids (not its judgements) are the confirmation split
            files[name].update(sealed=True, queries=splits.canonical_order(tables[name]))
    return files


def drawn_parts(source: str, table: dict, seed: int, confirm_size: int, dest: Path) -> dict:
    """ONE qrels file: draw the sealed confirmation queries from its judged query ids (numpy
    default_rng(seed).choice without replacement over the canonically sorted ids), write both parts (header +
    their rows, the source's bytes and order) into ``dest`` and return their pins (each naming the source and
    its query ids)."""
    pool = splits.canonical_order(table)
    if confirm_size >= len(pool):
        raise ConfigError(f"{source} judges {len(pool)} queries: cannot seal {confirm_size} of them and keep "
                          "any for development (lower splits.confirm_size).")
    # the same seeded draw of k ids from a sorted pool
    sealed = splits.draw_dev_split(pool, confirm_size, seed)
    parts = {beir.DEV_PART: [q for q in pool if q not in set(sealed)], beir.SEALED_PART: sealed}
    raw = (dest / source).read_bytes()
    out = {}
    for part, qids in parts.items():
        name = beir.part_name(source, part)
        (dest / name).write_bytes(beir.partition_rows(raw, set(qids)))
        role = "qrels_confirm" if part == beir.SEALED_PART else "qrels_dev"
        out[name] = dict(_file_pin(dest / name, role), content_sha256=beir.qrels_content_sha256(
            beir.read_qrels(dest / name)), derived_from={
                "file": source, "queries": qids, "rule": "header + the rows of these query ids, in the "
                "source's order and bytes", "drawn": {"seed": seed, "confirm_size": confirm_size,
                                            "pool": len(pool), "by": "numpy "
                                                  "default_rng(seed).choice(len(pool), confirm_size, "
                                                  "replace=False) over the canonically sorted "
                                                  "judged query ids"}})
        if part == beir.SEALED_PART:
            out[name]["sealed"] = True
    return out


def pin_first_acquisition(entry: dict, pins_path, *, dev_qrels: str, confirm_qrels: str | None,
                          zip_path=None, url=None, timeout: float = 120, split: dict | None = None,
                          before_write=None) -> dict:
    """Acquire one catalogue dataset for the first time, verify it, and write its pins file (once).

    ``dev_qrels`` / ``confirm_qrels`` are split names (``qrels/<split>.tsv``); the confirmation one is
    marked sealed. The archive is a local ``zip_path`` or is downloaded (``url`` or the entry's) into a
    temporary folder (``TMPDIR``) that is removed afterwards. ``before_write(pins, folder)`` may refuse
    (raise) with the extracted, parsed files at hand, before anything is written. Returns the dict written to
    ``pins_path``.
    """
    pins_path = Path(pins_path)
    _check_request(entry, pins_path, dev_qrels, confirm_qrels, split)
    # ONE qrels file: its two parts are drawn (``split``: seed, confirm_size)
    single = confirm_qrels == dev_qrels
    dev, confirm = _qrels_member(dev_qrels), (_qrels_member(confirm_qrels) if confirm_qrels and not single
                                              else None)
    top, name = entry["zip_top_folder"], entry.get("name", entry["zip_top_folder"])
    with tempfile.TemporaryDirectory(prefix=f"pin-{name}-") as tmp:
        archive, source = _obtain_zip(entry, Path(tmp), zip_path, url, timeout)
        zip_block = _verify_zip(archive, entry, source)
        qrels_names = [n for n in (dev, confirm) if n]
        _extract(archive, top, [CORPUS, QUERIES] + qrels_names, Path(tmp) / "x")
        tables = _check_parsed(Path(tmp) / "x", qrels_names, top, archive)
        files = _files_of(Path(tmp) / "x", dev, confirm, split if single else None, tables)
        pins = {"_comment": _comment(name, source), "dataset": name, "files": files,
                "zip": dict(zip_block, top_folder=top, url=entry["url"])}
        if before_write is not None:
            before_write(pins, Path(tmp) / "x")
    # still not pinned by someone else meanwhile
    _check_request(entry, pins_path, dev_qrels, confirm_qrels, split)
    write_json(pins_path, pins)
    return pins


def _files_of(dest: Path, dev: str, confirm: str | None, split: dict | None, tables: dict) -> dict:
    """The pins' files block: every file's size, lines and sha256, qrels content hashes, roles; ONE qrels file
    (``split`` given): its two drawn parts, the source itself only as ``qrels_source``."""
    if split is None:
        return _files_block(dest, dev, confirm, tables)
    files = _files_block(dest, dev, None, tables)
    files[dev]["role"] = "qrels_source"  # never published: only its drawn parts are
    files.update(drawn_parts(dev, tables[dev], split["seed"], split["confirm_size"], dest))
    return files


# ------------------------------------------------------------------ a local folder outside the catalogue --
def local_members(dev_qrels: str, confirm_qrels: str | None) -> list[str]:
    """The files repin=data reads from a ``data_dir`` folder (split names -> qrels/<split>.tsv)."""
    qrels = [_qrels_member(dev_qrels)] + ([_qrels_member(confirm_qrels)]
                                          if confirm_qrels and confirm_qrels != dev_qrels else [])
    return [CORPUS, QUERIES] + qrels


def check_local_folder(folder, pins_path, dev_qrels: str, confirm_qrels: str | None,
                       split: dict | None) -> dict:
    """A ``data_dir`` folder can be pinned: no pins yet, every file present, every judged query in
    queries.jsonl (cheap enough for the parse-time check: the corpus is parsed by the job). Returns the parsed
    qrels tables."""
    folder, pins_path = Path(folder), Path(pins_path)
    if pins_path.exists():
        raise PipelineError(f"ALREADY PINNED: {pins_path} exists, so the data is already pinned.\n  "
                            "expected: no pins (repin=data writes them once)\n  found: the file\n  fix: keep "
                            "them (drop repin=data), or delete the file knowingly, in its own commit, to "
                            "re-pin. Nothing was read or written.")
    if confirm_qrels == dev_qrels and split is None:
        raise ConfigError(f"dev_qrels and confirm_qrels are both {dev_qrels!r}: give the draw's seed and "
                          "size.")
    names = local_members(dev_qrels, confirm_qrels)
    missing = [n for n in names if not (folder / n).is_file()]
    if missing:
        have = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())[:20]
        raise MissingInputError(f"MISSING FILE in data_dir {folder}: {', '.join(missing)}\n  expected: "
                                f"{', '.join(names)} (BEIR layout)\n  found: "
                                f"{have or 'an empty or absent folder'}\n  fix: give the folder of the "
                                "dataset in BEIR layout, or name the qrels files it holds in study.qrels_dev "
                                "/ study.qrels_confirm. Nothing was written.")
    return judged_tables(folder, names[2:], f"{{}} of {folder}")


def pin_local_dataset(folder, name: str, pins_path, *, dev_qrels: str, confirm_qrels: str | None,
                      split: dict | None = None, before_write=None) -> dict:
    """The first pins of a dataset outside the catalogue, from a local BEIR-layout ``folder`` (copied into a
    temporary folder, parsed strictly, hashed; no archive is pinned: the folder serves later runs as their
    data_mirror). ``before_write`` as for ``pin_first_acquisition``. Returns the dict written to
    ``pins_path``."""
    folder = Path(folder)
    single = split is not None and confirm_qrels == dev_qrels
    check_local_folder(folder, pins_path, dev_qrels, confirm_qrels, split if single else None)
    names = local_members(dev_qrels, confirm_qrels)
    dev, confirm = names[2], (names[3] if len(names) > 3 else None)
    with tempfile.TemporaryDirectory(prefix=f"pin-{name}-") as tmp:
        dest = Path(tmp) / "x"
        for member in names:
            (dest / member).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(folder / member, dest / member)
        beir.read_corpus(dest / CORPUS)
        tables = judged_tables(dest, names[2:], f"{{}} of {folder}")
        files = _files_of(dest, dev, confirm, split if single else None, tables)
        pins = {"_comment": _comment(name, f"the local folder {folder} (not in the catalogue: no archive)"),
                "dataset": name, "files": files}
        if before_write is not None:
            before_write(pins, dest)
    if Path(pins_path).exists():
        raise PipelineError(f"ALREADY PINNED: {pins_path} appeared while pinning; nothing was written.")
    write_json(pins_path, pins)
    return pins


def _comment(name: str, source: str) -> str:
    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    local = "no archive" in source
    archive = "" if local else ("zip size and md5 matched the catalogue entry (lockfiles/datasets/beir.json) "
                                "before the zip was opened; zip sha256 recorded then. ")
    return (f"{'' if local else 'BEIR '}{name} pins, written by the first verified acquisition on {today} "
            f"(UTC) from {source}: {archive}Files are hashed as read (no newline normalisation) and were "
            "parsed with the strict readers; every qrels query id is in queries.jsonl. content_sha256 = "
            "sha256 of the sorted 'qid\\tdocid\\tscore\\n' rows (order-independent).")
