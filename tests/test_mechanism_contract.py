"""The mechanism contract (issue 30, item 1): every hook a route may ask for is declared on
:class:`accounting.Mechanism` (and on the pairs), answered with the right type or ``None``, and never
probed with ``getattr``/``hasattr`` at run time.

- :func:`test_no_probe_of_a_hook`: an AST scan of ``accounting/`` and ``dpverify/``: a
  ``getattr``/``hasattr`` naming a hook fails, and so does any ``getattr``/``hasattr`` with a computed
  name outside an explicit allow-list (each entry with its reason).
- :func:`test_every_public_mechanism_answers_the_contract`: every public Mechanism type (enumerated
  from ``accounting.__all__``: a new type without an example fails) answers each hook with its type
  or ``None``, and the routes it gets follow from what it answers.
- user-defined mechanisms, written against the public API only, that implement only ``pure()``, only
  ``rdp()`` or only ``output_pair()``, get exactly the routes that apply (with certified values).

Deterministic (no randomness). CPU: a few seconds (small parameters, ``comparisons=False``).
"""

from __future__ import annotations

import ast
import contextlib
import io
import math
import re
from fractions import Fraction
from pathlib import Path

import pytest
from flint import arb

import accounting as acc

ROOT = Path(__file__).resolve().parents[1]

#: every hook of the contract (Mechanism, IntegerPair, MonotoneLossPair): probing one is a bug
HOOKS = {
    # Mechanism
    "pure", "zcdp", "rdp", "approx_dp", "closed_forms", "rdp_bound", "output_pair", "monotone_loss_pair",
    "rdp_provenance", "rdp_is_exact", "rdp_cost", "family", "describe",
    # IntegerPair
    "loss_atoms", "loss_atom_count", "setup_cost", "output_cost", "log_p", "log_q", "tail_p", "tail_q", "window", "support",
    # MonotoneLossPair (hockey_stick_of / survival_q_of were probed before the contract)
    "has_series", "hockey_stick_series", "survival_q_series", "hockey_stick_reverse_series", "hockey_stick_of", "survival_q_of",
    "symmetric", "loss_window",
}

#: getattr/hasattr with a computed name: (file, call as written) -> why it is not a probe of a mechanism
ALLOWED_COMPUTED = {
    ("accounting/_ledgers/_ledger_codec.py", "getattr(_mechanisms, name)"): "the module's exported names (the codec's family registry)",
    ("accounting/_ledgers/_ledger_codec.py", "getattr(mechanism, f.name)"): "a dataclass field (encoding a mechanism's parameters)",
    ("accounting/_core/_conversions.py", "getattr(subject, f.name)"): "a dataclass field (the memo key of a mechanism's curve)",
    ("accounting/_core/_result.py", "getattr(self, f.name)"): "a Result dataclass field (its repr shows the fields that are set)",
    ("accounting/_events/_dp_event.py", "getattr(event, name)"): "a dp_accounting DpEvent's field",
    ("dpverify/__init__.py", "getattr(import_module(module, __name__), name)"): "lazy public attribute of the package",
    ("dpverify/cli.py", "getattr(import_module(module), attribute)"): "a 'module:attribute' the user names",
    ("dpverify/_audit/_suite/_user.py", "hasattr(obj, part)"): "a 'module:attribute' path the user names",
    ("dpverify/_audit/_suite/_user.py", "getattr(obj, part)"): "a 'module:attribute' path the user names",
    ("dpverify/_audit/_suite/_planted.py", "getattr(self._rng, name)"): "delegation to a numpy Generator",
    ("dpverify/_audit/_runs.py", "getattr(engine, m, None)"): "a transcript engine's methods (a user's engine checked against TranscriptEngine's interface), not a mechanism",
}

#: getattr/hasattr naming a hook on an object that is not a mechanism or a pair
ALLOWED_HOOK_NAMES = {
    ("dpverify/_bandits/_runner.py", "getattr(self.instance, 'describe', None)"): "a bandit instance (user's reward model), not a mechanism",
}


