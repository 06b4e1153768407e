"""dpverify's core: how every report is written, below every layer that writes one.

``_json`` (JSON-ready values), ``_output`` (output files checked first, written atomically),
``_console`` (one JSON object or a rich table, and progress), ``_plots`` (regret figures) and
``_versions`` (the versions behind a result). Imports nothing else from ``dpverify``.
"""
