"""--radius authors: the released code's elimination radius (issue 15, item 5), against the formula."""

from __future__ import annotations

import math

import pytest

import dpverify
from dpverify._bandits._elimination import authors_constants, authors_radius, lemma2_radius, protocol_radius
from dpverify._bandits._builtin import make_protocol


def _released(n, b, active, p, sigma, h):
    """The released confidence_interval, written out again: sqrt(log(4Kb^2/p)/(2n)) + sigma sqrt(log(2Kb^2/p))/n + h log(2Kb^2/p)/n."""
    return (math.sqrt(math.log(4 * active * b**2 / p) / (2 * n)) + sigma * math.sqrt(math.log(2 * active * b**2 / p)) / n
            + h * math.log(2 * active * b**2 / p) / n)


@pytest.mark.parametrize("algorithm, eps, s", [("dist-dp-se", 0.1, 1.0), ("dist-dp-se", 1.0, 1.0), ("dist-rdp-se", 0.5, 10.0), ("dist-rdp-se", 0.1, 100.0)])
def test_authors_radius_is_the_released_formula(algorithm, eps, s):
    protocol = make_protocol(algorithm, eps, s=s, p=0.1, tau_p=0.1)
    sigma, h = (math.sqrt(2) / eps, 1 / eps) if algorithm == "dist-dp-se" else (2 / eps + math.sqrt(2) / (s * eps), 1 / (s * eps))
    assert authors_constants(protocol.kind, protocol.epsilon, protocol.s) == pytest.approx((sigma, h), rel=1e-15)
    ours, theirs = protocol_radius(protocol, 0.1), authors_radius(protocol, 0.1)
    differs = 0
    for n, b, active in [(4, 1, 10), (4**5, 5, 7), (4**9, 9, 2)]:
        assert theirs(n, b, active) == pytest.approx(_released(n, b, active, 0.1, sigma, h), rel=1e-12)
        differs += ours(n, b, active) != pytest.approx(theirs(n, b, active), rel=1e-6)
    assert differs == 3  # Lemma 2's per-protocol constants are a different rule


def test_authors_radius_runs_and_says_so():
    config = dpverify.RunConfig(algorithm="dist-dp-se", instance="easy", horizon=50_000, epsilon=0.5, seeds=1, batch_base=4, radius="authors")
    data = dpverify.run(config).to_dict()
    assert data["options"]["radius"] == "authors"
    assert "authors" in data["per_run"][0]["radius"]


def test_authors_radius_refused_where_the_release_has_no_constants():
    with pytest.raises(ValueError, match="radius='authors'.*dist-dp-se and dist-rdp-se"):
        dpverify.RunConfig(algorithm="cdp-se", instance="easy", horizon=1000, epsilon=0.5, radius="authors").validate()
