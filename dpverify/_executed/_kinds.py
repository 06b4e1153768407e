"""Kinds as objects: the ICLR 2023 protocols' kinds, their randomizers' noise laws, Ren et al.'s curators.

A kind used to be a string compared in branches across the package ("dist-rdp", "polya", "ctb-s",
...). Here each is a member of a small enumeration that carries what the branches asked of it: a
protocol kind knows its theorem, whether it takes the scale s, its per-user and summed noise, its
batch noise law and whether it reveals each user's message; a noise kind knows its kernel codes; a
curator kind knows whether it adds Laplace noise, answers in one bit, or squashes its input.

Strings are accepted at the public door only (constructor arguments, CLI flags, TOML audit and claim
files): ``Kind.parse(value, parameter)`` turns one into its member once, or raises ``ValueError``
(``accounting.AccountingError``) naming the parameter, the value and the allowed kinds. Inside, code
asks the member (attributes, ``is``) and never compares strings.

Members are ``StrEnum`` members: ``str(kind)``, ``f"{kind}"`` and JSON print exactly the strings they
replace (every report, ledger entry and JSON document reads as before), their ``repr`` is the
string's (error messages and dataclass reprs read as before), and a caller's own
``protocol.kind == "ldp"`` keeps its meaning.
"""

from __future__ import annotations

import enum
from enum import StrEnum
from typing import Any

from accounting import AccountingError

__all__ = ["BatchNoise", "CuratorKind", "NoiseKind", "NoiseMode", "ProtocolKind"]


class _Kind(StrEnum):
    """A kind: a member of a closed set of names, parsed once at the public door."""

    @classmethod
    def parse(cls, value: Any, parameter: str) -> Any:
        """The member named ``value`` (a member is returned as is); ``ValueError`` naming ``parameter``,
        the value and the allowed kinds otherwise."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            try:
                return cls(value)
            except ValueError:
                pass
        raise AccountingError(parameter, value, f"one of {cls.names()}")

    def __repr__(self) -> str:
        # the name's repr: error messages (``AccountingError`` shows value!r) and the reprs of the
        # frozen dataclasses that hold a kind read exactly as they did when the kind was the string
        return repr(self._value_)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The kinds' names, in their order (as the error messages list them)."""
        return tuple(member.value for member in cls)


class NoiseKind(_Kind):
    """The per-user noise eta of the randomizer R (``_protocol_kernels``), by theorem.

    ``code``: the per-user kernels' integer code; ``summed_code``: the one-draw summed-noise kernels'
    code, None where the sum of the users' noise has no one-draw sampler (a sum of discrete
    Gaussians is not discrete Gaussian; a sum of Polya differences is drawn as its Lap_Z total)."""

    code: int
    summed_code: int | None

    def __new__(cls, value: str, code: int, summed_code: int | None) -> "NoiseKind":
        member = str.__new__(cls, value)
        member._value_ = value
        member.code = code
        member.summed_code = summed_code
        return member

    NONE = "none", 0, 0
    POLYA = "polya", 1, None
    SKELLAM = "skellam", 2, 2
    DISCRETE_GAUSSIAN = "discrete_gaussian", 3, None
    DISCRETE_LAPLACE = "discrete_laplace", 4, 1

    @classmethod
    def summed(cls) -> tuple["NoiseKind", ...]:
        """The kinds with a one-draw sampler of the summed noise, in their kernel-code order."""
        return tuple(sorted((k for k in cls if k.summed_code is not None), key=lambda k: k.summed_code))


class BatchNoise(enum.Enum):
    """The law of a batch's summed noise, which fixes the theorem's parameters, the accounted
    mechanism, the Assumption 1 constants and the tail verifier's law."""

    #: one Lap_Z(b) for the batch (Theorems 1 and 5)
    DISCRETE_LAPLACE = "Lap_Z(g/eps)"
    #: one Sk(0, mu) for the batch (Theorem 2)
    SKELLAM = "Sk(0, g^2/eps^2)"
    #: n discrete Gaussians N_Z(0, sigma^2), one per user (Theorem 4)
    DISCRETE_GAUSSIAN_SUM = "sum of n N_Z(0, g^2/(n eps^2))"
    #: n discrete Laplace draws Lap_Z(b), one per user (Theorem 6)
    DISCRETE_LAPLACE_SUM = "sum of n Lap_Z(g/eps)"


