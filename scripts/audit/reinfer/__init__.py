"""The auditor's own re-inference, the optional second stage: check 'reinfer' (stage) draws the batches
and starts the child process that re-infers them (child: the one module that needs torch, never imported)."""

__all__ = ['child', 'stage']
