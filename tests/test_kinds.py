"""Kinds are objects (``dpverify._executed._kinds``): parsed once at the public door, asked by attribute inside.

Covers issue 30 item 6: strings are accepted at the door (constructor arguments, kernel wrappers,
CLI/TOML values) and parsed to the kind, bad names are refused with a ``ValueError`` naming the
parameter, the value and the allowed kinds; the kinds print exactly as the strings did; their
attributes agree with what the protocols and curators do; and no string comparison of a kind is
left in ``dpverify`` (an AST scan, with an allow-list for other vocabularies and JSON readers).
Deterministic (no sampling beyond a few seeded draws whose values are not asserted).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest

from dpverify._executed import _protocol_kernels as pk
from dpverify._bandits._ucb import CURATORS, LocalCurator
from dpverify._executed._kinds import BatchNoise, CuratorKind, NoiseKind, NoiseMode, ProtocolKind
from dpverify._executed._noise import NOISE_CHOICES, check_noise
from dpverify._executed._protocols import SCALED_KINDS, DistributedProtocol

ROOT = Path(__file__).resolve().parents[1]

# ---- parsing at the door -------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [ProtocolKind, NoiseKind, CuratorKind, NoiseMode])
def test_parse_accepts_every_name_and_member(cls):
    for member in cls:
        assert cls.parse(member.value, "kind") is member
        assert cls.parse(member, "kind") is member
    assert cls.names() == tuple(m.value for m in cls)


@pytest.mark.parametrize("cls", [ProtocolKind, NoiseKind, CuratorKind, NoiseMode])
@pytest.mark.parametrize("bad", ["DIST-DP", "dist_dp", "", None, 3, b"ldp", "Polya"])
def test_parse_refuses_with_parameter_value_and_allowed(cls, bad):
    with pytest.raises(ValueError) as info:
        cls.parse(bad, "some_parameter")
    message = str(info.value)
    assert message.startswith(f"some_parameter={bad!r} is invalid")
    for name in cls.names():
        assert repr(name) in message


def test_a_kind_of_one_family_is_not_a_kind_of_another():
    with pytest.raises(ValueError, match="kind="):
        ProtocolKind.parse(NoiseKind.POLYA, "kind")
    with pytest.raises(ValueError, match="curator="):
        CuratorKind.parse(ProtocolKind.LDP, "curator")


def test_public_constructors_parse_and_refuse():
    protocol = DistributedProtocol("dist-rdp", 1.0, 0.1, 2.0)
    assert protocol.kind is ProtocolKind.DIST_RDP
    assert DistributedProtocol(ProtocolKind.DIST_RDP, 1.0, 0.1, 2.0) == protocol  # one object either way
    with pytest.raises(ValueError, match=r"kind='dist' is invalid: expected one of \('dist-dp', 'dist-rdp', 'dist-cdp', 'cdp', 'ldp'\)"):
        DistributedProtocol("dist", 1.0, 0.1)
    curator = LocalCurator("ctl-s", 1.0, noise="idealised")
    assert curator.kind is CuratorKind.CTL_S and curator.noise is NoiseMode.IDEALISED
    with pytest.raises(ValueError, match=r"curator='ctx' is invalid: expected one of \('identity', 'ctl', 'ctb', 'ctl-s', 'ctb-s'\)"):
        LocalCurator("ctx", 1.0)
    with pytest.raises(ValueError, match=r"noise='exact' is invalid: expected one of \('float-safe', 'idealised'\)"):
        LocalCurator("ctl", 1.0, noise="exact")
    assert check_noise("float-safe") is NoiseMode.FLOAT_SAFE and NOISE_CHOICES == ("float-safe", "idealised")
    assert CURATORS == ("identity", "ctl", "ctb", "ctl-s", "ctb-s")


def test_kernel_wrappers_parse_noise_names_and_refuse_bad_ones():
    x = np.full(4, 0.5)
    by_name = pk.server_views(np.random.default_rng(1), x, 8, 1000, 3, "skellam", eps=1.0)
    by_kind = pk.server_views(np.random.default_rng(1), x, 8, 1000, 3, NoiseKind.SKELLAM, eps=1.0)
    assert np.array_equal(by_name, by_kind)  # the same draws: the name is parsed to the same kind
    with pytest.raises(ValueError, match=r"noise='gauss' is invalid: expected one of \('none', 'polya'"):
        pk.server_views(np.random.default_rng(1), x, 8, 1000, 3, "gauss", eps=1.0)
    with pytest.raises(ValueError, match=r"total_noise='discrete_gaussian' is invalid: expected one of \('none', 'discrete_laplace', 'skellam'\) \(use server_views"):
        pk.aggregate_views(np.random.default_rng(1), x, 8, 1000, 3, "discrete_gaussian")
    with pytest.raises(ValueError, match="total_noise='polya'"):
        pk.aggregate_views(np.random.default_rng(1), x, 8, 1000, 3, NoiseKind.POLYA)


# ---- they print as the strings did ---------------------------------------------------------------


@pytest.mark.parametrize("member", [*ProtocolKind, *NoiseKind, *CuratorKind, *NoiseMode], ids=str)
def test_kinds_print_exactly_as_their_names(member):
    name = member.value
    assert type(name) is str
    assert str(member) == name and f"{member}" == name and f"{member:>12}" == f"{name:>12}"
    assert repr(member) == repr(name)
    assert json.dumps({"kind": member}) == json.dumps({"kind": name})
    assert member == name and hash(member) == hash(name)  # a caller's own string comparison keeps its meaning


def test_protocol_name_and_reprs_are_plain_strings():
    protocol = DistributedProtocol("ldp", 1.0, 0.1)
    assert type(protocol.name) is str and protocol.name == "ldp"
    assert repr(protocol).startswith("DistributedProtocol(kind='ldp', epsilon=1.0")
    assert SCALED_KINDS == ("dist-rdp", "dist-cdp")


# ---- the attributes agree with the behaviour -----------------------------------------------------


@pytest.mark.parametrize("kind", list(ProtocolKind), ids=str)
def test_protocol_kind_attributes_agree_with_the_protocol(kind):
    n = 16
    small, large = DistributedProtocol(kind, 1.0, 0.1, 1.0), DistributedProtocol(kind, 1.0, 0.1, 4.0)
    # scaled: the scale s changes the theorem's granularity g only for Theorems 2 and 4
    assert (small.parameters(n).g != large.parameters(n).g) == kind.scaled
    # aggregate path: offered exactly where the summed noise has a one-draw sampler
    assert (small.aggregate_resolution(n) is not None) == kind.aggregate_path == (kind.summed_noise is not None)
    rng = np.random.default_rng(0)
    x = np.full(n, 0.5)
    if kind.aggregate_path:
        assert small.server_views(x, rng, 2, path="aggregate").shape == (2,)
    else:
        with pytest.raises(ValueError, match=f"'per-user' for {kind.value}"):
            small.server_views(x, rng, 2, path="aggregate")
    # messages: only the local model reveals each user's message
    if kind.reveals_messages:
        assert small.messages(x, rng).shape == (n,)
    else:
        with pytest.raises(ValueError, match="only the local model reveals each message"):
            small.messages(x, rng)
    # the theorem's guarantee: pure DP for Theorems 1, 5, 6 (a DiscreteLaplace per user)
    assert (type(small.mechanism(n)).__name__ == "DiscreteLaplace") == kind.pure
    assert kind.theorem in (1, 2, 4, 5, 6) and kind.batch_noise in BatchNoise


@pytest.mark.parametrize("kind", list(CuratorKind), ids=str)
def test_curator_kind_attributes_agree_with_the_curator(kind):
    curator = LocalCurator(kind, 1.0 if kind.private else None)
    assert (curator.mechanism() is not None) == kind.private
    assert (curator.bits == 1) == kind.binary
    assert curator.laplace == kind.laplace
    if not kind.private:
        # identity: the response is the reward, squashed or not (it is not squashed)
        assert np.array_equal(curator.respond(np.array([0.25, 2.0]), np.random.default_rng(0)), [0.25, 2.0])


def test_noise_kind_codes_are_the_kernels():
    assert [k.code for k in NoiseKind] == list(range(len(NoiseKind)))
    assert pk.NOISE_KINDS == NoiseKind.names()
    assert NoiseKind.summed() == (NoiseKind.NONE, NoiseKind.DISCRETE_LAPLACE, NoiseKind.SKELLAM)
    assert [k.summed_code for k in NoiseKind.summed()] == [0, 1, 2]


# ---- no string comparison of a kind is left ------------------------------------------------------

_VOCABULARY = frozenset(ProtocolKind.names() + NoiseKind.names() + CuratorKind.names() + NoiseMode.names())

#: (module, enclosing function) -> why a comparison there is not a kind's
_ALLOWED = {
    ("dpverify/_audit/_views.py", "name"): "the view's statistic kinds ('identity', 'column', ...): another vocabulary",
    ("dpverify/_audit/_views.py", "values"): "the view's statistic kinds ('identity', 'column', ...): another vocabulary",
    ("dpverify/_bandits/_environments.py", "__post_init__"): "reward-law kinds of an arm (another vocabulary), at its own door",
    ("dpverify/_bandits/_figures.py", "make_figure"): "reads a saved run's JSON ledger summary (the serialized string)",
    ("dpverify/_bandits/_figures.py", "_plot"): "reads a saved run's JSON ledger summary (the serialized string)",
    ("dpverify/_cli/_cmd_bandits.py", "run_command"): "reads a saved run's JSON ledger summary (the serialized string)",
    ("dpverify/_cli/_html_report.py", "_idealised_banner"): "reads a saved run's JSON ledger summary (the serialized string)",
    ("dpverify/_cli/_html_report.py", "reproduce_report"): "reads a saved run's JSON ledger summary (the serialized string)",
}


def _strings(node: ast.AST) -> frozenset[str] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return frozenset({node.value})
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        parts = [_strings(e) for e in node.elts]
        return frozenset().union(*parts) if parts and all(p is not None for p in parts) else None
    return None


def _name(node: ast.AST) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def _kind_comparisons(tree: ast.AST):
    """(line, enclosing function) of every comparison of a kind's name to a string, every membership
    test in a tuple of kind names (``*_KINDS``), every ``kind.startswith(...)``."""
    def visit(node: ast.AST, function: str):
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Compare):
                operands = [child.left, *child.comparators]
                if any((s := _strings(o)) and s & _VOCABULARY for o in operands) or any(_name(o).endswith("KINDS") for o in operands):
                    yield child.lineno, function
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) and child.func.attr == "startswith" and "kind" in _name(child.func.value):
                yield child.lineno, function
            yield from visit(child, inner)
    yield from visit(tree, "<module>")


def test_the_scan_finds_what_it_looks_for():
    # the wrong variant: the code this change removed is found
    old = 'def f(self):\n    if self.kind in ("dist-dp", "cdp"):\n        pass\n    return kind == "polya" or k in P.SCALED_KINDS or kind.startswith("dist")\n'
    assert [line for line, _ in _kind_comparisons(ast.parse(old))] == [2, 4, 4, 4]
    assert list(_kind_comparisons(ast.parse("x = kind is ProtocolKind.LDP or kind.scaled or path == 'aggregate'"))) == []


def test_no_string_comparison_of_a_kind_is_left_in_dpverify():
    found = []
    used = set()
    for path in sorted((ROOT / "dpverify").rglob("*.py")):
        module = path.relative_to(ROOT).as_posix()
        for line, function in _kind_comparisons(ast.parse(path.read_text(encoding="utf-8"))):
            if (module, function) in _ALLOWED:
                used.add((module, function))
            else:
                found.append(f"{module}:{line} (in {function})")
    assert found == [], "compare the kind object (its attributes, or `is`), not its name"
    assert used == set(_ALLOWED), f"stale allow-list entries: {set(_ALLOWED) - used}"
