"""The privatizer: a protocol bound to a ledger, the only road from raw rewards to a learner.

A :class:`Privatizer` holds a batch protocol (:class:`BatchProtocol`: randomizer, shuffler or
secure aggregation, analyzer), an ``accounting.Ledger`` and its own random stream (spawned from
the run's ``SeedSequence``). :meth:`Privatizer.release_sum` charges the ledger for the batch's
per-user guarantee *first* — a refused charge raises ``BudgetExceeded`` before any noise is
drawn or any statistic computed — then runs the protocol and returns only the analyzer's
estimate. Learners are handed privatizers (or a feedback object built on them); they never hold
a sampler, an RNG that touches private data, the raw rewards or the noise.

The guarantee charged is the one object the accountant computes for the protocol at that batch
size (``protocol.mechanism(n)``): the same object the auditor tests and the report prints.

Idealised protocols. A protocol whose ``idealised`` attribute is true draws float Laplace or
Gaussian noise (the papers' mechanisms, not DP in floating point: ``dpverify._executed._noise``). Its charges
are labelled "idealised: not DP in floating point", and a durable ledger (one that outlives the run
and is read as a record of DP spending) refuses them unless the caller passes
``allow_idealised_charges=True`` (:func:`check_idealised_charges`; the CLI's
``--allow-idealised-charges``).
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from accounting import DurableLedger, Ledger, AccountingError

from ._noise import IDEALISED_LABEL

__all__ = ["AccountedReleaser", "BatchProtocol", "Privatizer", "Release", "check_idealised_charges", "private_stream"]


def private_stream(seed: np.random.SeedSequence) -> np.random.Generator:
    """A privatizer's own random stream: the one generator that touches private data (the only place
    privatizers make one, so that tests can watch every draw a privatizer makes)."""
    return np.random.Generator(np.random.PCG64(seed))


def check_idealised_charges(mechanism: Any, idealised: bool, ledger: Ledger, allow: bool) -> None:
    """Refuse an idealised (float-noise) privatizer on a durable ledger unless ``allow`` (``mechanism``:
    the protocol or curator, named in the refusal by its ``describe()``).

    A durable ledger is the record other runs and auditors read as DP spending; float Laplace or
    Gaussian noise is not DP as executed, so recording its charges there needs an explicit opt-in.
    In-memory ledgers (one run's own accounting) take them, labelled.
    """
    if idealised and isinstance(ledger, DurableLedger) and not allow:
        raise AccountingError(
            "allow_idealised_charges", allow,
            "True to record an idealised privatizer's charges in a durable ledger",
            f"{mechanism.describe()} ({IDEALISED_LABEL}); use the float-safe default, or pass allow_idealised_charges=True "
            "(--allow-idealised-charges) to record its charges anyway",
        )


@dataclass(frozen=True)
class Release:
    """What a privatizer hands back: the analyzer's estimate of the batch's reward sum."""

    estimate: float
    n: int
    path: str


class BatchProtocol(ABC):
    """A private protocol for the sum of a batch of rewards in [0, 1]."""

    #: short name, e.g. "dist-dp" (Theorem 1)
    name: str = "protocol"
    #: True for a protocol that draws float Laplace/Gaussian noise (not DP in floating point)
    idealised: bool = False

    def mechanism(self, n: int) -> Any:
        """The ``accounting`` mechanism of one batch of ``n`` users: what the ledger is charged per user,
        the auditor tests and the report prints. Every protocol defines it.

        (A subclass written before the rename that defines only :meth:`guarantee` still works: its
        ``guarantee`` is used, with a ``DeprecationWarning``.)"""
        if type(self).guarantee is not BatchProtocol.guarantee:
            warnings.warn(
                f"{type(self).__name__} defines guarantee(n): rename it mechanism(n) (it returns the batch's mechanism)",
                DeprecationWarning,
                stacklevel=2,
            )
            return self.guarantee(n)
        raise NotImplementedError(f"{type(self).__name__} must define mechanism(n)")

    def guarantee(self, n: int) -> Any:
        """Deprecated name of :meth:`mechanism` (it returns a mechanism, not a guarantee): warns and forwards."""
        warnings.warn(
            "protocol.guarantee(n) is deprecated: use protocol.mechanism(n) (it returns the batch's accounting mechanism)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.mechanism(n)

    @abstractmethod
    def estimate_sum(self, rewards: np.ndarray, rng: np.random.Generator, *, path: str = "per-user") -> float:
        """Run R, S, A on ``rewards`` and return the analyzer's estimate of their sum."""

    @abstractmethod
    def assumption1(self, n: int, p: float) -> tuple[float, float]:
        """Constants (sigma, h) for which the protocol claims Assumption 1 at batch size n, confidence p."""

    def aggregate_resolution(self, n: int) -> int | None:
        """The rounding resolution g if the protocol's output depends on a batch of ``n`` users only
        through sum_i xhat_i and its summed noise has a one-draw sampler (the fast aggregate path,
        :meth:`estimate_from_rounded_sum`); None otherwise."""
        return None

    def estimate_from_rounded_sum(self, xhat_sum: int, n: int, rng: np.random.Generator) -> float:
        """The analyzer's estimate given the users' rounded sum (only where :meth:`aggregate_resolution` is not None)."""
        raise AccountingError("protocol", self.describe(), "a protocol with an aggregate resolution g (see aggregate_resolution)")

    def describe(self) -> str:
        return self.name


def _check_rewards(rewards: Any) -> np.ndarray:
    array = np.asarray(rewards, dtype=np.float64)
    if array.ndim != 1 or array.size == 0:
        raise AccountingError("rewards", f"array of shape {array.shape}", "a non-empty 1-D array of rewards")
    if not np.all((array >= 0) & (array <= 1)):  # one pass; NaN and inf fail both comparisons
        bad = array[~(np.isfinite(array) & (array >= 0) & (array <= 1))][:3]
        raise AccountingError("rewards", bad.tolist(), "rewards in [0, 1] (no NaN); clip in the environment, visibly, if the model needs it")
    return array


class AccountedReleaser:
    """What every privatizer shares: a protocol, a ledger, its own random stream, a path, and the
    rule that the ledger is charged before anything is computed from private data."""

    __slots__ = ("_protocol", "_ledger", "_rng", "_path", "_released", "_label_suffix", "_transcript")

    #: the protocol type a subclass accepts, and how errors name it
    protocol_type: type = object
    protocol_name: str = "a protocol"

    def __init__(self, protocol: Any, ledger: Ledger, seed: np.random.SeedSequence, *, path: str = "per-user",
                 allow_idealised_charges: bool = False) -> None:
        if not isinstance(protocol, self.protocol_type):
            raise AccountingError("protocol", protocol, self.protocol_name)
        if not isinstance(ledger, Ledger):
            raise AccountingError("ledger", ledger, "an accounting.Ledger")
        if not isinstance(seed, np.random.SeedSequence):
            raise AccountingError("seed", seed, "a numpy.random.SeedSequence (spawned from the run's seed)")
        if path not in ("per-user", "aggregate"):
            raise AccountingError("path", path, "'per-user' or 'aggregate'")
        idealised = bool(getattr(protocol, "idealised", False))
        check_idealised_charges(protocol, idealised, ledger, allow_idealised_charges)
        self._protocol = protocol
        self._ledger = ledger
        self._rng = private_stream(seed)
        self._path = path
        self._released = 0
        self._label_suffix = f" [{IDEALISED_LABEL}]" if idealised else ""
        self._transcript: Any = None

    def record_to(self, transcript: Any) -> None:
        """Record every release into ``transcript`` (``dpverify._bandits._transcripts``): it draws the
        release itself, with this privatizer's stream, exactly as the protocol would (tested), and
        keeps the server's view of it. ``None`` stops recording."""
        self._transcript = transcript

    @property
    def protocol(self) -> Any:
        return self._protocol

    @property
    def ledger(self) -> Ledger:
        return self._ledger

    @property
    def path(self) -> str:
        return self._path

    @property
    def releases(self) -> int:
        return self._released

    @property
    def label_suffix(self) -> str:
        """What every charge label of this privatizer ends with: " [idealised: not DP in floating point]"
        for an idealised protocol, else nothing."""
        return self._label_suffix

    def _charge(self, guarantee: Any, participants: range | np.ndarray | None, n: int, label: str) -> None:
        """Charge the ledger for a release to ``n`` users (raises BudgetExceeded, changing nothing)."""
        if participants is not None and len(participants) != n:
            raise AccountingError("participants", f"{len(participants)} users", f"one user per report ({n})")
        self._ledger.charge(guarantee, participants, label=label + self._label_suffix)
        self._released += 1

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._protocol.describe()}, path={self._path}, releases={self._released}, {self._ledger!r})"


