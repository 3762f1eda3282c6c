"""The sealed confirmation: a frozen protocol, a guarded opening and an append-only record of every look.

The invariants (docs/seal.md "What the seal guarantees" names the test of each):

* a sealed set is identified by its content (``registry``): an order-independent hash of its judgement
  rows plus the corpus; every lock folder of the repository is read, and no development input may hold a
  judgement, a query id (same corpus) or a query text (any corpus) of any sealed set;
* openings are counted per sealed set across every ledger (``ledger``); a set started under one protocol
  cannot be opened under another, and no new protocol can be frozen for it (``freeze``);
* the frozen method is every file of the checkout that can run (``method``), from the bytes on disk; before
  an opening the tree equals HEAD by content (``tree``), no untracked or ignored file lies beside the code,
  and the installed environment equals the lock (``environment``);
* local traces of a look (a trace line outside the work tree, a verified sealed copy, a confirmation results
  folder, a started line on any local branch) that the ledgers do not know stop the next opening or freeze
  (``traces``).

Modules, one job each: ``locations`` (the seal's file names and the repository's lock folders),
``protocol`` (the frozen fields and their comparison), ``evidence`` (what freezing needs from a development
run), ``prereg`` (the preregistration text), ``ledger``, ``registry``, ``traces``, ``tree``, ``method``,
``environment``, ``guard`` (the checks before an opening and before any development job), ``freeze``
(freeze and re-freeze) and ``status``.
"""
