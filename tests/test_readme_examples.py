"""Every example of README.md and audits/README.md runs, and prints the numbers its text states (issue 34, item 8).

The fenced code blocks are parsed out of the two files. Each block is classified in ``BLOCKS`` by
its first line: run here (Python executed in a fresh namespace; shell lines starting with
``dpverify`` invoked through the CLI in a scratch directory), run by another test (named), or not
run, with the reason (an install command, a CI file, a schema reference, or a cost this suite
cannot pay: the figures at paper size). A block that is not in the table fails
:func:`test_every_example_is_classified`, so a new example has to be placed.

Numbers: a comment ``# 6.187745 pld`` on a ``print`` line (or ``# eps = 0.053005`` on a command)
states what the example prints; every number of the comment outside parentheses must agree with a
number of the output to the comment's precision (rounded or truncated; ``...`` marks a
truncation). The README drift this caught: ``--compose 1000`` printed 2.167 while the text said
2.1774, the DP-SGD example prints 1.82824 (text: 1.8283), the first two ``acc.`` blocks had no
import, ``account event pipeline.json`` named a file not shipped, the ``audit_run`` witness
comment named an event the audit no longer reports, and ``account charge`` in the ledger example
was refused (its users had no budget left after run 1).
CPU cost: about 15 s on one core (the examples run; the figures at paper size and the long runs
do not).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from dpverify.cli import main

ROOT = Path(__file__).resolve().parents[1]
FILES = ("README.md", "audits/README.md")

RUN = "run here"
#: first line of a block -> (how it is checked, why / where)
BLOCKS: dict[str, tuple[str, str]] = {
    # README.md
    "pip install . && dpverify            # install, then run the built-in default": ("not run", "installs the package (CI's .ci/run does)"),
    "dpverify account curve skellam --variance 100 --sensitivity 1 --alpha 2 --alpha 10 --alpha 100 --alpha 1000 --json": (RUN, ""),
    "import accounting as acc": (RUN, ""),
    "from accounting import CertifiedAccountant as PLDAccountant   # was: from dp_accounting.pld import PLDAccountant": (RUN, ""),
    "dpverify account event examples/pipeline.json --delta 1e-5 --bracket   # eps = 2.19018 (PLD), bracket [2.13938, 2.19018]": (RUN, ""),
    "dpverify account shuffle --eps0 1 --n 10000 --delta 1e-6                 # eps = 0.053005 (FMT21 pair)": (RUN, ""),
    "dpverify account epsilon gaussian --sigma 1 --compose 4 --delta 1e-5 --tradeoff             # routes, then the trade-off table": (RUN, ""),
    "import numpy as np": ("elsewhere", "the marked examples (<!-- ...-example -->): tests/test_audit_api.py, test_audit_arithmetic.py, "
                                        "test_audit_user_targets.py, test_run_audit.py"),
    "[holds] epsilon statdp one below rest above (n=5) D||D': lower=0.955 claimed=1 ... via output == 0": (
        "elsewhere", "the audit example's output: tests/test_audit_api.py::test_readme_example_runs"),
    "dpverify audit audits/ --json audit.json --junit audit.xml": ("elsewhere", "the whole gate: tests/test_audit_suite.py::test_real_suite_passes_at_ci_budget"),
    "# my_audits/noisy_max.toml": ("not run", "names a package of the reader's (mypackage); the same schema: tests/test_audit_user_targets.py"),
    "$ dpverify audit audits/runs/dist_dp_se_public.toml": ("elsewhere", "both files are claims of the gate: tests/test_audit_suite.py"),
    "import dpverify": (RUN, ""),
    "dpverify run --algorithm dist-dp-se --instance easy --eps 0.5 --horizon 1000000 --seeds 4 --json run.json": (RUN, "the cheap lines"),
    "dpverify run --algorithm dist-dp-se --means 0.9,0.8,0.5 --eps 1 --horizon 100000": (RUN, ""),
    "# my.toml                                  # a linear instance instead:": (RUN, "written to my.toml for the block above"),
    "L=sqlite:///$PWD/ledger.db      # sqlite:////home/you/ledger.db": (RUN, ""),
    "accounting/       exact math (python-flint Arb); public API in __init__.py, the interface in internal.py": ("not run", "the layout, not code"),
    "from accounting import CertifiedOpacusAccountant as PRVAccountant   # was: from opacus.accountants import PRVAccountant": (
        "elsewhere", "tests/test_opacus_compat.py::test_readme_example (its printed number against dp_accounting's PLD band)"),
    "import math": ("elsewhere", "the 'Your own mechanism' example: tests/test_mechanism_contract.py::test_readme_own_mechanism_example"),
    # audits/README.md
    "$ dpverify audit audits/                                   # the gate: table on stdout, exit 0/1/2": (
        "elsewhere", "every line audits files of the gate (planted/secagg_noise_dropped.toml included): "
                     "tests/test_audit_suite.py::test_real_suite_passes_at_ci_budget; --executor: test_dask_option_runs_the_claims_on_a_cluster"),
    "# .github/workflows/audit.yml (or any CI): the gate fails the job on a violated claim or an escaped bug": ("not run", "a CI file"),
    'name = "dist_dp_eps1_n16"        # optional; default: the path below the suite root, without .toml': (
        "not run", "the schema reference (every key, with alternatives in comments)"),
    'target = "run:dist-dp-se"       # run:<algorithm>; planted variants are run:bug.<name>': (RUN, "loaded and validated, not audited"),
    'target = "mypackage.mechanisms:noisy_max"': ("not run", "names a package of the reader's (mypackage)"),
    '@_target("my-mechanism", "one line for the docs", cost=1.0)': ("not run", "a fragment of dpverify/_audit/_suite's registry"),
    'target = "run:mypackage.bandits:elimination"': ("not run", "names a package of the reader's (mypackage); the same kind of loop is a claim of the gate: audits/runs/user_*.toml (tests/test_audit_suite.py)"),
    'mode = "one-run"': ("not run", "a fragment of a claim file; audits/ldp_ucb_l_eps1_one_run.toml is a whole one, run by the gate (tests/test_audit_suite.py)"),
}

#: command lines of run blocks that are not run here, and why (the cost: CPU seconds on one core)
NOT_RUN_LINES = {
    "dpverify run --algorithm ldp-ucb-b --instance ren-bernoulli --eps 2 --horizon 1000000 --seeds 8": "8 runs of T = 10^6 (~2 CPU s)",
    "dpverify run --algorithm ldp-ucb-l --instance ren-bernoulli --eps 2 --horizon 1000000 --noise idealised": "4 runs of T = 10^6 (~1.5 CPU s)",
    "dpverify reproduce ren-fig1 --quick --out figures/": "a figure (~3 CPU s); the quick figures: tests/test_quick_figures.py",
    "dpverify reproduce iclr-fig1abc --out figures/": "a figure at paper size (~40 CPU s)",
    "dpverify run --algorithm dist-dp-se --instance easy --eps 0.5 --horizon 1000000 --seeds 20 --population 600000 --max-returns 4": (
        "20 runs of T = 10^6 (~5 CPU s); returning users: tests/test_returning_users.py"),
    "dpverify run ... --ledger $L": "not a literal command ('...'): run here as run 1's arguments again, below",
    "dpverify audit audits/": "the whole gate: tests/test_audit_suite.py::test_real_suite_passes_at_ci_budget",
    "dpverify account event examples/pipeline.json --delta 1e-5 --tradeoff --plot pipeline.png": (
        "1,000 DP-SGD steps and a figure (~3.3 CPU s); --tradeoff on events: tests/test_tradeoff.py::test_dp_event_subject and the lines above"),
    "dpverify audit audits/ --json audit.json --junit audit.xml": "the whole gate (as above)",
    "dpverify audit audits/ --samples-scale 0.1 --seed 7": "the whole gate (as above)",
    "dpverify audit audits/ --executor tcp://scheduler:8786": "needs a Dask cluster: tests/test_audit_suite.py::test_dask_option_runs_the_claims_on_a_cluster",
}


def _blocks() -> list[tuple[str, int, str, str, str]]:
    """(file, line, language, first line, text) of every fenced block; a block's 'first line' for
    prose-introduced blocks is the backticked name that opens the paragraph before it."""
    out = []
    for name in FILES:
        lines = (ROOT / name).read_text().splitlines()
        i = 0
        while i < len(lines):
            if lines[i].startswith("```"):
                language = lines[i][3:].strip()
                j = i + 1
                while not lines[j].startswith("```"):
                    j += 1
                body = lines[i + 1:j]
                first = next((line.strip() for line in body if line.strip()), "")
                out.append((name, i + 1, language, first, "\n".join(body) + "\n"))
                i = j + 1
            else:
                i += 1
    return out


BLOCK_LIST = _blocks()


def test_every_example_is_classified():
    """Item 8: a new or edited example must be placed in BLOCKS (run here, run elsewhere, or why not)."""
    unknown = [(name, line, first) for name, line, _, first, _ in BLOCK_LIST if first not in BLOCKS]
    assert not unknown, f"examples not classified in tests/test_readme_examples.py BLOCKS: {unknown}"
    run_here = sum(1 for b in BLOCK_LIST if BLOCKS.get(b[3], ("unclassified", ""))[0] == RUN)
    assert run_here >= 12


# ---- numbers stated in comments ---------------------------------------------------------------

_NUMBER = re.compile(r"(?<![\w.])-?\d[\d_]*\.?\d*(?:e-?\d+)?(?:\.\.\.)?")


def _stated(comment: str) -> list[str]:
    """The numbers a comment states outside parentheses ('# 6.187745 pld (RDP would say ...)' -> ['6.187745'])."""
    depth, kept = 0, []
    for ch in comment:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0:
            kept.append(ch)
    return [n for n in _NUMBER.findall("".join(kept)) if "." in n]


def _agrees(stated: str, printed: float) -> bool:
    """Whether ``printed`` shows as ``stated`` at its precision, rounded or truncated ('...')."""
    text = stated.rstrip(".")
    decimals = len(text.split(".")[1]) if "." in text else 0
    value = float(text)
    scale = 10.0**decimals
    rounded = abs(printed - value) <= 0.5 / scale * (1 + 1e-9)
    truncated = math.floor(abs(printed) * scale + 1e-9) == round(abs(value) * scale)
    return rounded or truncated


def _printed_numbers(text: str) -> list[float]:
    return [float(n) for n in re.findall(r"-?\d+\.\d+(?:e-?\d+)?|-?\d+e-?\d+", text)]


def _check_numbers(comment: str, output: str, where: str) -> int:
    numbers = _printed_numbers(output)
    stated = _stated(comment)
    for n in stated:
        assert any(_agrees(n, v) for v in numbers), f"{where}: the text states {n}, the example printed {output.strip()[:400]!r}"
    return len(stated)


def test_number_agreement_rejects_a_stale_value():
    """The comparison itself: 2.1774 (the stale README value) does not agree with 2.1670..., 2.167 does."""
    assert not _agrees("2.1774", 2.1670037947999083)
    assert _agrees("2.167", 2.1670037947999083)
    assert _agrees("0.0099996...", 0.00999966)
    assert not _agrees("6.1877", 6.1890)
    assert _stated("# 6.187745 pld (RDP would say 6.7194)") == ["6.187745"]
    assert _stated("# eps = 2.19018 (PLD), bracket [2.13938, 2.19018]") == ["2.19018", "2.13938", "2.19018"]


# ---- running the blocks -------------------------------------------------------------------------

def _python_blocks():
    return [b for b in BLOCK_LIST if b[2] == "python" and BLOCKS.get(b[3], ("unclassified", ""))[0] == RUN]


@pytest.mark.parametrize("block", _python_blocks(), ids=lambda b: f"{b[0]}:{b[1]}")
def test_python_example_runs_and_prints_what_it_says(block, tmp_path, monkeypatch):
    """Item 8: each Python example runs in a fresh namespace (so a missing import fails it), and
    each ``print(...)  # numbers`` line prints the numbers the comment states."""
    name, line, _, _, code = block
    monkeypatch.chdir(tmp_path)
    lines = code.splitlines()
    checked = 0
    namespace: dict = {"__name__": f"readme_example_{line}"}
    # run statement by statement so that each print's output is matched with its own comment
    import ast

    tree = ast.parse(code)
    for statement in tree.body:
        source = "\n".join(lines[statement.lineno - 1:statement.end_lineno])
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            exec(compile(ast.Module([statement], []), f"{name}:{line}", "exec"), namespace)
        comment = lines[statement.end_lineno - 1].partition("#")[2] if "print(" in source else ""
        if comment:
            checked += _check_numbers(comment, buffer.getvalue(), f"{name}:{line + statement.lineno}")
    if "epsilon_routes(acc.PoissonSampled" in code:  # "(RDP would say 6.7194)": the rdp-cks route's value
        report = namespace["report"]
        rdp = [r.epsilon for r in report.alternatives if r.route == "rdp-cks"]
        assert rdp and _agrees("6.7194", rdp[0])
    if "report.worst().event" in code:  # the witness named in the comment
        event = namespace["report"].worst().event
        assert event.startswith("output == (7, 0)"), event
    assert checked or "CertifiedAccountant" not in code


