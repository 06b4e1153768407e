"""The ``dpverify`` command line: ``account``, ``audit``, ``tails``, ``run`` and ``reproduce``.

Output conventions: a readable table on stdout by default; ``--json`` prints one JSON object
instead (and nothing else on stdout). Exit codes: 0 success, 1 a finding (a violated claim, an
over-budget answer), 2 a usage error or bad parameter (the error message names the parameter,
the value and the allowed range; an output path that cannot be written is refused before the
work), 130 interrupted (Ctrl-C: the workers are stopped, one line on stderr, no output file
written in part). Tables are printed whole in pipes and logs (no 80-column cut); a spinner or a
bar shows progress on stderr when it is a terminal, nothing otherwise. Running ``dpverify`` with
no command runs the built-in default: the returning-users table of the ICLR paper's Dist-RDP-SE.
"""

from __future__ import annotations

import contextlib
import math
import sys
from typing import Any, Callable, Iterator

import click

from ._cli._cmd_routes import TIME_BUDGET_HELP, print_route_table, route_rows
from ._cli._cmd_tradeoff import tradeoff_options
from ._presentation._console import busy as _busy
from ._presentation._console import emit as _emit
from ._presentation._console import print_table as _print_table
from ._presentation._json import jsonable

__all__ = ["main"]


# ---- mechanism families the CLI can build -------------------------------------------------------

# family -> (builder from the option dict, required options, noise option calibrated by `calibrate`)
def _families() -> dict[str, tuple[Callable[[dict], Any], tuple[str, ...], str]]:
    import accounting as acc

    return {
        "skellam": (
            lambda o: acc.Skellam(variance=o["variance"], l1_sensitivity=o["sensitivity"], l2_sensitivity=o["sensitivity"]),
            ("variance", "sensitivity"),
            "variance",
        ),
        "discrete-gaussian": (
            lambda o: acc.DiscreteGaussian(sigma=o["sigma"], sensitivity=o["sensitivity"]),
            ("sigma", "sensitivity"),
            "sigma",
        ),
        "discrete-gaussian-sum": (
            lambda o: acc.DiscreteGaussianSum(n=o["n"], sigma=o["sigma"], sensitivity=o["sensitivity"]),
            ("n", "sigma", "sensitivity"),
            "sigma",
        ),
        "discrete-laplace": (
            lambda o: acc.DiscreteLaplace(scale=o["scale"], sensitivity=o["sensitivity"]),
            ("scale", "sensitivity"),
            "scale",
        ),
        "laplace": (
            lambda o: acc.Laplace(scale=o["scale"], sensitivity=o["sensitivity"]),
            ("scale", "sensitivity"),
            "scale",
        ),
        "gaussian": (
            lambda o: acc.Gaussian(sigma=o["sigma"], sensitivity=o["sensitivity"]),
            ("sigma", "sensitivity"),
            "sigma",
        ),
        "randomized-response": (
            lambda o: acc.RandomizedResponse(epsilon=o["epsilon"]),
            ("epsilon",),
            "epsilon",
        ),
    }


_CONTINUOUS_SENSITIVITY = {"laplace", "gaussian"}

# No table of "supported" noise ranges: each mechanism validates its parameters, and an evaluation
# whose enclosure loses all precision (an Arb ball that is NaN) or overflows is refused with exit 2
# naming every parameter (_refusal). Routes that fail are reported as failed while the others answer.
_MAX_SENSITIVITY = 2**53


_MAX_SHARES = 2**20


def _check_supported(family: str, values: dict) -> None:
    """Refuse sizes that would run for minutes before any check can: more than 2^20 summed shares
    (the sum's law is evaluated share by share) or a sensitivity beyond 2^53."""
    shares = values.get("n")
    if isinstance(shares, int) and not isinstance(shares, bool) and shares > _MAX_SHARES:
        raise click.BadParameter(f"n={shares!r} is invalid: expected at most 2^20 = {_MAX_SHARES} summed shares", param_hint="--n")
    sensitivity = values.get("sensitivity")
    if isinstance(sensitivity, (int, float)) and not isinstance(sensitivity, bool) and abs(sensitivity) > _MAX_SENSITIVITY:
        raise click.BadParameter(f"sensitivity={sensitivity!r} is invalid: expected at most 2^53 = {_MAX_SENSITIVITY}", param_hint="--sensitivity")


