"""The HTML reports of ``audit``, ``run`` and ``reproduce`` (``--html FILE``).

The pages are parsed with the standard library's HTML parser, and every claim or curve of the
command's own JSON output must appear in them with its numbers: a report that drops a row,
mislabels a verdict or prints another number fails. The audit run here is a real (small) suite
at the suite's own error control: its only randomness is the audit's, with a fixed seed and the
suite's family-wise false-alarm rate 1e-3; the planted bug it contains is caught with a margin
(lower bound 1.17 against a claimed 1 at these samples), so the test is deterministic in practice.
"""

from __future__ import annotations

import csv
import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from dpverify._cli import _html_report
from dpverify._cli._cmd_audit import audit_command
from dpverify._cli._cmd_bandits import reproduce_command, run_command

SUITE = Path(__file__).resolve().parents[1] / "audits"


class _Page(HTMLParser):
    """Collects every table row's cell texts, the ids of rows, and counts <svg> elements."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.row_ids: dict[str, list[str]] = {}
        self.svg = 0
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._id: str | None = None
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self._row, self._id = [], dict(attrs).get("id")
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "svg":
            self.svg += 1
        elif tag == "title":
            self._in_title = True

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            if self._id:
                self.row_ids[self._id] = self._row
            self._row = None
        elif tag == "title":
            self._in_title = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._in_title:
            self.title += data


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


def _cell(value) -> str:
    return _html_report._text(value)


def _small_suite(tmp_path: Path) -> Path:
    suite = tmp_path / "suite"
    (suite / "planted").mkdir(parents=True)
    for name in ("discrete_laplace_eps1.toml", "randomized_response_eps1.toml"):
        shutil.copy(SUITE / name, suite / name)
    shutil.copy(SUITE / "planted" / "rr_biased_coin.toml", suite / "planted" / "rr_biased_coin.toml")
    # an idealised float claim: violated in floating point, holding in real arithmetic (#20)
    (suite / "laplace_idealised.toml").write_text('target = "laplace"\n[parameters]\nscale = 1.0\n'
                                                  "[audit]\nsamples = 50_000\nfloat_bits = false\n")
    return suite


def test_audit_html_lists_every_claim_with_its_verdict_and_bounds(tmp_path: Path) -> None:
    suite = _small_suite(tmp_path)
    html_path, json_path = tmp_path / "report.html", tmp_path / "report.json"
    result = CliRunner().invoke(audit_command, [str(suite), "--html", str(html_path), "--json", str(json_path),
                                                "--workers", "1", "--samples-scale", "0.3"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    payload = json.loads(json_path.read_text())
    page = _parse(html_path)
    assert len(payload["results"]) == 4
    for row in payload["results"]:
        cells = page.row_ids[f"claim-{row['name']}"]
        assert cells[0] == row["name"]
        assert cells[1] == row["verdict"]
        assert cells[2] == (row["arithmetic"] if row["arithmetic"] != "none" else "-")
        assert cells[5] == _cell(row["claimed"])
        assert cells[6] == _cell(row["lower_bound"])
        assert cells[7] == _cell(row["estimate"])
        assert cells[10] == _cell(row["real_lower_bound"])
        assert cells[11] == _cell(row["samples"])
    verdicts = {r["name"]: r["verdict"] for r in payload["results"]}
    assert verdicts["planted/rr_biased_coin"] == "caught"
    # which arithmetic: the idealised float claim reads "floating point", with its real-arithmetic bound
    assert page.row_ids["claim-laplace_idealised"][1:3] == ["caught", "floating point"]
    assert page.row_ids["claim-planted/rr_biased_coin"][2] == "both"  # integer outputs: no float artefact possible
    assert page.svg == 2  # the lower bounds' chart and the trade-off panels (issue 33)
    assert "every claim holds" in page.title


def test_audit_html_of_a_failing_gate_says_so(tmp_path: Path) -> None:
    """A planted bug replaced by a correct mechanism escapes: the page's title and row say 'missed'."""
    suite = tmp_path / "suite"
    (suite / "planted").mkdir(parents=True)
    text = (SUITE / "randomized_response_eps1.toml").read_text()
    (suite / "planted" / "not_a_bug.toml").write_text('expect = "violated"\n' + text)
    html_path = tmp_path / "r.html"
    result = CliRunner().invoke(audit_command, [str(suite), "--html", str(html_path), "--workers", "1", "--samples-scale", "0.3"])
    assert result.exit_code == 1, result.output
    page = _parse(html_path)
    assert page.row_ids["claim-planted/not_a_bug"][1] == "missed"
    assert "the gate fails" in page.title


