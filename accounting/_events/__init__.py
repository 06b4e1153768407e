"""Floor 4 of ``accounting``: dp_accounting's ``DpEvent`` trees as accounting subjects.

``_dp_event`` translates an event tree (``from_dp_event``) into mechanisms, compositions and
amplified subjects; ``_dp_event_mechanisms`` holds the mechanisms only dp_accounting's events need.
dp_accounting itself is never imported here.
"""
