"""Floor 5 of ``accounting``: the routes a query can take, and the queries built on them.

``_routes`` (every route, the policies, ``epsilon_routes`` / ``delta_routes``), ``_pld_route`` (the
planner's PLD route), ``_optimal_composition`` and ``_tight_routes`` (exact routes for whole
classes of compositions) and ``_calibration`` (the noise for a target epsilon). The planner these
routes run on is the contract in ``_core._planner``.
"""
