"""Pinned acquisition of a BEIR-layout dataset's files (SciFact by default; any dataset its pins describe).

Sources are tried in this order for every requested file:

1. the verified cache (``cache_dir/<name>``, managed here, never a Snakemake output, so a rerun
   can never delete it);
2. the configured local mirror folder (BEIR layout) or a local copy of the pinned archive (``<dataset>.zip``);
3. the pinned download URL (a local-only dataset has none).

Nothing is parsed before its pin is checked. A zip is checked by size, sha256 and md5 before
any member is extracted; every extracted or copied file is checked by sha256 before it is
renamed into the cache. A file with a wrong hash is never renamed into the cache, and the cache
is never overwritten. A wrong hash stops the run and names the file, expected and actual hash
and where it came from.
"""

from __future__ import annotations

import logging
import shutil
import urllib.error
import zipfile
from pathlib import Path

from ..core.errors import MissingInputError, PinMismatchError
from ..core.fileio import VerifiedFile, atomic_path, input_bytes, sha256_file
from . import beir
from .pins import DataPins, verify_archive
from .pins import download as fetch

log = logging.getLogger(__name__)


def check_file(path, name: str, pins: DataPins, source: str) -> VerifiedFile:
    """Verify one file against its sha256 pin (and nothing weaker); return it with the bytes that were checked
    (read once: a reader given the result parses exactly those bytes).

    qrels files also carry an order-independent ``content_sha256`` pin. It never replaces the
    file hash; when the file hash fails but the content hash matches, the error says so (the
    pinned bytes of the sealed confirmation qrels come from a rebuilt mirror whose line order may differ
    from BEIR's own file), so a maintainer can re-pin knowingly instead of guessing.
    """
    pin = pins.pin(name)
    verified = VerifiedFile(path, input_bytes(path))
    actual = sha256_file(verified)
    if actual == pin["sha256"]:
        _check_content(verified, name, pin, source)
        return verified
    fix = "Remove or replace the bad copy (the verified cache was not touched)."
    if "content_sha256" in pin:
        try:
            content = beir.qrels_content_sha256(beir.read_qrels(verified))
        except Exception:  # malformed: report the hash mismatch, which is the primary fact
            content = None
        if content == pin["content_sha256"]:
            fix = ("The judgements are IDENTICAL to the pinned ones (content sha256 " + content + ") but the "
                   "byte order differs. If this file came from the official archive, update the file sha256 "
                   f"of {name!r} in the data lockfile to the actual value above, knowingly, in "
                   "its own commit.")
    raise PinMismatchError(name, path, "sha256", pin["sha256"], actual, source, fix)


def _check_content(path, name: str, pin: dict, source: str) -> None:
    """A qrels file's pinned content hash must be the one of the bytes that carry its pinned sha256 (so the
    content hash that identifies a sealed set is never taken on trust)."""
    if "content_sha256" not in pin:
        return
    content = beir.qrels_content_sha256(beir.read_qrels(path))
    if content != pin["content_sha256"]:
        raise PinMismatchError(f"{name} (its judgements)", path, "content_sha256", pin["content_sha256"],
                               content, source, "The pin's content hash does not belong to the pinned file: "
                               "the pins were edited. Restore the data pins from git.")


def _copy_verified(src: Path, dest: Path, name: str, pins: DataPins, source: str) -> str:
    """Copy ``src`` to a temporary sibling of ``dest``, verify it, then rename into place."""
    with atomic_path(dest) as tmp:
        shutil.copyfile(src, tmp)
        check_file(tmp, name, pins, source)
    return "sha256"


def verify_zip(path, pins: DataPins, source: str) -> None:
    """The pinned archive's size, sha256 and md5, checked before any member is extracted."""
    if pins.zip_bytes is None:
        raise MissingInputError(f"the dataset {pins.dataset} has no pinned archive (a local-only dataset): "
                                f"give its folder with --config data_mirror=...; {path} cannot be verified")
    verify_archive(path, pins.zip_name, {"bytes": pins.zip_bytes, "sha256": pins.zip_sha256,
                                         "md5": pins.zip_md5},
                   source, "The archive is truncated or not the pinned one; it was not extracted.")