def _mechanism_options(function: Callable) -> Callable:
    options = [
        click.option("--variance", type=float, help="Skellam variance mu."),
        click.option("--sigma", type=float, help="(Discrete) Gaussian sigma."),
        click.option("--scale", type=float, help="(Discrete) Laplace scale b."),
        click.option("--sensitivity", type=str, default="1", show_default=True, help="Sensitivity Delta (an integer for discrete mechanisms)."),
        click.option("--n", "n", type=int, help="Number of summed noise shares (discrete-gaussian-sum)."),
        click.option("--epsilon", type=float, help="Randomized-response epsilon."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def _parse_sensitivity(family: str, text: str) -> int | float:
    try:
        return float(text) if family in _CONTINUOUS_SENSITIVITY else int(text)
    except ValueError:
        kind = "a real number" if family in _CONTINUOUS_SENSITIVITY else "an integer (discrete mechanism)"
        raise click.BadParameter(f"sensitivity={text!r} is invalid: expected {kind}", param_hint="--sensitivity")


def _refusal(error: Exception, **given: Any) -> click.BadParameter:
    """The exit-2 error for a failed evaluation: a ValueError says what it refused; a numeric
    failure (Arb lost all precision, an overflow, no memory) names every parameter given."""
    if isinstance(error, ValueError):
        return click.BadParameter(str(error))
    shown = ", ".join(f"{k}={v!r}" for k, v in given.items() if v is not None and v != ())
    return click.BadParameter(
        f"{shown} is invalid: expected parameters inside the range the certified evaluation supports "
        f"({type(error).__name__}: {error}); try less extreme values"
    )


_FAILURES = (ValueError, ArithmeticError, MemoryError, RecursionError)


def _build(family: str, options: dict) -> Any:
    families = _families()
    if family not in families:
        raise click.BadParameter(f"mechanism={family!r} is invalid: expected one of {', '.join(families)}", param_hint="MECHANISM")
    builder, required, _ = families[family]
    values = dict(options)
    values["sensitivity"] = _parse_sensitivity(family, options["sensitivity"])
    missing = [name for name in required if values.get(name) is None]
    if missing:
        raise click.UsageError(f"mechanism {family!r} needs " + ", ".join(f"--{m}" for m in missing))
    _check_supported(family, values)
    try:
        return builder(values)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


# ---- commands -----------------------------------------------------------------------------------


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """Ctrl-C stops the command cleanly: the workers at once, then one line on stderr, exit 130.

    A terminal's Ctrl-C sends SIGINT to every process of the foreground group, the pool workers
    included; each then printed its own KeyboardInterrupt traceback, the parent waited in
    ``executor.shutdown`` for the tasks under way, and click turned the interrupt into exit 1
    (the gate's "violated" code). Here, while a command runs:

    - every child process starts with SIGINT blocked (the mask is inherited through fork and
      exec, by fork and spawn pools alike), so a worker never sees the terminal's Ctrl-C;
    - the parent's SIGINT handler terminates its live children first and only then raises
      ``KeyboardInterrupt``, so the pool is broken and the unwinding does not wait for tasks;
    - :class:`_LazyGroup` turns the ``KeyboardInterrupt`` into one line and exit 130 (128 + SIGINT).
    Output files are written atomically (``_output``), so an interrupted command leaves no
    half-written file. Outside the main thread (an embedding application) nothing is changed.
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    from multiprocessing import active_children
    from multiprocessing.process import BaseProcess

    original_start = BaseProcess.start

    def start(self: BaseProcess) -> None:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            original_start(self)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)

    def on_interrupt(signum: int, frame: Any) -> None:
        for child in active_children():
            with contextlib.suppress(Exception):
                child.terminate()
        raise KeyboardInterrupt

    BaseProcess.start = start  # type: ignore[method-assign]
    signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        BaseProcess.start = original_start  # type: ignore[method-assign]


class _LazyGroup(click.Group):
    """A group whose heavier commands are imported only when used (numba, the bandit runners)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with _interruptible():
                return super().invoke(ctx)
        except KeyboardInterrupt:
            sys.stdout.flush()
            click.echo("dpverify: interrupted; workers stopped, no output file written in part (outputs are atomic)", err=True)
            sys.exit(130)

    _lazy = {
        "audit": ("dpverify._cli._cmd_audit", "audit_command"),
        "tails": ("dpverify._cli._cmd_tails", "tails"),
        "run": ("dpverify._cli._cmd_bandits", "run_command"),
        "reproduce": ("dpverify._cli._cmd_bandits", "reproduce_command"),
        "ledger": ("dpverify._cli._cmd_ledger", "ledger_group"),
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self._lazy))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self._lazy:
            from importlib import import_module

            module, attribute = self._lazy[name]
            return getattr(import_module(module), attribute)
        return super().get_command(ctx, name)


@click.group(cls=_LazyGroup, invoke_without_command=True)
@click.version_option(package_name="dpverify")
@click.pass_context
def main(ctx: click.Context) -> None:
    """dpverify: exact privacy accounting, auditing and accounted runs of private bandits.

    With no command, prints the built-in default: the (eps, delta) guarantee of the ICLR 2023
    paper's Dist-RDP-SE when users return to several batches, by three routes.
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(returning)


@main.group()
def account() -> None:
    """Exact privacy accounting: RDP curves, (eps, delta) after composition, calibration."""


@account.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("mechanism")
@_mechanism_options
@click.option("--alpha", "alphas", type=float, multiple=True, required=True, help="Renyi orders: --alpha 2 10 100, or repeat --alpha.")
@click.option("--precision", type=int, default=None, help="Arb working precision in bits (default 96).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_context
def curve(ctx: click.Context, mechanism: str, alphas: tuple[float, ...], precision: int | None, as_json: bool, **options: Any) -> None:
    """The exact (certified) RDP curve of MECHANISM at the given orders, beside its closed forms."""
    import accounting as acc

    # `--alpha 2 10 100` leaves 10 and 100 as extra arguments: read them as further orders.
    extra = []
    for token in ctx.args:
        try:
            extra.append(float(token))
        except ValueError:
            raise click.UsageError(f"unexpected argument {token!r} (orders go after --alpha)") from None
    alphas = tuple(alphas) + tuple(extra)
    mech = _build(mechanism, options)
    try:
        with _busy("evaluating the RDP curve"):
            exact = mech.rdp().evaluate(alphas, precision=precision)
    except _FAILURES as error:
        raise _refusal(error, mechanism=mechanism, alpha=alphas, precision=precision, **options) from None
    from accounting.internal import rdp_provenance

    routes = [rdp_provenance(mech, a, precision) for a in alphas]
    closed: dict[str, list] = {}
    try:
        forms = mech.closed_forms()
    except _FAILURES:  # a printed bound that cannot be formed at these parameters (e.g. its rho overflows): not shown
        forms = {}
    for label, bound in forms.items():
        try:
            if isinstance(bound, acc.RDP):
                closed[label] = [jsonable(v) for v in bound.evaluate(alphas)]
            elif isinstance(bound, (acc.ZCDP, acc.PureDP)):
                closed[label] = [jsonable(bound.to_rdp()(a)) for a in alphas]
        except _FAILURES:
            continue
    payload = {
        "mechanism": mechanism,
        "description": mech.describe(),
        "alphas": list(alphas),
        "rdp": [jsonable(v) for v in exact],
        "rdp_direction": "certified upper bound of the exact Renyi divergence",
        "rdp_routes": routes,
        "closed_forms": closed,
        "precision_bits": precision or acc.DEFAULT_PRECISION,
    }

    def table() -> None:
        from rich.table import Table

        t = Table(title=f"RDP of {mech.describe()}",
                  caption="certified = an upper bound in Arb, by the route named beside it (the exact value where it says so); closed forms for comparison")
        t.add_column("alpha", justify="right")
        t.add_column("certified", justify="right", style="bold")
        t.add_column("by")
        for label in closed:
            t.add_column(label, justify="right")
        for i, alpha in enumerate(alphas):
            t.add_row(f"{alpha:g}", f"{exact[i]:.8g}", routes[i], *(f"{closed[l][i]:.8g}" if isinstance(closed[l][i], float) else closed[l][i] for l in closed))
        _print_table(t)

    _emit(as_json, payload, table)




@account.command()
@click.argument("mechanism")
@_mechanism_options
@click.option("--compose", type=int, default=1, show_default=True, help="Number of releases to the same user (k-fold composition, or B returns).")
@click.option("--delta", type=float, required=True, help="Target delta in (0, 1).")
@click.option("--no-pld", is_flag=True, help="Skip the privacy-loss-distribution routes.")
@click.option("--time-budget", type=float, default=10.0, show_default=True, help=TIME_BUDGET_HELP)
@click.option("--all-routes", is_flag=True, help="Run every route that fits the budget, even after an exact route answered.")
@tradeoff_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def epsilon(mechanism: str, compose: int, delta: float, no_pld: bool, time_budget: float, all_routes: bool, tradeoff: bool, fprs: tuple[float, ...],
            points: int, plot_path: str | None, as_json: bool, **options: Any) -> None:
    """The smallest certified eps at DELTA after COMPOSE releases of MECHANISM, by every route;
    with --tradeoff also the certified trade-off curve (TPR at each --fpr, the attack advantage)."""
    import accounting as acc

    from ._cli._cmd_tradeoff import check_tradeoff_options, tradeoff_report

    fpr_list = check_tradeoff_options(tradeoff, fprs, points, plot_path)
    mech = _build(mechanism, options)
    try:
        with _busy(f"accounting by every route (time budget {time_budget:g} s)"):
            report = acc.epsilon_routes(mech, delta, compose=compose, include_pld=not no_pld, time_budget=time_budget, exhaustive=all_routes)
    except _FAILURES as error:
        raise _refusal(error, mechanism=mechanism, delta=delta, compose=compose, time_budget=time_budget, **options) from None
    payload = {
        "mechanism": mechanism,
        "description": mech.describe(),
        "compose": compose,
        "delta": delta,
        "time_budget": time_budget,
        "epsilon": report.epsilon,
        "route": report.route,
        "routes": route_rows(report),
    }
    tradeoff_table = None
    if tradeoff:
        try:
            payload["tradeoff"], tradeoff_table = tradeoff_report(mech, compose, fpr_list, points, plot_path, f"{compose} x {mech.describe()}")
        except _FAILURES as error:
            raise _refusal(error, mechanism=mechanism, compose=compose, points=points, **options) from None

    def table() -> None:
        print_route_table(f"(eps, {delta:g})-DP after {compose} x {mech.describe()}", report)
        if tradeoff_table is not None:
            tradeoff_table()

    _emit(as_json, payload, table)


@account.command()
@click.argument("mechanism")
@_mechanism_options
@click.option("--target-epsilon", type=float, required=True, help="The budget's epsilon.")
@click.option("--delta", type=float, required=True, help="The budget's delta in (0, 1).")
@click.option("--compose", type=int, default=1, show_default=True, help="Releases to the same user.")
@click.option("--lower", type=float, default=1e-3, show_default=True, help="Smallest noise parameter searched.")
@click.option("--upper", type=float, default=1e6, show_default=True, help="Largest noise parameter searched.")
@click.option("--time-budget", type=float, default=10.0, show_default=True, help="Seconds (on one core) the search may spend on routes, as the planner estimates them.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def calibrate(mechanism: str, target_epsilon: float, delta: float, compose: int, lower: float, upper: float, time_budget: float, as_json: bool,
              **options: Any) -> None:
    """The least noise for MECHANISM meeting (TARGET-EPSILON, DELTA) after COMPOSE releases."""
    import accounting as acc

    families = _families()
    if mechanism not in families:
        _build(mechanism, options)  # raises the standard error
    noise = families[mechanism][2]
    if options.get(noise) is not None:  # it was silently ignored: calibrate is what chooses it
        raise click.BadParameter(f"{noise}={options[noise]!r} is invalid: expected it unset (calibrate chooses {noise})", param_hint=f"--{noise}")
    for name, value in (("lower", lower), ("upper", upper)):
        if not (math.isfinite(value) and value > 0):
            raise click.BadParameter(f"{name}={value!r} is invalid: expected a finite real number > 0", param_hint=f"--{name}")
    if not lower < upper:
        raise click.BadParameter(f"upper={upper!r} is invalid: expected upper > lower = {lower!r}", param_hint="--upper")
    _build(mechanism, {**options, noise: upper})  # the other options checked once, before the search
    builder = families[mechanism][0]
    values = dict(options)
    values["sensitivity"] = _parse_sensitivity(mechanism, options["sensitivity"])

    def family(value: float) -> Any:
        # the mechanism itself (a parameter it refuses is a failed evaluation: the search narrows)
        return builder({**values, noise: value})

    try:
        with _busy(f"calibrating {noise}"):
            result = acc.calibrate(family, target_epsilon, delta, compose=compose, lower=lower, upper=upper, time_budget=time_budget)
    except click.ClickException:
        raise
    except ValueError as error:
        if getattr(error, "name", None) == "upper":  # the search range cannot reach the target: say which inputs set the need
            raise click.BadParameter(f"{error}, with sensitivity={options['sensitivity']}, compose={compose}: raise --upper, "
                                     "or lower --compose/--sensitivity") from None
        raise _refusal(error) from None
    except _FAILURES as error:
        raise _refusal(error, mechanism=mechanism, target_epsilon=target_epsilon, delta=delta, compose=compose, lower=lower, upper=upper, **options) from None
    payload = {"mechanism": mechanism, "noise_parameter": noise, **result.as_dict()}

    def table() -> None:
        failed = f"; {result.failures} evaluation(s) failed and narrowed the search" if result.failures else ""
        click.echo(
            f"{mechanism}: {noise} = {result.parameter:.6g} gives epsilon = {result.achieved.epsilon:.6g} "
            f"<= {target_epsilon:g} at delta = {delta:g} after {compose} release(s) (route {result.achieved.route}: {result.achieved.detail}){failed}"
        )

    _emit(as_json, payload, table)


@account.command()
@click.option("--epsilon", "eps", type=float, default=0.5, show_default=True, help="Per-batch privacy parameter eps of Theorem 2.")
@click.option("--scale", "s", type=float, default=10.0, show_default=True, help="Scale s of Theorem 2.")
@click.option("--batch-size", "n", type=int, default=1024, show_default=True, help="Users per batch n (sets g = ceil(s eps sqrt(n))).")
@click.option("--returns", "returns", type=int, multiple=True, default=(1, 10, 100), show_default=True, help="Batches B a user may join.")
@click.option("--delta", type=float, default=1e-6, show_default=True, help="Target delta.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def returning(eps: float, s: float, n: int, returns: tuple[int, ...], delta: float, as_json: bool) -> None:
    """Dist-RDP-SE (ICLR 2023, Theorem 2) when users return to B batches: three routes side by side."""
    from accounting import dist_rdp_se_returning

    try:
        with _busy("accounting Dist-RDP-SE's returning users by three routes"):
            rows = dist_rdp_se_returning(eps, s, n, returns, delta)
    except _FAILURES as error:
        raise _refusal(error, epsilon=eps, scale=s, batch_size=n, returns=returns, delta=delta) from None
    payload = {"epsilon": eps, "scale": s, "batch_size": n, "delta": delta, "rows": rows}

    def table() -> None:
        from rich.table import Table

        first = rows[0]
        t = Table(
            title=f"Dist-RDP-SE, eps = {eps:g}, s = {s:g}, n = {n} (g = {first['g']}, Skellam variance {first['variance']:.6g}): (eps, {delta:g})-DP per user",
            caption=(
                "every column is a certified upper bound: the paper's Thm 2 curve, Agarwal et al.'s Skellam bound and "
                "the exact Skellam RDP curve, each composed and converted by CKS; 'tightest certified' is the smallest over "
                "every route, and its route says which claim it is (PLD = privacy-loss distribution, connect-the-dots on a grid); "
                "App. I = approximate-DP composition"
            ),
        )
        for column in ("B", "Thm 2", "Agarwal", "exact RDP -> CKS", "tightest certified", "its route", "App. I"):
            t.add_column(column, justify="right")
        for row in rows:
            t.add_row(
                str(row["returns"]),
                f"{row['paper_closed_form']:.6g}",
                f"{row['agarwal_bound']:.6g}",
                f"{row['rdp_cks']:.6g}",
                f"{row['certified']:.6g}",
                row["certified_route"],
                row["advanced_composition"],
            )
        _print_table(t)

    _emit(as_json, payload, table)


from ._cli._cmd_event import event_command  # noqa: E402  (dp_accounting events: accounting._events._dp_event)

account.add_command(event_command)

from ._cli._cmd_ledger import account_charge_command  # noqa: E402  (click only: cheap to import)

account.add_command(account_charge_command)

from ._cli._cmd_shuffle import shuffle as _shuffle_command  # noqa: E402  (amplification by shuffling: accounting._amplification._shuffling)

account.add_command(_shuffle_command)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
