"""Self-contained HTML reports for a reviewer: ``--html FILE`` on ``audit``, ``run`` and ``reproduce``.

One page per command, with no external resources (styles inline, figures inline as SVG drawn by
matplotlib), so it can be attached to a ticket or a CI artefact and opened in any browser. The
pages are rendered from the same JSON payloads the commands write with ``--json``
(``SuiteOutcome.to_dict()``, ``RunResult.to_dict()``, a figure's summary JSON and CSV), so the
report and the machine-readable output can never disagree. Every number is escaped text in a
table cell; figures are illustrations of those numbers, not their only record.
"""

from __future__ import annotations

import csv
import datetime as _dt
import html
import io
import math
import re
from pathlib import Path
from typing import Any, Iterable, Sequence

from .._presentation._plots import pyplot, regret_panels
from .._presentation._versions import versions

__all__ = ["audit_report", "reproduce_report", "run_report"]

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;max-width:90rem;color:#1d2330;padding:0 1rem}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #d7dbe3;padding-bottom:.2rem}
.sub{color:#5a6275;margin-top:0}table{border-collapse:collapse;width:100%;font-size:.86rem;margin:.6rem 0}
th,td{border:1px solid #d7dbe3;padding:.3rem .4rem;text-align:left;vertical-align:top}th{background:#f1f3f7}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.badge{white-space:nowrap;display:inline-block;padding:.05rem .5rem;border-radius:.7rem;font-weight:600;font-size:.8rem}
.holds,.caught,.ok{background:#dff3e4;color:#17622e}.nopower{background:#fff4d6;color:#7a5300}
td{overflow-wrap:anywhere}td.num{overflow-wrap:normal}td:first-child{min-width:9rem}td:last-child{min-width:8rem}.violated,.missed,.error,.fail{background:#fbe0e0;color:#9b1c1c}
.summary{display:flex;gap:1rem;flex-wrap:wrap;margin:1rem 0}.card{border:1px solid #d7dbe3;border-radius:.4rem;padding:.6rem 1rem;min-width:9rem}
.card b{display:block;font-size:1.3rem}.figure{margin:1rem 0;overflow-x:auto}.figure svg{max-width:100%;height:auto}
table.kv{width:auto;min-width:28rem}
th.wide{min-width:24rem}.scroll{overflow-x:auto}
tr.detail td{background:#fff;color:#5a6275;font-size:.78rem;border-top:none;padding-left:1.5rem}
code{background:#f1f3f7;padding:0 .2rem;border-radius:.2rem;font-size:.85em}.note{color:#5a6275;font-size:.85rem}
"""


# ---- building blocks ----------------------------------------------------------------------------


def _text(value: Any) -> str:
    """A value as the text of a table cell: floats to 6 significant digits, inf spelled out."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if math.isnan(value):
            return "nan"
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_text(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_text(v)}" for k, v in value.items())
    return str(value)


def _number(value: Any) -> Any:
    """A JSON number back from :func:`.._json.jsonable`: the strings "inf" / "-inf" as floats."""
    if value == "inf":
        return math.inf
    if value == "-inf":
        return -math.inf
    return value


def _no_power(row: dict) -> bool:
    """A claim that holds only because its audit had no power: its lower bound is 0 (issue 34, item 9)."""
    return row.get("verdict") == "holds" and _number(row.get("lower_bound")) == 0


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]], *, raw_columns: Sequence[int] = (), row_ids: Sequence[str] | None = None,
           wide_columns: Sequence[int] = ()) -> str:
    """An HTML table; cells are escaped unless their column is in ``raw_columns`` (pre-built HTML)."""
    out = ['<div class="scroll"><table><thead><tr>',
           *(f'<th{" class=wide" if j in wide_columns else ""}>{html.escape(h)}</th>' for j, h in enumerate(header)),
           "</tr></thead><tbody>"]
    for i, row in enumerate(rows):
        rid = f' id="{html.escape(row_ids[i])}"' if row_ids else ""
        out.append(f"<tr{rid}>")
        for j, cell in enumerate(row):
            if j in raw_columns:
                out.append(f"<td>{cell}</td>")
            else:
                cls = ' class="num"' if _is_number(cell) else ""
                out.append(f"<td{cls}>{html.escape(_text(cell))}</td>")
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _pairs_table(items: Iterable[tuple[str, Any]]) -> str:
    return _table(("field", "value"), [(k, v) for k, v in items]).replace("<table>", '<table class="kv">', 1)


def _badge(verdict: str) -> str:
    if verdict == "no power":
        return '<span class="badge nopower" title="holds, with a lower bound of 0: the audit had no power at this budget">no power</span>'
    return f'<span class="badge {html.escape(verdict)}">{html.escape(verdict)}</span>'


def _svg(fig: Any) -> str:
    """A matplotlib figure as an inline <svg> element (the XML prolog and DOCTYPE dropped)."""
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buffer.getvalue()
    start = text.find("<svg")
    return f'<div class="figure">{text[start:]}</div>'


_NO_FIGURES = '<p class="note">Figures need matplotlib (<code>pip install \'dpverify[plot]\'</code>); the tables hold every number.</p>'


def _environment(recorded: dict | None = None) -> str:
    """The versions a payload recorded, completed by this environment's (:func:`.._versions.versions`)."""
    items = dict(recorded or {})
    for name, value in versions().items():
        items.setdefault(name, value)
    return _pairs_table(items.items())


def _page(title: str, subtitle: str, body: Sequence[str], *, versions: dict | None = None, command: str | None = None) -> str:
    made = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="sub">{html.escape(subtitle)}</p>',
        *body,
        "<h2>Environment</h2>",
        _environment(versions),
        f'<p class="note">Written by dpverify on {made}'
        + (f" for <code>{html.escape(command)}</code>" if command else "")
        + ".</p>",
        "</body></html>",
    ]
    return "\n".join(parts)


def _cards(items: Iterable[tuple[str, Any, str]]) -> str:
    cells = "".join(f'<div class="card {html.escape(cls)}"><b>{html.escape(_text(v))}</b>{html.escape(k)}</div>' for k, v, cls in items)
    return f'<div class="summary">{cells}</div>'


# ---- dpverify audit -------------------------------------------------------------------------------


def _audit_figure(results: Sequence[dict]) -> str:
    """Lower bound over claimed value per claim: above 1 is a violation (or a caught planted bug)."""
    plt = pyplot()
    if plt is None:
        return _NO_FIGURES
    rows = [r for r in results if _is_number(r.get("claimed")) and _is_number(_number(r.get("lower_bound"))) and r["claimed"] > 0]
    if not rows:
        return ""
    ratios = [_number(r["lower_bound"]) / r["claimed"] for r in rows]
    finite = [x for x in ratios if math.isfinite(x)]
    cap = max([1.5, *finite]) * 1.1
    shown = [min(x, cap) if math.isfinite(x) else cap for x in ratios]
    colours = ["#c0392b" if r["verdict"] in ("violated", "missed") else ("#2e7d4f" if not r.get("planted") else "#1f5fa8") for r in rows]
    fig, ax = plt.subplots(figsize=(9, 0.22 * len(rows) + 1.2))
    ax.barh(range(len(rows)), shown, color=colours)
    for i, x in enumerate(ratios):  # the JSON writes an infinite bound as "inf": drawn to the right edge, labelled
        if not math.isfinite(x):
            ax.text(cap, i, " inf", va="center", ha="left", fontsize=7, color="#9b1c1c", clip_on=False, gid=f"infinite-bound-{i}")
    ax.set_xlim(0, cap)
    ax.axvline(1.0, color="#1d2330", linewidth=1)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r["name"] for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("lower bound / claimed (bars at the right edge: infinite)")
    ax.set_title("Audit lower bounds relative to each claim (1 = the claim)", fontsize=10)
    fig.tight_layout()
    return _svg(fig)


def _risk_text(risk: dict | None) -> str:
    """The witness as an attack: advantage, TPR at the FPR, mu-GDP (lower bounds); one-run: guess accuracy."""
    if not risk:
        return "-"
    if "tpr_lower" not in risk:
        return f"accuracy {_short(risk.get('accuracy_lower'))}, adv {_short(risk.get('advantage_lower'))}"
    return (f"adv {_short(risk.get('advantage_lower'))}, TPR {_short(risk.get('tpr_at_fpr_lower'))} @ FPR "
            f"{_short(risk.get('fpr'))}, mu {_short(risk.get('mu_gdp_lower'))}")


def _short(value: Any) -> str:
    value = _number(value)
    return f"{value:.3g}" if _is_number(value) and math.isfinite(value) else _text(value)


def _wrap_name(name: str, width: int = 30) -> str:
    """A claim's name on at most three lines of ``width``, broken after '/' or '_' (names have no spaces)."""
    lines = [""]
    for piece in re.findall(r"[^/_]+[/_]?|[/_]", name):
        if lines[-1] and len(lines[-1]) + len(piece) > width:
            lines.append("")
        lines[-1] += piece
    return "\n".join(lines[:3]) + ("..." if len(lines) > 3 else "")


def _tradeoff_figure(results: Sequence[dict]) -> str:
    """Small multiples: each claim's certified trade-off curve (ROC form) and its audited (FPR, TPR) point."""
    plt = pyplot()
    if plt is None:
        return _NO_FIGURES
    import numpy as np

    from .._audit._risk import curve_tpr, rdp_curve_tpr

    rows = [r for r in results if r.get("tradeoff_claim")]
    if not rows:
        return '<p class="note">No claim has a trade-off curve.</p>'
    cols = min(6, len(rows))
    lines = (len(rows) + cols - 1) // cols
    fig, axes = plt.subplots(lines, cols, figsize=(2.1 * cols, 2.1 * lines), squeeze=False)
    x = np.linspace(0.0, 1.0, 401)
    for ax in axes.flat[len(rows):]:
        ax.axis("off")
    for ax, r in zip(axes.flat, rows):
        curve, risk = r["tradeoff_claim"], r.get("risk") or {}
        if "rdp_epsilons" in curve:
            tpr = rdp_curve_tpr(curve["orders"], [_number(e) for e in curve["rdp_epsilons"]], x)
        elif "deltas" in curve:  # a certified profile (a server-view one-run claim's f-DP curve)
            from accounting import TradeOffCurve

            tpr = TradeOffCurve(tuple(curve["epsilons"]), tuple(curve["deltas"])).tpr(x)
        else:
            tpr = curve_tpr(_number(curve["epsilon"]), _number(curve["delta"]), x)
        ax.plot(x, tpr, color="#1f5fa8", linewidth=1.2)
        ax.plot([0, 1], [0, 1], color="#b8bec9", linewidth=0.6, linestyle=":")
        bad = r.get("verdict") in ("violated", "missed") or (r.get("planted") and r.get("verdict") == "caught")
        if risk.get("tpr_lower") is not None:
            ax.plot([risk["fpr_upper"]], [risk["tpr_lower"]], "o", color="#c0392b" if bad else "#2e7d4f", markersize=4)
        elif risk.get("accuracy_lower") is not None:  # one-run: the guesses' accuracy, drawn as the symmetric point
            acc = risk["accuracy_lower"]
            ax.plot([1 - acc], [acc], "D", color="#c0392b" if bad else "#2e7d4f", markerfacecolor="none", markersize=3)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.set_title(_wrap_name(str(r.get("name"))), fontsize=6)
        ax.tick_params(labelsize=5)
    fig.supxlabel("FPR (upper bound)", fontsize=8)
    fig.supylabel("TPR (lower bound)", fontsize=8)
    fig.tight_layout()
    return _svg(fig)


def audit_report(payload: dict, *, command: str | None = None) -> str:
    """The page for ``dpverify audit``: verdict cards, every claim with its bound, a figure."""
    results = payload.get("results", [])
    counts = payload.get("counts", {})
    exit_code = payload.get("exit_code")
    verdict = "ok" if exit_code == 0 else "fail"
    body = [
        _cards(
            [("exit code", exit_code, verdict), ("claims", len(results), "")]
            + [(k, v, k) for k, v in sorted(counts.items())]
            + [("holds with no power (lower bound 0)", sum(1 for r in results if _no_power(r)), "nopower")]
            + [("seconds", payload.get("seconds"), "")]
        ),
        "<p>Each lower bound holds at its claim's Holm level; the family-wise false-alarm rate over the whole "
        f"suite is at most {html.escape(_text(payload.get('alpha')))} ({html.escape(str(payload.get('correction', 'holm')))}). "
        "A <em>violated</em> verdict is a proof up to that error rate; <em>holds</em> means no violation was found. "
        "Planted bugs are expected to be <em>caught</em>. Every claim is audited as executed, in floating point; a violation "
        "found there is followed by the real-arithmetic audit of the same draws (no bit-pattern views), so <em>violated in</em> "
        "reads <em>floating point</em> (a floating-point artefact: it holds in real arithmetic at these draws) or <em>both</em>; "
        "the error rate covers both verdicts, and the exit code follows the floating-point one. Claims named "
        "<em>idealised</em> are about the real-arithmetic mechanism and expect the floating-point violation.</p>",
        "<h2>Claims</h2>",
    ]
    header = ("claim", "verdict", "violated in", "guarantee", "estimator", "claimed", "lower bound", "estimate", "p-value",
              "Holm level", "real-arithmetic lower bound", "samples / input", "seconds", "attack (lower bounds)")
    rows, ids = [], []
    for r in results:
        estimator = r.get("estimator") or "-"
        if r.get("order") is not None:
            estimator = f"{estimator} (order {_text(r['order'])})"
        arithmetic = r.get("arithmetic")
        rows.append((
            r.get("name"), _badge("no power" if _no_power(r) else r.get("verdict", "error")),
            arithmetic if arithmetic not in (None, "none") else "-", r.get("claim"),
            estimator, r.get("claimed"), r.get("lower_bound"), r.get("estimate"), _short(r.get("p_value")), _short(r.get("level")),
            r.get("real_lower_bound"), r.get("samples"), r.get("seconds"), _risk_text(r.get("risk")),
        ))
        ids.append(f"claim-{r.get('name')}")
    table = _table(header, rows, raw_columns=(1,), row_ids=ids)
    # each claim's witness (the pair, the direction and the event that gave its bound) on a row of its own
    for r, rid in zip(results, ids):
        witness = "; ".join(f"{k}: {_text(r.get(k))}" for k in ("finding", "pair", "direction", "event", "method", "real_event")
                            if r.get(k) is not None)
        detail = witness or r.get("error") or "-"
        marker = f'<tr id="{html.escape(rid)}">'
        end = table.index("</tr>", table.index(marker)) + len("</tr>")
        table = (table[:end] + f'<tr class="detail"><td colspan="{len(header)}">{html.escape(detail)}</td></tr>' + table[end:])
    body.append(table)
    errors = [r for r in results if r.get("error")]
    if errors:
        body.append("<h2>Errors in the suite</h2>")
        body.append(_table(("claim", "error"), [(r.get("name"), r["error"]) for r in errors]))
    body.append("<h2>Lower bounds against the claims</h2>")
    body.append(_audit_figure(results))
    body.append("<h2>Trade-off curves: the accountant's claim and the audited attack</h2>")
    body.append('<p>One panel per claim with a pure or (eps, delta) claim and an event witness: the line is the claim\'s '
                "certified trade-off (no test of D against D' can have a larger TPR at its FPR, TPR <= min(1, e^eps FPR + delta, "
                "1 - e^-eps (1 - FPR - delta))), the dot the audited attack (its FPR upper and TPR lower confidence bounds at the "
                "claim's level). A dot above the line is a violation. One-run claims show the certified accuracy a of their guesses as the "
                "symmetric point (1 - a, a) (a hollow diamond, a reading aid: the guesses are made only on the most confident canaries, "
                "so they are not a test of D against D' and may sit above a Gaussian-like curve without contradicting it; the verdict "
                "is the one-run bound or, for server-view claims, the f-DP test of the guess counts against the certified profile drawn). Renyi/zCDP "
                "claims show the curve their RDP values imply (Mironov's conversion: valid, not tight) and no point (their witness is a "
                "partition, not an event).</p>")
    body.append(_tradeoff_figure(results))
    body.append("<h2>Settings</h2>")
    body.append(_pairs_table([(k, payload.get(k)) for k in ("alpha", "correction", "seed", "samples_scale", "git_commit", "git_dirty",
                                                            "claim_files", "claim_files_sha256")]))
    title = "dpverify audit: " + ("every claim holds, every planted bug caught" if exit_code == 0 else "the gate fails")
    commit = payload.get("git_commit")
    subtitle = (f"{len(results)} claims, seed {payload.get('seed')}, family-wise error <= {_text(payload.get('alpha'))}; "
                f"commit {commit[:12] if commit else 'unknown'}{' (modified)' if payload.get('git_dirty') else ''}, "
                f"claim files sha256 {str(payload.get('claim_files_sha256') or '-')[:16]}")
    return _page(title, subtitle, body, versions=payload.get("versions"), command=command)


# ---- dpverify run ---------------------------------------------------------------------------------


def _regret_figure(payload: dict) -> str:
    plt = pyplot()
    if plt is None:
        return _NO_FIGURES
    import numpy as np

    t = np.asarray(payload["times"], dtype=float)
    m = np.asarray(payload["mean_regret"], dtype=float)
    s = np.asarray(payload["se_regret"], dtype=float)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, scale, label in ((left, np.ones_like(t), "regret Reg(t)"), (right, t, "time-average regret Reg(t)/t")):
        line = ax.plot(t, m / scale, label=payload["algorithm"])[0]
        ax.fill_between(t, (m - s) / scale, (m + s) / scale, color=line.get_color(), alpha=0.2, linewidth=0)
        ax.set_xscale("log")
        ax.set_xlabel("round t")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=8)
    fig.suptitle(f"{payload['algorithm']} on {payload['instance']}, eps = {_text(payload.get('epsilon'))}: "
                 f"mean over {payload['seeds']} runs, band = one standard error", fontsize=10)
    fig.tight_layout()
    return _svg(fig)


def _idealised_banner(ledger: dict) -> list[str]:
    """A run whose privatizer drew float noise: the page says so before any number."""
    if ledger.get("noise") != "idealised":
        return []
    return [f'<p><span class="badge violated">{html.escape(ledger.get("warning") or "idealised: not DP in floating point")}</span> '
            "This run used the papers' float Laplace/Gaussian noise (<code>--noise idealised</code>): the ledger below is the "
            "guarantee of the real-arithmetic mechanism, which no computer runs; the float-safe default is DP as executed.</p>"]


def _ledger_section(ledger: dict) -> list[str]:
    if not ledger.get("private"):
        return ["<p>Non-private baseline: no ledger.</p>"]
    per_user = ledger.get("per_user") or {}
    approx = per_user.get("approx") or {}
    items = [
        ("noise", ledger.get("noise")),
        ("implementation", ledger.get("implementation")),
        ("protocol", ledger.get("protocol")),
        ("path", ledger.get("path")),
        ("budget", ledger.get("budget")),
        ("spent (worst user, the budget's notion)", ledger.get("spent")),
        ("per-user pure DP epsilon", per_user.get("pure")),
        ("per-user zCDP rho", per_user.get("zcdp")),
        ("per-user (eps, delta)", f"({_text(approx.get('epsilon'))}, {_text(approx.get('delta'))}) via {approx.get('route')}"),
        ("most releases per user", ledger.get("max_releases_per_user")),
        ("charges", ledger.get("charges")),
        ("bits per user", ledger.get("bits_per_user")),
        ("notes", ledger.get("notes")),
    ]
    out = [_pairs_table(items)]
    rdp = per_user.get("rdp")
    if rdp:
        out.append("<p>Worst user's Renyi DP curve (certified upper bounds):</p>")
        out.append(_table(("order alpha", "epsilon(alpha)"), list(zip(rdp["orders"], rdp["epsilons"]))))
    distinct = ledger.get("distinct_guarantees") or []
    if distinct:
        out.append("<p>Distinct guarantees charged:</p>")
        out.append(_table(("guarantee",), [(_text(g),) for g in distinct]))
    return out


def run_report(payload: dict, *, command: str | None = None) -> str:
    """The page for ``dpverify run``: configuration, regret with its interval, a figure, the ledger."""
    lo, hi = payload["final_regret_ci95"]
    horizon = payload["horizon"]
    body = [
        *_idealised_banner(payload.get("ledger") or {}),
        _cards([
            (f"mean final {payload.get('regret_kind', 'pseudo')} regret", payload["mean_final_regret"], ""),
            ("95% CI low", lo, ""),
            ("95% CI high", hi, ""),
            ("Reg(T)/T", payload["mean_final_regret"] / horizon, ""),
        ]),
        "<h2>Configuration</h2>",
        _pairs_table([("algorithm", payload["algorithm"]), ("instance", payload["instance"]), ("horizon T", horizon),
                      ("runs", payload["seeds"]), ("root seed", payload["seed"]), ("eps", payload.get("epsilon")),
                      *sorted((k, v) for k, v in (payload.get("options") or {}).items()
                              if k not in {"algorithm", "instance", "horizon", "seeds", "seed", "epsilon"})]),
        "<h2>Regret</h2>",
        _regret_figure(payload),
        _table(("run", "final regret"), list(enumerate(payload.get("final_regrets", [])))),
        "<h2>Pulls per arm (mean over runs)</h2>",
        _table(("arm", "mean pulls"), list(enumerate(payload.get("mean_pulls", [])))),
        "<h2>Privacy ledger</h2>",
        *_ledger_section(payload.get("ledger") or {}),
        "<h2>Seed tree</h2>",
        _pairs_table((payload.get("seed_tree") or {}).items()),
    ]
    title = f"dpverify run: {payload['algorithm']} on {payload['instance']}"
    subtitle = f"T = {horizon:,}, {payload['seeds']} runs, eps = {_text(payload.get('epsilon'))}, root seed {payload['seed']}"
    return _page(title, subtitle, body, versions=payload.get("versions"), command=command)


# ---- dpverify reproduce ---------------------------------------------------------------------------


def _figure_from_csv(rows: list[dict], title: str, panel_titles: dict[str, str], plot: dict | None = None) -> str:
    plt = pyplot()
    if plt is None:
        return _NO_FIGURES
    # the PNG's definition (the figure's summary): cumulative regret or Reg(t)/t, and its axis label
    per_time = (plot or {}).get("per_time", True)
    mean, se = ("mean_regret_over_t", "se_regret_over_t") if per_time else ("mean_regret", "se_regret")
    panels: dict[str, dict[str, list[tuple[float, float, float]]]] = {}
    for row in rows:
        panels.setdefault(row["panel"], {}).setdefault(row["curve"], []).append((float(row["t"]), float(row[mean]), float(row[se])))
    drawn = [(f"({key}) {panel_titles.get(key, '')}", [(label, *zip(*points)) for label, points in curves.items()])
             for key, curves in panels.items()]
    return _svg(regret_panels(plt, drawn, ylabel=(plot or {}).get("ylabel", "Reg(t)/t"), title=title))


def reproduce_report(summary: dict, csv_path: str | Path, *, description: str = "", command: str | None = None) -> str:
    """The page for ``dpverify reproduce``: the figure (from its CSV) and every curve's numbers and ledger."""
    with Path(csv_path).open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    curves = summary.get("curves", [])
    titles: dict[str, str] = {}
    horizons = {str(c.get("panel")): c.get("horizon") for c in curves}
    for panel in summary.get("panels", []):  # the figure's own panel titles (an eps sweep has no single eps)
        titles[str(panel["key"])] = f"{panel['title']}, T={_text(horizons.get(str(panel['key'])))}"
    for c in curves:  # older summaries: a panel's title from its curves' instance and eps
        titles.setdefault(str(c.get("panel")), f"{c.get('instance')}, eps={_text(c.get('epsilon'))}, T={_text(c.get('horizon'))}")
    body = [
        "<h2>Figure</h2>",
        _figure_from_csv(rows, description or summary.get("figure", ""), titles, summary.get("plot")),
        "<h2>Curves</h2>",
    ]
    header = ("panel", "curve", "algorithm", "instance", "eps", "T", "runs", "mean final regret", "95% CI", "Reg(T)/T",
              "per-user (eps, delta)", "route", "noise")
    table_rows = []
    for c in curves:
        approx = (c.get("ledger_per_user") or {}).get("approx") or {}
        guarantee = f"({_text(approx.get('epsilon'))}, {_text(approx.get('delta'))})" if approx else "non-private"
        noise = c.get("noise") or "-"
        table_rows.append((c.get("panel"), c.get("curve"), c.get("algorithm"), c.get("instance"), c.get("epsilon"), c.get("horizon"),
                           c.get("runs"), c.get("mean_final_regret"), c.get("final_regret_ci95"), c.get("final_regret_over_T"),
                           guarantee, approx.get("route", "-"),
                           "idealised: not DP in floating point" if noise == "idealised" else noise))
    if any(c.get("noise") == "idealised" for c in curves):
        body.insert(0, _idealised_banner({"noise": "idealised"})[0])
    body.append(_table(header, table_rows))
    body.append(f'<p class="note">Data: <code>{html.escape(Path(csv_path).name)}</code> '
                f'({len(rows)} rows); quick run: {html.escape(_text(summary.get("quick")))}.</p>')
    title = f"dpverify reproduce: {summary.get('figure', '')}"
    return _page(title, description, body, versions=summary.get("versions"), command=command)
