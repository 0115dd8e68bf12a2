"""A prediction's intervals (measure.intervals.band) as text: the CLI's rows and lines."""
from __future__ import annotations

import re

from llm_codesign.measure.intervals import PREDICTABLE_SPAN, predictability

UNITS = {"ttft_ms": " ms", "tpot_ms": " ms", "tok_s_per_user": "", "output_tok_s_per_gpu": ""}
# why a centre is shown: the bounds sit about the runs' median shift, not the prediction ("signed where biased")
CENTRE = ("the intervals are centred on the prediction times the median measured / predicted of the runs they come from, "
          "which can put the prediction itself outside them")


# a 95% interval wider than measure.intervals.PREDICTABLE_SPAN (high / low) says "not predictable here" beside the
# number with its ratio (newc5 #17; before: "spans over 100x" past 100x only); "no measured run like it" only where the
# band was widened for a reason (measure.intervals.reasons), the one cause the answer checks (review of uxa)
UNINFORMATIVE = PREDICTABLE_SPAN
UNINFORMATIVE_TEXT = " (not predictable here: 95% spans x{span})"  # span: span_text's


def span_text(x: float) -> str:
    """'3.7', '35', '20.5': a 95% span (high / low) as every line that quotes one writes it (web/static/app.js spanText
    too): to 0.1 below 10, whole above, but never as the threshold it was tested against, x20 for a span over
    PREDICTABLE_SPAN (newc12 #12: 20.46 read "spans x20" beside a rule of "more than x20"), to as many places as that takes."""
    digits = 1 if x < 10 else 0
    while digits < 3 and x > PREDICTABLE_SPAN >= float(f"{x:.{digits}f}"):
        digits += 1
    return f"{x:.{digits}f}"


def _fmt(metric: str):
    return (lambda x: f"{x:.2f}") if metric == "tpot_ms" else (lambda x: f"{x:.1f}" if x < 100 else f"{x:.0f}")


def _duration(ms: float, metric: str = "ttft_ms", value: bool = False) -> tuple[str, str]:
    """A time in ms as (number, unit): ms below 10 s, seconds below an hour, hours above ("13401712 ms" read as a
    latency nobody could place: 3.7 h); `value`: a prediction's own, in ms at estimate's precision (0.1 ms; TPOT 0.01)."""
    if ms < 10_000:
        return (f"{ms:.2f}" if metric == "tpot_ms" else f"{ms:.1f}") if value else _fmt(metric)(ms), "ms"
    if ms < 3_600_000:
        s = ms / 1e3
        return (f"{s:.1f}" if s < 100 else f"{s:.0f}"), "s"
    h = ms / 3.6e6
    return (f"{h:.1f}" if h < 100 else f"{h:.0f}"), "h"


def table_time(ms: float, digits: int = 1) -> str:
    """A time in a table whose header says ms: the bare figure to `digits` below 10 s, else with its unit in s or h as
    _duration writes it ('13.4 s', '3.7 h'; disagg's table, and the web page's, app.js tableTime)."""
    return f"{ms:.{digits}f}" if ms < 10_000 else " ".join(_duration(ms, value=True))


def duration(ms: float, metric: str = "ttft_ms") -> str:
    """'27.6 ms', '13.4 s', '3.7 h': a prediction's time for a human table (--json keeps ms)."""
    return " ".join(_duration(ms, metric, value=True))


def count(n: float) -> str:
    """A count as text: a whole one with thousands separators ('4,095'; within 1e-6 of whole, as a quotient of
    whole cohorts' seconds reads), else to 3 significant figures ('2.5')."""
    return f"{round(n):,}" if abs(n - round(n)) <= 1e-6 * max(1.0, abs(n)) else f"{n:.3g}"


def queue_text(r: dict) -> str:
    """' (28.8 s of it queue: 3 cohorts of 9.6 s, which the bands include)' after a TTFT where requests wait for a slot (Estimate.queue), so that
    the wait the batch cap sets reads apart from the run-to-run spread of the intervals after it (newc7 #7): estimate's
    table, and import's and export's one-line summaries (newc8 #7: import printed a 41.8 s TTFT, 40.8 s of it queue,
    without a word); the intervals after it cover the TTFT as quoted, the queue at TPOT's spread
    (measure.intervals.with_queue)."""
    q = r.get("queue")
    if not q:
        return ""
    n = q["cohorts"]  # a whole count as the tool writes counts ("1,048,575", not "1.05e+06": crev11 #10)
    return f" ({duration(q['ttft_ms'])} of it queue: {count(n)} cohort{'s' if n != 1 else ''} of {duration(q['cycle_ms'])}, which the bands include)"


