"""``dpverify ledger show|verify|export|import|upgrade`` and ``dpverify account charge``: the durable ledger.

Registered by the lead on the main group (``_LazyGroup._lazy["ledger"]``) and on ``account``.
``show`` prints the budget, the worst user's spend, how many users are near their limit and the
last charges (a table, or ``--json``); ``verify`` opens the ledger read-only and recomputes every
user's spend from the raw charges with the exact accountant (exit 0 when everything agrees, 1 on
any disagreement); ``export``/``import`` move the JSON trail (``accounting.Ledger.to_json``) in
and out losslessly; ``accept-restore`` accepts a ledger restored on purpose (replacing this
machine's witness of its head, logged); ``--expect-head`` pins a head kept elsewhere; ``upgrade`` adds the hash chain to a schema-1 ledger once it verifies;
``account charge`` records one charge (exit 1 if refused, the ledger unchanged). Exit 2 for a bad
parameter, a ledger that cannot be reached, read, written or trusted, with the message naming it
and what to do.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import click

from ._paths import FilePath

__all__ = ["account_charge_command", "ledger_group"]

_URL_HELP = ("sqlite:////absolute/path/ledger.db or postgresql://user@host/dbname; timeouts in seconds in the query, "
             "e.g. ?lock_timeout=30&statement_timeout=60 (and connect_timeout, reconnect_timeout for PostgreSQL)")


def _fail_usage(error: Exception) -> None:
    click.echo(f"error: {error}", err=True)
    sys.exit(2)


def _open(url: str, **kwargs):
    from accounting import Ledger

    try:
        return Ledger.open(url, **kwargs)
    except ValueError as error:
        _fail_usage(error)
    except Exception as error:  # the database could not be reached or read
        from accounting.internal import redacted

        click.echo(f"error: cannot open the ledger at {redacted(url)}: {error}", err=True)
        sys.exit(2)


def parse_budget(text: str):
    """``pure:EPS``, ``zcdp:RHO`` or ``approx:EPS,DELTA`` as an accounting budget."""
    from accounting import ZCDP, ApproxDP, PureDP

    kind, _, value = text.partition(":")
    try:
        if kind == "pure":
            return PureDP(float(value))
        if kind == "zcdp":
            return ZCDP(float(value))
        if kind == "approx":
            eps, delta = value.split(",")
            return ApproxDP(float(eps), float(delta))
    except ValueError as error:
        raise click.BadParameter(f"budget={text!r} is invalid: {error}", param_hint="--budget") from None
    raise click.BadParameter(f"budget={text!r} is invalid: expected pure:EPS, zcdp:RHO or approx:EPS,DELTA", param_hint="--budget")


@click.group("ledger")
def ledger_group() -> None:
    """A durable privacy ledger (SQLite or PostgreSQL): show, verify, export, import."""


@ledger_group.command("show")
@click.argument("url")
@click.option("--near", type=float, default=0.9, show_default=True, help="Count users who spent at least this fraction of the budget.")
@click.option("--last", type=int, default=20, show_default=True, help="How many of the latest charges to list (0: none).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--expect-head", default=None, metavar="HEX", help="A chain head kept elsewhere (as `ledger show` prints it): the ledger must still hold it.")
def show_command(url: str, near: float, last: int, as_json: bool, expect_head: str | None) -> None:
    """Budget, worst user's spend, users near their limit and the history of charges at URL; exit 1
    (after printing everything) when the ledger fails an integrity check, as `ledger verify` does."""
    if not 0 < near <= 1:
        _fail_usage(ValueError(f"near={near} is invalid: expected a fraction in (0, 1]"))
    if not 0 <= last < 2**63:  # SQLite's and PostgreSQL's integers
        _fail_usage(ValueError(f"last={last} is invalid: expected an integer in [0, 2^63)"))
    ledger = _open(url, read_only=True, expect_head=expect_head)
    try:
        summary = ledger.summary(near=near, last=last)
    except ValueError as error:
        _fail_usage(error)
    finally:
        ledger.close()
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        _print_summary(summary, near)
    if summary["integrity"]:
        sys.exit(1)  # a pipeline that pins --expect-head must not read a broken ledger as a pass


def _print_summary(summary: dict, near: float) -> None:
    from rich.markup import escape
    from rich.table import Table

    from .._presentation._console import console as make_console
    from .._presentation._console import print_table

    console = make_console(highlight=False)  # sized like every table of the CLI: not cut at 80 columns in pipes
    budget = summary["budget"]
    worst = summary["worst_user_spend"]
    url_shown = escape(printable(summary["url"]))
    console.print(f"ledger {url_shown} ({escape(printable(summary['store']))}, schema {summary['schema_version']}, chain {summary['chain']})")
    if summary["head"]:
        console.print(f"  head {summary['head']} (keep it elsewhere; --expect-head checks the ledger still holds it)")
    for problem in summary["integrity"]:
        console.print(f"  [bold red]INTEGRITY[/]: {escape(printable(problem))}")
    if summary["integrity"]:
        console.print(f"  dpverify refuses to charge this ledger; `dpverify ledger verify {url_shown}` lists every disagreement")
    console.print(f"  budget {_describe(budget)}; worst user's spend {'nothing yet' if worst is None else f'{worst:.6g}'}; remaining {summary['remaining']:.6g}")
    console.print(f"  {summary['charges']} charges; users at >= {near:g} of the budget: {summary['users_near_limit']}; "
                  f"most charges on one user: {summary['max_charges_per_user']}")
    if summary["population"] is not None:
        console.print(f"  population {summary['population']}, users handed out so far {summary['population_cursor']}")
    if summary["history"]:
        table = Table(title=f"last {len(summary['history'])} charges")
        for column in ("#", "label", "guarantee", "users", "worst after", "recorded (UTC)"):
            table.add_column(column)
        for row in summary["history"]:
            table.add_row(str(row["seq"]), _plain(row["label"]), _plain(_describe(row["guarantee"])),
                          "everyone" if row["users"] is None else str(row["users"]), f"{row['spent_after']:.6g}", _plain(row["recorded_at"]))
        print_table(table, console)


#: control characters (C0, DEL, C1) and the bidirectional overrides that reorder what a terminal shows
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: object) -> str:
    """Text stored in a ledger (labels, and problems quoting them) as the terminal may show it:
    control characters as visible escapes (no ANSI sequence reaches the terminal, no line can be
    forged or overwritten). Rich markup is escaped separately where the text goes through rich."""
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(text))


def _plain(text: object):
    """A stored text as a rich Text: never parsed as markup, control characters escaped."""
    from rich.text import Text

    return Text(printable(text))


def _describe(spec: dict) -> str:
    kind = spec.get("type")
    if kind == "pure":
        return f"pure eps={spec['epsilon']:g}"
    if kind == "zcdp":
        return f"zCDP rho={spec['rho']:g}"
    if kind == "approx":
        return f"(eps={spec['epsilon']:g}, delta={spec['delta']:g})"
    if kind == "mechanism":
        parameters = ", ".join(f"{k}={v['fraction'] if isinstance(v, dict) else v}" for k, v in spec["parameters"].items())
        return f"{spec['family']}({parameters})"
    return json.dumps(spec)


@ledger_group.command("verify")
@click.argument("url")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--expect-head", default=None, metavar="HEX", help="A chain head kept elsewhere (as `ledger show` prints it): the ledger must still hold it.")
def verify_command(url: str, as_json: bool, expect_head: str | None) -> None:
    """Recompute every user's spend at URL from the raw charges (read-only); exit 1 on any disagreement."""
    ledger = _open(url, read_only=True, expect_head=expect_head)
    try:
        report = ledger.verify()
    except ValueError as error:
        _fail_usage(error)
    finally:
        ledger.close()
    if as_json:
        click.echo(json.dumps(report.as_dict(), indent=2))
    else:
        verdict = "agrees" if report.ok else f"DISAGREES ({len(report.disagreements)})"
        worst = "nothing charged" if report.worst is None else f"worst user's spend {report.worst:.6g}"
        click.echo(f"{printable(url)}: {report.charges} charges, {report.segments} user ranges, {report.profiles} profiles; "
                   f"recomputed {worst} against budget {report.budget}: {verdict}")
        for line in report.disagreements:
            click.echo(f"  {printable(line)}")
    if not report.ok:
        sys.exit(1)