def download(url: str, dest: Path, pins: DataPins, timeout: float = 60.0) -> None:
    """Download to a temporary name; rename to ``dest`` only after size, sha256 and md5 match."""
    log.info("downloading %s", url)
    with atomic_path(dest) as tmp:
        fetch(url, tmp, timeout)
        verify_zip(tmp, pins, f"download {url}")


def _acquire_part(name: str, pins: DataPins, cache_dir: Path, **sources) -> dict:
    """A drawn part of a dataset's ONE qrels file (its pin names the source file and the part's query ids):
    the source is acquired and verified into a temporary folder, the part's rows are written, verified against
    the part's own pin and renamed into the cache; the source copy is deleted (it never reaches the cache)."""
    import tempfile

    origin = pins.pin(name)["derived_from"]
    with tempfile.TemporaryDirectory(prefix=".part-", dir=cache_dir) as tmp:
        prov = acquire([origin["file"]], pins, tmp, **sources)[origin["file"]]
        part = beir.partition_rows(input_bytes(Path(tmp) / origin["file"]), set(origin["queries"]))
    with atomic_path(cache_dir / name) as out:
        out.write_bytes(part)
        check_file(out, name, pins, f"part of {origin['file']} ({prov['source']})")
    return {"source": f"the {len(origin['queries'])} pinned queries' rows of {origin['file']} "
                      f"({prov['source']})",
            "verified_by": "sha256", "sha256": sha256_file(cache_dir / name)}


def _from_cache_or_mirror(name: str, pins: DataPins, cache_dir: Path, mirror, sources: dict) -> dict | None:
    """``name`` from the first source that has it of: a drawn part (``_acquire_part``), the verified cache
    (re-checked), the mirror (copied and verified into the cache). Its provenance, or None (needs the
    archive)."""
    if "derived_from" in pins.pin(name) and not (cache_dir / name).exists():
        return _acquire_part(name, pins, cache_dir, **sources)
    cached = cache_dir / name
    if cached.exists():
        actual = sha256_file(cached)
        if actual != pins.pin(name)["sha256"]:
            raise PinMismatchError(name, cached, "sha256", pins.pin(name)["sha256"], actual, "verified cache",
                                   f"The cached copy changed after it was verified. Delete {cached} "
                                   "and rerun to acquire it again from the mirror, archive or URL.")
        return {"source": "cache", "verified_by": "sha256", "sha256": actual}
    if mirror:
        src = Path(mirror) / name
        if src.exists():
            how = _copy_verified(src, cached, name, pins, f"mirror {src}")
            return {"source": f"mirror {src}", "verified_by": how, "sha256": sha256_file(cached)}
        log.warning("mirror %s has no %s", mirror, name)
    return None


def _pinned_archive(pins: DataPins, cache_dir: Path, zip_path, url, download_dir, timeout: float
                    ) -> tuple[Path | None, str | None, list[str]]:
    """The verified pinned archive and where it came from: the local copy ``zip_path``, else a previous
    download, else a download from ``url``. (None, None, reasons) when there is none."""
    reasons = []
    if zip_path:
        zp = Path(zip_path)
        if zp.exists():
            verify_zip(zp, pins, f"local archive {zp}")
            return zp, f"zip {zp}", reasons
        reasons.append(f"the configured archive data_zip={zp} does not exist")
    if url:
        dl_dir = Path(download_dir) if download_dir else cache_dir.parent / "downloads"
        dest = dl_dir / pins.zip_name
        try:
            if dest.exists():
                verify_zip(dest, pins, f"previously downloaded {dest}")
            else:
                download(url, dest, pins, timeout)
            return dest, f"zip downloaded from {url}", reasons
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            reasons.append(f"download of {url} failed: {exc}")
    return None, None, reasons


def _missing_data(missing: list[str], reasons: list[str], mirror, pins: DataPins) -> MissingInputError:
    """The error when no source has the files: what was tried, and the two ways to supply them."""
    return MissingInputError(
        "MISSING DATA: " + ", ".join(missing) + " could not be found.\n"
        + "".join(f"  - {r}\n" for r in reasons)
        + (f"  - the mirror {mirror} does not contain them\n" if mirror else "  - no local mirror is "
           "configured\n")
        + "Supply them in one of two ways:\n"
        + f"  1. a local copy: --config data_mirror=/path/to/{pins.dataset} (a folder with corpus.jsonl, "
        "queries.jsonl,\n"
        + f"     qrels/*.tsv in BEIR layout) or --config data_zip=/path/to/{pins.zip_name};\n"
        + (f"  2. network access to {pins.url} (the archive is verified by sha256 and md5)." if pins.url else
           f"  2. (none: {pins.dataset} is a local-only dataset without a pinned archive)")
    )


