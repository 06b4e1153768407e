"""Float-safe privatizers (issue #20): DP as executed by default, the papers' float noise only as an
explicit, labelled "idealised" choice.

The registry check (the issue's "Done when"): every algorithm ``dpverify run`` and ``reproduce`` can
reach is run on a small instance with the default noise while every draw a privatizer makes is
watched. How it watches, and why that is sound:

- every privatizer gets its random stream from ``dpverify._executed._privatizer.private_stream`` (the scalar
  and vector privatizers through ``AccountedReleaser``, the local curators through
  ``LocalPrivatizer``); the test replaces it by one returning a ``Generator`` subclass whose
  continuous-distribution methods (laplace, normal, standard_normal, exponential, gamma, uniform,
  ... every numpy method except the uniform bits ``random``/``integers``/``bytes`` and the
  discrete laws) raise. A Python-level float draw on a privatizer's stream therefore fails the run;
- numba kernels do not call those Python methods; the float kernels (``_kernels._fill_laplace`` /
  ``_fill_gaussian``) are reached only through ``_samplers.laplace`` / ``gaussian``, which the test
  also replaces, to raise when handed a watched stream; and a static check lists every numba
  kernel in dpverify whose code names a float-noise method: it must be one of those two or the
  environment's reward kernel (rewards, not a privatizer), so a new float kernel is a reviewed
  decision;
- a static check lists every Generator that dpverify code constructs outside the privatizer
  factory (environments, learners, instances): a new one must be added to the list, i.e. reviewed.

The same check, run with ``noise="idealised"``, fails LDP-UCB-L, -LS and DP-SE: it can fail.
"""

from __future__ import annotations

import inspect
import itertools
import json
import math
import re
from fractions import Fraction
from pathlib import Path

import numba
import numpy as np
import pytest
from click.testing import CliRunner

import accounting as acc
from _gof import integer_gof
from accounting._core._validation import AccountingError
from dpverify._executed import _noise, _privatizer, _protocols, _samplers
from dpverify._executed import _protocol_kernels as pk
from dpverify._bandits import RunConfig, algorithms, run_seed
from dpverify._bandits._ucb import LocalCurator, LocalPrivatizer

REPO = Path(__file__).resolve().parent.parent

#: numpy Generator methods that draw no continuous noise: uniform bits (the exact samplers' raw
#: material), integer laws, permutations. Every other public method is a continuous law.
_NOT_FLOAT_NOISE = {
    "bit_generator", "spawn", "random", "integers", "bytes", "choice", "permutation", "permuted", "shuffle",
    "binomial", "negative_binomial", "poisson", "geometric", "hypergeometric", "multivariate_hypergeometric",
    "multinomial", "zipf", "logseries",
}
FLOAT_NOISE_METHODS = sorted(
    name for name, _ in inspect.getmembers(np.random.Generator) if not name.startswith("_") and name not in _NOT_FLOAT_NOISE
)


class FloatNoiseDrawn(AssertionError):
    pass


class WatchedStream(np.random.Generator):
    """A privatizer's stream whose float-noise methods raise (the draws it does allow are unchanged)."""


def _refuse(name):
    def method(self, *args, **kwargs):
        raise FloatNoiseDrawn(f"a privatizer drew float noise: Generator.{name}")

    return method


for _name in FLOAT_NOISE_METHODS:
    setattr(WatchedStream, _name, _refuse(_name))


@pytest.fixture
def watched(monkeypatch):
    """Replace the privatizer factory and the float samplers' wrappers; count the streams made."""
    made = []

    def private_stream(seed):
        stream = WatchedStream(np.random.PCG64(seed))
        made.append(stream)
        return stream

    def guard(original):
        def sampler(rng, *args, **kwargs):
            if isinstance(rng, WatchedStream):
                raise FloatNoiseDrawn(f"a privatizer drew float noise: _samplers.{original.__name__}")
            return original(rng, *args, **kwargs)

        return sampler

    monkeypatch.setattr(_privatizer, "private_stream", private_stream)
    monkeypatch.setattr(_samplers, "laplace", guard(_samplers.laplace))
    monkeypatch.setattr(_samplers, "gaussian", guard(_samplers.gaussian))
    return made


def test_the_watched_stream_refuses_every_continuous_law():
    assert {"laplace", "normal", "standard_normal", "exponential", "standard_exponential", "gamma", "uniform"} <= set(FLOAT_NOISE_METHODS)
    rng = WatchedStream(np.random.PCG64(1))
    for name in ("laplace", "normal", "standard_normal", "exponential"):
        with pytest.raises(FloatNoiseDrawn):
            getattr(rng, name)()
    # what the exact samplers use still works, and draws the same bits as a plain Generator
    assert np.array_equal(_samplers.discrete_laplace(rng, 3, size=50), _samplers.discrete_laplace(np.random.default_rng(np.random.PCG64(1)), 3, size=50))


