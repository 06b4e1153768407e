"""The declarative audit suite: TOML claim files, a registry of auditable targets, Holm over claims.

A suite is a directory of TOML files, one claim each (``audits/README.md`` documents the schema),
or a single file. Each file names a *target* of the registry below, its parameters, the form of
the claim (taken from the target's ``accounting`` guarantee, never written by hand), the
neighbouring inputs and a sample budget. Files under a ``planted/`` directory are planted bugs:
they state the verdict the suite must reach (``expect = "violated"``: the bug must be caught;
``expect = "holds"``: a variant that must *not* be flagged).

Error control. Claim j is audited by :func:`dpverify.audit` at the Bonferroni level alpha/m (m
claims), its results re-scored from their bound-sample counts (:mod:`._rescore`), and given the
p-value p_j = the smallest level on a grid (containing every Holm threshold alpha/k) at which any
of its R results rejects at level/R. Holm's step-down procedure over (p_1..p_m) then decides:
reject the claims with the smallest p-values while p_(i) <= alpha/(m - i + 1). The family-wise
error -- the probability that *any* true claim of the suite is reported violated -- is at most
alpha, whatever the dependence between claims (Holm 1979). Each claim's reported bound is its
bound at the level Holm tested it at, so "violated" is always "lower bound > claimed".

Reproducibility. Claim ``name`` draws from the seed ``SeedSequence([seed, crc32(name)])``: adding
a file does not change the numbers of the others, and results do not depend on the executor.

Every target runs the project's own code: the samplers of :mod:`dpverify._samplers`, the
protocols' ``server_views`` / ``messages`` / ``analyze`` / ``estimate_sum``, the LDP curators'
``respond``. Planted bugs call the same kernels with the wrong parameter, or wrap the real view.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
import tomllib
import zlib
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ._neighbours import NeighbourPair
from ._results import HOLDS, VIOLATED, AuditResult, _margin
from ._rescore import rescore, result_p_value

__all__ = [
    "CAUGHT",
    "MISSED",
    "TARGETS",
    "Built",
    "ClaimOutcome",
    "ClaimSpec",
    "SuiteError",
    "SuiteOutcome",
    "build",
    "holm",
    "load_suite",
    "run_suite",
]

CAUGHT = "caught"
MISSED = "missed"
DEFAULT_ALPHA = 1e-3
FORMS = ("pure", "rdp", "zcdp", "approx")
_TOP_KEYS = {"name", "description", "target", "expect", "parameters", "claim", "neighbours", "audit"}
_AUDIT_KEYS = {"samples", "estimators", "directions", "orders"}
_MIN_SAMPLES = 1000


class SuiteError(Exception):
    """An error in the suite itself (exit code 2): names the file and the offending key."""

    def __init__(self, file: str | os.PathLike[str], key: str | None, message: str) -> None:
        self.file = str(file)
        self.key = key
        where = f"{self.file}: {key}: " if key else f"{self.file}: "
        super().__init__(where + message)


# ------------------------------------------------------------------------------------------------
# The claim files
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClaimSpec:
    """One validated claim file."""

    name: str
    file: str
    target: str
    parameters: Mapping[str, Any]
    claim: Mapping[str, Any]
    neighbours: Mapping[str, Any]
    samples: int
    estimators: tuple[str, ...] | None = None
    directions: str = "both"
    orders: tuple[float, ...] | None = None
    expect: str = HOLDS
    planted: bool = False
    description: str = ""

    @property
    def weight(self) -> float:
        """A rough cost (for scheduling the longest claims first)."""
        per_draw = _TARGETS_COST.get(self.target, 1.0)
        n = self.parameters.get("n", 1) if isinstance(self.parameters.get("n", 1), int) else 1
        return self.samples * per_draw * max(1.0, n / 16)


def _is_planted(file: Path, root: Path) -> bool:
    try:
        parts = file.resolve().relative_to(root.resolve()).parts[:-1]
    except ValueError:
        parts = file.parts[:-1]
    return "planted" in parts or file.parent.name == "planted"


def load_claim(file: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> ClaimSpec:
    """Read and validate one claim file (the target's parameters are checked by :func:`build`)."""
    path = Path(file)
    base = Path(root) if root is not None else path.parent
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except tomllib.TOMLDecodeError as error:
        raise SuiteError(path, None, f"malformed TOML: {error}") from None
    except OSError as error:
        raise SuiteError(path, None, f"cannot read: {error}") from None
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise SuiteError(path, unknown[0], f"unknown key (allowed: {', '.join(sorted(_TOP_KEYS))})")
    planted = _is_planted(path, base)
    try:
        rel = path.resolve().relative_to(base.resolve())
        default_name = str(rel.with_suffix("")).replace(os.sep, "/")
    except ValueError:
        default_name = path.stem
    name = data.get("name", default_name)
    if not isinstance(name, str) or not name.strip():
        raise SuiteError(path, "name", f"expected a non-empty string, got {name!r}")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise SuiteError(path, "description", f"expected a string, got {description!r}")
    target = data.get("target")
    if target is None:
        raise SuiteError(path, "target", f"missing (one of: {', '.join(sorted(TARGETS))})")
    if not isinstance(target, str) or target not in TARGETS:
        raise SuiteError(path, "target", f"unknown target {target!r} (one of: {', '.join(sorted(TARGETS))})")
    if "expect" in data:
        expect = data["expect"]
        if expect not in (HOLDS, VIOLATED):
            raise SuiteError(path, "expect", f'expected "holds" or "violated", got {expect!r}')
        if not planted and expect != HOLDS:
            raise SuiteError(path, "expect", 'only files under planted/ may expect "violated"')
    elif planted:
        raise SuiteError(path, "expect", 'missing: a planted file states its expected verdict ("violated" or "holds")')
    else:
        expect = HOLDS
    tables = {}
    for section in ("parameters", "claim", "neighbours", "audit"):
        value = data.get(section, {})
        if not isinstance(value, dict):
            raise SuiteError(path, section, f"expected a table [{section}], got {type(value).__name__}")
        tables[section] = value
    audit_table = tables["audit"]
    unknown = sorted(set(audit_table) - _AUDIT_KEYS)
    if unknown:
        raise SuiteError(path, f"audit.{unknown[0]}", f"unknown key (allowed: {', '.join(sorted(_AUDIT_KEYS))})")
    samples = audit_table.get("samples")
    if samples is None:
        raise SuiteError(path, "audit.samples", "missing: the sample budget (draws per input)")
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < _MIN_SAMPLES:
        raise SuiteError(path, "audit.samples", f"expected an integer >= {_MIN_SAMPLES}, got {samples!r}")
    estimators = audit_table.get("estimators")
    if estimators is not None:
        if (not isinstance(estimators, list) or not estimators
                or any(e not in ("epsilon", "delta", "renyi") for e in estimators)):
            raise SuiteError(path, "audit.estimators", f'expected a list of "epsilon", "delta", "renyi", got {estimators!r}')
        estimators = tuple(estimators)
    directions = audit_table.get("directions", "both")
    if directions not in ("both", "forward", "backward"):
        raise SuiteError(path, "audit.directions", f'expected "both", "forward" or "backward", got {directions!r}')
    orders = audit_table.get("orders")
    if orders is not None:
        if (not isinstance(orders, list) or not orders
                or any(isinstance(o, bool) or not isinstance(o, (int, float)) or not 1 < o < math.inf for o in orders)):
            raise SuiteError(path, "audit.orders", f"expected a list of Renyi orders > 1, got {orders!r}")
        orders = tuple(float(o) for o in orders)
    claim = tables["claim"]
    unknown = sorted(set(claim) - {"form", "epsilon"})
    if unknown:
        raise SuiteError(path, f"claim.{unknown[0]}", "unknown key (allowed: form, epsilon)")
    form = claim.get("form")
    if form is not None and form not in FORMS:
        raise SuiteError(path, "claim.form", f"expected one of {', '.join(FORMS)}, got {form!r}")
    if "epsilon" in claim:
        eps = claim["epsilon"]
        if form != "approx":
            raise SuiteError(path, "claim.epsilon", 'only for form = "approx" (delta is claimed at this epsilon)')
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 <= eps < math.inf:
            raise SuiteError(path, "claim.epsilon", f"expected a number >= 0, got {eps!r}")
    elif form == "approx":
        raise SuiteError(path, "claim.epsilon", 'missing: form = "approx" claims delta at a stated epsilon')
    return ClaimSpec(name.strip(), str(path), target, dict(tables["parameters"]), dict(claim), dict(tables["neighbours"]),
                     int(samples), estimators, directions, orders, expect, planted, description)


def load_suite(path: str | os.PathLike[str]) -> list[ClaimSpec]:
    """All claims of a suite directory (every ``*.toml`` below it, sorted) or of one file.

    Every file is validated, including its target's parameters (:func:`build`), before anything
    runs: a malformed suite fails fast with a :class:`SuiteError` naming the file and the key.
    """
    root = Path(path)
    if root.is_dir():
        # ordinary claims first, then the planted bugs; each group by path
        files = sorted((p for p in root.rglob("*.toml") if p.is_file()), key=lambda p: (_is_planted(p, root), str(p)))
        if not files:
            raise SuiteError(root, None, "no *.toml claim files in this directory")
        base = root
    elif root.is_file():
        files = [root]
        base = root.parent.parent if root.parent.name == "planted" else root.parent
    else:
        raise SuiteError(root, None, "no such file or directory")
    specs = [load_claim(f, base) for f in files]
    seen: dict[str, str] = {}
    for spec in specs:
        if spec.name in seen:
            raise SuiteError(spec.file, "name", f"duplicate claim name {spec.name!r} (also in {seen[spec.name]})")
        seen[spec.name] = spec.file
        build(spec)  # validates the parameters, neighbours and claim form
    return specs


# ------------------------------------------------------------------------------------------------
# Typed access to a TOML table, with errors naming the file and the key
# ------------------------------------------------------------------------------------------------

_REQUIRED = object()


class _Table:
    def __init__(self, spec: ClaimSpec, section: str, table: Mapping[str, Any]) -> None:
        self._spec = spec
        self._section = section
        self._table = dict(table)
        self._used: set[str] = set()

    def error(self, key: str, message: str) -> SuiteError:
        return SuiteError(self._spec.file, f"{self._section}.{key}", message)

    def _get(self, key: str, default: Any) -> Any:
        self._used.add(key)
        if key in self._table:
            return self._table[key]
        if default is _REQUIRED:
            raise self.error(key, f"missing (required by target {self._spec.target!r})")
        return default

    def number(self, key: str, default: Any = _REQUIRED, *, positive: bool = True, minimum: float | None = None,
               maximum: float | None = None) -> float:
        value = self._get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.error(key, f"expected a finite number, got {value!r}")
        if positive and value <= 0:
            raise self.error(key, f"expected a number > 0, got {value!r}")
        if minimum is not None and value < minimum:
            raise self.error(key, f"expected a number >= {minimum:g}, got {value!r}")
        if maximum is not None and value > maximum:
            raise self.error(key, f"expected a number <= {maximum:g}, got {value!r}")
        return float(value)

    def rational(self, key: str, default: Any = _REQUIRED) -> Fraction:
        """A positive exact rational: an integer, a float (read exactly) or a string "p/q" or "0.1"."""
        value = self._get(key, default)
        try:
            if isinstance(value, bool):
                raise ValueError
            q = Fraction(value) if isinstance(value, (int, float, str)) else None
        except (ValueError, ZeroDivisionError):
            q = None
        if q is None or q <= 0:
            raise self.error(key, f'expected a positive rational (an integer, a number or a string like "7/2"), got {value!r}')
        return q

    def integer(self, key: str, default: Any = _REQUIRED, *, minimum: int = 1, maximum: int = 2**31) -> int:
        value = self._get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            raise self.error(key, f"expected an integer in [{minimum}, {maximum}], got {value!r}")
        return int(value)

    def choice(self, key: str, options: Sequence[str], default: Any = _REQUIRED) -> str:
        value = self._get(key, default)
        if value not in options:
            raise self.error(key, f"expected one of {', '.join(map(repr, options))}, got {value!r}")
        return str(value)

    def boolean(self, key: str, default: Any = _REQUIRED) -> bool:
        value = self._get(key, default)
        if not isinstance(value, bool):
            raise self.error(key, f"expected true or false, got {value!r}")
        return value

    def pair(self, key: str, default: Any = _REQUIRED, *, integer: bool = False, lo: float | None = None,
             hi: float | None = None) -> tuple[Any, Any]:
        value = self._get(key, default)
        ok = isinstance(value, (list, tuple)) and len(value) == 2 and all(
            not isinstance(v, bool) and isinstance(v, int if integer else (int, float)) for v in value)
        if ok and lo is not None:
            ok = all(lo <= v <= hi for v in value)  # type: ignore[operator]
        if not ok or value[0] == value[1]:
            kind = "integers" if integer else "numbers"
            rng = f" in [{lo:g}, {hi:g}]" if lo is not None else ""
            raise self.error(key, f"expected two different {kind}{rng} [value in D, value in D'], got {value!r}")
        return (int(value[0]), int(value[1])) if integer else (float(value[0]), float(value[1]))

    def done(self) -> None:
        unknown = sorted(set(self._table) - self._used)
        if unknown:
            allowed = ", ".join(sorted(self._used)) or "none"
            raise self.error(unknown[0], f"unknown key for target {self._spec.target!r} (allowed: {allowed})")


# ------------------------------------------------------------------------------------------------
# The registry of auditable targets
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Built:
    """What a target builder returns: the mechanism, its neighbours, the accountant's guarantee
    object (``pure()`` / ``rdp()`` / ``zcdp()``), the default claim form and, optionally, the
    exact log-pmf of the mechanism (only where it is known exactly, e.g. a noiseless view)."""

    mechanism: Callable[..., Any]
    pairs: tuple[NeighbourPair, ...]
    guarantee: Any
    default_form: str
    log_pmf: Callable[[Any, np.ndarray], np.ndarray] | None = None
    note: str = ""


@dataclass(frozen=True)
class Target:
    name: str
    summary: str
    builder: Callable[[_Table, _Table], Built]
    planted: bool = False


TARGETS: dict[str, Target] = {}
_TARGETS_COST: dict[str, float] = {}


def _target(name: str, summary: str, *, cost: float = 1.0) -> Callable[[Callable[[_Table, _Table], Built]], Callable[[_Table, _Table], Built]]:
    def register(fn: Callable[[_Table, _Table], Built]) -> Callable[[_Table, _Table], Built]:
        TARGETS[name] = Target(name, summary, fn, name.startswith("bug."))
        _TARGETS_COST[name] = cost
        return fn

    return register


def _scalar_pair(nb: _Table, default: tuple[Any, Any], *, integer: bool) -> tuple[NeighbourPair, ...]:
    d, d_prime = nb.pair("values", list(default), integer=integer)
    return (NeighbourPair(d, d_prime, f"input {d!r} -> {d_prime!r}"),)


# ---- samplers with their accountant guarantee ---------------------------------------------------


@_target("discrete-laplace", "integer query + Lap_Z(scale) (dpverify.discrete_laplace); DiscreteLaplace(scale, sensitivity)")
def _discrete_laplace(p: _Table, nb: _Table) -> Built:
    import accounting as acc

    from .. import _samplers

    scale = p.rational("scale")
    sensitivity = p.integer("sensitivity", 1)
    guarantee = acc.DiscreteLaplace(scale=scale, sensitivity=sensitivity)

    def mechanism(data: int, rng: np.random.Generator, size: int) -> np.ndarray:
        return data + _samplers.discrete_laplace(rng, scale, size=size)

    return Built(mechanism, _scalar_pair(nb, (0, sensitivity), integer=True), guarantee, "pure")


@_target("polya-difference-sum", "integer query + the sum of n per-user Polya(1/n, e^{-1/b}) differences; PolyaDifferenceSum(n, b)", cost=4.0)
def _polya_sum(p: _Table, nb: _Table) -> Built:
    import accounting as acc

    from .. import _samplers

    n = p.integer("n", minimum=1, maximum=4096)
    scale = p.rational("scale")
    sensitivity = p.integer("sensitivity", 1)
    guarantee = acc.PolyaDifferenceSum(n=n, scale=scale, sensitivity=sensitivity)
    beta = math.exp(-1.0 / float(scale))

    def mechanism(data: int, rng: np.random.Generator, size: int) -> np.ndarray:
        return data + _samplers.polya_difference(rng, 1.0 / n, beta, size=(size, n)).sum(axis=1)

    return Built(mechanism, _scalar_pair(nb, (0, sensitivity), integer=True), guarantee, "pure")


@_target("discrete-gaussian", "integer query + N_Z(0, sigma^2) (dpverify.discrete_gaussian); DiscreteGaussian(sigma, sensitivity)", cost=2.0)
def _discrete_gaussian(p: _Table, nb: _Table) -> Built:
    import accounting as acc

    from .. import _samplers

    sigma = p.rational("sigma")
    sensitivity = p.integer("sensitivity", 1)
    guarantee = acc.DiscreteGaussian(sigma=sigma, sensitivity=sensitivity)
    sigma2 = sigma * sigma

    def mechanism(data: int, rng: np.random.Generator, size: int) -> np.ndarray:
        return data + _samplers.discrete_gaussian(rng, sigma2, size=size)

    return Built(mechanism, _scalar_pair(nb, (0, sensitivity), integer=True), guarantee, "zcdp")


@_target("skellam", "integer query + Sk(0, variance) (dpverify.skellam); Skellam(variance, sensitivity)")
def _skellam(p: _Table, nb: _Table) -> Built:
    import accounting as acc

    from .. import _samplers

    variance = p.rational("variance")
    sensitivity = p.integer("sensitivity", 1)
    guarantee = acc.Skellam(variance=variance, l1_sensitivity=sensitivity, l2_sensitivity=sensitivity)

    def mechanism(data: int, rng: np.random.Generator, size: int) -> np.ndarray:
        return data + _samplers.skellam(rng, variance, size=size)

    return Built(mechanism, _scalar_pair(nb, (0, sensitivity), integer=True), guarantee, "rdp")


@_target("binomial", "integer query + Bin(trials, p) (dpverify.binomial); Binomial(trials, p, sensitivity): (eps, delta) only")
def _binomial(p: _Table, nb: _Table) -> Built:
    import accounting as acc

    from .. import _samplers

    trials = p.integer("trials", minimum=1, maximum=10**6)
    prob = p.number("p", maximum=1.0)
    sensitivity = p.integer("sensitivity", 1)
    guarantee = acc.Binomial(trials=trials, p=prob, sensitivity=sensitivity)

    def mechanism(data: int, rng: np.random.Generator, size: int) -> np.ndarray:
        return data + _samplers.binomial(rng, trials, prob, size=size)

    return Built(mechanism, _scalar_pair(nb, (0, sensitivity), integer=True), guarantee, "approx")


@_target("laplace", "real query + continuous Laplace(scale) (dpverify.laplace, the float baseline); Laplace(scale, sensitivity)")
def _laplace(p: _Table, nb: _Table) -> Built:
    import accounting as acc

    from .. import _samplers

    scale = p.number("scale")
    sensitivity = p.number("sensitivity", 1.0)
    guarantee = acc.Laplace(scale=scale, sensitivity=sensitivity)

    def mechanism(data: float, rng: np.random.Generator, size: int) -> np.ndarray:
        return data + _samplers.laplace(rng, scale, size=size)

    return Built(mechanism, _scalar_pair(nb, (0.0, sensitivity), integer=False), guarantee, "pure")


@_target("gaussian", "real query + continuous N(0, sigma^2) (dpverify.gaussian, the float baseline); Gaussian(sigma, sensitivity)")
def _gaussian(p: _Table, nb: _Table) -> Built:
    import accounting as acc

    from .. import _samplers

    sigma = p.number("sigma")
    sensitivity = p.number("sensitivity", 1.0)
    guarantee = acc.Gaussian(sigma=sigma, sensitivity=sensitivity)

    def mechanism(data: float, rng: np.random.Generator, size: int) -> np.ndarray:
        return data + _samplers.gaussian(rng, sigma, size=size)

    return Built(mechanism, _scalar_pair(nb, (0.0, sensitivity), integer=False), guarantee, "zcdp")


# ---- the LDP curators of Ren et al. (dpverify._bandits._ucb.LocalCurator) -------------------------


def _curator_mechanism(curator: Any, *, binary: bool, coins: float = 1.0) -> Callable[..., np.ndarray]:
    def mechanism(reward: float, rng: np.random.Generator, size: int) -> np.ndarray:
        source = rng if coins == 1.0 else _BiasedCoins(rng, coins)
        out = curator.respond(np.full(size, float(reward)), source)
        return out.astype(np.int64) if binary else out

    return mechanism


@_target("randomized-response", "binary randomized response: the CTB curator on bits (LocalCurator('ctb').respond); RandomizedResponse(eps)")
def _randomized_response(p: _Table, nb: _Table) -> Built:
    import accounting as acc

    from .._bandits._ucb import LocalCurator

    eps = p.number("epsilon")
    curator = LocalCurator("ctb", eps)
    pairs = _scalar_pair(nb, (0, 1), integer=True)
    _check_unit(nb, pairs)
    return Built(_curator_mechanism(curator, binary=True), pairs, acc.RandomizedResponse(eps), "pure")


@_target("curator", "an LDP curator of Ren et al. (ctl, ctb, ctl-s, ctb-s: LocalCurator.respond); its guarantee()")
def _curator(p: _Table, nb: _Table) -> Built:
    from .._bandits._ucb import LocalCurator

    kind = p.choice("kind", ("ctl", "ctb", "ctl-s", "ctb-s"))
    eps = p.number("epsilon")
    curator = LocalCurator(kind, eps)
    pairs = _scalar_pair(nb, (0.0, 1.0), integer=False)
    _check_unit(nb, pairs)
    return Built(_curator_mechanism(curator, binary=kind in ("ctb", "ctb-s")), pairs, curator.guarantee(), "pure")


def _check_unit(nb: _Table, pairs: Sequence[NeighbourPair]) -> None:
    for pair in pairs:
        if not (0 <= pair.d <= 1 and 0 <= pair.d_prime <= 1):
            raise nb.error("values", f"rewards must lie in [0, 1], got [{pair.d!r}, {pair.d_prime!r}]")


# ---- the ICLR 2023 batch protocols (dpverify._protocols) ------------------------------------------

_PROTOCOL_KINDS = ("dist-dp", "dist-rdp", "dist-cdp", "cdp", "ldp")


def _protocol(kind: str, p: _Table, *, underflow: bool = True) -> Any:
    from .. import _protocols as P

    eps = p.number("epsilon", maximum=10.0)
    conf = p.number("p", 0.1, maximum=0.999)
    s = p.number("s", 1.0, minimum=1.0, maximum=100.0) if kind in P.SCALED_KINDS else 1.0
    return P.DistributedProtocol(kind, eps, conf, s, underflow_correction=underflow)


def _reward_pair(nb: _Table, n: int) -> tuple[NeighbourPair, ...]:
    """Reward vectors of n users differing in user 0's reward (0 vs 1: the worst case for the sum)."""
    v, v_prime = nb.pair("values", [0.0, 1.0], lo=0.0, hi=1.0)
    others = nb.number("others", 0.0, positive=False, minimum=0.0, maximum=1.0)
    d = np.full(n, others)
    d_prime = d.copy()
    d[0], d_prime[0] = v, v_prime
    label = f"user 0: {v:g} -> {v_prime:g} (other {n - 1} users {others:g})"
    return (NeighbourPair(d, d_prime, label),)


def _make_protocol_target(kind: str) -> None:
    summaries = {
        "dist-dp": "Dist-DP-SE (Thm 1): Polya noise per user, SecAgg; the server's view (server_views) or A's output",
        "dist-rdp": "Dist-RDP-SE (Thm 2): Skellam noise per user, SecAgg; the server's view or A's output",
        "dist-cdp": "Dist-CDP-SE (Thm 4): discrete Gaussian noise per user, SecAgg; the server's view or A's output",
        "cdp": "CDP-SE (Thm 5): the analyzer adds one Lap_Z(g/eps); its noisy view or A's output",
        "ldp": "LDP-SE (Thm 6): every user adds Lap_Z(g/eps); the SecAgg view, or each message (output = 'messages')",
    }

    def builder(p: _Table, nb: _Table) -> Built:
        n = p.integer("n", minimum=1, maximum=2**16)
        outputs = ("view", "analyzer", "messages") if kind == "ldp" else ("view", "analyzer")
        output = p.choice("output", outputs, "view")
        underflow = p.boolean("underflow_correction", True) if kind.startswith("dist") else True
        paths = ("per-user",) if kind in ("dist-cdp", "ldp") else ("per-user", "aggregate")
        path = p.choice("path", paths, "per-user")
        proto = _protocol(kind, p, underflow=underflow)
        pairs = _reward_pair(nb, n)
        guarantee = proto.guarantee(n)
        if output == "messages":
            def mechanism(rewards: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
                return np.stack([proto.messages(rewards, rng) for _ in range(size)])
        elif output == "analyzer":
            def mechanism(rewards: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
                return np.asarray(proto.analyze(proto.server_views(rewards, rng, size, path=path), rewards.size))
        else:
            def mechanism(rewards: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
                return proto.server_views(rewards, rng, size, path=path)
        default = {"dist-rdp": "rdp", "dist-cdp": "rdp"}.get(kind, "pure")
        return Built(mechanism, pairs, guarantee, default, note=proto.describe())

    _target(kind, summaries[kind], cost={"ldp": 30.0, "dist-cdp": 8.0}.get(kind, 2.0))(builder)


for _kind in _PROTOCOL_KINDS:
    _make_protocol_target(_kind)


@_target("dp-se", "DP-SE baseline (Sajed & Sheffet): reward sum + continuous Laplace(1/eps) (estimate_sum); Laplace(1/eps, 1)", cost=10.0)
def _dp_se(p: _Table, nb: _Table) -> Built:
    from .. import _protocols as P

    eps = p.number("epsilon", maximum=10.0)
    n = p.integer("n", minimum=1, maximum=2**16)
    proto = P.central_laplace_protocol(eps)
    pairs = _reward_pair(nb, n)

    def mechanism(rewards: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        return np.array([proto.estimate_sum(rewards, rng) for _ in range(size)])

    return Built(mechanism, pairs, proto.guarantee(n), "pure", note=proto.describe())


@_target("dpdpe", "DP-DPE's vector privatizers (Li, Zhou, Ji): central or local Gaussian (VectorProtocol.release); Gaussian(sigma, Delta)", cost=15.0)
def _dpdpe(p: _Table, nb: _Table) -> Built:
    from .._bandits.linear._privatizers import CentralGaussian, LocalGaussian

    model = p.choice("model", ("central", "local"))
    eps = p.number("epsilon", maximum=50.0)
    delta = p.number("delta", maximum=0.5)
    bound = p.number("reward_bound", 1.0)
    n = p.integer("n", minimum=1, maximum=2**16)
    s = p.integer("s", 1, minimum=1, maximum=64)
    path = p.choice("path", ("per-user", "aggregate"), "per-user")
    proto = (CentralGaussian if model == "central" else LocalGaussian)(eps, delta, bound)
    # client 0's report moves between the corners -B(1..1) and +B(1..1): l2 distance 2 B sqrt(s),
    # the sensitivity the guarantee is computed for (the worst case)
    lo, hi = nb.pair("values", [-bound, bound], lo=-bound, hi=bound)
    d = np.zeros((n, s))
    d_prime = d.copy()
    d[0, :], d_prime[0, :] = lo, hi
    pairs = (NeighbourPair(d, d_prime, f"client 0's report {lo:g} -> {hi:g} in all {s} coordinates (other {n - 1} clients 0)"),)

    def mechanism(reports: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        out = np.stack([proto.release(reports, rng, path=path) for _ in range(size)])
        return out[:, 0] if s == 1 else out

    return Built(mechanism, pairs, proto.guarantee(n, s), "zcdp", note=f"DP-DPE {model} Gaussian privatizer")


# ---- planted bugs: the same kernels and samplers with the wrong parameter --------------------------


class _BiasedCoins:
    """A generator whose uniforms are skewed, ``random()`` returning U**k: every coin decided by
    comparing a uniform with a probability q lands heads with probability q**(1/k) instead of q.
    Other methods are the wrapped generator's."""

    def __init__(self, rng: np.random.Generator, k: float) -> None:
        self._rng = rng
        self._k = k

    def random(self, size: Any = None) -> Any:
        return self._rng.random(size) ** self._k

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rng, name)


def _batch_params(kind: str, p: _Table) -> tuple[Any, int, Any]:
    n = p.integer("n", minimum=1, maximum=2**16)
    proto = _protocol(kind, p)
    return proto, n, proto.parameters(n)


@_target("bug.dist-dp-polya-beta", "PLANTED Thm 1 with Polya parameter e^{-eps} instead of e^{-eps/g} (kernel given eps*g)")
def _bug_polya_beta(p: _Table, nb: _Table) -> Built:
    from .. import _protocol_kernels as pk

    proto, n, bp = _batch_params("dist-dp", p)

    def mechanism(rewards: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        return pk.server_views(rng, rewards, bp.g, bp.m, size, "polya", eps=proto.epsilon * bp.g)

    return Built(mechanism, _reward_pair(nb, n), proto.guarantee(n), "pure")


@_target("bug.dist-rdp-skellam-variance", "PLANTED Thm 2 with per-user Skellam variance g/(n eps^2) instead of g^2/(n eps^2)")
def _bug_skellam_variance(p: _Table, nb: _Table) -> Built:
    from .. import _protocol_kernels as pk

    proto, n, bp = _batch_params("dist-rdp", p)
    wrong_eps = proto.epsilon * math.sqrt(bp.g)  # the kernel's g^2/(n eps'^2) is then g/(n eps^2)

    def mechanism(rewards: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        return pk.server_views(rng, rewards, bp.g, bp.m, size, "skellam", eps=wrong_eps)

    return Built(mechanism, _reward_pair(nb, n), proto.guarantee(n), "rdp")


@_target("bug.dist-cdp-variance-over-n", "PLANTED Thm 4 with per-user discrete Gaussian variance g^2/(n^2 eps^2) (divided by n twice)", cost=8.0)
def _bug_dgauss_variance(p: _Table, nb: _Table) -> Built:
    from .. import _protocol_kernels as pk

    proto, n, bp = _batch_params("dist-cdp", p)
    root = math.isqrt(n)
    if root * root != n:
        raise p.error("n", f"this planted bug needs a perfect square n (exact rational eps*sqrt(n)), got {n}")
    wrong_eps = Fraction(proto.epsilon) * root

    def mechanism(rewards: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        return pk.server_views(rng, rewards, bp.g, bp.m, size, "discrete_gaussian", eps=wrong_eps)

    return Built(mechanism, _reward_pair(nb, n), proto.guarantee(n), "rdp")


@_target("bug.cdp-noise-scale", "PLANTED CDP-SE whose central noise is Lap_Z(1/eps) instead of Lap_Z(g/eps) (g forgotten)")
def _bug_cdp_scale(p: _Table, nb: _Table) -> Built:
    from .. import _protocol_kernels as pk

    proto, n, bp = _batch_params("cdp", p)
    wrong_scale = 1 / Fraction(proto.epsilon)

    def mechanism(rewards: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        return pk.aggregate_views(rng, rewards, bp.g, bp.m, size, "discrete_laplace", scale=wrong_scale)

    return Built(mechanism, _reward_pair(nb, n), proto.guarantee(n), "pure")


@_target("bug.discrete-laplace-scale", "PLANTED discrete Laplace sampled at scale - 1 (claimed scale b, drawn b - 1)")
def _bug_dlap_scale(p: _Table, nb: _Table) -> Built:
    import accounting as acc

    from .. import _samplers

    scale = p.rational("scale")
    sensitivity = p.integer("sensitivity", 1)
    if scale <= 1:
        raise p.error("scale", f"the off-by-one bug needs a scale > 1, got {scale}")
    drawn = scale - 1

    def mechanism(data: int, rng: np.random.Generator, size: int) -> np.ndarray:
        return data + _samplers.discrete_laplace(rng, drawn, size=size)

    return Built(mechanism, _scalar_pair(nb, (0, sensitivity), integer=True),
                 acc.DiscreteLaplace(scale=scale, sensitivity=sensitivity), "pure")


@_target("bug.biased-coin", "PLANTED randomized response / CTB whose coins are biased (uniforms U**k fed to the real curator)")
def _bug_biased_coin(p: _Table, nb: _Table) -> Built:
    import accounting as acc

    from .._bandits._ucb import LocalCurator

    kind = p.choice("kind", ("rr", "ctb", "ctb-s"))
    eps = p.number("epsilon")
    k = p.number("skew", 2.0)
    curator = LocalCurator("ctb" if kind == "rr" else kind, eps)
    pairs = _scalar_pair(nb, (0, 1) if kind == "rr" else (0.0, 1.0), integer=kind == "rr")
    _check_unit(nb, pairs)
    guarantee = acc.RandomizedResponse(eps) if kind == "rr" else curator.guarantee()
    return Built(_curator_mechanism(curator, binary=True, coins=k), pairs, guarantee, "pure")


@_target("bug.ctl-scale", "PLANTED CTL whose Laplace noise has scale eps instead of 1/eps (the curator built with 1/eps)")
def _bug_ctl_scale(p: _Table, nb: _Table) -> Built:
    from .._bandits._ucb import LocalCurator

    eps = p.number("epsilon")
    claimed = LocalCurator("ctl", eps)
    pairs = _scalar_pair(nb, (0.0, 1.0), integer=False)
    _check_unit(nb, pairs)
    return Built(_curator_mechanism(LocalCurator("ctl", 1.0 / eps), binary=False), pairs, claimed.guarantee(), "pure")


@_target("bug.secagg-reveals-first", "PLANTED SecAgg that also reveals user 0's message: the view (yhat, y_1), encoded yhat*m + y_1", cost=20.0)
def _bug_secagg_reveals(p: _Table, nb: _Table) -> Built:
    from .. import _protocol_kernels as pk

    proto, n, bp = _batch_params("dist-dp", p)
    noise = proto._noise_kind()
    eps = proto.epsilon

    def mechanism(rewards: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        out = np.empty(size, dtype=np.int64)
        for j in range(size):
            y = pk.randomize(rng, rewards, bp.g, bp.m, noise, eps=eps)
            out[j] = pk.secure_aggregate(y, bp.m) * bp.m + int(y[0])
        return out

    return Built(mechanism, _reward_pair(nb, n), proto.guarantee(n), "pure")


@_target("bug.secagg-noise-dropped", "PLANTED Dist-DP-SE whose randomizer adds no noise (noise='none'); its exact law is declared")
def _bug_noise_dropped(p: _Table, nb: _Table) -> Built:
    from .. import _protocol_kernels as pk

    proto, n, bp = _batch_params("dist-dp", p)
    pairs = _reward_pair(nb, n)
    for pair in pairs:
        for x in (pair.d, pair.d_prime):
            if not np.all(x * bp.g == np.floor(x * bp.g)):
                raise nb.error("values", "the declared exact law needs rewards r with r*g integer (no rounding randomness)")

    def mechanism(rewards: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        return pk.server_views(rng, rewards, bp.g, bp.m, size, "none")

    def log_pmf(rewards: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        # without noise and with r*g integer the view is the constant (g * sum r) mod m
        value = int(round(float(np.sum(rewards)) * bp.g)) % bp.m
        return np.where(np.asarray(outputs).reshape(-1) == value, 0.0, -math.inf)

    return Built(mechanism, pairs, proto.guarantee(n), "pure", log_pmf=log_pmf)


# ------------------------------------------------------------------------------------------------
# Building a claim
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    mechanism: Callable[..., Any]
    pairs: tuple[NeighbourPair, ...]
    claim: Any
    log_pmf: Callable[..., Any] | None
    form: str
    guarantee: Any
    text: str


def build(spec: ClaimSpec) -> Claim:
    """The target's mechanism, neighbours, the claim (from the accountant) and the law, if declared."""
    from accounting import ApproxDP, PureDP, RDP, ZCDP, rdp_to_delta
    from accounting._validation import AccountingError

    target = TARGETS[spec.target]
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
            if hasattr(g, "approx_dp"):
                claim = g.approx_dp(eps)
            else:
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
    return Claim(built.mechanism, built.pairs, claim, built.log_pmf, form, g, text)


# ------------------------------------------------------------------------------------------------
# Running one claim (in a worker) and the suite
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClaimRun:
    """A claim's audit results and its p-value (picklable: it travels back from workers)."""

    name: str
    results: tuple[AuditResult, ...]
    p_value: float
    samples: int
    seconds: float
    claim_text: str
    error: str | None = None


def claim_seed(seed: int, name: str) -> int:
    """The audit seed of claim ``name``: independent of the other files of the suite."""
    words = np.random.SeedSequence([int(seed), zlib.crc32(name.encode())]).generate_state(2, np.uint32)
    return int(words[0]) << 32 | int(words[1])


def _scaled(samples: int, scale: float) -> int:
    return max(_MIN_SAMPLES, int(round(samples * scale)))


def run_claim(spec: ClaimSpec, seed: int, samples_scale: float, audit_alpha: float, grid: Sequence[float]) -> ClaimRun:
    """Audit one claim at ``audit_alpha`` and compute its claim-level p-value on ``grid``."""
    from ._audit import audit

    started = time.perf_counter()
    samples = _scaled(spec.samples, samples_scale)
    try:
        c = build(spec)
        kwargs: dict[str, Any] = {}
        if spec.orders is not None:
            kwargs["orders"] = spec.orders
        report = audit(c.mechanism, c.pairs, c.claim, samples=samples, alpha=audit_alpha, estimators=spec.estimators,
                       directions=spec.directions, log_pmf=c.log_pmf, executor="serial", seed=claim_seed(seed, spec.name),
                       float_bits=False, **kwargs)  # the float targets are real-arithmetic baselines
        results = report.results
        r = len(results)
        p = min(1.0, min(r * result_p_value(res, [g / r for g in grid]) for res in results))
        # the grid levels are claim-level; a result's level is the claim's divided by R
        p = _snap(p, grid)
        return ClaimRun(spec.name, results, p, samples, time.perf_counter() - started, c.text)
    except SuiteError as error:
        return ClaimRun(spec.name, (), 1.0, samples, time.perf_counter() - started, "", str(error))
    except Exception as error:  # a crash of the target is an error in the suite (exit 2)
        return ClaimRun(spec.name, (), 1.0, samples, time.perf_counter() - started, "",
                        f"{spec.file}: target {spec.target!r} raised {type(error).__name__}: {error}")


def _snap(p: float, grid: Sequence[float]) -> float:
    """Undo the float round trip level/R*R: the nearest grid point (p-values live on the grid)."""
    if p >= 1.0 or p == 0.0:
        return p
    best = min(grid, key=lambda g: abs(math.log(g) - math.log(p)))
    return best if abs(math.log(best) - math.log(p)) < 1e-9 else p


def p_value_grid(alpha: float, m: int, finer: int = 64) -> list[float]:
    """Claim-level levels at which p-values are resolved: every Holm threshold alpha/k (k = 1..m)
    and a geometric ladder below alpha/m down to alpha/m * 1e-16 (for reporting only)."""
    levels = {alpha / k for k in range(1, m + 1)}
    levels.update(alpha / m * 10 ** (-j / 4) for j in range(1, finer + 1))
    return sorted(levels)


def holm(p_values: Sequence[float], alpha: float) -> tuple[list[bool], list[float]]:
    """Holm's step-down procedure: (rejected, the level each hypothesis was tested at).

    Sort p ascending; reject the i-th smallest while p_(i) <= alpha / (m - i + 1). A rejected
    hypothesis's level is its step's threshold; every other one was (last) tested at the
    threshold of the step where the procedure stopped, alpha / (m - r), r = number rejected.
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: (p_values[i], i))
    rejected = [False] * m
    levels = [0.0] * m
    r = 0
    for step, i in enumerate(order):
        threshold = alpha / (m - step)
        if p_values[i] <= threshold:
            rejected[i] = True
            levels[i] = threshold
            r += 1
        else:
            break
    for i in range(m):
        if not rejected[i]:
            levels[i] = alpha / (m - r)
    return rejected, levels


@dataclass(frozen=True)
class ClaimOutcome:
    """One row of the suite's report."""

    spec: ClaimSpec
    verdict: str  # holds / violated (ordinary claims); caught / missed (planted bugs expecting "violated")
    result: AuditResult | None  # the worst result at the claim's Holm level
    p_value: float
    level: float
    samples: int
    seconds: float
    claim_text: str
    error: str | None = None

    @property
    def violated(self) -> bool:
        return self.result is not None and self.result.violated

    @property
    def ok(self) -> bool:
        """Whether this row is what the suite expects (holds, or a planted bug caught)."""
        return self.error is None and self.verdict in (HOLDS, CAUGHT)

    def to_dict(self) -> dict[str, Any]:
        from .._json import jsonable

        r = self.result
        out: dict[str, Any] = {
            "name": self.spec.name,
            "file": self.spec.file,
            "target": self.spec.target,
            "planted": self.spec.planted,
            "expect": self.spec.expect,
            "claim": self.claim_text,
            "claimed": r.claimed if r else None,
            "lower_bound": r.lower_bound if r else None,
            "estimate": r.estimate if r else None,
            "verdict": self.verdict,
            "p_value": self.p_value,
            "level": self.level,
            "samples": self.samples,
            "seconds": round(self.seconds, 3),
            "estimator": r.estimator if r else None,
            "order": r.order if r else None,
            "pair": r.pair if r else None,
            "direction": r.direction if r else None,
            "event": r.event if r else None,
            "method": r.method if r else None,
        }
        if self.error:
            out["error"] = self.error
        return jsonable(out)


@dataclass(frozen=True)
class SuiteOutcome:
    rows: tuple[ClaimOutcome, ...]
    alpha: float
    seed: int
    samples_scale: float
    seconds: float

    @property
    def errors(self) -> tuple[ClaimOutcome, ...]:
        return tuple(r for r in self.rows if r.error is not None)

    @property
    def exit_code(self) -> int:
        """0: every claim holds and every planted bug is caught; 1: a violation or an escaped bug;
        2: an error in the suite itself."""
        if self.errors:
            return 2
        return 0 if all(r.ok for r in self.rows) else 1

    def to_dict(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for r in self.rows:
            counts[r.verdict] = counts.get(r.verdict, 0) + 1
        return {
            "alpha": self.alpha,
            "correction": "holm",
            "seed": self.seed,
            "samples_scale": self.samples_scale,
            "seconds": round(self.seconds, 3),
            "exit_code": self.exit_code,
            "counts": counts,
            "results": [r.to_dict() for r in self.rows],
        }


def _finalise(spec: ClaimSpec, run: ClaimRun, rejected: bool, level: float) -> ClaimOutcome:
    if run.error is not None:
        return ClaimOutcome(spec, "error", None, 1.0, level, run.samples, run.seconds, run.claim_text, run.error)
    r = len(run.results)
    rescored = []
    for res in run.results:
        at_level = rescore(res, level / r)
        if rejected and run.p_value <= level and not at_level.violated:
            # the certificate is not exactly monotone in the level: show the rejecting one
            alt = rescore(res, run.p_value / r) if run.p_value > 0 else res
            at_level = alt if _margin(alt) > _margin(at_level) else at_level
        rescored.append(at_level)
    worst = max(rescored, key=_margin)
    if rejected:
        verdict = CAUGHT if spec.expect == VIOLATED else VIOLATED
    else:
        verdict = MISSED if spec.expect == VIOLATED else HOLDS
    return ClaimOutcome(spec, verdict, worst, run.p_value, level, run.samples, run.seconds, run.claim_text)


def _decide(specs: Sequence[ClaimSpec], runs: Sequence[ClaimRun], alpha: float) -> list[ClaimOutcome]:
    """Holm over the claims, then each claim's results at its Holm level (kept consistent:
    a claim Holm does not reject must show no violation at its level; if the Renyi certificate's
    small non-monotonicity makes one appear, that level is a valid p-value and Holm is re-run)."""
    p = [run.p_value for run in runs]
    while True:
        rejected, levels = holm(p, alpha)
        changed = False
        rows = []
        for i, (spec, run) in enumerate(zip(specs, runs)):
            row = _finalise(spec, run, rejected[i], levels[i])
            if not rejected[i] and row.violated and p[i] > levels[i]:
                p[i] = levels[i]
                changed = True
            rows.append(row)
        if not changed:
            return [dataclasses.replace(row, p_value=p_i) if row.error is None else row for row, p_i in zip(rows, p)]


def _local_pool(workers: int) -> Executor:
    import multiprocessing

    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))


def resolve_suite_executor(executor: Any, workers: int | None) -> tuple[Any, bool]:
    """(executor object or None for serial, whether we own it). ``executor``: "local" (a process
    pool of ``workers``, default the CPU count), "serial", a Dask scheduler address
    ("tcp://host:8786"), "dask" (a new local Dask cluster), or any concurrent.futures.Executor /
    dask.distributed.Client."""
    if executor is None or executor == "serial":
        return None, False
    if isinstance(executor, str):
        if executor == "local":
            count = workers if workers is not None else (os.cpu_count() or 1)
            return (_local_pool(count), True) if count > 1 else (None, False)
        from dask.distributed import Client  # optional dependency: pip install 'dpverify[dask]'

        client = Client() if executor == "dask" else Client(executor)
        return client, True
    return executor, False


def run_suite(
    specs: Sequence[ClaimSpec],
    *,
    alpha: float = DEFAULT_ALPHA,
    seed: int = 0,
    samples_scale: float = 1.0,
    executor: Any = "local",
    workers: int | None = None,
    on_done: Callable[[ClaimRun], None] | None = None,
) -> SuiteOutcome:
    """Audit every claim, then decide with Holm at family-wise error ``alpha``."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha={alpha!r} is invalid: expected a probability in (0, 1)")
    if not samples_scale > 0:
        raise ValueError(f"samples_scale={samples_scale!r} is invalid: expected a number > 0")
    started = time.perf_counter()
    m = len(specs)
    grid = p_value_grid(alpha, m)
    audit_alpha = alpha / m
    order = sorted(range(m), key=lambda i: -specs[i].weight)
    runs: list[ClaimRun | None] = [None] * m
    pool, owned = resolve_suite_executor(executor, workers)
    try:
        if pool is None:
            for i in order:
                runs[i] = run_claim(specs[i], seed, samples_scale, audit_alpha, grid)
                if on_done:
                    on_done(runs[i])  # type: ignore[arg-type]
        else:
            futures = {pool.submit(run_claim, specs[i], seed, samples_scale, audit_alpha, grid): i for i in order}
            for fut in _as_completed(list(futures)):
                i = futures[fut]
                runs[i] = fut.result()
                if on_done:
                    on_done(runs[i])  # type: ignore[arg-type]
    finally:
        if owned and pool is not None:
            if isinstance(pool, Executor):
                pool.shutdown()
            else:
                pool.close()  # a dask Client we opened (close, never shutdown: that would stop a shared scheduler)
    rows = _decide(specs, runs, alpha)  # type: ignore[arg-type]
    return SuiteOutcome(tuple(rows), alpha, seed, samples_scale, time.perf_counter() - started)


def _as_completed(futures: list[Any]) -> Iterable[Any]:
    if not futures or isinstance(futures[0], Future):
        from concurrent.futures import as_completed

        return as_completed(futures)
    from dask.distributed import as_completed as dask_completed  # futures of a dask.distributed.Client

    return dask_completed(futures)
