"""The ground every other package stands on: loud errors, file I/O and hashes, the names and the
layout of every artefact, the rule scripts' glue, the machine's facts, the library's fingerprint."""

__all__ = ['errors', 'fileio', 'fingerprint', 'layout', 'machine', 'names', 'rule']