def _range(metric: str, lo: float, hi: float) -> str:
    """'95-160 ms', or each bound with its own unit where they differ ('739 s-59.8 h'); tok/s bare."""
    if metric not in ("ttft_ms", "tpot_ms"):
        f = _fmt(metric)
        return f"{f(lo)}-{f(hi)}"
    (a, ua), (b, ub) = _duration(lo, metric), _duration(hi, metric)
    return f"{a}-{b} {ub}" if ua == ub else f"{a} {ua}-{b} {ub}"


def uninformative(b: dict) -> bool:
    """Whether a band's 95% interval spans more than UNINFORMATIVE times (high / low): the rule that sets its
    `predictable` (measure.intervals.predictability), so that every line that prints a band, estimate's table and
    export's and import's summaries alike, says "no interval" for the same bands (newc8 #6)."""
    return "lo95" in b and not predictability(b["lo95"], b["hi95"])["predictable"]


def off_centre(b: dict, value: float) -> bool:
    """Whether a prediction lies outside its own 80% interval (measure.intervals.band), so that its centre must be shown."""
    return not b["lo80"] <= value <= b["hi80"]


def interval_text(b: dict, metric: str, value: float | None = None, *, reasons_below: bool = False) -> str:
    """'80%: 95-160 ms, 95%: 80-210 ms': a metric's intervals (measure.intervals.band) at a precision that reads;
    with ', centred on 120 ms' where the prediction `value` lies outside the 80% one; a bound at the ideal step
    (b["capped"]) reads '(floor)' / '(ceiling)', not as an error band. Past UNINFORMATIVE, no interval (no_interval).
    `reasons_below`: the runs the band is drawn from are listed beneath (disagg's)."""
    if uninformative(b):
        return no_interval(b, metric, reasons_below=reasons_below)
    f = (lambda x: " ".join(_duration(x, metric))) if UNITS[metric] else _fmt(metric)
    centre = f", centred on {f(b['centre'])}" if value is not None and off_centre(b, value) else ""
    return f"80%: {_capped_range(b, metric, '80')}, 95%: {_capped_range(b, metric, '95')}{centre}"


# newc6 #13 (branch bands): past PREDICTABLE_SPAN the 95% bounds ("153 ms-123 s", "22.8 s-10.4 h") are left out of the
# text (--json keeps them, predictable false); the 80% span says how spread, the reasons what the answer lies beyond
# the span quoted is the 95% one the rule tests (uninformative; frev #4: "x1.7", the 80% span, read as a narrow band withheld)
NO_INTERVAL_TEXT = "no interval: the runs like it are too few or too spread (95% spans x{span}; 80%: {range})"


def _capped_range(b: dict, metric: str, lvl: str) -> str:
    """_range of level `lvl`, a bound at the ideal step (measure.intervals.capped) marked '(floor)' below, '(ceiling)'
    above: the roofline's limit, not the runs' spread (newc6 #13: TTFT's 153 ms read as an error band's end)."""
    lo, hi, cap = b[f"lo{lvl}"], b[f"hi{lvl}"], b.get("capped")
    text = _range(metric, lo, hi)
    if cap is None or cap not in (lo, hi):
        return text
    if cap != lo:
        return f"{text} (ceiling)"
    if metric not in ("ttft_ms", "tpot_ms"):
        return f"{_fmt(metric)(lo)} (floor)-{_fmt(metric)(hi)}"
    return f"{' '.join(_duration(lo, metric))} (floor)-{' '.join(_duration(hi, metric))}"


def no_interval(b: dict, metric: str, *, reasons_below: bool = False) -> str:
    """'no interval: the runs like it are too few or too spread (95% spans x35; 80%: 153 ms (floor)-3309 ms); beyond its
    runs: ...': an answer whose 95% interval spans more than UNINFORMATIVE, with each reason it was widened for (without
    their factors), or where none, the runs it is drawn from (named beneath, `reasons_below`, or in the basis rows)."""
    out = NO_INTERVAL_TEXT.format(span=_span(b, "95"), range=_capped_range(b, metric, "80"))
    why = [_plain(w) for w in b.get("widened") or []]
    if why:
        return f"{out}; beyond its runs: {'; '.join(dict.fromkeys(why))}"
    return out + ("; its runs: the basis below" if reasons_below else "")