class ProtocolKind(_Kind):
    """A batch protocol of ICLR 2023 (Chowdhury & Zhou), Algorithm 1 (``dpverify._executed._protocols``).

    ``theorem``: the paper's theorem; ``scaled``: whether it takes the scale s (Theorems 2 and 4);
    ``distributed``: the users add the noise under secure aggregation (the analyzer's underflow
    correction applies); ``per_user_noise``: each user's eta (NONE: the central model's users send
    xhat); ``summed_noise``: the one-draw law of the summed noise (the aggregate path), None where
    there is none; ``batch_noise``: the summed noise's law; ``reveals_messages``: the local model,
    whose every message is an output; ``title``: the paper's name of the protocol."""

    theorem: int
    scaled: bool
    distributed: bool
    per_user_noise: NoiseKind
    summed_noise: NoiseKind | None
    batch_noise: BatchNoise
    reveals_messages: bool
    title: str

    def __new__(cls, value: str, theorem: int, scaled: bool, distributed: bool, per_user_noise: NoiseKind,
                summed_noise: NoiseKind | None, batch_noise: BatchNoise, title: str) -> "ProtocolKind":
        member = str.__new__(cls, value)
        member._value_ = value
        member.theorem = theorem
        member.scaled = scaled
        member.distributed = distributed
        member.per_user_noise = per_user_noise
        member.summed_noise = summed_noise
        member.batch_noise = batch_noise
        member.reveals_messages = not distributed and per_user_noise is not NoiseKind.NONE
        member.title = title
        return member

    DIST_DP = ("dist-dp", 1, False, True, NoiseKind.POLYA, NoiseKind.DISCRETE_LAPLACE, BatchNoise.DISCRETE_LAPLACE, "Dist-DP-SE")
    DIST_RDP = ("dist-rdp", 2, True, True, NoiseKind.SKELLAM, NoiseKind.SKELLAM, BatchNoise.SKELLAM, "Dist-RDP-SE")
    DIST_CDP = ("dist-cdp", 4, True, True, NoiseKind.DISCRETE_GAUSSIAN, None, BatchNoise.DISCRETE_GAUSSIAN_SUM, "Dist-CDP-SE")
    CDP = ("cdp", 5, False, False, NoiseKind.NONE, NoiseKind.DISCRETE_LAPLACE, BatchNoise.DISCRETE_LAPLACE, "CDP-SE")
    LDP = ("ldp", 6, False, False, NoiseKind.DISCRETE_LAPLACE, None, BatchNoise.DISCRETE_LAPLACE_SUM, "LDP-SE")

    @property
    def aggregate_path(self) -> bool:
        """Whether the protocol offers the aggregate path (its summed noise drawn once, the same law)."""
        return self.summed_noise is not None

    @property
    def pure(self) -> bool:
        """Whether the theorem's guarantee is pure eps-DP (Theorems 1, 5, 6); else RDP (2) or zCDP (4)."""
        return self.batch_noise in (BatchNoise.DISCRETE_LAPLACE, BatchNoise.DISCRETE_LAPLACE_SUM)


class CuratorKind(_Kind):
    """A local randomizer of Ren et al. (LDP-UCB, ``dpverify._bandits._ucb.LocalCurator``).

    ``private``: it randomises (all but ``identity``, non-private UCB1); ``laplace``: it adds
    Laplace noise (CTL, CTL-S); ``binary``: it answers one bit, randomised response on
    Bernoulli(reward) (CTB, CTB-S); ``squashed``: the reward passes through the sigmoid first (-S)."""

    private: bool
    laplace: bool
    binary: bool
    squashed: bool

    def __new__(cls, value: str, laplace: bool, binary: bool, squashed: bool) -> "CuratorKind":
        member = str.__new__(cls, value)
        member._value_ = value
        member.private = laplace or binary
        member.laplace = laplace
        member.binary = binary
        member.squashed = squashed
        return member

    IDENTITY = "identity", False, False, False
    CTL = "ctl", True, False, False
    CTB = "ctb", False, True, False
    CTL_S = "ctl-s", True, False, True
    CTB_S = "ctb-s", False, True, True


class NoiseMode(_Kind):
    """How a privatizer draws its continuous noise (``dpverify._executed._noise``): ``float-safe`` (exact integer
    samplers on a grid: DP as executed) or ``idealised`` (the papers' float Laplace/Gaussian: not DP in
    floating point, labelled)."""

    idealised: bool

    def __new__(cls, value: str, idealised: bool) -> "NoiseMode":
        member = str.__new__(cls, value)
        member._value_ = value
        member.idealised = idealised
        return member

    FLOAT_SAFE = "float-safe", False
    IDEALISED = "idealised", True
