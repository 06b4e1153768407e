"""DP-DPE (Li, Zhou and Ji): private linear bandits with partial distributed feedback.

Public names are re-exported from the private modules:

- :func:`g_optimal_design`, :class:`Design`, :func:`support_bound` — near-G-optimal design;
- :class:`LinearInstance`, :func:`synthetic_instance`, :func:`mslr_linear_instance`;
- :class:`VectorPrivatizer`; the float-safe privatizers (the defaults, DP as executed)
  :class:`CentralDiscreteGaussian`, :class:`LocalDiscreteGaussian`; the paper's float ones
  :class:`CentralGaussianIdealised`, :class:`LocalGaussianIdealised` (not DP in floating point; also
  reachable under their former names ``CentralGaussian``, ``LocalGaussian``);
  :class:`NonPrivateAggregator`, :class:`ShuffleBits` (SDP-DPE), :class:`VectorRelease`, :func:`calibrate_noise_multiplier`,
  :func:`l2_sensitivity`;
- :func:`run_linear`, :class:`DPEConfig`, :class:`LinearRunResult`, :data:`ALGORITHMS`,
  :func:`fixed_client_count`;
- :func:`li_fig2`, :func:`plot_li_fig2`, :func:`make_li_fig2`, :func:`linear_streams`;
- the registration tables :data:`LINEAR_ALGORITHMS`, :data:`LINEAR_INSTANCES`, :data:`LINEAR_FIGURES`
  and :func:`register` (called at import: registers into ``dpverify._bandits._registry``).
"""

from ._design import Design, g_optimal_design, support_bound
from ._dpe import ALGORITHMS, DPEConfig, LinearRunResult, fixed_client_count, linear_streams, run_linear
from ._experiments import INSTANCES as LINEAR_INSTANCES
from ._experiments import li_fig2, make_li_fig2, plot_li_fig2
from ._instances import LinearInstance, mslr_linear_instance, synthetic_instance
from ._shuffle import ShuffleBits
from ._privatizers import (
    CentralDiscreteGaussian,
    CentralGaussian,
    CentralGaussianIdealised,
    LocalDiscreteGaussian,
    LocalGaussian,
    LocalGaussianIdealised,
    NonPrivateAggregator,
    VectorPrivatizer,
    VectorProtocol,
    VectorRelease,
    calibrate_noise_multiplier,
    l2_sensitivity,
)

from ._registration import LINEAR_ALGORITHMS, LINEAR_FIGURES, register  # noqa: E402

register()

__all__ = [
    "ALGORITHMS",
    "CentralDiscreteGaussian",
    "CentralGaussian",
    "CentralGaussianIdealised",
    "DPEConfig",
    "Design",
    "LINEAR_ALGORITHMS",
    "LINEAR_FIGURES",
    "LINEAR_INSTANCES",
    "register",
    "LinearInstance",
    "LinearRunResult",
    "LocalDiscreteGaussian",
    "LocalGaussian",
    "LocalGaussianIdealised",
    "NonPrivateAggregator",
    "ShuffleBits",
    "VectorPrivatizer",
    "VectorProtocol",
    "VectorRelease",
    "calibrate_noise_multiplier",
    "fixed_client_count",
    "g_optimal_design",
    "l2_sensitivity",
    "li_fig2",
    "linear_streams",
    "make_li_fig2",
    "mslr_linear_instance",
    "plot_li_fig2",
    "run_linear",
    "support_bound",
    "synthetic_instance",
]
