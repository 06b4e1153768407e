"""Composition rules that are not a plain sum of curves, kept for side-by-side comparison.

- Advanced composition (Dwork, Rothblum & Vadhan 2010, Thm III.3): k-fold composition of
  (eps0, delta0)-DP is (sqrt(2k log(1/delta')) eps0 + k eps0 (e^eps0 - 1), k delta0 + delta')-DP.
- The ICLR paper's Appendix I recipe for returning users under approximate DP: to make B batches
  (eps, delta)-DP in total, give each batch eps_i = eps / (2 sqrt(2B log(1/delta'))),
  delta_i = delta / (2B), with delta' = delta / 2 (its Theorem 7, a simplified advanced
  composition valid for eps < 1).

Sequential, k-fold, parallel and returning-users composition of RDP curves live on
:class:`accounting.RDP` itself (``compose``, ``times``, ``parallel``, ``returning``); they are exact
(sums of certified values), while these rules are loose closed forms: the accountant reports them
beside the exact route, never instead of it.
"""

from __future__ import annotations

from ._certified import exact, lower_float, upper_float, working_precision
from ._guarantees import ApproxDP, PureDP
from ._renamed import renamed_keywords
from ._validation import AccountingError, check_positive, check_positive_int, check_probability

__all__ = ["advanced_composition", "appendix_i_per_batch"]


@renamed_keywords(step="guarantee", k="compose")
def advanced_composition(guarantee: PureDP | ApproxDP, compose: int, delta_prime: float) -> ApproxDP:
    """DRV advanced composition of ``compose`` copies of ``guarantee`` with slack ``delta_prime``.

    (``step=`` and ``k=``: the former keyword names, deprecated.)"""
    check_positive_int("compose", compose)
    check_probability("delta_prime", delta_prime)
    k = compose
    if isinstance(guarantee, PureDP):
        eps0, delta0 = guarantee.epsilon, 0.0
    elif isinstance(guarantee, ApproxDP):
        eps0, delta0 = guarantee.epsilon, guarantee.delta
    else:
        raise AccountingError("guarantee", guarantee, "a PureDP or ApproxDP guarantee")
    with working_precision(None):
        e = exact(eps0)
        eps = (2 * k * (-exact(delta_prime).log())).sqrt() * e + k * e * e.expm1()
        delta = exact(delta0) * k + exact(delta_prime)
        delta_up = upper_float(delta)
        if delta_up >= 1:
            raise AccountingError("delta_prime", delta_prime, "a value with compose*delta0 + delta_prime < 1")
        return ApproxDP(upper_float(eps), delta_up)


def appendix_i_per_batch(epsilon: float, delta: float, returns: int) -> ApproxDP:
    """Per-batch (eps_i, delta_i) of the ICLR paper's App. I so that ``returns`` batches are (eps, delta)-DP.

    The per-batch epsilon is rounded *down* (it is a budget handed to each batch: a smaller
    share is the safe side).
    """
    check_positive("epsilon", epsilon)
    check_probability("delta", delta)
    check_positive_int("returns", returns)
    if epsilon >= 1:
        raise AccountingError("epsilon", epsilon, "a value in (0, 1) (Theorem 7 of the paper assumes eps < 1)")
    with working_precision(None):
        delta_prime = exact(delta) / 2
        eps_i = exact(epsilon) / (2 * (2 * returns * (-delta_prime.log())).sqrt())
        return ApproxDP(lower_float(eps_i), lower_float(exact(delta) / (2 * returns)))
