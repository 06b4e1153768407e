"""Floor 0 of ``accounting``: the values and contracts every other floor is built on.

Validation (``_validation``), certified arithmetic in Arb (``_certified``), the guarantee types
(``_guarantees``), conversions between them (``_conversions``), composition theorems
(``_composition``), the total-variation charge (``_total_variation``), and the three contracts:
a mechanism (``_mechanism_base``: every hook a route may ask for), a pair of neighbouring output
laws on the integers (``_pairs``), and a route with its planner (``_planner``). Imports nothing
else from ``accounting``.
"""
