"""The user's own bandit instances: from a list of means, or from a TOML instance file.

``user_instance(means, reward="bernoulli" | "gaussian", sd=0.1)`` builds a ``BanditInstance``
(Bernoulli arms, or Gaussian arms of standard deviation ``sd`` clipped to [0, 1], as the ICLR
paper's easy/hard instances); ``load_instance_file(path)`` reads a TOML file::

    name = "my-instance"        # optional (default: the file's stem)
    reward = "bernoulli"        # or "gaussian"
    means = [0.9, 0.8, 0.5]
    sd = 0.1                    # gaussian only

or, for a linear instance (the DP-DPE family), arrays saved with ``numpy.save``, paths relative
to the TOML file::

    name = "my-linear"
    actions = "actions.npy"     # (k, d), rows in the unit ball
    theta = "theta.npy"         # (d,), norm <= 1
    sigma = 0.1                 # reward noise sd (optional)

Either object can be passed as ``RunConfig(instance=...)`` (``dpverify run --means`` /
``--instance-file``); every seed then runs on it.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any, Sequence

from accounting import AccountingError

from ._environments import ArmLaw, BanditInstance

__all__ = ["REWARD_LAWS", "load_instance_file", "parse_means", "user_instance"]

REWARD_LAWS = ("bernoulli", "gaussian")


def parse_means(text: str) -> list[float]:
    """``"0.9,0.8,0.5"`` -> [0.9, 0.8, 0.5] (the CLI's --means)."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise AccountingError("means", text, "comma-separated numbers in [0, 1], e.g. 0.9,0.8,0.5") from None
    return values


def user_instance(means: Sequence[float], reward: str = "bernoulli", sd: float = 0.1, name: str = "user") -> BanditInstance:
    """A ``BanditInstance`` with one arm per mean (module docstring); at least 2 arms, means in [0, 1]."""
    if reward not in REWARD_LAWS:
        raise AccountingError("reward", reward, f"one of {REWARD_LAWS}")
    if isinstance(means, (str, bytes)) or not hasattr(means, "__len__"):
        raise AccountingError("means", means, "a list of at least 2 numbers in [0, 1]")
    values = []
    for m in means:
        if isinstance(m, bool) or not isinstance(m, (int, float)) or not math.isfinite(m) or not 0 <= m <= 1:
            raise AccountingError("means", list(means), "at least 2 numbers in [0, 1]")
        values.append(float(m))
    if len(values) < 2:
        raise AccountingError("means", list(means), "at least 2 numbers in [0, 1]")
    if reward == "bernoulli":
        arms = tuple(ArmLaw("bernoulli", (m,)) for m in values)
        options = {"means": values, "reward": "bernoulli"}
    else:
        if isinstance(sd, bool) or not isinstance(sd, (int, float)) or not math.isfinite(sd) or not 0 < sd <= 1e6:
            raise AccountingError("sd", sd, "a reward standard deviation in (0, 1e6]")
        # the mean of the clipped law differs from the given location when it sits near 0 or 1:
        # ``means`` of the instance are the exact clipped means (recorded beside the locations)
        arms = tuple(ArmLaw("clipped-gaussian", (m, float(sd))) for m in values)
        options = {"locations": values, "reward": "gaussian clipped to [0, 1]", "sd": float(sd)}
    if not isinstance(name, str) or not name:
        raise AccountingError("name", name, "a non-empty string")
    return BanditInstance(name, arms, options)


def load_instance_file(path: str | Path) -> Any:
    """A ``BanditInstance`` or a ``LinearInstance`` from a TOML file (module docstring)."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        raise AccountingError("instance_file", str(path), "an existing TOML file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, IsADirectoryError, PermissionError) as error:
        raise AccountingError("instance_file", str(path), f"a readable TOML file ({error})") from None
    name = data.get("name", path.stem)
    if "actions" in data or "theta" in data:
        import numpy as np

        from .linear import LinearInstance

        arrays = {}
        for key in ("actions", "theta"):
            if not isinstance(data.get(key), str):
                raise AccountingError(key, data.get(key), f"the path of a .npy file (relative to {path})")
            target = (path.parent / data[key]).resolve()
            try:
                arrays[key] = np.load(target, allow_pickle=False)
            except (OSError, ValueError) as error:
                raise AccountingError(key, str(target), f"a readable .npy array ({error})") from None
        extra = {k: data[k] for k in ("sigma", "population", "reward_bound") if k in data}
        return LinearInstance(str(name), arrays["actions"], arrays["theta"], provenance={"source": str(path)}, **extra)
    unknown = set(data) - {"name", "reward", "means", "sd"}
    if unknown:
        raise AccountingError("instance_file", str(path), f"keys among name, reward, means, sd (or name, actions, theta, sigma); got {sorted(unknown)}")
    if "means" not in data:
        raise AccountingError("means", None, f"a list 'means = [...]' in {path}")
    return user_instance(data["means"], data.get("reward", "bernoulli"), data.get("sd", 0.1), str(name))