@ledger_group.command("accept-restore")
@click.argument("url")
@click.option("--expect-head", default=None, metavar="HEX", help="Accept only if the ledger holds this chain head.")
def accept_restore_command(url: str, expect_head: str | None) -> None:
    """Accept the ledger at URL as it is now after a restore made on purpose (a backup, a copy that
    lost its last commits): replaces this machine's witness of its head, and logs the decision.
    The ledger must pass every other check. Charges after the restored head no longer count."""
    from accounting import DurableLedger

    try:
        record = DurableLedger.accept_restore(url, expect_head=expect_head)
    except ValueError as error:
        _fail_usage(error)
        return
    before = record["before"]
    was = ("no witness" if before is None else "a broken witness" if "broken" in before
           else f"ledger {before['ledger_id']} at {before['charges']} charges, head {before['link']}")
    after = record["after"]
    click.echo(f"accepted {printable(record['url'])}: ledger {after['ledger_id']} at {after['charges']} charges, head {after['link']} "
               f"(this machine had seen {was}); logged in {record['log']}")


@ledger_group.command("upgrade")
@click.argument("url")
def upgrade_command(url: str) -> None:
    """Upgrade a schema-1 ledger at URL in place to schema 2 (the hash chain), once it verifies."""
    from accounting import DurableLedger

    try:
        ledger = DurableLedger.upgrade(url)
    except ValueError as error:
        _fail_usage(error)
        return
    try:
        summary = ledger.summary(last=0)
    finally:
        ledger.close()
    click.echo(f"{summary['url']}: schema {summary['schema_version']}, {summary['charges']} charges, chain {summary['chain']}, "
               f"head {summary['head']}")