def _commands(text: str) -> list[tuple[str, str]]:
    """(command, comment) of each line of a shell block ('\\' continuations joined, '$ ' prompts dropped)."""
    out, pending = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("$ "):
            line = line[2:]
        if pending:
            line = pending + " " + line
            pending = ""
        if line.endswith("\\"):
            pending = line[:-1].strip()
            continue
        command, _, comment = line.partition("  #") if not line.startswith("#") else ("", "", line)
        command = command.strip()
        if command:
            out.append((command, comment))
    return out


def _shell_blocks():
    return [b for b in BLOCK_LIST if b[2] in ("sh", "console") and BLOCKS.get(b[3], ("unclassified", ""))[0] == RUN]


@pytest.mark.parametrize("block", _shell_blocks(), ids=lambda b: f"{b[0]}:{b[1]}")
def test_shell_example_runs_and_prints_what_it_says(block, tmp_path, monkeypatch):
    """Item 8: each ``dpverify ...`` line of a shell example exits as the text says (0, or 1 for
    the refused ledger run) and prints the numbers of its comment; lines not run are listed in
    NOT_RUN_LINES with the reason."""
    name, line, _, first, text = block
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    (tmp_path / "audits").symlink_to(ROOT / "audits")
    my_toml = next(b for b in BLOCK_LIST if b[3].startswith("# my.toml"))[4]
    (tmp_path / "my.toml").write_text("\n".join(l.split("#")[0].rstrip() for l in my_toml.splitlines()) + "\n")
    ledger = f"sqlite:///{tmp_path}/ledger.db"
    ran = 0
    first_run = None
    for command, comment in _commands(text):
        if command.startswith("L="):
            continue
        if command in NOT_RUN_LINES:
            if "--ledger $L" in command and first_run is not None:  # run 2: run 1's arguments again, refused before its first charge
                result = CliRunner().invoke(main, first_run[:-1])  # without --create
                assert result.exit_code == 1, result.output
                assert "refused before its first charge" in result.output and "3,616..5,099" in result.output
                assert "0.499898" in result.output and "1.49969" in result.output and "0.500102" in result.output
                ran += 1
            continue
        assert command.startswith("dpverify "), command
        args = shlex.split(command.replace("$L", ledger).replace("$PWD", str(tmp_path)))[1:]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, f"{command}\n{result.output[-2000:]}"
        if "--create" in args:
            first_run = args
        if "--json" in args and args[args.index("--json") + 1:args.index("--json") + 2] == ["run.json"]:
            assert json.loads((tmp_path / "run.json").read_text())["horizon"] == 1_000_000
        if comment:
            _check_numbers(comment.partition("#")[2] if "#" in comment else comment, result.output, f"{name}:{line}: {command}")
        ran += 1
    assert ran >= 1


def test_run_claim_schema_example_loads():
    """Item 8: the run-claim example of audits/README.md is a valid claim file (loaded and
    validated by the suite loader; auditing it is the gate's job)."""
    from dpverify._audit._suite import load_suite

    block = next(b for b in BLOCK_LIST if b[3].startswith('target = "run:dist-dp-se"'))
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "run_example.toml"
        path.write_text(block[4])
        (spec,) = load_suite(str(path))
    assert spec.samples == 50_000