class Privatizer(AccountedReleaser):
    """A batch protocol bound to a ledger: charges first, then releases; refuses once the budget is spent."""

    __slots__ = ()
    protocol_type = BatchProtocol
    protocol_name = "a BatchProtocol"

    def release_sum(self, rewards: Any, participants: range | np.ndarray | None, *, label: str = "") -> Release:
        """Charge the ledger for this batch, then return the protocol's private estimate of sum(rewards)."""
        array = _check_rewards(rewards)
        n = array.size
        self._charge(self._protocol.mechanism(n), participants, n, label)
        if self._transcript is None:
            estimate = self._protocol.estimate_sum(array, self._rng, path=self._path)
        else:
            estimate = self._transcript.observe(self._protocol, array, self._rng, self._path, label)
        return Release(float(estimate), n, self._path)

    def release_rounded_sum(self, xhat_sum: int, n: int, participants: range | np.ndarray | None, *, label: str = "") -> Release:
        """The aggregate path: charge the ledger for ``n`` users, then estimate from their rounded sum.

        ``xhat_sum`` is sum_i xhat_i, the users' randomised roundings at the protocol's resolution
        ``g = protocol.aggregate_resolution(n)`` — what secure aggregation would add up before the
        noise; the trusted side (the simulated users) draws it. Only the estimate comes back.
        """
        if self._path != "aggregate":
            raise AccountingError("path", self._path, "'aggregate' for release_rounded_sum (use release_sum on the per-user path)")
        g = self._protocol.aggregate_resolution(n)
        if g is None:
            raise AccountingError("protocol", self._protocol.describe(), "a protocol with a one-draw aggregate path (dist-dp, dist-rdp, cdp)")
        if isinstance(xhat_sum, bool) or not isinstance(xhat_sum, (int, np.integer)) or not 0 <= xhat_sum <= n * g:
            raise AccountingError("xhat_sum", xhat_sum, f"an integer in [0, n g] = [0, {n * g}]")
        self._charge(self._protocol.mechanism(n), participants, n, label)
        estimate = self._protocol.estimate_from_rounded_sum(int(xhat_sum), n, self._rng)
        return Release(float(estimate), n, self._path)
