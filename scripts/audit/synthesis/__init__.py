"""The audit of a synthesis across datasets: its checks and key allowlist, the arithmetic, the declared
family of tests and the renderings."""

__all__ = ['synthesis_checks', 'synthesis_family', 'synthesis_math', 'synthesis_pages']
