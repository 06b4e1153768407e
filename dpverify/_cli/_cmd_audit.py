"""``dpverify audit PATH``: the audit suite as a CI gate. A click command the lead registers:

    from ._cli_audit import audit_command
    main.add_command(audit_command)      # dpverify audit audits/ ...

PATH is a suite directory (every ``*.toml`` below it; ``planted/`` holds the planted bugs) or one
claim file. Output: a table on stdout (claim, guarantee, claimed, estimate, lower bound, verdict,
the arithmetic a violation is in, samples, seconds), a progress bar on stderr when it is a
terminal, ``--json FILE`` and ``--junit FILE`` reports (``--json -`` writes the JSON to stdout
instead of the table).

Which arithmetic: every claim is audited as executed (floating point), and a violation found
through floating-point views is followed by the real-arithmetic audit of the same draws; the
"violated in" column reads "floating point" (holds in real arithmetic at these draws) or "both".
The exit code follows the floating-point verdicts, against each file's ``expect``.

Exit codes: 0 every claim holds and every planted bug is caught; 1 a claim is violated or a
planted bug escaped ("missed"); 2 an error in the suite itself (a malformed file, an unknown
target or parameter, a target that crashed) or a bad option.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import xml.etree.ElementTree as ET
from typing import Any

import click

from ._paths import FilePath

__all__ = ["audit_command"]

#: the most draws per input ``--samples-scale`` may ask of one claim (10^9: hours of sampling)
_MAX_DRAWS = 1e9

_STYLE = {"holds": "green", "caught": "green", "violated": "bold red", "missed": "bold red", "error": "bold magenta"}
#: the table's "violated in" column, from a row's ``arithmetic``
_ARITHMETIC = {"none": "-", "floating point": "floating point", "both": "both", None: "-"}


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def _claimed_text(row: Any) -> str:
    r = row.result
    if r is None:
        return "-"
    if r.estimator == "renyi":
        return f"{_fmt(r.claimed)} (D_{r.order:g})"
    if r.estimator == "delta":
        return f"{_fmt(r.claimed)} (delta)"
    return _fmt(r.claimed)


def _also_text(row: Any) -> str:
    """The same bound read another way: epsilon at the claimed delta, or the implied zCDP rho."""
    r = row.result
    if r is None:
        return "-"
    if r.epsilon_at_delta is not None:
        return f"eps {_fmt(r.epsilon_at_delta)} @ {r.claimed:.3g}"
    if r.rho is not None:
        claimed = f" ({_fmt(row.claimed_rho)})" if row.claimed_rho is not None else ""
        return f"rho {_fmt(r.rho)}{claimed}"
    return "-"


def _risk_text(row: Any) -> str:
    """The witness as an attack (issue 33): advantage and mu-GDP lower bounds; one-run: guess accuracy."""
    from .._audit._risk import attack_risk

    risk = attack_risk(row.result)
    if risk is None:
        return "-"
    if "tpr_lower" not in risk:
        return f"acc {risk['accuracy_lower']:.3f}"
    return f"{risk['advantage_lower']:.2f}/{risk['mu_gdp_lower']:.1f}"


def _table(outcome: Any, console: Any) -> None:
    from rich.table import Table

    m = len(outcome.rows)
    table = Table(
        title=f"dpverify audit: {m} claims, family-wise error <= {outcome.alpha:g} (Holm), seed {outcome.seed}"
        + (f", samples x{outcome.samples_scale:g}" if outcome.samples_scale != 1 else ""),
        caption="lower bound: at the claim's Holm level; D_a = Renyi divergence of order a; inf = an output impossible under the neighbour; "
        "also: the same bound read as epsilon at the claimed delta (eps E @ delta) or as the zCDP rho (rho R (claimed rho)); "
        "also A/mu: the witness as an attack, lower bounds at the bound's confidence (advantage TPR - FPR, mu-GDP; TPR at FPR 0.01 in the JSON; one-run: acc = guess accuracy); "
        "violated in: floating point (only: holds in real arithmetic at these draws) or both (the real-arithmetic audit of the "
        "same draws too); exit code: the floating-point verdicts",
    )
    # the claim names and guarantees are what a reader looks for: never truncated (numbers wrap)
    table.add_column("claim", justify="left", no_wrap=True, min_width=max((len(r.spec.name) for r in outcome.rows), default=5))
    table.add_column("guarantee", justify="left", no_wrap=True,
                     min_width=max((len(r.claim_text or "-") for r in outcome.rows), default=9))
    for column, justify in (("claimed", "right"), ("estimate", "right"),
                            ("lower bound", "right"), ("also", "right"), ("verdict", "left"), ("violated in", "left"),
                            ("samples", "right"), ("seconds", "right")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for row in outcome.rows:
        r = row.result
        verdict = row.verdict
        table.add_row(
            row.spec.name,
            row.claim_text or "-",
            _claimed_text(row),
            _fmt(r.estimate) if r else "-",
            _fmt(r.lower_bound) if r else "-",
            " ".join(t for t in (_also_text(row), _risk_text(row)) if t != "-") or "-",
            f"[{_STYLE.get(verdict, '')}]{verdict}[/]",
            _ARITHMETIC[row.arithmetic],
            f"{row.samples:,}",
            f"{row.seconds:.1f}",
        )
    console.print(table)
    counts: dict[str, int] = {}
    for row in outcome.rows:
        key = row.verdict
        counts[key] = counts.get(key, 0) + 1
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    console.print(f"{summary}; {outcome.seconds:.1f} s; exit code {outcome.exit_code}")
    for row in outcome.errors:
        console.print(f"[bold magenta]error[/] {row.error}")


def _junit(outcome: Any) -> ET.ElementTree:
    failures = sum(1 for r in outcome.rows if r.error is None and not r.ok)
    errors = len(outcome.errors)
    root = ET.Element("testsuites", name="dpverify audit", tests=str(len(outcome.rows)), failures=str(failures),
                      errors=str(errors), time=f"{outcome.seconds:.3f}")
    suite = ET.SubElement(root, "testsuite", name="dpverify audit", tests=str(len(outcome.rows)), failures=str(failures),
                          errors=str(errors), time=f"{outcome.seconds:.3f}")
    props = ET.SubElement(suite, "properties")
    for key, value in (("alpha", outcome.alpha), ("correction", "holm"),
                       ("seed", outcome.seed),
                       ("samples_scale", outcome.samples_scale)):
        ET.SubElement(props, "property", name=key, value=str(value))
    for row in outcome.rows:
        d = row.to_dict()
        case = ET.SubElement(suite, "testcase", classname="audits.planted" if row.spec.planted else "audits",
                             name=row.spec.name, file=row.spec.file, time=f"{row.seconds:.3f}")
        text = (f"claim {d['claim']} (target {d['target']}, expect {d['expect']}): claimed {d['claimed']}, "
                f"lower bound {d['lower_bound']}, estimate {d['estimate']}, verdict {d['verdict']}, p-value {d['p_value']}, "
                f"level {d['level']}, {d['samples']} samples per input, {d['estimator']}"
                + (f" at order {d['order']}" if d.get("order") is not None else "")
                + f"; pair {d['pair']} {d['direction']}; event {d['event']}"
                + (f"; {d['finding']}" if d.get("finding") else "")
                + (f" (real-arithmetic lower bound {d['real_lower_bound']}, p-value {d['real_p_value']}, level {d['real_level']})"
                   if d.get("real_lower_bound") is not None and row.result is not row.real_result else ""))
        if row.error is not None:
            ET.SubElement(case, "error", message=row.error, type="SuiteError").text = row.error
        elif not row.ok:
            message = (f"expected violation ({d['expect']}) not found: {d['finding']}" if row.verdict == "missed"
                       else f"claim {d['finding']}: lower bound {d['lower_bound']} > claimed {d['claimed']}")
            ET.SubElement(case, "failure", message=message, type=row.verdict).text = text
        ET.SubElement(case, "system-out").text = text
    ET.indent(root)
    return ET.ElementTree(root)


def _is_address(text: str) -> bool:
    """A Dask scheduler address: scheme://..., or host:port."""
    return "://" in text or re.fullmatch(r"[\w.\-]+:\d+", text) is not None