#: configurations small enough for a test and large enough that every private algorithm releases
def _config(name: str, noise: str = "float-safe") -> RunConfig:
    spec = algorithms()[name]
    eps = 1.0 if spec.private else None
    if spec.family == "linear":
        return RunConfig(name, "linear", 500, epsilon=eps, noise=noise)
    if name.startswith("ucb") or name.startswith("ldp-ucb"):
        return RunConfig(name, "ren-bernoulli", 3000, epsilon=eps, noise=noise)
    return RunConfig(name, "easy", 20_000, epsilon=4.0 if spec.private else None, noise=noise, path="per-user")


@pytest.mark.parametrize("name", sorted(algorithms()))
def test_no_registered_algorithm_draws_float_noise_by_default(name, watched):
    """Deterministic (fixed seeds). It fails if any privatizer draws float noise on its stream."""
    config = _config(name)
    record = run_seed(config, 0)
    spec = algorithms()[name]
    if spec.private:
        assert watched, "a private algorithm made no privatizer stream: the check would see nothing"
        assert record.ledger["charges"] >= 1, "the privatizer released nothing: the check would see nothing"
        assert record.ledger["noise"] in ("float-safe", "unstated"), record.ledger.get("noise")


@pytest.mark.parametrize("name", ["ldp-ucb-l", "ldp-ucb-ls", "dp-se"])
def test_the_check_catches_the_idealised_versions(name, watched):
    """The wrong variant: the same run with noise='idealised' draws float Laplace, and is caught."""
    with pytest.raises(FloatNoiseDrawn):
        run_seed(_config(name, noise="idealised"), 0)


def test_the_check_catches_a_protocol_drawing_gaussian_noise_in_python(watched):
    class Gaussian(_privatizer.BatchProtocol):
        name = "gaussian"

        def mechanism(self, n):
            return acc.DiscreteLaplace(4, 1)

        def estimate_sum(self, rewards, rng, *, path="per-user"):
            return float(np.sum(rewards) + rng.normal(0.0, 1.0))

        def assumption1(self, n, p):
            return 0.0, 1.0

    privatizer = _privatizer.Privatizer(Gaussian(), acc.Ledger(acc.PureDP(10.0)), np.random.SeedSequence(0))
    with pytest.raises(FloatNoiseDrawn):
        privatizer.release_sum(np.zeros(4), range(4))


def _numba_kernels():
    import importlib
    import pkgutil

    import dpverify

    for info in pkgutil.walk_packages(dpverify.__path__, "dpverify."):
        if info.name.startswith(("dpverify._audit", "dpverify._tails")):
            continue  # the auditor and the tail verifier are not reachable from run/reproduce
        module = importlib.import_module(info.name)
        for attr, value in vars(module).items():
            if isinstance(value, numba.core.registry.CPUDispatcher) and value.py_func.__module__ == info.name:
                yield f"{info.name}.{attr}", value.py_func


def _names(code) -> set[str]:
    out = set(code.co_names)
    for const in code.co_consts:
        if inspect.iscode(const):
            out |= _names(const)
    return out


def test_only_reviewed_numba_kernels_name_a_float_noise_method():
    """numba kernels draw inside compiled code, where the watched stream cannot see: the ones whose
    code names a continuous law are listed here, each for a reason."""
    allowed = {
        "dpverify._executed._kernels._fill_laplace": "idealised baseline, reached only through _samplers.laplace (watched)",
        "dpverify._executed._kernels._fill_gaussian": "idealised baseline, reached only through _samplers.gaussian (watched)",
        "dpverify._bandits._environments._clipped_gaussian": "rewards, drawn from the environment's stream",
    }
    kernels = dict(_numba_kernels())
    assert len(kernels) > 20 and "dpverify._executed._kernels._discrete_laplace" in kernels
    found = {name for name, func in kernels.items() if _names(func.__code__) & set(FLOAT_NOISE_METHODS)}
    assert found == set(allowed), found ^ set(allowed)