def test_run_html_has_regret_ledger_and_seed(tmp_path: Path) -> None:
    html_path, json_path = tmp_path / "run.html", tmp_path / "run.json"
    args = ["--algorithm", "dist-dp-se", "--instance", "easy", "--eps", "0.5", "--horizon", "20000", "--seeds", "2",
            "--html", str(html_path), "--json", str(json_path)]
    result = CliRunner().invoke(run_command, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(json_path.read_text())
    page = _parse(html_path)
    text = html_path.read_text()
    assert _cell(data["mean_final_regret"]) in text
    lo, hi = data["final_regret_ci95"]
    assert _cell(lo) in text and _cell(hi) in text
    runs = [r for r in page.rows if len(r) == 2 and r[0] in ("0", "1")]
    assert [r[1] for r in runs[:2]] == [_cell(v) for v in data["final_regrets"]]
    approx = data["ledger"]["per_user"]["approx"]
    ledger_row = next(r for r in page.rows if r and r[0] == "per-user (eps, delta)")
    assert _cell(approx["epsilon"]) in ledger_row[1] and approx["route"] in ledger_row[1]
    assert any(r[:2] == ["root seed", "0"] for r in page.rows)
    assert page.svg == 1


def test_html_path_is_checked_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import dpverify._bandits as bandits

    def refuse(*_a, **_k):  # the run must never start
        raise AssertionError("the run started although its output path is unusable")

    monkeypatch.setattr(bandits, "run", refuse)
    missing = tmp_path / "missing" / "run.html"
    args = ["--algorithm", "dist-dp-se", "--instance", "easy", "--eps", "0.5", "--horizon", "1000", "--html", str(missing)]
    result = CliRunner().invoke(run_command, args)
    assert result.exit_code == 2
    assert "--html" in result.output and "does not" in result.output
    result = CliRunner().invoke(audit_command, [str(SUITE), "--html", str(missing)])
    assert result.exit_code == 2 and "--html" in result.output


def _tiny_figure(outdir: Path) -> list[Path]:
    outdir.mkdir(parents=True, exist_ok=True)
    csv_path, json_path = outdir / "f.csv", outdir / "f.json"
    with csv_path.open("w", newline="") as handle:
        w = csv.writer(handle)
        w.writerow(["figure", "panel", "curve", "algorithm", "instance", "epsilon", "path", "runs", "t", "mean_regret",
                    "se_regret", "mean_regret_over_t", "se_regret_over_t"])
        for curve, slope in (("A", 0.3), ("B", 0.1)):
            for t in (1, 10, 100):
                w.writerow(["f", "a", curve, curve.lower(), "easy", 0.5, "per-user", 2, t, slope * t, 0.01 * t, slope, 0.01])
    curves = [{"panel": "a", "curve": c, "algorithm": c.lower(), "instance": "easy", "epsilon": 0.5, "horizon": 100, "runs": 2,
               "mean_final_regret": m, "final_regret_ci95": [m - 1, m + 1], "final_regret_over_T": m / 100,
               "ledger_per_user": {"approx": {"epsilon": 0.4999, "delta": 1e-6, "route": "rdp-cks"}}}
              for c, m in (("A", 30.0), ("B", 10.0))]
    json_path.write_text(json.dumps({"figure": "f", "quick": True, "curves": curves}))
    return [outdir / "f.png", csv_path, json_path]


def test_reproduce_html_lists_every_curve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The figure's maker is replaced by one writing a tiny CSV/JSON: this checks the page, not the runs."""
    import dataclasses

    from dpverify._bandits import figures

    table = figures()
    fake = dataclasses.replace(table["iclr-fig1abc"], make=lambda outdir, **kw: _tiny_figure(Path(outdir)))
    monkeypatch.setattr("dpverify._bandits.figures", lambda: {**table, "iclr-fig1abc": fake})
    html_path = tmp_path / "fig.html"
    result = CliRunner().invoke(reproduce_command, ["iclr-fig1abc", "--out", str(tmp_path / "out"), "--html", str(html_path)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    page = _parse(html_path)
    summary = json.loads((tmp_path / "out" / "f.json").read_text())
    for c in summary["curves"]:
        row = next(r for r in page.rows if len(r) == 13 and r[1] == c["curve"])
        assert row[7] == _cell(c["mean_final_regret"])
        assert row[10] == f"({_cell(0.4999)}, {_cell(1e-6)})"
    assert page.svg == 1


def test_without_matplotlib_the_tables_remain(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(_html_report, "pyplot", lambda: None)
    paths = _tiny_figure(tmp_path)
    text = _html_report.reproduce_report(json.loads(paths[2].read_text()), paths[1], description="tiny")
    page = _Page()
    page.feed(text)
    assert page.svg == 0
    assert "Figures need matplotlib" in text
    assert sum(1 for r in page.rows if len(r) == 13) == 3  # header + two curves


def test_one_versions_function_for_runs_and_pages() -> None:
    """#23 item 3: a run's JSON and every HTML page take their versions from dpverify._presentation._versions
    (read from the distributions' metadata, importing nothing)."""
    import platform

    import numpy as np

    from dpverify._bandits._results import versions as run_versions
    from dpverify._presentation._versions import versions

    assert run_versions is versions
    found = versions()
    assert found["numpy"] == np.__version__ and found["python"] == platform.python_version()
    page = _html_report._environment({"numpy": "as recorded by the run"})
    assert "as recorded by the run" in page and found["scipy"] in page

