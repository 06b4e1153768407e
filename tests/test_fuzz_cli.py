"""Fuzz harness over the CLI and the public API (issue 15, item 1): every input a clear answer.

Table-driven: ``ROWS`` lists, per CLI command, a valid base invocation with ``{}`` where the
fuzzed value goes, one row per parameter; ``API_ROWS`` does the same for the public Python entry
points (``accounting``'s constructors and functions, ``dpverify.run`` / ``audit`` /
``testing.assert_private`` ...), a callable of the fuzzed value. Every generated value (0,
negative, NaN, +-inf, subnormal, huge, non-numeric, wrong type, empty, valid-but-extreme, a
missing or unwritable path, and hypothesis' own draws) must end in

- CLI: a result (exit 0) or a refusal (exit 2) whose own message (after ``Error:``, not click's
  usage line) names the parameter; never a traceback, a MemoryError or another exit code (a row
  may declare exit 1 where the command documents it, e.g. a ledger refusing an overspend);
- API: a return value, or a ``ValueError`` / ``TypeError`` whose message names the parameter;

and never a hang: each case runs under a hard stop of ``HANG_GUARD`` CPU seconds (a row that
really computes may set its own), ten times the slowest case measured (see the constants). Time is
not the assertion (issue 23, item 8: a loaded CI machine made CPU budgets fail and hypothesis
report "unreliable results"); the guard only turns a runaway case into a failure instead of a
stalled CI. Every invocation runs in a fresh temporary working directory, so files a fuzzed
``--json`` / ``--out`` value names land there.

Coverage and size are asserted, not promised: ``test_every_cli_option_has_a_row`` walks the click
command tree and requires a row for every option and argument (the few exempt ones are listed
with the reason), and ``test_ci_case_count`` requires at least 2,000 cases per CI run; each row's
test asserts it really ran its number of cases.

Not statistical (no randomised claims are tested: hypothesis is derandomised in CI by the ``ci``
profile, so the cases are a fixed list). The wrong variants this harness catches are
demonstrated by ``test_harness_rejects_a_traceback`` and ``test_harness_rejects_an_unnamed_refusal``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import signal
import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpverify.cli import main

ROOT = Path(__file__).resolve().parent.parent
#: CPU seconds after which a case is stopped as a hang: 10x the slowest case measured on the 2-core
#: machine (1.9 CPU s: an account calibrate; 2,142 cases, March 2026, load 15-20). Not a budget:
#: nothing asserts how fast a case was.
HANG_GUARD = 20.0
#: the audit's largest sample budget (10^9 draws per input) costs ~30 CPU s on the cheapest mechanism:
#: the rows that may draw it get twice that
SAMPLES_GUARD = 60.0
#: CPU seconds per summed share a case may take before its guard stops it, for the rows that fuzz
#: discrete-gaussian-sum's n (the sum's law is evaluated share by share, so a legitimate case costs
#: O(n): 7.9 CPU s at n = 2*10^5 and 2.1 at n = 55,386 for `account calibrate`, measured at load 8
#: on the 2-core machine, i.e. ~4e-5 s a share). 25x that rate: under load 10 the same case took
#: more than 20 CPU s at n = 55,386 (issue 34 item 17), so a fixed 20 s guard failed a legitimate run.
SHARE_GUARD = 1e-3


def share_guard(value: str) -> float:
    """The hang guard of a case whose value is a number of summed shares: its own estimate, 25x
    the measured rate times n (n capped at the CLI's 2^20, above which it is refused at once)."""
    try:
        n = int(value.strip())
    except ValueError:
        return HANG_GUARD
    return HANG_GUARD + SHARE_GUARD * min(max(n, 0), 2**20)


#: examples per CLI row / API row in CI unless the row says otherwise (DPVERIFY_FUZZ_EXAMPLES overrides all rows)
FUZZ_EXAMPLES = 16
API_EXAMPLES = 20
#: the issue's floor on the number of generated cases per CI run
MIN_CASES = 2000

SPECIAL = ["0", "-1", "-0.0", "nan", "inf", "-inf", "5e-324", "1e-300", "1e300", "1e30", "abc", "", "[1]", "True", "0x10", "1e400", "9" * 40,
           "/missing/dir/out.json", ".", "1,2", "0.5", "2", "-"]


@dataclass(frozen=True)
class Row:
    """One fuzzed CLI parameter: ``argv`` with ``{}`` where the value goes; ``names`` are the words a refusal may use for it.

    ``files`` are written (``{}`` replaced by the value) into the working directory before each
    case; ``setup`` commands run once before the row's cases. ``codes`` are the allowed exit
    codes besides 0 and 2 with a word their message must contain. ``fallback`` is a refusal of
    the base invocation that a *valid* value reaches (e.g. an output directory that is a file):
    then ``valid(value)`` must hold, so an invalid value that slipped past its check fails.
    """

    argv: tuple[str, ...]
    names: tuple[str, ...]
    examples: int = FUZZ_EXAMPLES
    files: tuple[tuple[str, str], ...] = ()
    setup: tuple[tuple[str, ...], ...] = ()
    codes: tuple[tuple[int, str], ...] = ()
    fallback: str = ""
    valid: Callable[[str], bool] | None = None
    #: the row's hang guard (CPU seconds): 10x its slowest case measured, or a function of the
    #: fuzzed value for rows whose legitimate cost grows with it (the case's own estimate)
    hang_guard: float | Callable[[str], float] = HANG_GUARD

    def guard(self, value: str) -> float:
        return self.hang_guard(value) if callable(self.hang_guard) else self.hang_guard


def _r(cmd: str, *names: str, **options: Any) -> Row:
    return Row(tuple(a.replace("@ROOT", str(ROOT)) for a in cmd.split()), names, **options)


def _int_at_least(low: int) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        try:
            return int(text.strip()) >= low
        except ValueError:
            return False

    return check


def _int_in(low: int, high: int) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        try:
            return low <= int(text.strip()) <= high
        except ValueError:
            return False

    return check


#: a dp_accounting randomized-response event (accounting._events._dp_event.event_to_dict): an exact lattice PLD, cheap
RR_EVENT = '{"module_name": "dp_accounting.dp_event", "class_name": "RandomizedResponseDpEvent", "noise_parameter": 0.5, "num_buckets": 2}'
CURVE = "account curve"
EPS = "account epsilon"
CAL = "account calibrate"
RUN = "run -a dist-dp-se -i easy --path aggregate --max-seconds 3 --seeds 1 --eps 1 -T 10000"
RUN_SE = "run -a se -i easy --max-seconds 3 --seeds 1 -T 10000"
LEDGER = "sqlite:///@CWD/ledger.db"
MAKE_LEDGER = ("account", "charge", "--ledger", LEDGER, "--create", "--budget", "pure:1000", "--pure", "0.5", "--users", "0:10")
EVENT = '{{"module_name": "dp_accounting.dp_event", "class_name": "SelfComposedDpEvent", "count": {count}, "event": {{"module_name": "dp_accounting.dp_event", "class_name": "GaussianDpEvent", "noise_multiplier": {sigma}}}}}'
NO_DIR = ("not-a-dir", "a file where a directory is expected")
REPRODUCE_TAIL = "--quick --out figs --html /missing/dir/x.html"
REPRODUCE = f"reproduce iclr-fig4 {REPRODUCE_TAIL}"
TAILS = "tails --quick --claim no-such-claim"
TAILS_REFUSAL = "claim='no-such-claim' is invalid"


def _probability(text: str) -> bool:
    try:
        return 0 < float(text) < 1
    except ValueError:
        return False


def _writable(option: str) -> Callable[[str], bool]:
    """A path the output check accepts (in the case's working directory)."""

    def check(text: str) -> bool:
        from dpverify._presentation._output import check_output_file

        try:
            check_output_file(option, text)
        except ValueError:
            return False
        return True

    return check

ROWS = [
    # account curve: each mechanism's noise parameter, the sensitivity, the orders, the precision
    _r(f"{CURVE} skellam --variance {{}} --alpha 2", "variance"),
    _r(f"{CURVE} skellam --variance 100 --sensitivity {{}} --alpha 2", "sensitivity", "l1_sensitivity"),
    _r(f"{CURVE} skellam --variance 100 --alpha {{}}", "alpha"),
    _r(f"{CURVE} skellam --variance 100 --alpha 2 --precision {{}}", "precision"),
    _r(f"{CURVE} discrete-gaussian --sigma {{}} --alpha 2", "sigma"),
    _r(f"{CURVE} discrete-gaussian --sigma 2 --sensitivity {{}} --alpha 2", "sensitivity"),
    _r(f"{CURVE} discrete-gaussian-sum --n 4 --sigma {{}} --alpha 2", "sigma"),
    _r(f"{CURVE} discrete-gaussian-sum --n {{}} --sigma 2 --alpha 2", "n", hang_guard=share_guard),
    _r(f"{CURVE} discrete-laplace --scale {{}} --alpha 2", "scale"),
    _r(f"{CURVE} laplace --scale {{}} --alpha 2", "scale"),
    _r(f"{CURVE} laplace --scale 1 --sensitivity {{}} --alpha 2", "sensitivity"),
    _r(f"{CURVE} gaussian --sigma {{}} --alpha 2", "sigma"),
    _r(f"{CURVE} gaussian --sigma 1 --alpha {{}}", "alpha"),
    _r(f"{CURVE} randomized-response --epsilon {{}} --alpha 2", "epsilon"),
    _r(f"{CURVE} {{}} --variance 1 --alpha 2", "mechanism"),
    # account epsilon (a small time budget: the planner bounds the work of a valid extreme value by
    # its own cost estimates, coarsening or skipping the PLD, rather than the row switching it off)
    _r(f"{EPS} skellam --variance {{}} --delta 1e-5 --time-budget 1", "variance"),
    _r(f"{EPS} skellam --variance 100 --sensitivity {{}} --delta 1e-5 --time-budget 1", "sensitivity", "l1_sensitivity"),
    _r(f"{EPS} discrete-laplace --scale 1 --delta {{}} --time-budget 1", "delta"),
    _r(f"{EPS} discrete-laplace --scale {{}} --delta 1e-5 --time-budget 1", "scale"),
    _r(f"{EPS} discrete-laplace --scale 1 --delta 1e-5 --compose {{}}", "compose", "k"),
    _r(f"{EPS} discrete-gaussian-sum --n {{}} --sigma 2 --delta 1e-5 --time-budget 1", "n", hang_guard=share_guard),
    _r(f"{EPS} laplace --scale {{}} --delta 1e-5", "scale"),
    _r(f"{EPS} gaussian --sigma {{}} --delta 1e-5", "sigma"),
    _r(f"{EPS} gaussian --sigma 1 --delta {{}}", "delta"),
    _r(f"{EPS} randomized-response --epsilon {{}} --delta 1e-5", "epsilon"),
    _r(f"{EPS} gaussian --sigma 1 --delta 1e-5 --compose {{}}", "compose", "k"),
    _r(f"{EPS} discrete-laplace --scale 4 --delta 1e-5 --compose 100 --time-budget {{}}", "time_budget", "time-budget"),
    _r(f"{EPS} {{}} --sigma 1 --delta 1e-5", "mechanism"),
    # account epsilon --tradeoff (randomized response: an exact lattice, the curve costs ~0.05 s)
    _r(f"{EPS} randomized-response --epsilon 1 --delta 1e-5 --tradeoff --fpr {{}}", "fpr"),
    _r(f"{EPS} randomized-response --epsilon 1 --delta 1e-5 --tradeoff --points {{}}", "points"),
    _r(f"{EPS} randomized-response --epsilon 1 --delta 1e-5 --tradeoff --plot {{}}", "--plot", "plot"),
    # account calibrate
    _r(f"{CAL} gaussian --target-epsilon {{}} --delta 1e-5", "target_epsilon", "target-epsilon", "epsilon"),
    _r(f"{CAL} gaussian --target-epsilon 1 --delta {{}}", "delta"),
    _r(f"{CAL} gaussian --target-epsilon 1 --delta 1e-5 --compose {{}}", "compose", "k"),
    _r(f"{CAL} gaussian --target-epsilon 1 --delta 1e-5 --sensitivity {{}}", "sensitivity"),
    _r(f"{CAL} laplace --target-epsilon 1 --delta 1e-5 --lower {{}}", "lower"),
    _r(f"{CAL} laplace --target-epsilon 1 --delta 1e-5 --upper {{}}", "upper"),
    _r(f"{CAL} discrete-gaussian-sum --n {{}} --target-epsilon 1 --delta 1e-5", "n", hang_guard=share_guard),
    _r(f"{CAL} {{}} --target-epsilon 1 --delta 1e-5", "mechanism"),
    _r(f"{CAL} gaussian --target-epsilon 1 --delta 1e-5 --time-budget {{}}", "time_budget", "time-budget"),
    # the calibrated parameter given as well: ignored or refused, never a crash
    _r(f"{CAL} gaussian --sigma {{}} --target-epsilon 1 --delta 1e-5", "sigma", examples=8),
    _r(f"{CAL} skellam --variance {{}} --target-epsilon 1 --delta 1e-5", "variance", examples=8),
    _r(f"{CAL} laplace --scale {{}} --target-epsilon 1 --delta 1e-5", "scale", examples=8),
    _r(f"{CAL} randomized-response --epsilon {{}} --target-epsilon 1 --delta 1e-5", "epsilon", examples=8),
    # account returning
    _r("account returning --epsilon {} --returns 1", "epsilon", "eps"),
    _r("account returning --scale {} --returns 1", "scale", "s"),
    _r("account returning --batch-size {} --returns 1", "batch_size", "batch-size", "n"),
    _r("account returning --returns {}", "returns", "B"),
    _r("account returning --delta {} --returns 1", "delta"),
    # account shuffle
    _r("account shuffle --eps0 {} --n 1000 --delta 1e-6", "eps0", "epsilon0"),
    _r("account shuffle --eps0 1 --n {} --delta 1e-6", "n"),
    _r("account shuffle --eps0 1 --n 1000 --delta {}", "delta"),
    _r("account shuffle --eps0 1 --n 1000 --delta 1e-6 --compose {}", "compose", "k"),
    _r("account shuffle --eps0 1 --n 1000 --delta 1e-6 --randomizer {}", "randomizer"),
    _r("account shuffle --eps0 1 --n 1000 --delta 1e-6 --tradeoff --fpr {}", "fpr"),
    _r("account shuffle --eps0 1 --n 1000 --delta 1e-6 --tradeoff --points {}", "points"),
    _r("account shuffle --eps0 1 --n 1000 --delta 1e-6 --tradeoff --plot {}", "--plot", "plot"),
    _r("account shuffle --eps0 {} --n 1000 --delta 1e-6 --randomizer rr", "eps0", "epsilon0"),
    # account event: the file, its fields, the delta
    _r("account event {}", "file", "event"),  # "-" reads the event from stdin (empty here)
    _r("account event event.json --no-pld", "noise_multiplier", "sigma", "event", files=(("event.json", EVENT.format(count=3, sigma="{}")),)),
    _r("account event event.json --no-pld", "count", "counts", "event", files=(("event.json", EVENT.format(count="{}", sigma=2.0)),)),
    _r("account event event.json --no-pld", "event", "json", "file", files=(("event.json", "{}"),)),
    _r("account event event.json --delta {}", "delta", files=(("event.json", EVENT.format(count=3, sigma=2.0)),)),
    _r("account event event.json --time-budget {}", "time_budget", "time-budget", files=(("event.json", EVENT.format(count=3, sigma=2.0)),)),
    _r("account event rr.json --tradeoff --fpr {}", "fpr", files=(("rr.json", RR_EVENT),)),
    _r("account event rr.json --tradeoff --points {}", "points", files=(("rr.json", RR_EVENT),)),
    _r("account event rr.json --tradeoff --plot {}", "--plot", "plot", files=(("rr.json", RR_EVENT),)),
    # account charge: a ledger created once per row, then charged by every case (exit 1: refused, budget)
    _r(f"account charge --ledger {LEDGER} --pure {{}} --users 0:10", "pure", "epsilon", setup=(MAKE_LEDGER,), codes=((1, "budget"),)),
    _r(f"account charge --ledger {LEDGER} --zcdp {{}} --users 0:10", "zcdp", "rho", setup=(MAKE_LEDGER,), codes=((1, "budget"),)),
    _r(f"account charge --ledger {LEDGER} --approx {{}} --users 0:10", "approx", "epsilon", "delta", setup=(MAKE_LEDGER,), codes=((1, "budget"),)),
    _r(f"account charge --ledger {LEDGER} --pure 0.001 --users {{}}", "users", setup=(MAKE_LEDGER,), codes=((1, "budget"),)),
    _r(f"account charge --ledger {LEDGER} --pure 0.001 --users 0:10 --label {{}}", "label", setup=(MAKE_LEDGER,), codes=((1, "budget"),)),
    _r("account charge --ledger sqlite:///@CWD/new.db --create --budget {} --pure 0.001", "budget", codes=((1, "budget"),)),
    _r("account charge --ledger {} --budget pure:1 --pure 0.001", "ledger", "url"),
    # ledger show | verify | export | import
    _r("ledger show {}", "url", "ledger"),
    _r(f"ledger show {LEDGER} --near {{}}", "near", setup=(MAKE_LEDGER,)),
    _r(f"ledger show {LEDGER} --last {{}}", "last", setup=(MAKE_LEDGER,)),
    _r("ledger verify {}", "url", "ledger"),
    # a pinned head (issue 34 item 11): malformed is exit 2 naming expect_head; a well-formed head the
    # chain does not hold is verify's exit 1 or charge's refusal (exit 2), each saying "head"
    _r(f"ledger show {LEDGER} --expect-head {{}}", "expect_head", "expect-head", setup=(MAKE_LEDGER,)),
    _r(f"ledger verify {LEDGER} --expect-head {{}}", "expect_head", "expect-head", setup=(MAKE_LEDGER,), codes=((1, "head"),)),
    _r(f"account charge --ledger {LEDGER} --pure 0.001 --users 0:10 --expect-head {{}}", "expect_head", "expect-head", setup=(MAKE_LEDGER,), codes=((1, "budget"),)),
    _r("ledger accept-restore {}", "url", "ledger"),
    _r(f"ledger accept-restore {LEDGER} --expect-head {{}}", "expect_head", "expect-head", setup=(MAKE_LEDGER,)),
    _r("ledger export {}", "url", "ledger"),
    _r("ledger upgrade {}", "url", "ledger"),
    _r(f"ledger export {LEDGER} --out {{}}", "out", setup=(MAKE_LEDGER,)),
    _r(f"ledger import {{}} {LEDGER}", "trail"),
    _r(f"ledger import trail.json {LEDGER}", "trail", "json", "budget", "charge", files=(("trail.json", "{}"),), codes=((1, "budget"),)),
    _r("ledger import trail.json {}", "url", "ledger", setup=(("ledger", "export", LEDGER, "--out", "trail.json"),) and (MAKE_LEDGER, ("ledger", "export", LEDGER, "--out", "trail.json"))),
    # run (small cost limit: a valid extreme is estimated and refused, not run)
    _r("run -a dist-dp-se -i easy --path aggregate --max-seconds 3 --seeds 1 --eps {} -T 10000", "epsilon", "eps"),
    _r("run -a dist-dp-se -i easy --path aggregate --max-seconds 3 --seeds 1 --eps 1 -T {}", "horizon"),
    _r("run -a dist-dp-se -i easy --path aggregate --max-seconds 3 --eps 1 -T 10000 --seeds {}", "seeds"),
    _r(f"{RUN} --seed {{}}", "seed"),
    _r(f"{RUN} --delta {{}}", "delta"),
    _r(f"{RUN} --p {{}}", "p"),
    # (the cost estimate under-predicts large s, 2 s estimated vs 7 s at s = 266: a result, not a refusal)
    _r("run -a dist-rdp-se -i easy --path aggregate --max-seconds 3 --seeds 1 --eps 1 -T 10000 --s {}", "s", hang_guard=70.0),
    _r(f"{RUN} --batch-base {{}}", "batch_base", "batch-base"),
    _r(f"{RUN} --tau-rule {{}}", "tau-rule", "tau_rule"),
    _r(f"{RUN} --radius {{}}", "radius"),
    _r(f"{RUN} --path {{}}", "path"),
    _r(f"{RUN_SE} --reward-sd {{}}", "reward_sd", "reward-sd"),
    _r("run -a se -i mslr --max-seconds 3 --seeds 1 -T 10000 --label-scale {}", "label_scale", "label-scale"),
    _r(f"{RUN} --population {{}} --max-returns 4", "population", "max_returns"),
    _r(f"{RUN} --population 10000 --max-returns {{}}", "max_returns", "max-returns", "population"),
    _r(f"{RUN} --population 10000 --max-returns 4 --returning-calibration {{}}", "returning-calibration", "returning_calibration"),
    _r(f"{RUN} --population 10000 --max-returns 4 --ledger {{}}", "ledger"),
    _r("run -a se --max-seconds 3 --seeds 1 -T 10000 --means {}", "means"),
    _r("run -a se --max-seconds 3 --seeds 1 -T 10000 --means 0.9,0.5 --reward {}", "reward"),
    _r("run -a se --max-seconds 3 --seeds 1 -T 10000 --means 0.9,0.5 --reward gaussian --sd {}", "sd", "reward_sd"),
    _r("run -a se --max-seconds 3 --seeds 1 -T 10000 --instance-file {}", "instance_file", "instance-file"),
    _r("run -a se --max-seconds 3 --seeds 1 -T 10000 --instance-file my.toml", "means", "instance_file", "reward", "sd", "name",
       files=(("my.toml", 'reward = "gaussian"\nmeans = [0.9, {}]\nsd = 0.1\n'),)),
    _r("run -a se --max-seconds 3 --seeds 1 -T 10000 --instance-file my.toml", "sd", "instance_file",
       files=(("my.toml", 'reward = "gaussian"\nmeans = [0.9, 0.5]\nsd = {}\n'),)),
    _r("run -a se --max-seconds 3 --seeds 1 -T 10000 --instance-file my.toml", "instance_file", "means", "reward", "name",
       files=(("my.toml", "{}"),)),
    _r("run -a {} -i easy --max-seconds 3 --seeds 1 --eps 1 -T 10000", "algorithm"),
    _r(f"run -a se -i {{}} --max-seconds 3 --seeds 1 -T 10000", "instance"),
    _r("run -a se -i easy --seeds 1 -T 10000 --max-seconds {}", "max_seconds", "max-seconds"),
    _r("run -a dist-dp-se -i easy --path aggregate --eps 1 -T 1000000000000000 --max-seconds {}", "max_seconds", "max-seconds", "horizon"),
    _r(f"{RUN_SE} --workers {{}}", "workers"),
    _r(f"{RUN_SE} --json {{}}", "--json", "json"),
    _r(f"{RUN_SE} --noise {{}}", "noise"),
    _r(f"{RUN_SE} --html {{}}", "--html", "html"),
    # reproduce: a valid value reaches the refusal of an output directory that is a file
    _r(f"reproduce {{}} {REPRODUCE_TAIL}", "figure", fallback="--html", valid=lambda v: v in {
        "iclr-fig1", "iclr-fig1abc", "iclr-fig2", "iclr-fig3", "iclr-fig4", "iclr-fig5", "li-fig2", "ren-fig1"}),
    _r("reproduce iclr-fig4 --quick --html /missing/dir/x.html --out {}", "--out", "out", files=(NO_DIR,), fallback="--html",
       valid=lambda v: v != "" and not any(p.is_file() for p in (Path(v), *Path(v).parents))),
    _r(f"{REPRODUCE} --runs {{}}", "runs", fallback="--html", valid=_int_at_least(1)),
    _r(f"{REPRODUCE} --seed {{}}", "seed", fallback="--html", valid=_int_at_least(0)),
    _r(f"{REPRODUCE} --workers {{}}", "workers", fallback="--html", valid=_int_at_least(1)),
    _r(f"{REPRODUCE} --batch-base {{}}", "batch_base", "batch-base", fallback="--html", valid=_int_at_least(2)),
    _r(f"{REPRODUCE} --path {{}}", "path", fallback="--html", valid=lambda v: v in {"auto", "per-user", "aggregate"}),
    _r(f"{REPRODUCE} --tau-rule {{}}", "tau-rule", fallback="--html", valid=lambda v: v in {"theorem", "simulation", "lemma2"}),
    _r(f"{REPRODUCE} --radius {{}}", "radius", fallback="--html", valid=lambda v: v in {"lemma2", "authors"}),
    _r(f"{REPRODUCE} --noise {{}}", "noise", fallback="--html", valid=lambda v: v in {"float-safe", "idealised"}),
    # a valid --html reaches li-fig2's refusal of --radius authors (the linear figure has no such radius), before any run
    _r("reproduce li-fig2 --quick --radius authors --html {}", "--html", "html", files=(NO_DIR,), fallback="radius",
       valid=lambda v: v != "" and not Path(v).is_dir() and Path(v).parent.is_dir()),
    # audit (one claim file at the smallest budget, serial: a valid value runs the audit, which must be cheap)
    _r("audit @ROOT/audits/randomized_response_eps1.toml --executor serial --samples-scale 0.002 --alpha {}", "alpha", examples=8),
    _r("audit @ROOT/tests/data/fuzz_claim.toml --executor serial --samples-scale {}", "samples-scale", "samples_scale", examples=8),
    _r("audit @ROOT/tests/data/fuzz_claim.toml --executor serial --seed {}", "seed", examples=8),
    _r("audit @ROOT/tests/data/fuzz_claim.toml --executor {}", "executor", examples=8),
    _r("audit @ROOT/tests/data/fuzz_claim.toml --executor serial --workers {}", "workers", examples=8),
    _r("audit {} --executor serial", "path", examples=10),
    _r("audit @ROOT/tests/data/fuzz_claim.toml --dask {}", "dask", examples=8),
    _r("audit @ROOT/tests/data/fuzz_claim.toml --executor serial --json {}", "--json", "json", examples=8),
    _r("audit @ROOT/tests/data/fuzz_claim.toml --executor serial --junit {}", "--junit", "junit", examples=8),
    _r("audit @ROOT/tests/data/fuzz_claim.toml --executor serial --html {}", "--html", "html", examples=8),
    # tails: options checked before any work (a claim filter that matches nothing keeps valid values cheap)
    # the base names no claim of the table, so a valid value ends in that refusal (exit 2 since issue 34 item 2)
    _r(f"{TAILS} --false-alarm {{}}", "false-alarm", "false_alarm", fallback=TAILS_REFUSAL, valid=_probability),
    _r(f"{TAILS} --workers {{}}", "workers", fallback=TAILS_REFUSAL, valid=_int_in(1, 1024)),
    _r(f"{TAILS} --json {{}}", "--json", "json", fallback=TAILS_REFUSAL, valid=_writable("--json")),
    _r(f"{TAILS} --junit {{}}", "--junit", "junit", fallback=TAILS_REFUSAL, valid=_writable("--junit")),
    _r("tails --quick --no-monte-carlo --claim {}", "claim"),
    # --compare-regret runs 60 regret simulations: valid values reach the cheap --workers 0 refusal
    _r("tails --compare-regret --workers 0 --seeds {}", "seeds", fallback="--workers", valid=_int_in(1, 1000)),
    _r("tails --compare-regret --workers 0 --horizon {}", "horizon", fallback="--workers", valid=_int_in(2, 2**26)),
]


# ---- the public Python API ----------------------------------------------------------------------


@dataclass(frozen=True)
class ApiRow:
    """One fuzzed argument of a public entry point: ``call(value)``; ``names`` as for :class:`Row`."""

    label: str
    call: Callable[[Any], Any]
    names: tuple[str, ...]
    examples: int = API_EXAMPLES
    hang_guard: float = HANG_GUARD


def _run_if_small(config: Any) -> None:
    """run(config) when it has at most 64 seeds; a larger valid count is only validated: the run's
    cost is linear in the seeds (10^6 of them would take hours and fill memory), and the harness
    tests the answer to the value, not the machine."""
    config.validate()
    if config.seeds <= 64:
        import dpverify

        dpverify.run(config)


def _api_rows() -> list[ApiRow]:
    import accounting as acc
    import dpverify
    from dpverify.testing import assert_private

    def rr_mechanism(data, rng, size):
        import numpy as np

        return np.asarray(rng.random(size) < (0.73 if data else 0.27), dtype=np.int64)

    def a(label, call, *names, examples=API_EXAMPLES, hang_guard=HANG_GUARD):
        return ApiRow(label, call, names, examples, hang_guard)

    gauss = acc.Gaussian(1.0)
    return [
        a("Skellam(variance)", lambda v: acc.Skellam(v).rdp().evaluate([2]), "variance"),
        a("Skellam(l1_sensitivity)", lambda v: acc.Skellam(100, v).rdp().evaluate([2]), "l1_sensitivity", "sensitivity"),
        a("DiscreteGaussian(sigma)", lambda v: acc.DiscreteGaussian(v).rdp().evaluate([2]), "sigma"),
        a("DiscreteGaussian(sensitivity)", lambda v: acc.DiscreteGaussian(2, v).rdp().evaluate([2]), "sensitivity"),
        # (a valid n up to 2^24 is evaluated share by share: an answer, seconds at n = 1e7)
        a("DiscreteGaussianSum(n)", lambda v: acc.DiscreteGaussianSum(v, 2).rdp().evaluate([2]), "n", examples=10, hang_guard=100.0),
        a("DiscreteLaplace(scale)", lambda v: acc.DiscreteLaplace(v).rdp().evaluate([2]), "scale"),
        a("Laplace(scale)", lambda v: acc.Laplace(v).rdp().evaluate([2]), "scale"),
        a("Gaussian(sigma)", lambda v: acc.Gaussian(v).rdp().evaluate([2]), "sigma"),
        a("Gaussian(sensitivity)", lambda v: acc.Gaussian(1, v).rdp().evaluate([2]), "sensitivity"),
        a("RandomizedResponse(epsilon)", lambda v: acc.RandomizedResponse(v).rdp().evaluate([2]), "epsilon"),
        a("BernoulliCurator(epsilon)", lambda v: acc.BernoulliCurator(v).rdp().evaluate([2]), "epsilon"),
        a("Binomial(trials)", lambda v: acc.Binomial(v, 0.5).rdp().evaluate([2]), "trials"),
        a("Binomial(p)", lambda v: acc.Binomial(100, v).rdp().evaluate([2]), "p"),
        a("PolyaDifferenceSum(scale)", lambda v: acc.PolyaDifferenceSum(4, v).rdp().evaluate([2]), "scale"),
        a("rdp(alpha)", lambda v: gauss.rdp().evaluate([v]), "alpha"),
        a("PureDP(epsilon)", lambda v: acc.PureDP(v), "epsilon"),
        a("ApproxDP(delta)", lambda v: acc.ApproxDP(1.0, v), "delta"),
        a("ZCDP(rho)", lambda v: acc.ZCDP(v), "rho"),
        a("zcdp_to_epsilon(delta)", lambda v: acc.zcdp_to_epsilon(0.5, v), "delta"),
        a("zcdp_to_epsilon(rho)", lambda v: acc.zcdp_to_epsilon(v, 1e-6), "rho"),
        a("rdp_to_epsilon(delta)", lambda v: acc.rdp_to_epsilon(gauss.rdp(), v), "delta"),
        a("gdp_epsilon(mu)", lambda v: acc.gdp_epsilon(v, 1e-6), "mu"),
        a("gdp_delta(epsilon)", lambda v: acc.gdp_delta(1.0, v), "epsilon"),
        a("gdp_mu_for(epsilon)", lambda v: acc.gdp_mu_for(v, 1e-6), "epsilon"),
        a("advanced_composition(compose)", lambda v: acc.advanced_composition(acc.PureDP(0.1), v, 1e-6), "compose"),
        a("appendix_i_per_batch(returns)", lambda v: acc.appendix_i_per_batch(0.5, 1e-6, v), "returns"),
        a("epsilon_routes(delta)", lambda v: acc.epsilon_routes(gauss, v, include_pld=False), "delta"),
        a("epsilon_routes(compose)", lambda v: acc.epsilon_routes(gauss, 1e-5, compose=v), "compose", "k"),
        a("calibrate(target_epsilon)", lambda v: acc.calibrate(acc.Gaussian, v, 1e-5, lower=0.01, upper=100), "target_epsilon"),
        a("optimal_composition_epsilon(epsilons)", lambda v: acc.optimal_composition_epsilon([(v, 3)], 1e-6), "epsilons"),
        a("PoissonSampled(probability)", lambda v: acc.epsilon_routes(acc.PoissonSampled(gauss, v), 1e-5, include_pld=False), "probability", "q"),
        a("SampledWithoutReplacement(sample_size)", lambda v: acc.SampledWithoutReplacement(gauss, v, 1000).rdp().evaluate([2]), "sample_size"),
        a("theorem2_parameters(n)", lambda v: acc.theorem2_parameters(0.5, 10, v, 0.1), "n"),
        a("theorem1_parameters(p)", lambda v: acc.theorem1_parameters(0.5, 1000, v), "p"),
        a("dist_rdp_se_returning(returns)", lambda v: acc.dist_rdp_se_returning(0.5, 10, 1024, [v], 1e-6, include_pld=False), "returns"),
        a("shuffle_routes(n)", lambda v: acc.shuffle_routes(acc.ShuffledLDP(1.0, v), 1e-6, include_pld=False), "n"),
        a("shuffled_rr_epsilon(epsilon0)", lambda v: acc.shuffled_rr_epsilon(v, 1000, 1e-6), "epsilon0"),
        a("clone_epsilon(delta)", lambda v: acc.clone_epsilon(1.0, 1000, v), "delta"),
        a("fmt21_closed_form(n)", lambda v: acc.fmt21_closed_form(1.0, v, 1e-6), "n"),
        a("Ledger(budget).charge", lambda v: acc.Ledger(acc.PureDP(1.0)).charge(acc.PureDP(v)), "epsilon", "budget"),  # BudgetExceeded: refused
        a("Ledger.open(url)", lambda v: acc.Ledger.open(v).close(), "url"),
        a("working_precision(bits)", lambda v: _enter(acc.working_precision(v)), "bits", "precision"),
        a("user_instance(means)", lambda v: dpverify.user_instance([0.9, v]), "means"),
        a("user_instance(sd)", lambda v: dpverify.user_instance([0.9, 0.5], "gaussian", v), "sd"),
        a("RunConfig(horizon).validate", lambda v: dpverify.RunConfig("se", "easy", v).validate(), "horizon"),
        a("RunConfig(epsilon).validate", lambda v: dpverify.RunConfig("dist-dp-se", "easy", 1000, epsilon=v).validate(), "epsilon"),
        a("run(seeds)", lambda v: _run_if_small(dpverify.RunConfig("se", "easy", 2000, seeds=v)), "seeds"),
        a("gaussian_mechanism(sigma)", lambda v: dpverify.gaussian_mechanism(v), "sigma"),
        a("skellam_mechanism(variance)", lambda v: dpverify.skellam_mechanism(v), "variance"),
        a("scalar_pairs(sensitivity)", lambda v: dpverify.scalar_pairs(0, v), "sensitivity"),
        a("dist_dp_protocol(epsilon)", lambda v: dpverify.dist_dp_protocol(v, 0.1), "epsilon"),
        a("audit(samples)", lambda v: dpverify.audit(rr_mechanism, [(0, 1)], acc.PureDP(1.2), samples=v, executor="serial"), "samples", examples=10, hang_guard=SAMPLES_GUARD),
        a("audit(alpha)", lambda v: dpverify.audit(rr_mechanism, [(0, 1)], acc.PureDP(1.2), samples=2000, alpha=v, executor="serial"), "alpha", examples=10),
        a("assert_private(claim)", lambda v: assert_private(rr_mechanism, [(0, 1)], v, samples=2000, executor="serial"), "claim", "epsilon", examples=10),
        a("assert_private(samples)", lambda v: assert_private(rr_mechanism, [(0, 1)], 1.2, samples=v, executor="serial"), "samples", examples=10,
          hang_guard=SAMPLES_GUARD),
    ]


def _enter(context_manager) -> None:
    with context_manager:
        pass


_API_SPECIAL = [0, -1, -0.0, math.nan, math.inf, -math.inf, 5e-324, 1e-300, 1e300, 1e30, 10**40, -(10**40), 2**63, 0.5, 1, 2, 1e-12,
                Fraction(1, 3), "abc", "", "1", None, True, False, [1], (), {}]
_API_VALUES = st.one_of(
    st.sampled_from(_API_SPECIAL),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.text(max_size=4),
)

_VALUES = st.one_of(
    st.sampled_from(SPECIAL),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.text(max_size=6),
)


class Overrun(BaseException):
    """A case ran past the hard stop (a BaseException, so no ``except Exception`` in the code under test swallows it)."""


#: hard stop per case on extra address space (the CPU stop is the row's hang guard)
HARD_MEMORY = 4 * 2**30


@contextlib.contextmanager
def _hard_limits(guard: float):
    """A runaway case fails its test instead of hanging CI or having the machine's OOM killer end it:
    an ``Overrun`` after ``guard`` CPU seconds, a ``MemoryError`` past ``HARD_MEMORY`` more bytes."""
    try:
        import resource
    except ImportError:  # not POSIX: no hard stops
        yield
        return

    def stop(signum, frame):
        raise Overrun(f"still running after {guard:g} CPU s (the hang guard: far above the slowest legitimate case)")

    previous = signal.signal(signal.SIGPROF, stop)
    signal.setitimer(signal.ITIMER_PROF, guard)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as statm:
        in_use = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    cap = in_use + HARD_MEMORY
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _invoke(argv: list[str]):
    # ledger URLs are absolute (relative ones are refused): @CWD is the row's working directory
    return CliRunner().invoke(main, [a.replace("@CWD", os.getcwd()) for a in argv], catch_exceptions=True)


def _names_any(names: tuple[str, ...], text: str) -> bool:
    """Some name appears in ``text`` as a whole word ("s" in "s=1e300 is invalid", not in "sensitivity")."""
    return any(re.search(rf"(?<![a-z0-9_]){re.escape(name.lower())}(?![a-z0-9_])", text) for name in names)


def _outcome_ok(row: Row, value: str) -> None:
    for name, template in row.files:
        Path(name).write_text(template.replace("{}", value) if "{}" in template else template, encoding="utf-8")
    argv = [a.replace("{}", value) if "{}" in a else a for a in row.argv]
    start = time.process_time()
    try:
        with _hard_limits(row.guard(value)):
            result = _invoke(argv)
    except Overrun as error:
        raise AssertionError(f"dpverify {' '.join(argv)!s}: {error}") from None
    _record(" ".join(row.argv[:3]) + ":" + row.names[0], time.process_time() - start)
    shown = f"dpverify {' '.join(argv)!s} -> exit {result.exit_code}: {result.output[-600:]!r}"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{shown}: raised {type(result.exception).__name__}: {result.exception}")
    codes = dict(row.codes)
    assert result.exit_code in (0, 2, *codes), shown
    assert "Traceback" not in result.output and "MemoryError" not in result.output, f"{shown}: a traceback or a MemoryError"
    if result.exit_code == 2:
        # the message itself (after "Error:"), not click's usage line, must name the parameter
        text = result.output.lower().split("error:", 1)[-1]
        option = re.search(r"no such option:? '?(-[^'\s]*?)'?\.?(\s|$)", text)
        if value.startswith("-") and option is not None and value.lower().startswith(option.group(1)):
            pass  # a positional value that starts with a dash is read by click as options ("No such option '-1'")
        elif row.fallback and row.fallback.lower() in text and not _names_any(row.names, text):
            assert row.valid is not None and row.valid(value), f"{shown}: an invalid value reached the base invocation's refusal"
        else:
            assert _names_any(row.names, text), f"{shown}: the refusal does not name the parameter"
    elif result.exit_code in codes:
        assert codes[result.exit_code] in result.output.lower(), f"{shown}: exit {result.exit_code} without saying why"


def _api_outcome_ok(row: ApiRow, value: Any) -> None:
    start = time.process_time()
    try:
        with _hard_limits(row.hang_guard):
            row.call(value)
    except MemoryError as error:
        raise AssertionError(f"{row.label} with {value!r}: MemoryError {error}") from None
    except (ValueError, TypeError) as error:
        text = str(error).lower()
        assert _names_any(row.names, text), f"{row.label} with {value!r}: {type(error).__name__} does not name the parameter: {error}"
    except AssertionError:
        if "assert_private" not in row.label:  # assert_private's verdict is an AssertionError by design
            raise
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # noqa: BLE001 - anything else is the bug this harness looks for
        raise AssertionError(f"{row.label} with {value!r}: raised {type(error).__name__}: {error}") from error
    _record(row.label, time.process_time() - start)


def _record(label: str, cpu: float) -> None:
    """With DPVERIFY_FUZZ_TIMES=path, the slowest CPU seconds per row go to that JSON file: the
    measurement the hang guards are set from (10x it)."""
    path = os.environ.get("DPVERIFY_FUZZ_TIMES")
    if not path:
        return
    times = json.loads(Path(path).read_text()) if Path(path).exists() else {}
    times[label] = max(times.get(label, 0.0), cpu)
    Path(path).write_text(json.dumps(times, indent=1, sort_keys=True))


def _examples(row: Row | ApiRow) -> int:
    return int(os.environ.get("DPVERIFY_FUZZ_EXAMPLES", row.examples))


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """Each row in its own empty working directory: fuzzed output paths land there, not in the repository."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("row", ROWS, ids=lambda r: " ".join(r.argv[:3]) + ":" + r.names[0])
def test_fuzz_cli(row: Row, in_tmp) -> None:
    for argv in row.setup:
        result = _invoke(list(argv))
        assert result.exit_code == 0, f"setup {argv}: {result.output}"
    cases = []

    @settings(max_examples=_examples(row), deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(value=_VALUES)
    def check(value: str) -> None:
        if value.startswith("-") and value not in SPECIAL and not _is_number(value):
            value = value.lstrip("-")  # a leading dash is an option name to click, not a value
        cases.append(value)
        _outcome_ok(row, value)

    check()
    assert len(cases) >= _examples(row), f"ran {len(cases)} cases of {_examples(row)}"


@pytest.mark.parametrize("row", _api_rows(), ids=lambda r: r.label)
def test_fuzz_api(row: ApiRow, in_tmp) -> None:
    cases = []

    @settings(max_examples=_examples(row), deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(value=_API_VALUES)
    def check(value: Any) -> None:
        cases.append(value)
        _api_outcome_ok(row, value)

    check()
    assert len(cases) >= _examples(row), f"ran {len(cases)} cases of {_examples(row)}"


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


# ---- coverage and size of the harness -----------------------------------------------------------

#: options not fuzzed, and why
EXEMPT = {
    ("reproduce", "--dask"): "connects to the given scheduler address: a fuzzed address is a network timeout, not an input check",
}


def _command_of(argv: tuple[str, ...]) -> tuple[str, click.Command, list[str]]:
    """The command path an argv invokes, the click command, and the words after it."""
    command: click.Command = main
    ctx = click.Context(main)
    words = list(argv)
    path = []
    while isinstance(command, click.Group) and words and words[0] in command.list_commands(ctx):
        path.append(words[0])
        command = command.get_command(ctx, words.pop(0))
    return " ".join(path), command, words


def _parameter_name(param: click.Parameter) -> str:
    return max(param.opts, key=len) if isinstance(param, click.Option) else param.name.upper()


def _cli_parameters() -> set[tuple[str, str]]:
    """(command path, long option or ARGUMENT name) for every non-flag parameter of every dpverify command."""
    found = set()

    def walk(command: click.Command, path: str, ctx: click.Context) -> None:
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                walk(command.get_command(ctx, name), f"{path} {name}".strip(), ctx)
            return
        for param in command.params:
            if isinstance(param, click.Option) and (param.is_flag or param.name == "help"):
                continue
            found.add((path, _parameter_name(param)))

    walk(main, "", click.Context(main))
    return found


def _fuzzed_parameters(row: Row) -> set[tuple[str, str]]:
    """The (command path, parameter) pairs whose value a row fuzzes (``{}`` in its argv)."""
    path, command, words = _command_of(row.argv)
    options = {opt: param for param in command.params if isinstance(param, click.Option) for opt in param.opts}
    arguments = [param for param in command.params if isinstance(param, click.Argument)]
    fuzzed, position, i = set(), 0, 0
    while i < len(words):
        word = words[i]
        if word in options:
            param = options[word]
            if not param.is_flag:
                i += 1
                if "{}" in words[i]:
                    fuzzed.add((path, _parameter_name(param)))
        else:
            if "{}" in word and position < len(arguments):
                fuzzed.add((path, _parameter_name(arguments[position])))
            position += 1
        i += 1
    return fuzzed


def test_every_cli_option_has_a_row():
    """Every option and argument of every command is fuzzed by some row (or listed in ``EXEMPT`` with a reason)."""
    covered = set().union(*(_fuzzed_parameters(row) for row in ROWS))
    missing = sorted(_cli_parameters() - covered - set(EXEMPT))
    assert not missing, f"parameters no row fuzzes: {missing}"


def test_ci_case_count():
    """At least ``MIN_CASES`` generated cases per CI run (each row's test asserts it ran its own count)."""
    total = sum(row.examples for row in ROWS) + sum(row.examples for row in _api_rows())
    print(f"fuzz harness: {len(ROWS)} CLI rows + {len(_api_rows())} API rows, {total} cases in CI")
    assert total >= MIN_CASES


# ---- the five cases of issue 15 -----------------------------------------------------------------


def test_issue15_huge_skellam_variance_answers_fast(in_tmp):
    _outcome_ok(Row(("account", "curve", "skellam", "--variance", "1e30", "--sensitivity", "1", "--alpha", "2"), ("variance",)), "")
    result = _invoke(["account", "curve", "skellam", "--variance", "1e30", "--sensitivity", "1", "--alpha", "2", "--json"])
    value = json.loads(result.output)["rdp"][0]
    # a certified upper bound: at least the Gaussian's alpha Delta^2 / (2 mu) = 1e-30 (Skellam is
    # no more private), at most Agarwal et al.'s bound at alpha = 2: 1e-30 + 7 / (4e60)
    assert 1e-30 <= value <= 1e-30 * (1 + 1e-12)


def test_issue15_huge_horizon_is_estimated_and_refused(in_tmp):
    start = time.process_time()
    result = _invoke(["run", "--algorithm", "dist-dp-se", "--instance", "easy", "--eps", "1", "--horizon", "1000000000000000"])
    assert result.exit_code == 2
    assert "cost: estimated" in result.output and "horizon=1000000000000000" in result.output and "aggregate" in result.output
    assert time.process_time() - start < HANG_GUARD  # a hang guard, not a budget: it is refused before running


def test_issue15_json_to_missing_directory_is_refused_first(in_tmp):
    result = _invoke(["run", "-a", "dist-dp-se", "-i", "easy", "--eps", "1", "-T", "1000000", "--json", "/missing/dir/out.json"])
    assert result.exit_code == 2 and "--json" in result.output and "/missing/dir" in result.output


def test_issue15_user_instance_needs_no_private_import():
    import dpverify

    assert {"user_instance", "load_instance_file", "BanditInstance", "RunConfig", "run"} <= set(dpverify.__all__)


def test_harness_rejects_a_traceback(monkeypatch, in_tmp):
    """The wrong variant: a command that raises must fail the harness (it is not silently passed)."""
    import accounting

    def broken(*args, **kwargs):
        raise ZeroDivisionError("planted")

    monkeypatch.setattr(accounting, "epsilon_routes", broken)
    with pytest.raises(AssertionError, match="exit 2|planted|name the parameter"):
        # the CLI turns it into exit 2 naming every parameter: the harness then checks the name
        _outcome_ok(Row(("account", "epsilon", "gaussian", "--sigma", "1", "--delta", "{}"), ("no-such-name",)), "1e-5")


def test_harness_rejects_an_unnamed_refusal(in_tmp):
    """The wrong variants: a refusal naming another parameter, an API error not naming its argument, an invalid value reaching the fallback."""
    with pytest.raises(AssertionError, match="does not name the parameter"):
        _outcome_ok(Row(("account", "curve", "gaussian", "--sigma", "{}", "--alpha", "2"), ("delta",)), "-1")
    with pytest.raises(AssertionError, match="does not name the parameter"):
        _api_outcome_ok(ApiRow("Gaussian(sigma)", lambda v: __import__("accounting").Gaussian(v), ("alpha",)), -1.0)
    Path("not-a-dir").write_text("a file")
    with pytest.raises(AssertionError, match="reached the base invocation's refusal"):
        _outcome_ok(Row(("reproduce", "iclr-fig4", "--quick", "--out", "not-a-dir", "--runs", "{}"), ("runs",), fallback="--out", valid=lambda v: False), "3")


def test_hang_guard_scales_with_the_number_of_shares():
    """Issue 34 item 17: ``account calibrate discrete-gaussian-sum --n 55386`` was stopped as a hang
    after 20 CPU s under load 10, although a case's legitimate cost grows like n (4e-5 CPU s a
    share measured: 2.1 s at this n, ~40 s at the largest accepted n = 2^20). Every row that
    fuzzes n now has a guard of its own estimate: at least 25x the measured rate at every n, and
    never below the fixed guard."""
    rows = [row for row in ROWS if "discrete-gaussian-sum" in row.argv and row.names == ("n",)]
    assert len(rows) == 3  # curve, epsilon, calibrate
    measured_rate = 4e-5
    for row in rows:
        for n in (1, 55_386, 200_000, 2**20):
            assert row.guard(str(n)) >= max(HANG_GUARD, 25 * measured_rate * n), (row.argv, n)
        assert row.guard("abc") == HANG_GUARD and row.guard(str(2**40)) == row.guard(str(2**20))