def _span(b: dict, lvl: str) -> str:
    """'3.7', '22': how many times its low end a band's `lvl`% interval's high end is (no_interval's 'x35')."""
    return span_text(b[f"hi{lvl}"] / b[f"lo{lvl}"] if b[f"lo{lvl}"] > 0 else float("inf"))


def _plain(w) -> str:
    """A reason (measure.intervals.Widening, or its text from JSON) without its factors ' (x1.08/x1.29 at 80/95%)' and
    what the band took of them (': the largest term, the band's'): the extrapolation alone."""
    # the note may hold one parenthesis (measure.intervals.QUADRATURE's): without it such a line kept its factors (fixT)
    return re.sub(r" \(x[0-9.]+(/x[0-9.]+)* at [0-9/]+%(: (?:[^()]|\([^()]*\))*)?\)$", "", str(w))


def said_once(bands: dict) -> list[str]:
    """Each reason of `bands` ({metric: band}) once, by its words (_plain), its factors labelled by metric where the
    metrics' differ: the eager reason's are each metric's own move, and it was printed once per metric, unlabelled
    (crev9 #11)."""
    from llm_codesign.measure.intervals import LABELS

    groups: dict[str, dict[str, list[str]]] = {}
    for m, b in bands.items():
        for w in b["widened"]:
            plain = _plain(w)
            groups.setdefault(plain, {}).setdefault(str(w)[len(plain):], []).append(LABELS[m])
    return [plain + (next(iter(tails)) if len(tails) == 1 else
                     " (" + "; ".join(f"{', '.join(ms)} {t.strip()[1:-1]}" for t, ms in tails.items()) + ")")
            for plain, tails in groups.items()]


def said_across(reasons: list[str], where: str = "loads") -> list[str]:
    """Reasons several answers gave (said_once's lines, a disaggregated table's rows), each once: lines differing only in
    what the band took of a reason (the band's term at one load, within another reason's at the next) said once with
    MIXED_NOTE's words for `where`, as a frontier's points are (merged)."""
    groups: dict[str, list[str]] = {}
    for s in reasons:
        plain = _plain(s)
        # the note may hold one parenthesis (QUADRATURE's "(each measured without the other)"): fixT, it split the line
        m = re.fullmatch(r" \((x[0-9.]+(?:/x[0-9.]+)* at [0-9/]+%)(?:: (?:[^()]|\([^()]*\))*)?\)", s[len(plain):])
        groups.setdefault(f"{plain} ({m.group(1)}" if m else s, []).append(s)
    return [ss[0] if len(set(ss)) == 1 else f"{key}: {_across_note({x[len(key) + 2:-1] for x in ss}, where)})"
            for key, ss in groups.items()]


def _across_note(notes: set[str], where: str) -> str:
    """said_across's note for lines differing in it: where each says the band took the reason and one way says it went in
    quadrature with a distance term (measure.intervals.QUADRATURE), the band's at every load, in quadrature at some
    (_merged_note's words); else MIXED_NOTE's."""
    quad = {n for n in notes if n.startswith("in quadrature")}
    if len(quad) == 1 and all(n.endswith("the band's") for n in notes):
        return f"the band's term at every {where.removesuffix('s')}, {quad.pop().removesuffix(', the band' + chr(39) + 's')} at some"
    return MIXED_NOTE.replace("points", where)


def short_range(b: dict, metric: str) -> str:
    """'95-160', a band's 80% interval after its value (after "120 ms" the ms goes unsaid; a bound in s or h says its
    unit), or 'no interval: 95% spans x35' where estimate says "no interval" (uninformative: newc8 #6, export's and import's
    summaries printed an 80% band estimate withholds)."""
    if uninformative(b):
        return f"no interval: 95% spans x{_span(b, '95')}"
    return _range(metric, b["lo80"], b["hi80"]).removesuffix(" ms")


def short(result: dict, metric: str) -> str:
    """' (80%: 95-160)' or ' (no interval: 95% spans x35)' after a metric's value in a one-line summary (short_range), where the
    result carries its intervals."""
    b = (result.get("intervals") or {}).get(metric)
    if not b:
        return ""
    return f" ({short_range(b, metric)})" if uninformative(b) else f" (80%: {short_range(b, metric)})"


