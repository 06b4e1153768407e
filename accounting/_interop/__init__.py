"""Floor 6 of ``accounting``: other accountants' interfaces, answered with certified numbers.

``_dp_accounting_compat`` (dp_accounting's accountant interface through the route planner) and
``_opacus_compat`` (Opacus' accountant interface and noise calibration for DP-SGD).
"""
