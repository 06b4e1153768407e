"""Near-G-optimal design (DP-DPE, Algorithm 1 line 4): g(pi) <= 2d and |supp(pi)| <= 4 d log log d + 16.

Every check recomputes g from the returned weights with a plain reference implementation
(``naive_g``), independent of the Frank-Wolfe code's incremental updates.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpverify._bandits.linear import Design, g_optimal_design, mslr_linear_instance, support_bound, synthetic_instance


def naive_g(actions: np.ndarray, support: np.ndarray, weights: np.ndarray) -> float:
    """max_x x^T V(pi)^+ x over all actions, V(pi) = sum pi(x) x x^T, by a direct sum and pinv."""
    v = np.zeros((actions.shape[1], actions.shape[1]))
    for index, weight in zip(support, weights):
        v += weight * np.outer(actions[index], actions[index])
    vinv = np.linalg.pinv(v)
    return max(float(x @ vinv @ x) for x in actions)


def check_design(actions: np.ndarray, design: Design) -> None:
    d = actions.shape[1]
    rank = np.linalg.matrix_rank(actions)
    assert design.rank == rank
    assert design.weights.min() > 0
    assert math.isclose(design.weights.sum(), 1.0, rel_tol=1e-12)
    assert np.unique(design.support).size == design.support.size
    g = naive_g(actions, design.support, design.weights)
    assert g <= 2 * rank * (1 + 1e-9) <= 2 * d * (1 + 1e-9)
    assert g >= rank * (1 - 1e-9)  # Kiefer-Wolfowitz: no design beats r
    assert design.size <= support_bound(d)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("shape", [(1000, 20), (200, 10), (50, 3)])
def test_random_instances_meet_both_bounds(seed: int, shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    x /= np.maximum(1.0, np.linalg.norm(x, axis=1, keepdims=True))
    check_design(x, g_optimal_design(x))


def test_paper_instances_meet_both_bounds() -> None:
    for instance in (synthetic_instance(), mslr_linear_instance()):
        design = g_optimal_design(instance.actions)
        check_design(instance.actions, design)
        assert design.size <= 4 * 20 * math.log(math.log(20)) + 16  # 103.8


def test_rank_deficient_action_sets() -> None:
    rng = np.random.default_rng(7)
    basis = np.linalg.qr(rng.standard_normal((12, 3)))[0]
    x = rng.standard_normal((80, 3)) @ basis.T  # 80 points in a 3-dim subspace of R^12
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    design = g_optimal_design(x)
    check_design(x, design)
    assert design.rank == 3
    single = g_optimal_design(x[:1])
    assert single.size == 1 and math.isclose(single.g, 1.0, rel_tol=1e-9)


@settings(max_examples=40, deadline=None)
@given(
    k=st.integers(1, 60),
    d=st.integers(1, 8),
    seed=st.integers(0, 2**32 - 1),
    duplicate=st.booleans(),
)
def test_design_bounds_property(k: int, d: int, seed: int, duplicate: bool) -> None:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, size=(k, d))
    if duplicate:
        x = np.vstack([x, x[: max(1, k // 2)]])
    x /= np.maximum(1.0, np.linalg.norm(x, axis=1, keepdims=True))
    if not np.any(x):
        return
    check_design(x, g_optimal_design(x))


def test_tighter_target_is_honoured() -> None:
    x = synthetic_instance().actions
    design = g_optimal_design(x, target_factor=1.5)
    assert naive_g(x, design.support, design.weights) <= 1.5 * 20 * (1 + 1e-9)


def test_wrong_designs_are_rejected_by_the_checker() -> None:
    """The checks above can fail: the uniform design breaks the support bound, a d-point design breaks g."""
    x = synthetic_instance().actions
    uniform = Design(np.arange(x.shape[0]), np.full(x.shape[0], 1 / x.shape[0]), 0.0, 20, 20, 0)
    with pytest.raises(AssertionError):
        check_design(x, uniform)
    top = np.argsort(-np.abs(x[:, 0]))[:20]
    few = Design(top, np.full(20, 1 / 20), 0.0, 20, 20, 0)
    with pytest.raises(AssertionError):
        check_design(x, few)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"actions": np.zeros((0, 3))}, "actions"),
        ({"actions": np.array([1.0, 2.0])}, "actions"),
        ({"actions": np.array([[np.nan, 0.0]])}, "actions"),
        ({"actions": np.zeros((4, 2))}, "actions"),
        ({"actions": np.eye(3), "target_factor": 0.5}, "target_factor"),
        ({"actions": np.eye(3), "max_iterations": 0}, "max_iterations"),
    ],
)
def test_bad_input_names_the_parameter(kwargs: dict, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        g_optimal_design(**kwargs)