def inline(result: dict, metric: str) -> str:
    """'; 80%: 95-160 ms, 95%: 80-210 ms' after a metric's value, where the result carries its intervals."""
    b = (result.get("intervals") or {}).get(metric)
    return f"; {interval_text(b, metric, result[metric])}" if b else ""


def basis_rows(bands: dict, values: dict | None = None) -> list[tuple[str, str]]:
    """The runs the intervals come from (named per metric where the metrics' differ), why a centre is shown
    where a prediction in `values` ({metric: value}) lies outside its 80% interval, and each reason they
    were widened, each said once (said_once)."""
    from llm_codesign.measure.intervals import LABELS

    sources: dict[str, list[str]] = {}
    reasons = said_once(bands)
    for m, b in bands.items():
        sources.setdefault(f"from {b['source']}", []).append(LABELS[m])
    one = len(sources) == 1
    centred = any(m in (values or {}) and off_centre(b, values[m]) for m, b in bands.items())
    # the bounds printed: a band with no interval prints its 80% alone (no_interval)
    caps = [c for m, b in bands.items() for c in capped_bounds({m: b}, levels=("80",) if uninformative(b) else ("80", "95"))]
    return ([("interval basis" if one else f"basis: {', '.join(ms)}", src) for src, ms in sources.items()]
            + ([("centred on", CENTRE)] if centred else [])
            + ([("bounds capped", f"{', '.join(caps)}: {CAPPED_TEXT}")] if caps else [])
            + [("beyond the runs", f"[yellow]{x}[/yellow]") for x in reasons])


# why a band stops short of its width (measure.intervals.capped at cost.roofline.ideal_step): estimate's row, and the
# footnote of every other table that prints a capped bound (capped_footnote)
# (cost.roofline.ideal_step and ideal_prefill; docs/modelling-notes.md#fixroof)
CAPPED_TEXT = ("what the GPUs allow at the batch that runs (the weights and the KV cache of each request at its mean "
               "context a step reads over HBM bandwidth, or its FLOPs at peak; for TTFT, one prefill of the prompt so, mostly "
               "its FLOPs)")


def capped_bounds(bands: dict, metrics=None, levels=("80", "95")) -> list[str]:
    """'tok/s/GPU at 50219', 'TPOT from 4.48 ms': each band of `bands` (of `metrics`, default all) whose bounds at
    `levels` (those printed) stop at the ideal step (its "capped" bound, measure.intervals.capped, which sets them to it)."""
    from llm_codesign.measure.intervals import LABELS

    def stops(b):
        return b.get("capped") is not None and any(b[f"{e}{lvl}"] == b["capped"] for e in ("lo", "hi") for lvl in levels)

    return [f"{LABELS[m]} {'from' if m in ('tpot_ms', 'ttft_ms') else 'at'} {_fmt(m)(b['capped'])}{UNITS[m]}"
            for m, b in (bands or {}).items() if (metrics is None or m in metrics) and stops(b)]


def capped_footnote(shown: list[tuple[str, dict | None]], metrics=None, levels=("80",)) -> str:
    """A table's line on the bounds it prints that stop at the ideal step, as estimate's "bounds capped" row says them:
    `shown`, (where: a row's or an end's name, "" for none; its bands) for each printed band, `metrics` and `levels`
    those printed (compare, pareto and export print the 80% interval). "" where none is capped."""
    caps = [f"{c} ({where})" if where else c for where, b in shown for c in capped_bounds(b, metrics, levels)]
    return f"bounds capped: {', '.join(dict.fromkeys(caps))}: {CAPPED_TEXT}." if caps else ""


def merged(reasons: list) -> list:
    """`reasons` (measure.intervals.Widening) with those differing only in the point's own quantity said once, over the
    range of it the points span ("concurrency 1,184-3,696 above SGLang's largest measured 512 ..."): a frontier's points
    past an engine's measured range each named theirs, the same line twenty times over. Merged by the reasons' fields
    (every caller's frontier holds Widening objects: Frontier.banded, before any JSON)."""
    from dataclasses import replace

    groups: dict[object, list] = {}
    for w in reasons:
        groups.setdefault((w.kind, w.quantity, w.what, w.factors, w.levels), []).append(w)
    # what the bands took of it said once: the same where the points agree, else that it differs (a frontier's Hopper
    # reason the band's alone at most points, within the low-load one's at 80% at one request: said twice before)
    return [replace(ws[0], note=_merged_note({w.note for w in ws}),
                    **({} if ws[0].quantity is None else {"span": (min(w.span[0] for w in ws), max(w.span[1] for w in ws))}))
            for ws in groups.values()]