def _extract_verified(archive: Path, archive_source: str, missing: list[str], pins: DataPins,
                      cache_dir: Path) -> dict[str, dict]:
    """Each missing file extracted from the verified archive to a temporary name, verified, renamed into
    the cache; their provenance."""
    provenance: dict[str, dict] = {}
    with zipfile.ZipFile(archive) as zf:
        for name in missing:
            member = f"{pins.zip_top}/{name}"
            cached = cache_dir / name
            try:
                info = zf.getinfo(member)
            except KeyError:
                raise MissingInputError(f"MISSING FILE: {archive} has no member {member}") from None
            with atomic_path(cached) as tmp:
                with zf.open(info) as src, open(tmp, "wb") as out:
                    shutil.copyfileobj(src, out)
                check_file(tmp, name, pins, f"{archive_source} member {member}")
            provenance[name] = {"source": f"{archive_source} member {member}", "verified_by": "sha256",
                                "sha256": sha256_file(cached)}
    return provenance


def acquire(names, pins: DataPins, cache_dir, mirror=None, zip_path=None, url=None,
            download_dir=None, timeout: float = 60.0) -> dict[str, dict]:
    """Make every file in ``names`` present and verified in ``cache_dir``; return provenance.

    ``provenance[name] = {"source": ..., "verified_by": ..., "sha256": ...}``.
    """
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    provenance: dict[str, dict] = {}
    missing = []
    sources = {"mirror": mirror, "zip_path": zip_path, "url": url, "timeout": timeout,
               "download_dir": download_dir or cache_dir.parent / "downloads"}
    for name in names:
        found = _from_cache_or_mirror(name, pins, cache_dir, mirror, sources)
        if found is None:
            missing.append(name)
        else:
            provenance[name] = found
    if not missing:
        return provenance
    archive, archive_source, reasons = _pinned_archive(pins, cache_dir, zip_path, url, download_dir, timeout)
    if archive is None:
        raise _missing_data(missing, reasons, mirror, pins)
    provenance.update(_extract_verified(archive, archive_source, missing, pins, cache_dir))
    return provenance


def publish_verified(names, outputs, pins: DataPins, cache_dir, mirror=None, zip_path=None, url=None,
                     timeout: float = 60.0, expect_split=None) -> dict[str, dict]:
    """Acquire ``names`` into the verified cache, then copy each to its output path (checked again
    before the rename). With ``expect_split`` (a split list), the judged queries of the (single)
    qrels file must equal that split. Records the provenance in ``<cache>/acquisition.json``."""
    from ..core.errors import PipelineError
    from ..core.fileio import write_json
    from . import splits

    prov = acquire(names, pins, cache_dir, mirror=mirror, zip_path=zip_path, url=url, timeout=timeout)
    for name, dest in zip(names, outputs):
        with atomic_path(dest) as tmp:
            shutil.copyfile(Path(cache_dir) / name, tmp)
            checked = check_file(tmp, name, pins, f"verified cache {Path(cache_dir) / name}")
            if expect_split:
                judged = splits.canonical_order(beir.read_qrels(checked))
                expected = splits.read_split(expect_split)
                if judged != expected:
                    raise PipelineError(f"{name}: its judged queries differ from {expect_split} "
                                        f"({len(judged)} vs {len(expected)})")
        log.info("%s: %s (verified by %s, sha256 %s)", name, prov[name]["source"], prov[name]["verified_by"],
                 prov[name]["sha256"])
    write_json(Path(cache_dir) / "acquisition.json", prov)
    return prov


def verified_path(path, name: str, pins: DataPins) -> VerifiedFile:
    """``path`` checked against its pin, with the checked bytes: call this before reading any data file, and
    give its result to the reader (which then parses those bytes, never the file again)."""
    return check_file(path, name, pins, f"file {path}")
