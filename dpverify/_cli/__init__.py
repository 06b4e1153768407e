"""dpverify's top floor below ``dpverify.cli``: the command modules and what only they use.

``_cmd_*`` (one module per command group: audit, bandits, event, ledger, routes, shuffle, tails),
``_html_report`` (the reviewer's HTML pages) and ``_optional`` (optional dependencies, checked
before any work starts). ``dpverify.cli`` (the console script's target) registers them.
"""
