"""DP-DPE (Li, Zhou and Ji, Algorithm 1) and its variants DPE, CDP-DPE, LDP-DPE, SDP-DPE, DPE-FixedU.

SDP-DPE's privatizer is the shuffle model's bit-message vector summation (``_shuffle.py``); its
communication is counted in bits (messages x (1 + ceil(log2 s))), the others' in 64-bit reals.

One run is a pure function of (algorithm, instance, seed, run_index, config). As in
``dpverify._bandits._runner``, run r of seed s uses ``SeedSequence(s, spawn_key=(r,))`` spawned
into the named streams "instance", "environment", "privatizer", "learner" (:func:`linear_streams`),
so ``dpverify run`` and :func:`li_fig2` give the same run r. Every algorithm uses the same
streams (common random numbers):

- environment child ``(0,)``: the client population, theta_u = theta* + sigma N(0, I_d) for every
  user, then the sampling order (new clients each phase; the population's draws are iid, so
  consecutive blocks are uniform samples without replacement; if the schedule outgrows the
  population, a fresh random permutation starts and users return: the ledger composes their
  charges);
- environment child ``(1, l)``: the clients' reward noise in phase l;
- "privatizer": the privatizer's noise (only the privatizer holds this stream);
- design and elimination use no randomness ("instance" and "learner" are unused: the
  instances are fixed).

The learner (the phase loop below) sees the public instance (actions, sigma, B, d, k) and the
privatizer's releases; the clients' parameters, rewards and the privacy noise stay inside
:class:`_Clients` and the privatizer.

Phase l (lines 4-19): pi_l = near-G-optimal design on D_l (``g_optimal_design``: g <= 2d,
|supp| <= 4 d log log d + 16); T_l(x) = ceil(h_l pi_l(x)); play each support action T_l(x) times
(support order, truncated at T); n_l = ceil(2^{alpha l}) new clients (DPE-FixedU: a fixed U);
each reports its average reward per support action, clipped to [-B, B]; the privatizer
releases y_tilde; theta_l = V_l^+ G_l with V_l = sum T_l(x) x x^T, G_l = sum T_l(x) x y_tilde(x)
(pseudo-inverse: V_l is singular when D_l no longer spans R^d); eliminate x when
max_b <theta_l, b - x> > 2 W_l, W_l = (sqrt(2d/(n_l h_l)) + sigma/sqrt(n_l) + sigma_n) sqrt(2 log(1/beta)),
beta = 1/(kT); h_{l+1} = 2 h_l, h_1 = 2. A phase cut short by the horizon collects no feedback
(it could not change any round <= T), so it costs no communication and no privacy.

sigma_n: 0 for DPE; Theorem 2's value (``privacy_width="paper"``, the default) or the exact
sd of the privacy noise's contribution to <theta_l, x>, maximised over D_l
(``privacy_width="exact"``: sd_x = sigma_avg ||diag(T_l) X_s V_l^+ x||, a tighter but equally valid
choice for eq. (3), since that noise is Gaussian (idealised) or sub-Gaussian with variance proxy
sigma_avg^2 per coordinate (float-safe: discrete Gaussian plus rounding errors)).

Noise (``DPEConfig.noise``): "float-safe" (the default) runs CDP-DPE and LDP-DPE with the exact
discrete Gaussian on the integer grid (``CentralDiscreteGaussian``, ``LocalDiscreteGaussian``: DP
as executed); "idealised" with the paper's float Gaussians (``...GaussianIdealised``: not DP in
floating point; their ledger charges and privacy records say so). SDP-DPE is discrete either way.

DPE-FixedU (Section VI): U clients every phase, U = ceil(sum_l |U_l| N_l / sum_l N_l) computed
from the DPE run with the same seed (N_l = |supp(pi_l)|, the reals each client sends), so the
two use the same communication.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from accounting import ApproxDP, Ledger, ZCDP, AccountingError
from accounting.internal import check_positive_int, check_probability

from ._design import g_optimal_design, support_bound
from ._instances import LinearInstance
from ._privatizers import (
    CentralDiscreteGaussian,
    CentralGaussianIdealised,
    LocalDiscreteGaussian,
    LocalGaussianIdealised,
    NonPrivateAggregator,
    VectorPrivatizer,
)
from ._shuffle import ShuffleBits

__all__ = ["ALGORITHMS", "DPEConfig", "LinearRunResult", "fixed_client_count", "linear_streams", "run_linear"]

STREAMS = ("instance", "environment", "privatizer", "learner")

ALGORITHMS = ("dpe", "cdp-dpe", "ldp-dpe", "dpe-fixedu", "sdp-dpe")
NOISES = ("float-safe", "idealised")
#: each private algorithm's privatizer per noise choice (SDP-DPE's bit messages are discrete already)
_PRIVATE = {
    "cdp-dpe": {"float-safe": CentralDiscreteGaussian, "idealised": CentralGaussianIdealised},
    "ldp-dpe": {"float-safe": LocalDiscreteGaussian, "idealised": LocalGaussianIdealised},
    "sdp-dpe": {"float-safe": ShuffleBits, "idealised": ShuffleBits},
}
BITS_PER_REAL = 64


@dataclass(frozen=True)
class DPEConfig:
    """Parameters of one DP-DPE run (validated). ``epsilon``/``delta`` are required for cdp/ldp.

    ``noise``: "float-safe" (the default: integer grid and exact discrete Gaussian, DP as executed)
    or "idealised" (the paper's float Gaussians: not DP in floating point) for CDP-DPE and LDP-DPE.
    """

    horizon: int = 1_000_000
    alpha: float = 0.8
    epsilon: float | None = None
    delta: float | None = None
    beta: float | None = None
    clients_per_phase: int | None = None
    privacy_width: str = "paper"
    path: str = "per-user"
    checkpoints: int = 60
    noise: str = "float-safe"

    def __post_init__(self) -> None:
        check_positive_int("horizon", self.horizon)
        check_probability("alpha", self.alpha)
        if self.epsilon is not None and not (isinstance(self.epsilon, (int, float)) and math.isfinite(self.epsilon) and self.epsilon > 0):
            raise AccountingError("epsilon", self.epsilon, "a finite real number > 0 (or None for DPE)")
        if self.delta is not None:
            check_probability("delta", self.delta)
        if self.beta is not None:
            check_probability("beta", self.beta)
        if self.clients_per_phase is not None:
            check_positive_int("clients_per_phase", self.clients_per_phase)
        if self.privacy_width not in ("paper", "exact"):
            raise AccountingError("privacy_width", self.privacy_width, "'paper' (Theorem 2's sigma_n) or 'exact'")
        if self.path not in ("per-user", "aggregate"):
            raise AccountingError("path", self.path, "'per-user' or 'aggregate'")
        check_positive_int("checkpoints", self.checkpoints)
        if self.noise not in NOISES:
            raise AccountingError("noise", self.noise, "'float-safe' (DP as executed, the default) or 'idealised' (the paper's float Gaussians: not DP in floating point)")


@dataclass
class LinearRunResult:
    """One run: regret at log-spaced checkpoints, phases, communication, privacy (ledger)."""

    algorithm: str
    instance: dict
    seed: int
    run_index: int
    config: dict
    checkpoints: list[int]
    regret: list[float]
    final_regret: float
    pulls: list[int]
    eliminations: list[tuple[int, int]]
    phases: list[dict]
    communication: dict
    privacy: dict
    clients: dict
    path: str
    ledger: Ledger | None = field(default=None, repr=False, compare=False)

    def as_dict(self) -> dict:
        out = {k: v for k, v in self.__dict__.items() if k != "ledger"}
        return json.loads(json.dumps(out))

    def to_json(self) -> str:
        return json.dumps({"format": "dpverify-linear-run/1", **self.as_dict()})


def linear_streams(seed: int, run_index: int = 0) -> dict[str, np.random.SeedSequence]:
    """The named streams of run ``run_index`` of ``seed`` (the same rule as ``dpverify._bandits._runner``)."""
    root = np.random.SeedSequence(seed, spawn_key=(run_index,))
    return dict(zip(STREAMS, root.spawn(len(STREAMS))))


def _child(root: np.random.SeedSequence, *key: int) -> np.random.SeedSequence:
    return np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + tuple(key))


def _clients_in_phase(l: int, alpha: float) -> int:
    return int(math.ceil(2.0 ** (alpha * l)))


class _Clients:
    """The private side: user parameters, the sampling order and the clients' reward averages."""

    def __init__(self, instance: LinearInstance, root: np.random.SeedSequence) -> None:
        self._instance = instance
        self._root = root
        rng = np.random.Generator(np.random.PCG64(_child(root, 0)))
        self._thetas = instance.theta + instance.sigma * rng.standard_normal((instance.population, instance.d))
        self._order_rng = rng
        self._order: np.ndarray | None = None  # None = identity (first pass)
        self._next = 0
        self.sampled = 0
        self.returning = 0
        self.clipped = 0
        self.reported = 0

    def sample(self, n: int) -> range | np.ndarray:
        """The next n users (ids); a range while the first pass lasts."""
        population = self._instance.population
        if self._order is None and self._next + n <= population:
            ids: range | np.ndarray = range(self._next, self._next + n)
            self._next += n
        else:
            parts = []
            need = n
            while need:
                if self._next >= population:
                    self._order = self._order_rng.permutation(population)
                    self._next = 0
                take = min(need, population - self._next)
                block = np.arange(self._next, self._next + take) if self._order is None else self._order[self._next : self._next + take]
                parts.append(block)
                self._next += take
                need -= take
            ids = np.concatenate(parts)
        self.sampled += n
        self.returning = max(0, self.sampled - population)
        return ids

    def reports(self, phase: int, ids: range | np.ndarray, support_actions: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Each client's average reward per support action over T_l(x) rounds, clipped to [-B, B]."""
        rng = np.random.Generator(np.random.PCG64(_child(self._root, 1, phase)))
        index = np.arange(ids.start, ids.stop) if isinstance(ids, range) else ids
        means = self._thetas[index] @ support_actions.T  # (n, s): <theta_u, x>
        heads = rng.binomial(counts, 0.5, size=means.shape)  # Rademacher sums: 2 heads - T
        reports = means + (2.0 * heads - counts) / counts
        bound = self._instance.reward_bound
        outside = np.abs(reports) > bound
        self.clipped += int(outside.sum())
        self.reported += reports.size
        return np.clip(reports, -bound, bound, out=reports)


def _checkpoints(horizon: int, count: int) -> np.ndarray:
    """``count`` log-spaced rounds, every power of ten <= horizon (the rounds REPRODUCTION.md reports
    R(t)/t at: read exactly, not at the nearest log-spaced point) and the horizon."""
    points = np.round(np.logspace(0, math.log10(horizon), count)).astype(np.int64)
    decades = 10 ** np.arange(int(math.log10(horizon)) + 1, dtype=np.int64)
    points = np.unique(np.concatenate([points, decades[decades <= horizon], [horizon]]))
    return points[(points >= 1) & (points <= horizon)]


def fixed_client_count(phases: list[dict]) -> int:
    """The paper's U = ceil(sum_l |U_l| N_l / sum_l N_l) over the phases that collected feedback."""
    fed = [p for p in phases if p["clients"] > 0]
    if not fed:
        raise AccountingError("phases", "no phase with feedback", "a DPE run long enough to collect feedback")
    numerator = sum(p["clients"] * p["support_size"] for p in fed)
    denominator = sum(p["support_size"] for p in fed)
    return -(-numerator // denominator)


def run_linear(
    algorithm: str,
    instance: LinearInstance,
    seed: int,
    config: DPEConfig | None = None,
    *,
    run_index: int = 0,
    streams: dict[str, np.random.SeedSequence] | None = None,
    reference: LinearRunResult | None = None,
    clients: Any = None,
    transcript: Any = None,
) -> LinearRunResult:
    """Run one of ``ALGORITHMS`` on ``instance`` for ``config.horizon`` rounds.

    The random streams are :func:`linear_streams(seed, run_index) <linear_streams>` unless
    ``streams`` (a dict with "environment" and "privatizer" ``SeedSequence``) is given.
    DPE-FixedU without ``config.clients_per_phase`` takes U from the DPE run with the same seed:
    pass that run as ``reference`` if it is already at hand, or it is run here.
    ``clients`` replaces the client population (an object with ``sample(n)`` and ``reports(phase,
    ids, support_actions, counts)``: a run audit's reward table); ``transcript`` records every
    release (``dpverify._bandits.linear._transcripts``).
    """
    if algorithm not in ALGORITHMS:
        raise AccountingError("algorithm", algorithm, f"one of {ALGORITHMS}")
    if not isinstance(instance, LinearInstance):
        raise AccountingError("instance", instance, "a LinearInstance")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise AccountingError("seed", seed, "an integer >= 0")
    config = DPEConfig() if config is None else config
    if not isinstance(config, DPEConfig):
        raise AccountingError("config", config, "a DPEConfig")
    private = algorithm in _PRIVATE
    if private and (config.epsilon is None or config.delta is None):
        raise AccountingError("epsilon" if config.epsilon is None else "delta", None, f"a value: {algorithm} needs (epsilon, delta)")
    if not private and (config.epsilon is not None or config.delta is not None):
        raise AccountingError("epsilon", config.epsilon, f"None: {algorithm} is not private")
    if algorithm != "dpe-fixedu" and config.clients_per_phase is not None:
        raise AccountingError("clients_per_phase", config.clients_per_phase, "None except for dpe-fixedu")

    if isinstance(run_index, bool) or not isinstance(run_index, (int, np.integer)) or run_index < 0:
        raise AccountingError("run_index", run_index, "an integer >= 0")
    seed, run_index = int(seed), int(run_index)
    if streams is None:
        streams = linear_streams(seed, run_index)
    for name in ("environment", "privatizer"):
        if not isinstance(streams.get(name), np.random.SeedSequence):
            raise AccountingError(f"streams[{name!r}]", streams.get(name), "a numpy.random.SeedSequence")
    root = streams["environment"]
    fixed_from: dict | None = None
    clients_per_phase = config.clients_per_phase
    if algorithm == "dpe-fixedu" and clients_per_phase is None:
        if reference is None:
            reference = run_linear(
                "dpe", instance, seed, DPEConfig(horizon=config.horizon, alpha=config.alpha, beta=config.beta, checkpoints=config.checkpoints),
                run_index=run_index, streams=streams,
            )
        elif reference.algorithm != "dpe" or reference.seed != seed or reference.run_index != run_index:
            raise AccountingError("reference", f"{reference.algorithm} seed {reference.seed} run {reference.run_index}", f"the DPE run with seed {seed}, run {run_index}")
        clients_per_phase = fixed_client_count(reference.phases)
        fixed_from = {"rule": "U = ceil(sum |U_l| N_l / sum N_l) of the DPE run with the same seed", "dpe_reals_total": reference.communication["reals_total"]}

    ledger: Ledger | None = None
    if private:
        protocol = _PRIVATE[algorithm][config.noise](config.epsilon, config.delta, instance.reward_bound)
        ledger = Ledger(ApproxDP(config.epsilon, config.delta), name=f"{algorithm} seed {seed}")
        channel: Any = VectorPrivatizer(protocol, ledger, streams["privatizer"], path=config.path)
        if transcript is not None:
            transcript.ledger = ledger
            channel.record_to(transcript)
    else:
        protocol = None
        channel = NonPrivateAggregator(instance.reward_bound)

    clients = _Clients(instance, root) if clients is None else clients
    actions = instance.actions
    gaps = instance.gaps
    d, k, horizon = instance.d, instance.k, config.horizon
    beta = config.beta if config.beta is not None else 1.0 / (k * horizon)
    log_term = math.sqrt(2.0 * math.log(1.0 / beta))

    active = np.arange(k)
    h = 2.0
    t = 0
    l = 1
    seg_counts: list[np.ndarray] = []
    seg_gaps: list[np.ndarray] = []
    seg_actions: list[np.ndarray] = []
    eliminations: list[tuple[int, int]] = []
    phases: list[dict] = []
    reals_total = 0
    bits_per_user: list[tuple[int, int]] = []  # (users, bits each)
    while t < horizon:
        design = g_optimal_design(actions[active])
        support = active[design.support]
        counts = np.ceil(h * design.weights).astype(np.int64)
        phase_length = int(counts.sum())
        left = horizon - t
        played = counts if phase_length <= left else np.minimum(counts, np.maximum(0, left - (np.cumsum(counts) - counts)))
        seg_counts.append(played)
        seg_gaps.append(gaps[support])
        seg_actions.append(support)
        record = {
            "phase": l,
            "h": h,
            "active": int(active.size),
            "support_size": int(support.size),
            "g": design.g,
            "design_rank": design.rank,
            "length": phase_length,
            "start": t + 1,
            "clients": 0,
            "width": None,
            "sigma_n": None,
            "eliminated": 0,
        }
        if phase_length >= left:  # the horizon ends inside (or exactly at the end of) this phase
            record["length"] = int(left)
            phases.append(record)
            t = horizon
            break
        n = clients_per_phase if algorithm == "dpe-fixedu" else _clients_in_phase(l, config.alpha)
        ids = clients.sample(n)
        support_actions = actions[support]
        reports = clients.reports(l, ids, support_actions, counts)
        release = channel.release_mean(reports, ids, label=f"phase {l}")
        del reports
        y_tilde = release.estimate
        weighted = support_actions * counts[:, None]
        gram = weighted.T @ support_actions
        gram_pinv = np.linalg.pinv(gram, hermitian=True)
        theta_hat = gram_pinv @ (weighted.T @ y_tilde)
        s = int(support.size)
        if protocol is None:
            sigma_n = 0.0
        elif config.privacy_width == "paper":
            sigma_n = protocol.paper_width_sd(n, s, d)
        else:
            influence = (actions[active] @ gram_pinv @ support_actions.T) * counts[None, :]
            sigma_n = protocol.noise_sd(n, s) * float(np.sqrt(np.einsum("ij,ij->i", influence, influence)).max())
        width = (math.sqrt(2.0 * d / (n * h)) + instance.sigma / math.sqrt(n) + sigma_n) * log_term
        estimates = actions[active] @ theta_hat
        keep = estimates.max() - estimates <= 2.0 * width
        record.update(clients=n, width=width, sigma_n=sigma_n, eliminated=int((~keep).sum()))
        phases.append(record)
        reals_total += n * s
        if isinstance(protocol, ShuffleBits):  # bit messages (coordinate index + bit), not reals
            record.update(noise_bits=protocol.noise_bits(n, s), messages_per_client=protocol.messages_per_client(n, s), phase_epsilon=protocol.phase_epsilon(n, s), paper_form=protocol.paper_form(n, s, d))
            bits_per_user.append((n, protocol.bits_per_client(n, s)))
        else:
            bits_per_user.append((n, BITS_PER_REAL * s))
        t += phase_length
        eliminations.extend((int(a), t) for a in active[~keep])
        active = active[keep]
        h *= 2.0
        l += 1

    counts_all = np.concatenate(seg_counts).astype(np.float64)
    gaps_all = np.concatenate(seg_gaps)
    ends = np.concatenate([[0.0], np.cumsum(counts_all)])
    cumulative = np.concatenate([[0.0], np.cumsum(counts_all * gaps_all)])
    points = _checkpoints(horizon, config.checkpoints)
    regret = np.interp(points, ends, cumulative)

    pulls = np.bincount(np.concatenate(seg_actions), weights=counts_all, minlength=k).astype(np.int64)
    users = sum(u for u, _ in bits_per_user)
    communication = {
        "reals_total": int(reals_total),
        "bits_per_real": BITS_PER_REAL if not isinstance(protocol, ShuffleBits) else None,
        "bits_total": int(sum(u * b for u, b in bits_per_user)),
        "bits_per_user_max": max((b for _, b in bits_per_user), default=0),
        "bits_per_user_mean": (sum(u * b for u, b in bits_per_user) / users) if users else 0.0,
        "clients_total": int(users),
        "phases_with_feedback": len(bits_per_user),
    }
    if algorithm == "dpe-fixedu":
        communication["clients_per_phase"] = int(clients_per_phase)
        if fixed_from is not None:
            communication["fixed_from"] = fixed_from
    privacy: dict[str, Any] = {"model": "none", "implementation": None, "guarantee": None}
    if protocol is not None and ledger is not None:
        privacy = _privacy_report(protocol, ledger, phases)
    return LinearRunResult(
        algorithm=algorithm,
        instance=instance.describe(),
        seed=seed,
        run_index=run_index,
        config={**asdict(config), "clients_per_phase": clients_per_phase, "beta": beta, "h1": 2, "support_bound": support_bound(d)},
        checkpoints=points.tolist(),
        regret=regret.tolist(),
        final_regret=float(cumulative[-1]),
        pulls=pulls.tolist(),
        eliminations=eliminations,
        phases=phases,
        communication=communication,
        privacy=privacy,
        clients={"sampled": clients.sampled, "returning": clients.returning, "clipped_coordinates": clients.clipped, "reported_coordinates": clients.reported},
        path=channel.path,
        ledger=ledger,
    )


def _privacy_report(protocol: Any, ledger: Ledger, phases: list[dict]) -> dict:
    """The ledger's per-user spend in (eps, delta) and in zCDP, with the calibration and the trail.

    The zCDP spend composes each phase's analysed mechanism (``protocol.mechanism``: the
    float-safe phases are charged to the (eps, delta) ledger as their certified ApproxDP, which a
    zCDP ledger cannot take) over the same participants; the shuffle's charges have no zCDP form.
    ``sampler_total_variation``: how far the executed float-safe phases may be from those analysed
    mechanisms (the exact samplers' truncation, LDP-DPE's one-draw sum): zcdp_rho holds for the
    analysed laws only, and the (eps, delta) charges already pay it in delta."""
    spent = ledger.spent()
    rho = None
    # the float-safe phases' samplers are within this total variation of the analysed mechanisms whose
    # zCDP is zcdp_rho (paid in delta by the (eps, delta) charges; clients are fresh in every phase)
    sampler_tv = max((protocol.total_variation(p["clients"], p["support_size"]) for p in phases if p["clients"] > 0),
                     default=0.0) if hasattr(protocol, "grid_noise") else 0.0
    if ledger.charges and not isinstance(protocol, ShuffleBits):
        fed = [p for p in phases if p["clients"] > 0]
        zledger = Ledger(ZCDP(1e300))
        for charge, phase in zip(ledger.charges, fed):
            zledger.charge(protocol.mechanism(phase["clients"], phase["support_size"]), charge.participants, label=charge.label)
        rho = zledger.spent().rho
    return {
        **protocol.describe(),
        "guarantee": {"local": "LDP (per client, against everyone)", "shuffle": "shuffle DP (the server's view of the shuffled messages; trusted shuffler)"}.get(protocol.model, "central DP (trusted server)"),
        "budget": {"epsilon": ledger.budget.epsilon, "delta": ledger.budget.delta},
        "spent": None if spent is None else {"epsilon": spent.epsilon, "delta": spent.delta},
        "zcdp_rho": rho,
        "sampler_total_variation": sampler_tv,
        "charges": len(ledger.charges),
        "ledger": _trail(ledger),
    }


def _trail(ledger: Ledger) -> dict:
    """The ledger's JSON trail (``Ledger.to_json``: every charge here is an ApproxDP or a Gaussian)."""
    return json.loads(ledger.to_json())
