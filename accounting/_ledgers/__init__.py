"""Floor 6 of ``accounting``: the ledgers (in memory and durable) and what they store.

``_ledger`` (the in-memory ledger and its spend), ``_ledger_codec`` (a guarantee's JSON form),
``_ledger_chain`` (the hash chain of a durable trail), ``_ledger_store`` (SQLite and PostgreSQL
stores) and ``_durable`` (the durable ledger). The stored format names mechanism families, never
module paths.
"""