@ledger_group.command("export")
@click.argument("url")
@click.option("--out", type=FilePath(dir_okay=False), default="-", show_default=True, help="File for the JSON trail ('-': stdout).")
def export_command(url: str, out: str) -> None:
    """Write the ledger at URL as the JSON trail (the in-memory ledger's format)."""
    from .._presentation._output import check_output_file

    try:
        check_output_file("--out", out)  # before reading the ledger: '' or a directory was an IsADirectoryError traceback
    except ValueError as error:
        _fail_usage(error)
    ledger = _open(url, read_only=True)
    try:
        text = ledger.to_json()
    except ValueError as error:
        _fail_usage(error)
    finally:
        ledger.close()
    if out == "-":
        click.echo(text)
    else:
        from .._presentation._output import atomic_write

        atomic_write(out, text)


@ledger_group.command("import")
@click.argument("trail")  # checked here, not by click.Path: a NUL in the name made os.stat raise past click (exit 1)
@click.argument("url")
def import_command(trail: str, url: str) -> None:
    """Replay the JSON trail TRAIL into the ledger at URL (every charge re-checked)."""
    from accounting import BudgetExceeded, Ledger

    if "\x00" in trail or not Path(trail).is_file():
        _fail_usage(ValueError(f"trail={trail!r} is invalid: expected the path of an existing file (a JSON trail of a ledger)"))
    try:
        text = Path(trail).read_text()
        json.loads(text)  # the file itself first: its errors name the trail, not a line and column alone
    except (OSError, UnicodeDecodeError, ValueError) as error:
        _fail_usage(ValueError(f"trail={trail!r} is invalid: expected a readable JSON trail of a ledger ({error})"))
    try:
        ledger = Ledger.from_json(text, url=url)
    except BudgetExceeded as error:
        click.echo(f"refused: {error}", err=True)
        sys.exit(1)
    except (ValueError, AttributeError, KeyError, TypeError) as error:  # valid JSON that is not a trail
        if getattr(error, "name", None) in ("url", "ledger", "budget", "schema_version"):  # the ledger's side, not the trail's
            _fail_usage(error)
        _fail_usage(ValueError(f"trail={trail!r} is invalid: expected the JSON trail of a ledger ({type(error).__name__}: {error})"))
        return
    click.echo(f"{url}: {len(ledger.charges)} charges, worst user's spend {ledger.spent()}")
    ledger.close()