def _probes():
    for package in ("accounting", "dpverify"):
        for path in sorted((ROOT / package).rglob("*.py")):
            text = path.read_text()
            if "getattr(" not in text and "hasattr(" not in text:
                continue
            tree = ast.parse(text, filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2:
                    yield str(path.relative_to(ROOT)), node


def test_no_probe_of_a_hook():
    """No getattr/hasattr names a contract hook (outside ALLOWED_HOOK_NAMES), and every computed
    name is an allow-listed one; stale allow-list entries fail too (the list stays minimal)."""
    bad, seen = [], set()
    for file, node in _probes():
        text = ast.unparse(node)
        name = node.args[1]
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            if name.value in HOOKS:
                if (file, text) in ALLOWED_HOOK_NAMES:
                    seen.add((file, text))
                else:
                    bad.append(f"{file}:{node.lineno}: {text}")
        elif (file, text) in ALLOWED_COMPUTED:
            seen.add((file, text))
        else:
            bad.append(f"{file}:{node.lineno}: {text} (computed name, not allow-listed)")
    assert not bad, "getattr/hasattr probes of the mechanism contract:\n" + "\n".join(bad)
    stale = (set(ALLOWED_COMPUTED) | set(ALLOWED_HOOK_NAMES)) - seen
    assert not stale, f"allow-list entries that no longer occur: {sorted(stale)}"


def test_the_scan_catches_a_probe():
    """The wrong variant the scan rejects: a getattr of a hook, as the routes wrote it before."""
    node = ast.parse('maker = getattr(subject, "output_pair", None)').body[0].value
    assert isinstance(node, ast.Call) and node.args[1].value in HOOKS


# ---- every public mechanism type ------------------------------------------------------------------

#: one small instance per public Mechanism type (a missing type fails the test below)
EXAMPLES = {
    acc.BernoulliCurator: lambda: acc.BernoulliCurator(1.0),
    acc.Binomial: lambda: acc.Binomial(8, Fraction(1, 2)),
    acc.DiscreteGaussian: lambda: acc.DiscreteGaussian(3.0, 1),
    acc.DiscreteGaussianSum: lambda: acc.DiscreteGaussianSum(4, 2.0, 1),
    acc.DiscreteGaussianVector: lambda: acc.DiscreteGaussianVector(4, 1, 3),
    acc.DiscreteLaplace: lambda: acc.DiscreteLaplace(2, 1),
    acc.Gaussian: lambda: acc.Gaussian(2.0),
    acc.GridDiscreteLaplace: lambda: acc.GridDiscreteLaplace(2, 1),
    acc.Laplace: lambda: acc.Laplace(1.0),
    acc.PolyaDifferenceSum: lambda: acc.PolyaDifferenceSum(4, 2, 1),
    acc.RandomizedResponse: lambda: acc.RandomizedResponse(1.0),
    acc.Skellam: lambda: acc.Skellam(50, 1),
    acc.Snapping: lambda: acc.Snapping(1.0, 10.0),
    acc.PoissonSampled: lambda: acc.PoissonSampled(acc.Gaussian(1.0), 0.1),
    acc.SampledWithoutReplacement: lambda: acc.SampledWithoutReplacement(acc.Laplace(1.0), 10, 100),
    acc.WithinTotalVariation: lambda: acc.WithinTotalVariation(acc.DiscreteGaussianSum(4, 2.0, 1), 1e-12),
    acc.ShuffledLDP: lambda: acc.ShuffledLDP(1.0, 100),
    acc.ShuffledRandomizedResponse: lambda: acc.ShuffledRandomizedResponse(1.0, 100),
}


def _public_types() -> list[type]:
    return [obj for name in acc.__all__ if isinstance(obj := getattr(acc, name), type) and issubclass(obj, acc.Mechanism)
            and obj is not acc.Mechanism]


def test_every_public_type_has_an_example():
    missing = [t.__name__ for t in _public_types() if t not in EXAMPLES]
    assert not missing, f"public Mechanism types without a contract example: {missing}"


def _check_hooks(m: acc.Mechanism) -> dict:
    """Each hook answers with its type or None; returns what is available."""
    assert isinstance(m.family, str) and m.family
    assert isinstance(m.describe(), str) and m.describe()
    assert isinstance(m.rdp_is_exact, bool)
    available = {}
    for hook, kind in (("pure", acc.PureDP), ("zcdp", acc.ZCDP), ("rdp", acc.RDP), ("rdp_bound", acc.RDP),
                       ("output_pair", acc.IntegerPair), ("monotone_loss_pair", acc.MonotoneLossPair)):
        value = getattr(m, hook)()  # noqa: B009 -- the hook by name, in a test of the contract
        assert value is None or isinstance(value, kind), (m, hook, value)
        available[hook] = value
    forms = m.closed_forms()
    assert isinstance(forms, dict) and all(isinstance(v, (acc.RDP, acc.ZCDP, acc.PureDP)) for v in forms.values()), (m, forms)
    try:
        approx = m.approx_dp(1.0)
    except acc.AccountingError:  # documented: no certified answer here (a WithinTotalVariation of a curve)
        approx = None
        assert isinstance(m, acc.WithinTotalVariation)
    assert approx is None or isinstance(approx, acc.ApproxDP), (m, approx)
    cost = m.rdp_cost()
    assert cost is None or (isinstance(cost, float) and cost >= 0), (m, cost)
    if available["rdp"] is not None:
        label = m.rdp_provenance(2.0)
        assert label is None or isinstance(label, str)
    pair = available["output_pair"]
    if pair is not None:
        count = pair.loss_atom_count()
        atoms = pair.loss_atoms(True)
        assert (count is None) == (atoms is None), (m, count)
        if atoms is not None:
            assert isinstance(count, int) and len(atoms[0]) == count
        for hint in (pair.setup_cost(), pair.output_cost()):
            assert hint is None or (isinstance(hint, float) and hint >= 0)
    loss = available["monotone_loss_pair"]
    if loss is not None:
        assert isinstance(loss.has_series(), bool)
        if not loss.has_series():
            assert loss.hockey_stick_series(arb(0)) is None
    return available


def _statuses(report) -> dict:
    return {r.route: r.status for r in report.alternatives}


def _check_routes(m, available: dict, compose: int = 3, delta: float = 1e-6) -> None:
    """The routes a mechanism gets follow from its hooks: pure -> 'pure' applies; an RDP curve ->
    'rdp-cks' applies; an output pair or a monotone-loss pair -> 'pld' applies; else each says
    'not applicable'. The answer is the smallest certified route."""
    report = acc.epsilon_routes(m, delta, compose=compose, comparisons=False, time_budget=5.0)
    statuses = _statuses(report)
    assert (statuses["pure"] != "not applicable") == (available["pure"] is not None), (m, statuses)
    assert (statuses["rdp-cks"] != "not applicable") == (available["rdp"] is not None), (m, statuses)
    has_pld = available["output_pair"] is not None or available["monotone_loss_pair"] is not None
    assert (statuses["pld"] != "not applicable") == has_pld, (m, statuses)
    certified = [r.epsilon for r in report.alternatives if r.status in ("run", "answer") and not r.comparison]
    assert report.epsilon == min(certified)
    return report


@pytest.mark.parametrize("kind", sorted(EXAMPLES, key=lambda t: t.__name__), ids=lambda t: t.__name__)
def test_every_public_mechanism_answers_the_contract(kind):
    m = EXAMPLES[kind]()
    assert isinstance(m, kind) and isinstance(m, acc.Mechanism)
    available = _check_hooks(m)
    if kind in (acc.WithinTotalVariation, acc.ShuffledLDP, acc.ShuffledRandomizedResponse):
        # their own routes (the analysed mechanism plus the slack; amplification by shuffling)
        assert acc.epsilon_routes(m, 1e-6, comparisons=False).epsilon > 0
        return
    _check_routes(m, available)


# ---- users' mechanisms (public API only) -------------------------------------------------------------


class PureOnly(acc.Mechanism):
    """Knows only its pure epsilon (e.g. a hand-proved eps-DP algorithm)."""

    family = "user-pure"

    def __init__(self, epsilon: float) -> None:
        self.epsilon = epsilon

    def pure(self):
        return acc.PureDP(self.epsilon)

    def describe(self) -> str:
        return f"a user's {self.epsilon}-DP mechanism"


class RdpOnly(acc.Mechanism):
    """Knows only an RDP curve (here the Gaussian's alpha / (2 sigma^2), given as a curve)."""

    def __init__(self, sigma: float) -> None:
        self.curve = acc.RDP.zcdp(1 / (2 * sigma * sigma))

    def rdp(self):
        return self.curve


class PairOnly(acc.Mechanism):
    """Knows only its output laws: binary randomized response with keep-probability 3/4."""

    def output_pair(self):
        return acc.FinitePair.from_masses([Fraction(3, 4), Fraction(1, 4)], [Fraction(1, 4), Fraction(3, 4)])


def test_a_pure_only_mechanism_gets_the_pure_routes():
    """pure, optimal composition and the derived RDP curve apply; the PLD does not. The value is the
    optimal composition of eps-DP: the same as a PureDP guarantee's (which attains it)."""
    m = PureOnly(0.5)
    available = _check_hooks(m)
    assert isinstance(available["rdp"], acc.RDP)  # derived from pure(): the tight pure -> RDP curve
    report = _check_routes(m, available, compose=10)
    assert _statuses(report)["optimal-composition"] in ("run", "answer")
    guarantee = acc.epsilon_routes(acc.PureDP(0.5), 1e-6, compose=10, comparisons=False)
    assert report.epsilon == guarantee.epsilon
    assert report.epsilon < 10 * 0.5  # tighter than basic composition


def test_an_rdp_only_mechanism_gets_the_rdp_route():
    m = RdpOnly(2.0)
    available = _check_hooks(m)
    report = _check_routes(m, available, compose=5)
    assert report.route == "rdp-cks"
    assert report.epsilon == acc.rdp_to_epsilon(m.curve.times(5), 1e-6).epsilon
    # a Gaussian's own routes (analytic Gaussian, exact) are tighter than the curve alone
    assert acc.epsilon_routes(acc.Gaussian(2.0), 1e-6, compose=5, comparisons=False).epsilon < report.epsilon


def test_an_output_pair_only_mechanism_gets_the_pld_route():
    """Only the PLD applies (no pure epsilon declared, no curve): its value is a certified upper
    bound of randomized response's exact epsilon (its optimal composition, log 3-DP x 4)."""
    m = PairOnly()
    available = _check_hooks(m)
    report = _check_routes(m, available, compose=4)
    assert report.route == "pld"
    exact = acc.epsilon_routes(acc.RandomizedResponse(math.log(3)), 1e-6, compose=4, comparisons=False).epsilon
    assert exact <= report.epsilon <= exact * (1 + 1e-3)
    assert acc.PrivacyLossDistribution.from_pair(m).epsilon(1e-6).epsilon > 0  # the PLD builder takes it too


def test_a_wrapper_of_a_users_mechanism_gets_what_its_base_answers():
    """PoissonSampled wraps a user's output-pair-only mechanism: the subsampled pair gives the PLD;
    there is no curve (rdp() None: the RDP route fails at run time with that reason) and no pure
    epsilon. The PLD value is below the unsampled one (amplification), which it could fail to be."""
    sampled = acc.PoissonSampled(PairOnly(), 0.5)
    assert sampled.rdp() is None and sampled.pure() is None and isinstance(sampled.output_pair(), acc.IntegerPair)
    report = acc.epsilon_routes(sampled, 1e-6, compose=4, comparisons=False, exhaustive=True)
    statuses = _statuses(report)
    assert report.route == "pld" and statuses["pure"] == "not applicable"
    assert statuses["rdp-cks"] == "failed"
    assert "rdp() returned None" in next(r.reason for r in report.alternatives if r.route == "rdp-cks")
    assert report.epsilon < acc.epsilon_routes(PairOnly(), 1e-6, compose=4, comparisons=False).epsilon


def test_a_mechanism_without_any_guarantee_is_refused_by_every_route():
    """The base class alone declares nothing: every route says why it does not apply."""

    class Nothing(acc.Mechanism):
        pass

    m = Nothing()
    assert m.rdp() is None and m.pure() is None and m.output_pair() is None
    with pytest.raises(acc.AccountingError, match="has no RDP curve.*is not pure DP") as error:
        acc.epsilon_routes(m, 1e-6, comparisons=False)
    assert "has no privacy-loss distribution" in str(error.value)


def test_a_duck_typed_object_is_refused():
    """Not a Mechanism: refused with the parameter named (no route probes it for methods)."""

    class Duck:
        def pure(self):
            return acc.PureDP(1.0)

    with pytest.raises(acc.AccountingError, match="subject"):
        acc.epsilon_routes(Duck(), 1e-6)


# ---- the README's example ------------------------------------------------------------------------


def test_readme_own_mechanism_example():
    """The README's "Your own mechanism" example, run as written: its answer is the PLD of its pair
    (exact lattice: losses 0 and +-log 2) composed 20 times, below the optimal composition of
    log 2-DP (which every log 2-DP mechanism meets) and below basic composition (20 log 2)."""
    text = (ROOT / "README.md").read_text()
    match = re.search(r"<!-- own-mechanism-example -->\s*```python\n(.*?)```", text, re.S)
    assert match, "README.md must hold the example after <!-- own-mechanism-example -->"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(match.group(1), "README.md", "exec"), {"__name__": "own_mechanism_example"})
    lines = out.getvalue().splitlines()
    head = re.fullmatch(r"epsilon = ([0-9.]+) \((\S+)\)", lines[0])
    assert head, lines[0]
    printed = {line.split()[0]: (" ".join(line.split()[1:-1]), float(line.split()[-1])) for line in lines[1:]}
    pair = acc.FinitePair.from_masses([Fraction(1, 2), Fraction(1, 4), Fraction(1, 4)], [Fraction(1, 4), Fraction(1, 2), Fraction(1, 4)])
    composed = acc.PrivacyLossDistribution.from_pair(pair).self_compose(20).epsilon(1e-6).epsilon
    assert head.group(2) == "pld" and float(head.group(1)) == pytest.approx(composed, abs=5e-7)
    eps0 = math.nextafter(math.log(2), math.inf)
    assert printed["pure"] == ("run", pytest.approx(20 * eps0, abs=5e-7))
    assert float(head.group(1)) < printed["optimal-composition"][1] < printed["pure"][1]
    assert printed["analytic-gaussian"][0] == "not applicable"
