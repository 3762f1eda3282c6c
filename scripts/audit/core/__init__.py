"""The ground every room of the audit stands on: the two ways an input can be bad, the record of
every check's comparisons and failures, and how two values are compared."""

__all__ = ['bookkeeping', 'compare', 'problems']
