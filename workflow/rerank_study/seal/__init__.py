"""The sealed confirmation: a frozen protocol, a guarded opening and an append-only record of every look.

Threat model (docs/seal.md): it protects an honest, hurried researcher on a machine they control from
mistakes - an opening by mistake, a second opening taken for a first, a method changed after freezing (code,
config, lock pins, library versions), sealed judgements on the development side, a look without a ledger line.
Someone who edits the guard, the environment or results/ on purpose is out of scope: the answer is the record
kept elsewhere (the ledger pushed to a remote, the protocol's sha256 registered on OSF or AsPredicted), which
``confirm.py status`` checks.

Modules, one job each: ``locations`` (the seal's file names, the method's folders, the repository's lock
folders), ``protocol`` (the frozen fields and their comparison), ``evidence`` (what freezing needs from a
development run), ``prereg`` (the preregistration text), ``ledger``, ``registry`` (sealed sets by content, the
development side), ``traces`` (local traces of a look), ``tree`` (the method's files in git status),
``method`` (the frozen method's files), ``environment`` (the lock's library versions; the rest recorded),
``guard`` (the checks before an opening and before any development job), ``freeze`` (freeze, re-freeze,
register), ``status`` and ``family`` (a family of studies confirmed together: frozen before any of them
opens, decided on their completed openings).
"""

__all__ = ['environment', 'evidence', 'family', 'freeze', 'guard', 'ledger', 'locations', 'method', 'prereg',
    'protocol', 'registry', 'status', 'traces', 'tree']
