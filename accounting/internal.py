"""The one documented interface between ``accounting`` and the layers built on it (``dpverify``).

``dpverify`` (the executed samplers, protocols, auditor, bandits, tails and CLI) imports from
``accounting`` only two modules: the package itself (its public API, ``accounting.__all__``) and
this module. Everything else in ``accounting`` is private (``_name``) and may move or change
without notice; ``tests/test_import_graph.py`` fails if a module of ``dpverify`` imports one.

This module re-exports, under public names, the internal tools that an executed layer needs to
obey the accountant's own rules: the same validation (so bad input is the same ``ValueError``
everywhere), the same directed rounding (so a number computed above the accountant is certified
the same way), and a few ledger and route internals that the CLI and the run records print.
Nothing here is computed anew: each name is the very object of the private module named below
(``accounting.internal.exact is accounting._core._certified.exact``).

**Users should prefer the top-level API** (``import accounting``): guarantees, mechanisms,
``epsilon_routes``, ``Ledger``, ``DurableLedger``, ``working_precision`` and the errors live there.
This module is for code that extends the toolkit; its names are stable for ``dpverify`` but carry
no promise beyond what is written here.

Validation (from ``_core._validation``); each returns the value unchanged or raises
:class:`accounting.AccountingError` (a ``ValueError`` naming the parameter, the value and the
allowed range); ``bool`` is never accepted as a number and nothing is clipped:

- ``check_positive(name, value, *, allow_inf=False)``: a real number > 0 (finite unless allowed);
- ``check_nonnegative(name, value, *, allow_inf=False)``: a real number >= 0;
- ``check_probability(name, value, *, open_low=True, open_high=True)``: a probability in (0, 1),
  either end allowed on request;
- ``check_positive_int(name, value)``: an integer >= 1 (an integral float such as 3.0 is refused);
- ``check_integer(name, value, *, minimum=None)``: an integer, optionally >= ``minimum``.

Certified arithmetic (from ``_core._certified``; python-flint Arb balls):

- ``exact(value)``: the exact ball of an int, float, ``Fraction`` or decimal string (``"0.1"`` is
  1/10); a bool or a non-finite float is refused;
- ``upper_float(ball)`` / ``lower_float(ball)``: the smallest float >= / largest float <= every
  point of the ball (``inf`` / ``-inf`` when unbounded; ``ArithmeticError`` on a NaN ball).
  A value derived from a privacy parameter is reported with the rounding that never under-reports.

Charges the executed samplers carry (from ``_core._total_variation`` and ``_mechanisms``):

- ``total_variation_of(guarantee)``: the total variation t a charge carries (0 unless it is a
  :class:`accounting.WithinTotalVariation`);
- ``times_total_variation(t, compose)``: compose * t rounded up (the t of ``compose`` releases;
  ``count=``: former name, deprecated);
- ``delta_before_total_variation(epsilon, delta, t)``: delta - (1 + e^eps) t rounded down, the
  delta left to the ideal mechanism; refused (naming ``delta``) when nothing is left;
- ``sum_total_variation(sigma2, n)``: an upper bound on the total variation between the sum
  of ``n`` iid discrete Gaussians N_Z(0, sigma2) (n users' noises, summed: not a composition
  count) and N_Z(0, n sigma2) (1.0 where the bound does not apply, 0 for n = 1; ``count=``:
  former name, deprecated);
- ``binomial_composition_epsilon(trials, p, sensitivity, compose, delta)``: the certified
  eps(delta) of the ``compose``-fold composition of Bin(trials, p) against its shift by
  ``sensitivity`` (the PLD route on the exact binomial pair).

Routes (from ``_routing._routes``):

- ``rdp_provenance(subject, alpha)``: a label saying how the RDP value of ``subject`` at ``alpha``
  was obtained (an exact curve or a bound; never "exact" for a bound);
- ``pld_bracket(subject, delta, *, compose=1, discretisation=None)``: the PLD route's result with
  its optimistic twin, a PLD evaluation (:class:`accounting.Result`) whose [epsilon_lower, epsilon] brackets the
  true eps(delta), or ``None`` when a release has no PLD.

Ledger internals (from ``_ledgers._ledger``, ``_ledgers._ledger_codec``, ``_ledgers._ledger_store``):

- ``normalise_participants(participants)``: ``None`` (everyone), a ``range`` of step 1, or a
  sorted int64 array of distinct user ids >= 0 (refused when empty or negative), as the ledger
  stores a charge's participants;
- ``user_groups(charges)``: the distinct multisets of charges some user is touched by, as tuples
  of (charge index, count);
- ``guarantee_to_dict(guarantee)``: the ledger's JSON form of a guarantee or mechanism (free-form
  RDP curves refused);
- ``redacted(url)``: a store URL with any password replaced by ``***`` (for printing and records).
"""

from __future__ import annotations

from ._core._certified import exact, lower_float, upper_float
from ._ledgers._ledger import _normalise_participants as normalise_participants
from ._ledgers._ledger import _user_groups as user_groups
from ._ledgers._ledger_codec import guarantee_to_dict
from ._ledgers._ledger_store import redacted
from ._mechanisms._binomial_pair import binomial_composition_epsilon
from ._mechanisms._discrete_gaussian_vector import sum_total_variation
from ._routing._routes import pld_bracket, rdp_provenance
from ._core._total_variation import delta_before_total_variation, times_total_variation, total_variation_of
from ._core._validation import check_integer, check_nonnegative, check_positive, check_positive_int, check_probability

__all__ = [
    "binomial_composition_epsilon",
    "check_integer",
    "check_nonnegative",
    "check_positive",
    "check_positive_int",
    "check_probability",
    "delta_before_total_variation",
    "exact",
    "guarantee_to_dict",
    "lower_float",
    "normalise_participants",
    "pld_bracket",
    "rdp_provenance",
    "redacted",
    "sum_total_variation",
    "times_total_variation",
    "total_variation_of",
    "upper_float",
    "user_groups",
]