def _dask_installed() -> bool:
    try:
        import dask.distributed  # noqa: F401  (optional: pip install 'dpverify[dask]')
    except ImportError:
        return False
    return True


def _write(path: str, text: str) -> None:
    from .._presentation._output import atomic_write

    if path == "-":
        click.echo(text)
        return
    atomic_write(path, text if text.endswith("\n") else text + "\n")


@click.command("audit")
@click.argument("path", type=FilePath(path_type=str))
@click.option("--json", "json_path", type=FilePath(dir_okay=False, allow_dash=True), default=None,
              help="Write the JSON report to FILE ('-': stdout, instead of the table).")
@click.option("--junit", "junit_path", type=FilePath(dir_okay=False), default=None, help="Write a JUnit XML report to FILE.")
@click.option("--html", "html_path", type=FilePath(dir_okay=False), default=None,
              help="Write a self-contained HTML report (every claim, verdict and bound; a figure) to FILE.")
@click.option("--samples-scale", type=float, default=1.0, show_default=True,
              help="Multiply every claim's sample budget (e.g. 0.1 for a quick run; at least 1000 draws per input).")
@click.option("--alpha", type=float, default=1e-3, show_default=True,
              help="Family-wise false-alarm rate over the whole suite (Holm).")
@click.option("--seed", type=int, default=0, show_default=True, help="One integer determines every draw.")
@click.option("--executor", default="local", show_default=True,
              help="local (a process pool), serial, dask (a new local cluster) or a Dask scheduler address tcp://host:8786.")
@click.option("--dask", "dask_address", default=None, metavar="ADDRESS",
              help="Spread the claims over the Dask cluster whose scheduler is at ADDRESS (tcp://host:8786); "
                   "needs pip install 'dpverify[dask]'. The same as --executor ADDRESS.")
