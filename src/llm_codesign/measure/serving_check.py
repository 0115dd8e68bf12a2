"""One serving validation for the CLI and the API: the file's runs priced, each with its 80% interval, and the report.

Apart from measure.validate (which prices runs) and measure.intervals (which reads validation rows to build the
bands), since it needs both."""
from __future__ import annotations

from llm_codesign.errors import InputError
from llm_codesign.measure import validate as v
from llm_codesign.measure.intervals import row_intervals, table_for
from llm_codesign.spec.validation import check_result


def validate_serving(path: str, calibration: str | None = None, *, clean: bool = False) -> tuple[list[dict], list[dict], dict]:
    """What `validate --serving` and llm_codesign.validate_serving share: the file's rows (their clean form with `clean`),
    each row's predictions with their 80% interval (`{metric}_lo`, `{metric}_hi`), and the report (serving_report, with
    the share of runs inside the intervals in `interval_coverage`). A file none of whose rows is priced is refused in
    one line (the API returned an empty report), as is a report with a figure that is not finite."""
    rows = v.read_rows(path)
    if clean:
        rows = v.clean_form(rows, path)
    preds, unmodeled = v.predict_serving(rows, calibration)
    if len(unmodeled) == len(rows):  # nothing to report on: an error, not an empty table
        raise InputError("serving", path, v.unpriced(rows, unmodeled))
    rep = v.serving_report(rows, preds, unmodeled)
    bounds, rep["interval_coverage"] = row_intervals(rows, preds, table=table_for(calibration))
    # the table, as --json, shows only finite figures (a throughput of 1e-306 measured makes an error of inf%)
    check_result(rep)
    return rows, [{**p, **b} for p, b in zip(preds, bounds, strict=True)], rep
