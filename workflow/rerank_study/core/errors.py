"""Loud, specific failures. Every message names the file, the expected and actual value and the fix."""

from typing import NoReturn


class PipelineError(Exception):
    """Base class: an error the pipeline raises on purpose, with a user-facing message."""


class PinMismatchError(PipelineError):
    """A file's hash differs from its pin."""

    def __init__(self, what, path, algo, expected, actual, source=None, fix=None):
        self.what, self.path, self.algo = what, str(path), algo
        self.expected, self.actual, self.source = expected, actual, source
        msg = (
            f"PIN MISMATCH for {what}: {path}\n"
            f"  {algo} expected: {expected}\n"
            f"  {algo} actual:   {actual}"
        )
        if source:
            msg += f"\n  came from: {source}"
        msg += "\n  " + (fix or "The file is not the pinned one; nothing was read from it or kept.")
        super().__init__(msg)


class MissingInputError(PipelineError):
    """A required input is absent."""


class NotRegularFileError(PipelineError):
    """An input path that is not a regular file (a FIFO, socket, device or folder): two reads could differ."""

    def __init__(self, path, kind: str):
        self.path, self.kind = str(path), kind
        super().__init__(f"NOT A REGULAR FILE: {path} is a {kind}\n  expected: a regular file (an input is "
                         "read once, from a regular file, so every reader sees the bytes whose hash was "
                         f"checked)\n  found: a {kind}\n  fix: put the file itself at {path} (cp, not "
                         "mkfifo, a device or a folder)")


class MalformedInputError(PipelineError):
    """A line of an input file cannot be parsed."""

    def __init__(self, path, line_no, problem):
        self.path, self.line_no, self.problem = str(path), line_no, problem
        super().__init__(f"MALFORMED INPUT {path}, line {line_no}: {problem}")


class ConfigError(PipelineError):
    """The configuration is invalid; the message names the key."""


class StudyError(PipelineError):
    """A study names something that does not exist or does not fit; the message names study, file, fix."""


def fail_study(study: str, path, problem: str, fix: str) -> NoReturn:
    """Stop at parse time: what is wrong with ``study``, in which file, and the fix."""
    raise StudyError(f"STUDY {study!r}: {problem}\n  file: {path}\n  fix: {fix}")


class SealError(PipelineError):
    """An action would break the confirmation seal or the frozen protocol."""