@click.option("--workers", type=int, default=None, help="Processes of the local pool (default: the CPU count).")
def audit_command(path: str, json_path: str | None, junit_path: str | None, html_path: str | None, samples_scale: float,
                  alpha: float, seed: int, executor: str, dask_address: str | None, workers: int | None) -> None:
    """Audit every claim of the suite at PATH (a directory of TOML claim files, or one file).

    Exit code 0 when every claim holds and every planted bug is caught, 1 when a claim is
    violated or a planted bug escapes, 2 on an error in the suite itself.
    """
    # every argument is checked before the heavy imports (numba, the samplers: seconds, more under load)
    if not 1e-200 <= alpha < 1:  # the p-value grid reaches alpha / m * 1e-16, which must stay a positive double
        raise click.BadParameter(f"alpha={alpha!r}: expected a probability in [1e-200, 1)", param_hint="--alpha")
    if not (samples_scale > 0 and math.isfinite(samples_scale)):
        raise click.BadParameter(f"{samples_scale!r}: expected a number > 0", param_hint="--samples-scale")
    if seed < 0:
        raise click.BadParameter(f"{seed!r}: expected an integer >= 0", param_hint="--seed")
    if workers is not None and workers < 1:
        raise click.BadParameter(f"{workers!r}: expected an integer >= 1", param_hint="--workers")
    if dask_address is not None:
        if executor != "local":
            raise click.BadParameter(f"dask={dask_address!r} with executor={executor!r}: give one of --dask and --executor",
                                     param_hint="--dask")
        if not _is_address(dask_address):
            raise click.BadParameter(f"dask={dask_address!r} is invalid: expected a Dask scheduler address tcp://host:port",
                                     param_hint="--dask")
        executor = dask_address
    if executor not in ("local", "serial", "dask") and not _is_address(executor):
        # checked before any work: a bare word was read as a scheduler address ("missing port number")
        raise click.BadParameter(f"executor={executor!r} is invalid: expected local, serial, dask or a Dask scheduler address "
                                 "tcp://host:port", param_hint="--executor")
    if executor not in ("local", "serial") and not _dask_installed():  # before any work, not at the first claim
        click.echo(f"error: {'--dask' if dask_address else '--executor ' + executor} needs dask.distributed, an optional "
                   "dependency: pip install 'dpverify[dask]'", err=True)
        sys.exit(2)
    if not os.path.isfile(path) and not os.path.isdir(path):  # answered at once, not after the imports
        click.echo(f"error: path={path!r} is invalid: {path}: no such file or directory", err=True)
        sys.exit(2)
    from .._presentation._output import check_output_file

    try:  # before the work: a bad output path must not cost the audit
        check_output_file("--json", json_path)
        check_output_file("--junit", junit_path)
        check_output_file("--html", html_path)
    except ValueError as error:  # one line, exit 2 (the message names the option, the path and why)
        click.echo(f"error: {error}", err=True)
        sys.exit(2)
    from rich.console import Console

    from .._audit._suite import SuiteError, load_suite, run_suite

    err = Console(stderr=True)
    try:
        specs = load_suite(path)
    except SuiteError as error:
        click.echo(f"error: path={path!r} is invalid: {error}", err=True)
        sys.exit(2)
    largest = max((spec.samples for spec in specs), default=0) * samples_scale
    if largest > _MAX_DRAWS:  # refuse at once what would run for days or exhaust memory
        raise click.BadParameter(f"samples_scale={samples_scale!r} is invalid: expected a scale giving at most {_MAX_DRAWS:.0e} "
                                 f"draws per input (the largest claim would take {largest:.3g})", param_hint="--samples-scale")

    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    progress = Progress(TextColumn("auditing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        TextColumn("{task.description}"), console=err, transient=True,
                        disable=not err.is_terminal)
    try:
        with progress:
            task = progress.add_task("", total=len(specs))

            def done(run: Any) -> None:
                progress.update(task, advance=1, description=run.name)

            outcome = run_suite(specs, alpha=alpha, seed=seed, samples_scale=samples_scale, executor=executor,
                                workers=workers, on_done=done)
    except (OSError, ValueError, ImportError) as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(2)

    payload = outcome.to_dict()
    out = Console(width=None if sys.stdout.isatty() else 160)
    _table(outcome, err if json_path == "-" else out)
    if json_path is not None:
        _write(json_path, json.dumps(payload, indent=2))
    if junit_path is not None:
        from .._presentation._output import atomic_path

        with atomic_path(junit_path) as temporary:
            _junit(outcome).write(temporary, encoding="utf-8", xml_declaration=True)
    if html_path is not None:
        from .._presentation._output import atomic_write
        from ._html_report import audit_report

        atomic_write(html_path, audit_report(payload, command="dpverify audit " + " ".join(sys.argv[2:])))
    sys.exit(outcome.exit_code)
