"""Building a claim from a validated claim file: the mechanism, its pairs and the claim itself.

:func:`build` finds the target (a built-in of :mod:`._registry`, or a user's callable through
:mod:`._user`), runs its builder on the file's tables and reads the claim of the requested form
off the ``accounting`` guarantee the builder returns (never a hand-written number).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from accounting import RDP, ZCDP, ApproxDP, PureDP, rdp_to_delta, AccountingError

from .._neighbours import NeighbourPair
from ._registry import TARGETS, prefixed_target
from ._spec import ClaimSpec, SuiteError, _Table
from ._user import user_target

__all__ = ["Claim", "build"]


@dataclass(frozen=True)
class Claim:
    mechanism: Callable[..., Any]
    pairs: tuple[NeighbourPair, ...]
    claim: Any
    log_pmf: Callable[..., Any] | None
    form: str
    guarantee: Any
    text: str
    audit_options: dict[str, Any] = field(default_factory=dict)
    describe_event: Callable[[str], str] | None = None


def build(spec: ClaimSpec) -> Claim:
    """The target's mechanism, neighbours, the claim (from the accountant) and the law, if declared."""
    if spec.target in TARGETS:
        target = TARGETS[spec.target]
    elif (found := prefixed_target(spec.file, spec.target)) is not None:  # e.g. "run:dist-dp-se"
        target = found
    else:  # "package.module:function" (load_claim checked the form)
        target = user_target(spec.file, spec.target, spec.claim)
    params = _Table(spec, "parameters", spec.parameters)
    neighbours = _Table(spec, "neighbours", spec.neighbours)
    try:
        built = target.builder(params, neighbours)
    except SuiteError:
        raise
    except AccountingError as error:
        raise SuiteError(spec.file, f"parameters.{error.name}" if getattr(error, "name", None) else "parameters", str(error)) from None
    params.done()
    neighbours.done()
    form = spec.claim.get("form", built.default_form)
    g = built.guarantee
    try:
        if form == "pure":
            claim = g.pure()
            if not isinstance(claim, PureDP):
                raise SuiteError(spec.file, "claim.form", f"{g.describe()} has no pure DP guarantee")
            text = f"{claim.epsilon:.6g}-DP"
        elif form == "rdp":
            claim = g.rdp()
            if not isinstance(claim, RDP):
                raise SuiteError(spec.file, "claim.form", f"{g.describe()} has no RDP curve")
            text = "RDP"
        elif form == "zcdp":
            claim = g.zcdp()
            if not isinstance(claim, ZCDP):
                raise SuiteError(spec.file, "claim.form", f"{g.describe()} has no zCDP guarantee")
            text = f"{claim.rho:.6g}-zCDP"
        else:
            eps = float(spec.claim["epsilon"])
            claim = g.approx_dp(eps)  # None: not available, then the RDP curve's conversion
            if claim is None:
                claim = ApproxDP(eps, rdp_to_delta(g.rdp(), eps).delta)
            if not isinstance(claim, ApproxDP):
                raise SuiteError(spec.file, "claim.form", f"{g.describe()} has no (eps, delta) guarantee")
            text = f"({claim.epsilon:.6g}, {claim.delta:.3g})-DP"
    except AccountingError as error:
        raise SuiteError(spec.file, "claim.form", str(error)) from None
    if spec.estimators is not None:
        allowed = {"pure": {"epsilon", "delta", "renyi"}, "rdp": {"renyi"}, "zcdp": {"renyi"}, "approx": {"delta"}}[form]
        bad = [e for e in spec.estimators if e not in allowed]
        if bad:
            raise SuiteError(spec.file, "audit.estimators", f"{bad[0]!r} does not test a {form!r} claim (allowed: {sorted(allowed)})")
    return Claim(built.mechanism, built.pairs, claim, built.log_pmf, form, g, text, built.audit_options, built.describe_event)