def _participants(users: str | None):
    if users is None:
        return None
    start, _, stop = users.partition(":")
    try:
        start_i, stop_i = int(start), int(stop)
    except ValueError:
        raise click.BadParameter(f"users={users!r} is invalid: expected START:STOP (user ids START..STOP-1)", param_hint="--users") from None
    if not 0 <= start_i < stop_i <= 2**62:
        raise click.BadParameter(f"users={users!r} is invalid: expected 0 <= START < STOP <= 2^62 (= {2**62})", param_hint="--users")
    return range(start_i, stop_i)


@click.command("charge", context_settings={"ignore_unknown_options": False})
@click.option("--ledger", "url", required=True, help=f"The durable ledger: {_URL_HELP}.")
@click.option("--budget", default=None, help="Budget when creating the ledger: pure:EPS, zcdp:RHO or approx:EPS,DELTA.")
@click.option("--create", is_flag=True, help="Create the ledger (with --budget) if the database holds none; without it a missing ledger is refused.")
@click.option("--pure", "pure_eps", type=float, default=None, help="Charge a pure eps-DP guarantee.")
@click.option("--zcdp", "rho", type=float, default=None, help="Charge a rho-zCDP guarantee.")
@click.option("--approx", "approx", type=str, default=None, help="Charge an (eps, delta)-DP guarantee: EPS,DELTA.")
@click.option("--users", default=None, help="The users it touches, START:STOP (default: every user).")
@click.option("--label", default="", help="A label kept with the charge.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--expect-head", default=None, metavar="HEX", help="A chain head kept elsewhere (as `ledger show` prints it): the ledger must still hold it.")
def account_charge_command(url, budget, create, pure_eps, rho, approx, users, label, as_json, expect_head) -> None:
    """Charge one guarantee to USERS of a durable ledger (exit 1 if refused; nothing is recorded then)."""
    from accounting import ZCDP, ApproxDP, BudgetExceeded, PureDP

    given = [x is not None for x in (pure_eps, rho, approx)]
    if sum(given) != 1:
        raise click.UsageError("give exactly one of --pure, --zcdp, --approx")
    try:
        if pure_eps is not None:
            guarantee = PureDP(pure_eps)
        elif rho is not None:
            guarantee = ZCDP(rho)
        else:
            eps, _, delta = approx.partition(",")
            try:
                eps_value, delta_value = float(eps), float(delta)
            except ValueError:
                raise ValueError(f"approx={approx!r} is invalid: expected EPS,DELTA, two numbers (e.g. 1.0,1e-6)") from None
            guarantee = ApproxDP(eps_value, delta_value)
    except ValueError as error:
        _fail_usage(error)
        return
    participants = _participants(users)
    ledger = _open(url, budget=parse_budget(budget) if budget else None, create=create, expect_head=expect_head)
    try:
        ledger.charge(guarantee, participants, label=label)
        spent = ledger.spent()
    except BudgetExceeded as error:
        click.echo(f"refused: {error}", err=True)
        sys.exit(1)
    except ValueError as error:
        _fail_usage(error)
    finally:
        ledger.close()
    payload = {"url": ledger.url, "charged": str(guarantee), "users": users or "everyone", "worst_user_spend": str(spent), "budget": str(ledger.budget)}
    click.echo(json.dumps(payload) if as_json else f"charged {guarantee} to users {users or 'all'}; worst user's spend {spent} of budget {payload['budget']}")