def test_only_reviewed_code_constructs_a_generator():
    """A privatizer that made its own Generator would escape the watched factory: every Generator
    dpverify's run path constructs is listed here with its file (streams of environments, learners,
    instances and the privatizer factory itself)."""
    pattern = re.compile(r"np\.random\.Generator\(|default_rng\(")
    allowed = {
        "dpverify/_executed/_privatizer.py": 1,  # private_stream: the privatizers' own streams
        "dpverify/_bandits/_ucb.py": 1,  # the learner's tie-breaking stream
        "dpverify/_bandits/_environments.py": 2,  # per-arm reward streams; the random instance's means
        "dpverify/_bandits/linear/_instances.py": 1,  # the synthetic linear instance
        "dpverify/_bandits/linear/_dpe.py": 2,  # the clients' parameters and reward averages (environment side)
        "dpverify/_executed/_samplers.py": 1,  # an error message naming default_rng
        # the run auditor's UCB engine rebuilds the learner's stream from its seed (its privatizer
        # streams, like every engine's, come from private_stream)
        "dpverify/_bandits/_transcripts_ucb.py": 1,
    }
    found = {}
    for path in sorted((REPO / "dpverify").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith(("dpverify/_audit/", "dpverify/_tails/")):
            continue
        count = len(pattern.findall(path.read_text()))
        if count:
            found[rel] = count
    assert found == allowed


# ---- the float-safe curator -------------------------------------------------------------------------


def _dlap_pmf(scale: Fraction, lo: int, hi: int) -> np.ndarray:
    q = math.exp(-1.0 / float(scale))
    k = np.arange(lo, hi + 1)
    return (1 - q) / (1 + q) * q ** np.abs(k)


def test_float_safe_curator_releases_the_grid_mixture_exactly():
    """CTL(1) at the grid 1/4: reward 0.3 encodes as 1 (prob 0.8) or 2 (0.2), plus Lap_Z(4); the
    response times g is that integer. Chi-square, N = 400,000, false-alarm rate 1e-6; power >= 0.999
    against rounding that always rounds down (computed from the alternative's law)."""
    g, eps, x = 4, 1.0, 0.3
    curator = LocalCurator("ctl", eps, grid=g)
    assert curator.scale == Fraction(4)
    y = curator.respond(np.full(400_000, x), np.random.default_rng(20))
    assert np.array_equal(y * g, np.round(y * g)), "responses are integers over g"
    ints = np.round(y * g).astype(np.int64)
    lo, hi = -80, 82
    base = _dlap_pmf(Fraction(4), lo - 2, hi)
    null = 0.8 * base[1:-1] + 0.2 * base[:-2]  # P[Y = y] at y = lo..hi
    res = integer_gof(ints, lo, null, alpha=1e-6, lower_tail=0.0, upper_tail=max(0.0, 1 - null.sum()))
    assert not res.rejected, str(res)
    floor_only = base[1:-1]
    assert res.power_against(floor_only, 0.0, max(0.0, 1 - floor_only.sum())) > 0.999


def test_float_safe_curator_clamps_and_refuses_nan():
    """Reward 2.5 is released as reward 1 (the sensitivity is that of the clamped value): same draws
    from the same stream. NaN has no clamped value and is refused."""
    curator = LocalCurator("ctl", 1.0)
    a = curator.respond(np.full(100, 2.5), np.random.default_rng(3))
    b = curator.respond(np.full(100, 1.0), np.random.default_rng(3))
    assert np.array_equal(a, b)
    with pytest.raises(ValueError, match="NaN"):
        curator.respond(np.array([0.5, np.nan]), np.random.default_rng(3))


def test_curator_guarantees_are_the_executed_mechanisms():
    fs = LocalCurator("ctl", 0.5)
    ideal = LocalCurator("ctl", 0.5, noise="idealised")
    g = fs.mechanism()
    assert isinstance(g, acc.GridDiscreteLaplace) and g.grid == 2**16 and g.scale == Fraction(2**17)
    assert g.pure() == acc.PureDP(0.5) == acc.DiscreteLaplace(2**17, 2**16).pure()
    for alpha in (1.5, 4.0, 32.0):
        assert g.rdp()(alpha) == acc.DiscreteLaplace(2**17, 2**16).rdp()(alpha)
    assert isinstance(ideal.mechanism(), acc.Laplace)
    with pytest.warns(DeprecationWarning, match=r"LocalCurator.guarantee\(\) is deprecated"):
        assert fs.guarantee() == g  # the old name still answers, and warns
    assert "grid 1/65536" in fs.describe() and _noise.IDEALISED_LABEL in ideal.describe()
    # the ledger's record names the implementation (family and grid), and reads back the same object
    from accounting._ledgers._ledger import _guarantee_from_dict, _guarantee_to_dict

    record = _guarantee_to_dict(g)
    assert record["family"] == "grid-discrete-laplace" and record["parameters"]["grid"] == 2**16
    assert _guarantee_from_dict(record) == g


def test_grid_scale_is_rounded_up_only_when_the_sampler_needs_it():
    assert _noise.grid_laplace_scale(0.1) == Fraction(655360)
    assert _noise.grid_laplace_scale(Fraction(1, 3)) == 3 * 2**16
    awkward = 0.30000000000000004  # 17 digits: g/eps has a numerator beyond 2^61
    b = _noise.grid_laplace_scale(awkward)
    exact = Fraction(2**16) / Fraction(repr(awkward))
    assert b >= exact and b.numerator <= 2**61 and (b - exact) / exact < 1e-15
    curator = LocalCurator("ctl", awkward)
    assert curator.mechanism().pure().epsilon <= awkward * (1 + 1e-15)
    assert curator.noise_epsilon <= awkward
    with pytest.raises(ValueError, match="noise"):
        LocalCurator("ctl", 1.0, noise="float")


def test_laplace_messages_are_randomize_without_a_modulus():
    x = np.random.default_rng(0).random(3000)
    a = pk.randomize(np.random.default_rng(4), x, 16, None, "discrete_laplace", scale=Fraction(16, 3))
    b = pk.laplace_messages(np.random.default_rng(4), x, 16, Fraction(16, 3))
    c = pk.laplace_messages(np.random.default_rng(4), x, 16, Fraction(16, 3))  # through the cached entry point
    assert np.array_equal(a, b) and np.array_equal(b, c)


def test_kernels_draw_the_generators_own_uniforms():
    """The kernels read 53-bit uniforms through the bit generator (next_double); they must be the
    very draws Generator.random makes, or every seeded result would silently change."""
    from numba.np.random.generator_core import next_double

    @numba.njit
    def draws(rng, out):
        bits = rng.bit_generator
        for i in range(out.size):
            out[i] = next_double(bits)

    out = np.empty(1000)
    draws(np.random.default_rng(9), out)
    assert np.array_equal(out, np.random.default_rng(9).random(1000))


# ---- the float-safe DP-SE -----------------------------------------------------------------------------


def test_float_safe_dp_se_estimate_law():
    """Rewards (0.3, 0.3, 1.0) at the grid 1/4: the integer g * estimate is 2 + Bin(2, 0.2) + 4 +
    Lap_Z(4/eps), eps = 1. Chi-square, N = 300,000, false-alarm rate 1e-6; power >= 0.999 against the
    idealised-style estimate without rounding noise (sum x g = 6.4 rounded to 6)."""
    proto = _protocols.CentralGridLaplaceProtocol(1.0, grid=4)
    est = proto.estimate_sums(np.array([0.3, 0.3, 1.0]), np.random.default_rng(5), 300_000)
    ints = np.round(est * 4).astype(np.int64)
    assert np.array_equal(est * 4, ints)
    lo, hi = -80, 90
    base = _dlap_pmf(Fraction(4), lo - 8, hi)
    rounding = {6: 0.64, 7: 0.32, 8: 0.04}
    null = sum(w * base[8 - s:8 - s + (hi - lo + 1)] for s, w in rounding.items())
    res = integer_gof(ints, lo, null, alpha=1e-6, upper_tail=max(0.0, 1 - null.sum()))
    assert not res.rejected, str(res)
    no_rounding = base[2:2 + (hi - lo + 1)]
    assert res.power_against(no_rounding, 0.0, max(0.0, 1 - no_rounding.sum())) > 0.999
    assert proto.mechanism(3) == acc.GridDiscreteLaplace(4, Fraction(4))
    assert proto.estimate_sum(np.array([0.3]), np.random.default_rng(1)) * 4 == pytest.approx(round(proto.estimate_sum(np.array([0.3]), np.random.default_rng(1)) * 4))


def test_dp_se_radius_covers_the_discrete_tail():
    """The float-safe radius's Laplace term grows by log(2/(1 + e^{-eps/g})) / (eps R_e) only."""
    from dpverify._bandits._elimination import dp_se_epoch

    proto = _protocols.central_laplace_protocol(0.5)
    r_e, width = dp_se_epoch(3, 10, 0.1, 0.5)
    r_fs, width_fs = dp_se_epoch(3, 10, 0.1, 0.5, noise_epsilon=proto.noise_epsilon, tail_factor=proto.laplace_tail_factor(1))
    assert r_fs == r_e and width < width_fs < width + math.log(1 + 0.5 / 2**16) / (0.5 * r_e) + 1e-15


# ---- labels, ledgers ------------------------------------------------------------------------------------


def test_runs_say_which_noise_they_used():
    fs = run_seed(RunConfig("ldp-ucb-l", "ren-bernoulli", 2000, epsilon=1.0), 0).ledger
    ideal = run_seed(RunConfig("dp-se", "easy", 20_000, epsilon=4.0, noise="idealised"), 0).ledger
    assert fs["noise"] == "float-safe" and "grid 1/65536" in fs["implementation"] and "warning" not in fs
    assert fs["distinct_guarantees"][0]["family"] == "grid-discrete-laplace"
    assert ideal["noise"] == "idealised" and ideal["warning"] == "idealised: not DP in floating point"


def test_cli_table_json_and_html_label_idealised_runs(tmp_path):
    from dpverify._cli._cmd_bandits import run_command

    out, page = tmp_path / "r.json", tmp_path / "r.html"
    res = CliRunner().invoke(run_command, ["--algorithm", "ldp-ucb-l", "--instance", "ren-bernoulli", "--eps", "1", "--horizon", "2000",
                                           "--seeds", "2", "--noise", "idealised", "--json", str(out), "--html", str(page)])
    assert res.exit_code == 0, res.output
    assert "idealised: not DP in floating point" in res.output
    data = json.loads(out.read_text())
    assert data["options"]["noise"] == "idealised" and data["ledger"]["warning"] == "idealised: not DP in floating point"
    assert "idealised: not DP in floating point" in page.read_text()
    default = CliRunner().invoke(run_command, ["--algorithm", "ldp-ucb-l", "--instance", "ren-bernoulli", "--eps", "1", "--horizon", "2000", "--seeds", "2"])
    assert default.exit_code == 0 and "noise: float-safe" in default.output and "not DP in floating point" not in default.output
    bad = CliRunner().invoke(run_command, ["--algorithm", "ldp-ucb-l", "--instance", "ren-bernoulli", "--eps", "1", "--horizon", "2000", "--noise", "float"])
    assert bad.exit_code == 2


def test_charges_of_an_idealised_privatizer_are_labelled():
    ledger = acc.Ledger(acc.PureDP(1.0))
    privatizer = _privatizer.Privatizer(_protocols.CentralLaplaceIdealised(1.0), ledger, np.random.SeedSequence(0))
    privatizer.release_sum(np.zeros(3), range(3), label="b=1")
    assert ledger.charges[0].label == "b=1 [idealised: not DP in floating point]"


def test_a_durable_ledger_refuses_idealised_charges_unless_opted_in(tmp_path):
    url = f"sqlite:///{tmp_path}/l.db"
    ledger = acc.Ledger.open(url, acc.PureDP(5.0), create=True)
    try:
        before = ledger.to_json()
        with pytest.raises(AccountingError, match="allow_idealised_charges"):
            _privatizer.Privatizer(_protocols.CentralLaplaceIdealised(1.0), ledger, np.random.SeedSequence(0))
        with pytest.raises(AccountingError, match="allow_idealised_charges"):
            LocalPrivatizer(LocalCurator("ctl", 1.0, noise="idealised"), ledger, np.random.SeedSequence(0))
        assert ledger.to_json() == before
        # the float-safe privatizers are welcome; an explicit opt-in records the idealised one, labelled
        _privatizer.Privatizer(_protocols.central_laplace_protocol(1.0), ledger, np.random.SeedSequence(0)).release_sum(np.zeros(2), range(2), label="fs")
        allowed = _privatizer.Privatizer(_protocols.CentralLaplaceIdealised(1.0), ledger, np.random.SeedSequence(0), allow_idealised_charges=True)
        allowed.release_sum(np.zeros(2), range(2, 4), label="ideal")
        assert [c.label for c in ledger.charges] == ["fs", "ideal [idealised: not DP in floating point]"]
    finally:
        ledger.close()
    config = dict(algorithm="dist-dp-se", instance="easy", horizon=1000, epsilon=1.0, population=600, max_returns=2, ledger=url)
    with pytest.raises(ValueError, match="allow_idealised_charges"):
        RunConfig(**config, noise="idealised").validate()
    RunConfig(**config, noise="idealised", allow_idealised_charges=True).validate()
    RunConfig(**config).validate()


def test_only_idealised_claim_files_audit_the_real_arithmetic_mechanism():
    """The suite audits what runs: float_bits = false (a claim about real arithmetic) only in files
    whose name says idealised; the float-safe privatizers' files keep the float-bit views."""
    import tomllib

    files = sorted((REPO / "audits").rglob("*.toml"))
    assert len(files) > 40
    real_arithmetic = {f.relative_to(REPO / "audits").as_posix() for f in files
                       if tomllib.loads(f.read_text()).get("audit", {}).get("float_bits", True) is False}
    offenders = {name for name in real_arithmetic if "idealised" not in name}
    # DP-DPE's Gaussian claims belong to branch floatdpe (issue #20), which renames or converts them
    assert offenders <= {"dpdpe_central_eps1.toml", "dpdpe_local_eps2_s2.toml"}, offenders
    for name in ("curator_ctl_eps1.toml", "curator_ctl_s_eps0.5.toml", "dp_se_eps1_n16.toml"):
        spec = tomllib.loads((REPO / "audits" / name).read_text())
        assert spec["audit"].get("float_bits", True) is True and spec["parameters"].get("noise", "float-safe") == "float-safe"


def test_snapping_guarantee_and_release():
    """Mironov's Theorem 1: (1 + 2^-49 B)/lambda, rounded up; refused outside lambda < B < 2^46 lambda.
    Releases are multiples of Lambda (the power of two >= lambda) in [-B, B], the input clamped."""
    from dpverify._executed._noise_mechanisms import snapping_mechanism

    law = acc.Snapping(4.0, 64.0)
    assert law.pure().epsilon >= (1 + 64 * 2.0**-49) / 4 and law.pure().epsilon - 0.25 < 1e-12
    with pytest.raises(ValueError, match="bound"):
        acc.Snapping(4.0, 2.0)
    mech = snapping_mechanism(3.0, 16.0)
    out = mech.release(1000.0, np.random.default_rng(0), 2000)
    assert np.all(out % 4.0 == 0) and out.max() <= 16.0 and out.min() >= -16.0
    assert np.mean(out == 16.0) > 0.4  # the input 1000 is clamped to 16: about half the mass rounds to the top
    unclamped = snapping_mechanism(3.0, 16.0, clamp_input=False).release(1000.0, np.random.default_rng(0), 2000)
    assert np.all(unclamped == 16.0)
    # Lambda from the exact exponent: lambda = 2^10 (1 + 2^-52), where log2 rounds to 10, snaps to
    # 2^11 (a grid of 2^10, the rounded log's answer, puts about half the releases on odd multiples
    # of 1024); lambda = 2^10 itself keeps 2^10
    above = snapping_mechanism(1024.0 * (1 + 2.0**-52), 2.0**20).release(0.0, np.random.default_rng(1), 2000)
    assert np.all(above % 2048.0 == 0)
    exact = snapping_mechanism(1024.0, 2.0**20).release(0.0, np.random.default_rng(1), 2000)
    assert np.all(exact % 1024.0 == 0) and np.any(exact % 2048.0 != 0)


def test_snapping_ln_is_correctly_rounded():
    """Against mpmath at 300 bits rounded to the nearest double, on 3,000 of Mironov's U* draws
    (deterministic): glibc's log differs from that in a few of them, ours in none."""
    import mpmath

    from dpverify._executed._noise_mechanisms import _ln_rounded, _mironov_uniform

    ctx = mpmath.MPContext()
    ctx.prec = 300
    draws = _mironov_uniform(np.random.default_rng(0), 3000)
    exact = [float(ctx.log(ctx.mpf(float(u)))) for u in draws]
    assert [_ln_rounded(float(u)) for u in draws] == exact
    assert sum(math.log(float(u)) != e for u, e in zip(draws, exact)) >= 1  # the check has something to catch
    # U*: the binade [2^-e, 2^-e+1) has probability 2^-e; at 3,000 draws 0.05 is >= 5.5 standard
    # deviations of either proportion (false alarm < 1e-7); a U* drawn on the 2^-53 grid of
    # Generator.random would pass this too: its difference is in the bits, which the first check sees
    e = -np.floor(np.log2(draws)).astype(int)
    assert abs(np.mean(e == 1) - 0.5) < 0.05 and abs(np.mean(e == 2) - 0.25) < 0.05


# ---- the exact inversion samplers (dpverify._executed._inversion) ----------------------------------------------


def test_inversion_thresholds_are_certified():
    """tail_words against mpmath at 400 bits: the first and later words of S_v for the truncated and the
    untruncated geometric tails (tables of the curator's scale 2^16, a scale with s > 1, and
    e^{-A^2/D}); every row of those tables strictly decreasing with its zero sentinel; the guide gives
    the exact count at each bucket's largest word."""
    import mpmath

    from dpverify._executed import _inversion as I
    from dpverify._executed import _kernels as K

    ctx = mpmath.MPContext()
    ctx.prec = 400

    def word(num, den, trunc, v, k):
        a = ctx.mpf(num) / den
        s = ctx.exp(-a * v)
        if trunc:
            s = (s - ctx.exp(-a * trunc)) / (1 - ctx.exp(-a * trunc))
        return int(ctx.floor(s * 2 ** (64 * k))) % 2**64

    for num, den, trunc, v, k in ((1, 65536, 256, 1, 1), (1, 65536, 256, 255, 2), (256, 65536, 256, 77, 1),
                                  (65536, 65536, 0, 3, 3), (7, 3, 0, 1, 1), (1, 2 * 9 * 16, 0, 25, 2)):
        assert K.tail_word(num, den, trunc, v, k) == word(num, den, trunc, v, k), (num, den, trunc, v, k)
    for v, k in ((1, 2), (3, 2), (7, 4)):
        assert K.exp_neg_word(v, k) == word(1, 1, 0, v, k)
    for s_, t in ((1, 2**16), (3, 7), (1, 5 * 2**20)):
        c, guide, prm, _, key = I.laplace_tables(s_, t)
        for j, (n, shift, gshift) in enumerate(prm.tolist()):
            # row j: digits [shift, shift + w) of the magnitude (a truncated geometric), or the block count
            num, den, trunc = s_ << shift, t, (0 if j == prm.shape[0] - 1 else n + 1)
            row = [int(x) for x in c[j, 1:n + 1]]
            assert row == [word(num, den, trunc, v, 1) for v in range(1, n + 1)]
            assert all(a > b for a, b in itertools.pairwise(row)) and c[j, n + 1] == 0
            assert K.TABLE_ROWS[key][j][1] == n and K.TABLE_ROWS[key][j][0](n, 2) == word(num, den, trunc, n, 2)
            for bucket in range(0, guide.shape[1], 37):
                top = ((bucket + 1) << gshift) - 1  # the bucket's largest 64-bit word
                assert guide[j, bucket] == sum(1 for x in row if x > top)
    table, key = I.gaussian_tables(9, 1, 4, 100)
    assert [int(x) for x in table[1:]] == [word(1, 2 * 9 * 16, 0, (a * 4 - 9) ** 2, 1) for a in range(1, table.size)]

    def gauss_word(p, q, v, k):  # P[|X| >= v] for X ~ N_Z(0, p/q), the sum to 60 sigma in mpmath
        terms = [ctx.exp(-ctx.mpf(q) * u * u / (2 * p)) for u in range(60 * (math.isqrt(p // q) + 1) + 60)]
        tail = 2 * ctx.fsum(terms[v:])
        return int(ctx.floor(tail / (terms[0] + 2 * ctx.fsum(terms[1:])) * 2 ** (64 * k))) % 2**64

    for p, q in ((10, 3), (3000, 1)):
        vs = (1, 2, 5, 40)
        assert I.gaussian_tail_words(p, q, vs, 1) == [gauss_word(p, q, v, 1) for v in vs]
        assert I.gaussian_tail_words(p, q, vs, 2) == [gauss_word(p, q, v, 2) for v in vs]
    c, guide, prm, key = I.gaussian_magnitude_tables(3000, 1, 10**6)
    n = int(prm[0, 0])
    assert [int(x) for x in c[0, 1:n + 1]] == I.gaussian_tail_words(3000, 1, range(1, n + 1), 1)
    assert c[0, n] >= 2**32 and I.gaussian_tail_words(3000, 1, (n + 1,), 1)[0] < 2**32 and c[0, n + 1] == 0


def test_tie_path_is_exact():
    """The 64-bit tie path (probability 2^-64 in use, so driven directly here): given W's first word
    equal to S_v's, P[U < S_v] = frac(S_v 2^64) (to 2^-64). e^{-1}: 0.72996...; the curator's first
    low group at v = 100: frac = 0.5237...; 4,000 calls each (each computes the next word in Arb);
    two-sided binomial tests at level 1e-6; power > 0.999 against a tie path that always says yes
    (or no), or decides by a fair coin (0.23 from 0.5 is 32 standard deviations; 0.024 from 0.5 only
    3, so the coin alternative is the e^{-1} case's). Past a row (the zero sentinel) the answer is no,
    with no draw."""
    from scipy import stats

    from dpverify._executed import _inversion as I
    from dpverify._executed import _kernels as K

    bits = np.random.PCG64(31)
    hits = sum(bool(K._exp_neg_tie(bits, 1)) for _ in range(4000))
    p = K.exp_neg_word(1, 2) / 2**64  # frac(e^{-1} 2^64) to 64 bits: the next words move it by < 2^-64
    assert stats.binomtest(hits, 4000, p).pvalue > 1e-6, (hits, p)
    *_, key = I.laplace_tables(1, 2**16)
    hits = sum(bool(K._tie_below(bits, key, 0, 100)) for _ in range(4000))
    p = K.tail_word(1, 2**16, 256, 100, 2) / 2**64
    assert stats.binomtest(hits, 4000, p).pvalue > 1e-6, (hits, p)
    state = bits.state
    assert not K._tie_below(bits, key, 0, 256) and bits.state == state


def _binned_laplace_counts(out, b, width, cells):
    q = math.exp(-1 / b)
    edges = np.arange(0, cells) * width  # P[|Z| >= k] = 2 q^k / (1 + q) for k >= 1
    upper = np.array([1.0] + [2 * q**k / (1 + q) for k in edges[1:]])
    probs = np.append(upper[:-1] - upper[1:], upper[-1])
    counts = np.bincount(np.minimum(np.abs(out) // width, cells - 1), minlength=cells)
    return counts, probs


def test_inversion_discrete_laplace_at_the_privatizers_scales():
    """The inversion sampler at the curator's scale 2^16 (two digit groups of 8) and at 5 2^20 (three
    groups of 8, 8, 7), |Z| binned by b/4 into 40 cells, plus the sign: chi-square on 10^6 draws each
    at level 1e-6; power > 0.999 against the same sampler at scale 2% off (computed), and that wrong
    variant is rejected by the same test. (Small scales, one group and none: tests/test_samplers.py.)"""
    from _gof import counts_gof

    for b in (2**16, 5 * 2**20):
        width = b // 4
        out = _samplers.discrete_laplace(np.random.default_rng(b), b, 10**6, method="inversion")
        counts, probs = _binned_laplace_counts(out, b, width, 40)
        res = counts_gof(counts, probs, alpha=1e-6)
        assert not res.rejected, (b, str(res))
        assert abs(int((out > 0).sum()) - int((out < 0).sum())) < 5 * math.sqrt(10**6)
        _, wrong_probs = _binned_laplace_counts(out, b * 1.02, width, 40)
        assert res.power_against(wrong_probs) > 0.999
        wrong = _samplers.discrete_laplace(np.random.default_rng(b + 1), Fraction(b * 102, 100), 10**6, method="inversion")
        wrong_counts, _ = _binned_laplace_counts(wrong, b, width, 40)
        assert counts_gof(wrong_counts, probs, alpha=1e-6).rejected, b


def test_inversion_discrete_gaussian_magnitude_tail_path():
    """The magnitude sampler past its table (|X| >= n: a geometric proposal accepted by CKS Algorithm 1),
    driven by cutting the table to n = 2 at sigma^2 = 10/3 (|X| >= 2 has probability 0.24) and n = 1 at
    sigma^2 = 2 (0.52). Chi-square against the exact pmf, 10^6 draws each, level 1e-6; power > 0.999
    against sigma 2% off (computed)."""
    import naive

    from dpverify._executed import _inversion as I
    from dpverify._executed import _kernels as K

    for sigma2, cut in ((Fraction(10, 3), 2), (Fraction(2), 1)):
        p, q, _, ymax = _samplers.discrete_gaussian_range(sigma2)
        c, guide, prm, key = I.gaussian_magnitude_tables(p, q, ymax)
        c, guide, prm = c.copy(), np.minimum(guide, cut), prm.copy()
        c[0, cut + 1:] = 0  # the scan's sentinel after the cut
        prm[0, 0] = cut
        out = np.empty(10**6, dtype=np.int64)
        K._fill_discrete_gaussian_magnitude(np.random.default_rng(p + cut), p, q, ymax, (c, guide, prm, key), out)
        lo, probs, lower, upper = naive.discrete_gaussian_pmf(sigma2, 25)
        res = integer_gof(out, lo, probs, alpha=1e-6, lower_tail=lower, upper_tail=upper)
        assert not res.rejected, (sigma2, str(res))
        _, alt, alt_lo, alt_hi = naive.discrete_gaussian_pmf(sigma2 * Fraction(102, 100) ** 2, 25)
        assert res.power_against(alt, alt_lo, alt_hi) > 0.999


def test_inversion_discrete_gaussian_edge_paths():
    """The Algorithm-3 inversion discrete Gaussian (sigma^2 > 2^20 in use; driven here at small sigma
    through its kernel) and its two rare paths: sigma^2 = 2 (t = 2: |Y| = 1 has A = 0,
    accepted without a draw) and sigma^2 = 10/3 with its acceptance table cut to 3 entries (every
    candidate with |Y| >= 3 decided by CKS Algorithm 1 instead). Chi-square against the exact pmf,
    10^6 draws each, level 1e-6; power > 0.999 against sigma 2% off (computed)."""
    import naive

    from dpverify._executed import _inversion as I
    from dpverify._executed import _kernels as K

    for sigma2, cut in ((Fraction(2), None), (Fraction(10, 3), 3)):
        p, q, t, ymax = _samplers.discrete_gaussian_range(sigma2)
        table, key = I.gaussian_tables(p, q, t, ymax)
        out = np.empty(10**6, dtype=np.int64)
        K._fill_discrete_gaussian_inv(np.random.default_rng(p), p, q, t, ymax, I.laplace_tables(1, t),
                                      (table[:cut] if cut else table, key), out)
        lo, probs, lower, upper = naive.discrete_gaussian_pmf(sigma2, 25)
        res = integer_gof(out, lo, probs, alpha=1e-6, lower_tail=lower, upper_tail=upper)
        assert not res.rejected, (sigma2, str(res))
        _, alt, alt_lo, alt_hi = naive.discrete_gaussian_pmf(sigma2 * Fraction(102, 100) ** 2, 25)
        assert res.power_against(alt, alt_lo, alt_hi) > 0.999


def test_randomised_rounding_is_exact_including_its_tie_path():
    """_protocol_kernels._round, through add_box_codes: x = -2.5 + 2^-9 rounds to -2 with probability
    frac(x) = 0.501953125 exactly; 8 uniform bits decide unless they equal the fraction's first 8
    (128, probability 2^-8), and then the rest of the fraction (1/2) decides. 10^7 draws, two-sided
    binomial test at level 1e-6; a tie path that always says no (0.5) or yes (0.50390625) is 12
    standard deviations away (power > 0.999999)."""
    from scipy import stats

    x = -2.5 + 2.0**-9
    n = 10**7
    out = np.zeros(n, dtype=np.int64)
    pk.add_box_codes(np.random.default_rng(12), np.full(n, x), 1.0, 10, out)
    assert set(np.unique(out)) <= {-3, -2}
    ups = int((out == -2).sum())
    p = x - math.floor(x)
    assert stats.binomtest(ups, n, p).pvalue > 1e-6, (ups / n, p)
    for wrong in (0.5, 0.50390625):
        assert stats.binomtest(ups, n, wrong).pvalue < 1e-6
