"""Rule synthesis runs the synthesis's own audit on the files it has just written, as each study's run is
audited: ``python -I -S -B scripts/audit --synthesis <folder> --run <run> ... [--configfile F ...] --out
<folder>/audit.json`` (the standard-library audit, synthesis_checks: every number of synthesis.json
recomputed from the studies' audited files and the saved index matrices; synthesis_pages: the renderings
present, synthesis.html self-contained and carrying synthesis.md's numbers and forest.png, each rendering's
sha256 listed in audit.json). It runs last, on every file of the synthesis: synthesis.md and synthesis.html
are written just before it with the verdict line (PASSED) they keep only when it passes; a failed audit
removes both and stops the rule, naming the checks."""

from __future__ import annotations

import os
import subprocess

from ..core.errors import PipelineError

PASSED = ("Audit of this synthesis: PASSED (`scripts/audit --synthesis`: every number of synthesis.json "
          "recomputed from the studies' audited files and the saved index matrices; audit.json).")
VERDICT = [PASSED, ""]  # the last lines of synthesis.md, kept only when the audit passes


def command(python: str, script: str, folder: str, runs, configfiles, out: str) -> list[str]:
    return [python, "-I", "-S", "-B", "-X", "pycache_prefix=/dev/null/pycache", script, "--synthesis", folder,
            *[a for r in runs for a in ("--run", str(r))],
            *[a for c in configfiles for a in ("--configfile", str(c))], "--out", out]


def audited(sm) -> None:
    """Run the audit of the synthesis (rule synthesis's params ``audit``, ``runs``, ``configfiles``) on the
    files just written; when it fails, remove synthesis.md and synthesis.html (they show the verdict PASSED)
    and raise a PipelineError naming what failed."""
    python, script = sm.params.audit
    cmd = command(python, script, os.path.dirname(sm.output.json), sm.params.runs, sm.params.configfiles,
                  sm.output.audit)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        for page in (sm.output.md, sm.output.html):
            if os.path.exists(page):
                os.remove(page)
        raise PipelineError(f"the audit of this synthesis FAILED (exit {proc.returncode}); nothing of it is "
                            f"to be trusted. Its report:\n{proc.stdout[-4000:]}{proc.stderr[-2000:]}\nFix: "
                            "rerun `snakemake synthesis` from the studies' audited runs; a key the audit "
                            "does not know needs the audit extended "
                            "(scripts/audit/synthesis/synthesis_checks.py).")