MIXED_NOTE = "the band's term at some points, within another reason's at others"


def _merged_note(notes: set[str]) -> str:
    """The note of a reason merged over points and metrics: theirs where they agree; where each says the band took it
    ("" for a band's one reason, "... the band's": alone, or in quadrature with a distance term, measure.intervals.QUADRATURE)
    the one that says how; else MIXED_NOTE (an MI355X frontier's load reason: in quadrature with TTFT's family term, alone
    on TPOT, had read "within another reason's at others")."""
    told = notes - {""}
    if len(notes) == 1:
        return next(iter(notes))
    if len(told) == 1 and (note := next(iter(told))).endswith("the band's"):
        # a band's one reason at some points, in quadrature with a distance term at others: the band's at each
        return f"the band's term at every point, {note.removesuffix(', the band' + chr(39) + 's')} at some" if note.startswith("in quadrature") else note
    return MIXED_NOTE


def frontier_reasons(frontier: list[dict]) -> list[str]:
    """Every reason a frontier's points' intervals were widened, each said once (merged)."""
    return merged(list(dict.fromkeys(x for p in frontier for b in (p.get("intervals") or {}).values() for x in b["widened"])))


# how each arrival pattern reads beside a TTFT: spec.harness's (serve.estimate's to_dict carries it too)
from llm_codesign.serve.metrics import NO_DECODE_WHY, no_decode  # noqa: E402
from llm_codesign.spec.harness import ARRIVAL_TEXT  # noqa: E402


def arrival_footer(arrival: str) -> str:
    """A table's one line on the arrival its TTFT assumes (compare's and pareto's: their searches price it, --arrival),
    in ARRIVAL_TEXT's words, the other patterns offered as the flag every pricing command takes."""
    name, body = ARRIVAL_TEXT[arrival].split(": ", 1)
    what, other = body.split("; ", 1)
    return f"TTFT with requests arriving in {name} ({what}); {other}."


def one_token(osl: int) -> bool:
    """Whether a request emits a single output token, so that it has no TPOT nor decode rate to show (serve.metrics.no_decode)."""
    return no_decode(osl)


ONE_TOKEN = "n/a (one output token)"
# a table's cell for TPOT or tok/s/user at one output token, with NO_DECODE said once beneath (disagg's, compare's)
DASH = "-"
NO_DECODE = f"- at OSL 1 ({NO_DECODE_WHY})"


# a table's cell whose 95% interval spans more than PREDICTABLE_SPAN (the band's "predictable": false) carries this mark,
# and unpredictable_footnote says what it means beneath: estimate's "not predictable here" where a row has no room for it
# (pareto's, the page's frontier and design's tables; branch uxleft)
UNPREDICTABLE_MARK = "?"
LABELS = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", "tok_s_per_user": "tok/s/user", "output_tok_s_per_gpu": "tok/s/GPU"}


def unpredictable(b: dict | None) -> str:
    """UNPREDICTABLE_MARK after a value whose band (measure.intervals.band) is not predictable here, else ""."""
    return UNPREDICTABLE_MARK if b and b.get("predictable") is False else ""


def unpredictable_footnote(bands: list[dict | None], metrics, what: str = "points shown") -> str:
    """The line beneath a table whose cells carry UNPREDICTABLE_MARK: per metric of `metrics`, how many of the rows'
    `bands` ({metric: band} each, or None) are not predictable here and their 95% spans; "" where none is."""
    said = []
    for m in metrics:
        spans = [b[m]["span95"] for b in bands if b and unpredictable(b.get(m))]
        if spans:
            lo, hi = span_text(min(spans)), span_text(max(spans))
            said.append(f"{LABELS[m]} at {len(spans)} of {len(bands)} {what}, x{lo}" + (f"-x{hi}" if hi != lo else ""))
    return (f"{UNPREDICTABLE_MARK}: not predictable here: its 95% interval spans more than x{PREDICTABLE_SPAN:.0f} "
            f"({'; '.join(said)}); span95 and predictable of each in --json") if said else ""
