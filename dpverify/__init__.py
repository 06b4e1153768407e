"""dpverify: the numerical layer of the toolkit.

Exact numba samplers, the papers' protocols P = (R, S, A), the privatizer that binds a protocol
to an ``accounting`` ledger, the empirical auditor, the tail-bound verifier, bandit runners and
the ``dpverify`` command line. The exact math (guarantees, conversions, composition, ledger)
lives in the sibling package :mod:`accounting`, from which every claim here is taken.
"""

from importlib import import_module
from typing import Any

# Public names are loaded on first use (PEP 562), so that ``dpverify account ...`` does not pay
# for importing numba and compiling kernels it never calls.
_SOURCES = {
    "._audit": ("DEFAULT_ORDERS", "AuditReport", "AuditResult", "NeighbourPair", "audit", "replace_one_pairs", "scalar_pairs", "statdp_pairs"),
    "._executed._privatizer": ("BatchProtocol", "Privatizer", "Release"),
    "._audit._runs": ("RunTarget", "audit_run", "run_engine", "run_pairs", "run_target"),
    "._audit._one_run": ("OneRunAudit", "one_run_audit"),  # issue 33
    "._audit._one_run_bound": ("one_run_epsilon",),
    "._audit._one_run_server": ("ServerOneRunAudit", "server_one_run_audit"),  # issue 33: server view
    "._audit._one_run_fdp": ("fdp_epsilon", "fdp_rejects", "gdp_curve"),  # issue 33: the f-DP form
    "._audit._loops": ("LoopRun", "loop_engine"),
    "._executed._noise_mechanisms": (
        "NoiseMechanism",
        "discrete_gaussian_mechanism",
        "discrete_laplace_mechanism",
        "gaussian_mechanism",
        "laplace_mechanism",
        "randomized_response_mechanism",
        "skellam_mechanism",
        "snapping_mechanism",
    ),
    "._bandits": (
        "BanditInstance",
        "LocalCurator",
        "LocalPrivatizer",
        "RunConfig",
        "RunResult",
        "algorithms",
        "easy_instance",
        "figures",
        "hard_instance",
        "instances",
        "mslr_instance",
        "ren_bernoulli_instance",
        "ren_mixed_instance",
        "run",
        "sweep",
        "ArmLaw",
        "load_instance_file",
        "user_instance",
    ),
    "._bandits.linear": (
        "CentralDiscreteGaussian",
        "CentralGaussian",
        "CentralGaussianIdealised",
        "DPEConfig",
        "LinearInstance",
        "LocalDiscreteGaussian",
        "LocalGaussian",
        "LocalGaussianIdealised",
        "VectorPrivatizer",
        "g_optimal_design",
        "mslr_linear_instance",
        "run_linear",
        "synthetic_instance",
    ),
    "._executed._protocols": (
        "CentralGridLaplaceProtocol",
        "CentralLaplaceIdealised",
        "CentralLaplaceProtocol",
        "DistributedProtocol",
        "central_dp_protocol",
        "central_laplace_protocol",
        "dist_cdp_protocol",
        "dist_dp_protocol",
        "dist_rdp_protocol",
        "local_dp_protocol",
    ),
    "._executed._kinds": ("CuratorKind", "NoiseKind", "NoiseMode", "ProtocolKind"),  # issue 30 item 6: kinds are objects
    "._executed._samplers": (
        "bernoulli",
        "bernoulli_exp",
        "binomial",
        "discrete_gaussian",
        "discrete_laplace",
        "gaussian",
        "geometric",
        "laplace",
        "polya",
        "polya_difference",
        "skellam",
    ),
}
_WHERE = {name: module for module, names in _SOURCES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'dpverify' has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_WHERE))


__all__ = sorted(_WHERE)
