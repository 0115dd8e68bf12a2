"""Shared pieces of the command line: the Typer app, one-line errors, option declarations and the
lookups every command uses."""
from __future__ import annotations

import functools
import json
import signal

import typer

from llm_codesign.errors import InputError, close_matches, did_you_mean
from llm_codesign.spec.engines import ENGINES, VENDOR_ENGINE, VENDOR_NAMES, listed
from llm_codesign.spec.harness import DEFAULT_ARRIVAL
from llm_codesign.spec.plan import (  # MAX_CONCURRENCY: the one bound, spec.plan's
    K_TEXT,
    K_TOKENS,
    MAX_CONCURRENCY,
    MAX_GPUS,
    MAX_STEP_TOKENS,
    read_tokens,
)

try:
    from typer._click.exceptions import BadOptionUsage, MissingParameter, NoArgsIsHelpError, NoSuchOption, UsageError
except ImportError:  # typer releases that use click itself
    from click.exceptions import BadOptionUsage, MissingParameter, NoSuchOption, UsageError

    NoArgsIsHelpError = None
from typer.core import TyperGroup


def os_error_line(e: OSError, path: str | None = None) -> str:
    """One line for a file the system refused: the path (the one the user named, when the error has
    none of its own) and the system's reason."""
    return f"{e.filename or path or 'file'}: {e.strerror or e}"


def _annotation(param):
    """The Python type an option or argument converts to (int, float, str, ...), Optional unwrapped."""
    import types
    import typing

    ann = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    if ann is None:  # click's own parameter types
        ann = {"integer": int, "float": float, "boolean": bool}.get(getattr(getattr(param, "type", None), "name", ""), None)
    args = [a for a in typing.get_args(ann) if a is not type(None)]
    if typing.get_origin(ann) in (typing.Union, types.UnionType) and len(args) == 1:
        ann = args[0]
    return ann


def _valid(param) -> str:
    """What a parameter takes, in words: its type and range (`an integer from 1 to 65,536`), else its help."""
    kind = {int: "an integer", float: "a number", bool: "true or false"}.get(_annotation(param))
    lo = getattr(param, "min", None)
    hi = getattr(param, "max", None)
    if lo is None and hi is None and getattr(param, "type", None) is not None:  # click's IntRange / FloatRange
        lo, hi = getattr(param.type, "min", None), getattr(param.type, "max", None)
    if kind is None:
        help_ = " ".join((getattr(param, "help", None) or "").split()).rstrip(".")
        return help_ or "a value"
    fmt = (lambda v: f"{v:,}") if kind == "an integer" else (lambda v: f"{v:g}")  # noqa: E731
    if set(getattr(param, "opts", ()) or ()) & set(K_FLAGS):  # a token count (token_count): 1k too
        kind = f"{kind} {'from ' + fmt(lo) + ' to ' + fmt(hi) if hi is not None else 'of at least ' + fmt(lo)}, {K_TEXT}"
        return kind
    if lo is not None and hi is not None:
        return f"{kind} from {fmt(lo)} to {fmt(hi)}"
    if lo is not None:
        return f"{kind} of at least {fmt(lo)}"
    if hi is not None:
        return f"{kind} of at most {fmt(hi)}"
    return kind


def _given(e):
    """The value the user typed for a refused parameter, where the error keeps it (pydantic's input under
    typer's coercion, or click's quoted value); None where it does not."""
    import re

    cause = e.__cause__
    errs = cause.errors() if hasattr(cause, "errors") else None
    if errs and "input" in errs[0]:
        return errs[0]["input"]
    m = re.match(r"'(.*)' is not", getattr(e, "message", "") or "")
    return m.group(1) if m else None


def _param_of(ctx, opt: str):
    for p in getattr(getattr(ctx, "command", None), "params", ()):
        if opt in (getattr(p, "opts", ()) or ()):
            return p
    return None


# other tools' words for an option of ours (vLLM's --max-num-seqs, a benchmark's --batch-size), suggested
# where the command has the option
OPTION_SYNONYMS = {"batch": "concurrency", "batch-size": "concurrency", "max-batch-size": "concurrency", "max-num-seqs": "concurrency",
                   "max-running-requests": "concurrency", "num-gpus": "gpus", "tp-size": "tp", "pp-size": "pp", "ep-size": "ep",
                   "quantization": "weight-dtype", "kv-cache-dtype": "kv-dtype", "model": "MODEL"}


def near_options(typed: str, ctx) -> list[str]:
    """The command's options close to a flag it does not take, best first (errors.close_matches on the
    names without their dashes, which otherwise make `--batch` and `--backend` look alike), and the
    option another tool's word for it names (`--batch` -> `--concurrency`)."""
    params = getattr(getattr(ctx, "command", None), "params", ()) or ()
    longs = {o[2:]: o for p in params for o in (getattr(p, "opts", ()) or ()) if o.startswith("--")}
    word = typed.lstrip("-").split("=", 1)[0].replace("_", "-")
    near = [longs[k] for k in close_matches(word, longs)]
    syn = OPTION_SYNONYMS.get(word)
    if syn == "MODEL" and any(getattr(p, "name", "") == "model" and getattr(p, "param_type_name", "") == "argument" for p in params):
        near.insert(0, "the MODEL argument (no flag)")
    elif syn in longs and longs[syn] not in near:
        near.insert(0, longs[syn])
    return near[:3]


def usage_line(e: UsageError, group_ctx=None) -> str:
    """A usage error (a value an option's type refuses, a missing or unknown option, argument or command)
    as the one line every bad input gets: `field: value is not valid; what is valid`, the flag named.
    `group_ctx`: the app's context, which names the command where the parser left the error none."""
    import re

    ctx = getattr(e, "ctx", None)
    if ctx is None and group_ctx is not None:  # the parser's errors carry no context: the command being parsed
        name = getattr(group_ctx, "invoked_subcommand", None)
        sub = group_ctx.command.get_command(group_ctx, name) if name else None
        ctx = group_ctx if sub is None else type(group_ctx)(sub, info_name=name, parent=group_ctx)
    # the program as installed, whatever name the runner gave it (CliRunner calls it "root")
    names, c = [], ctx
    while c is not None and c.parent is not None:  # the root's name is the runner's (`python -m llm_codesign.cli`)
        names.insert(0, c.info_name)
        c = c.parent
    where = "`" + " ".join(["llm-codesign", *names, "--help"]) + "`"
    param = getattr(e, "param", None)
    if isinstance(e, BadOptionUsage) and param is None:  # an option given without its value
        param = _param_of(ctx, e.option_name)
        if param is not None and "requires an argument" in (e.message or ""):
            v = _valid(param)
            return f"{param.name.rstrip('_')}: no value given; {e.option_name} takes " + (v if v.startswith("a") else f"a value: {v}")
    if param is not None:
        name = param.name.rstrip("_")
        flags = " / ".join(getattr(param, "opts", ()) or ()) or name
        if isinstance(e, MissingParameter):
            if getattr(param, "param_type_name", "") == "argument":
                return f"{name}: missing; the {name.upper()} argument is required (see {where})"
            # "missing", as errors.MissingInput says a value the input lacks (newc12 #10: "no value is not valid" read as if
            # a value had been given)
            return f"{name}: missing; {flags} is required: {_valid(param)}"
        value = _given(e)
        if value is not None:
            return f"{name}: {value!r} is not valid; {_valid(param)} ({flags})"
        return f"{name}: {' '.join((e.message or '').split())} ({flags})"
    if isinstance(e, NoSuchOption):
        # `disagg` prices the pools it is given; a search's options (--gpus, an SLO) are `pareto --disagg`'s, which
        # `disagg --gpus 16 --min-tps-user 50` met only as "did you mean --gpu?"
        search = ""
        if names == ["disagg"] and ctx.parent is not None and (pareto := ctx.parent.command.get_command(ctx.parent, "pareto")) is not None \
                and any(e.option_name in getattr(q, "opts", ()) for q in pareto.params):
            search = f"; a search over disaggregated plans takes it: `llm-codesign pareto --disagg {e.option_name} ...`"
        return (f"option: {e.option_name!r} is not valid; " + did_you_mean(near_options(e.option_name, ctx)) + f"the options are listed by {where}"
                + search)
    msg = " ".join((e.message or "").split())
    m = re.match(r"No such command '(.*?)'\.?( Did you mean .*)?$", msg)
    if m and ctx is not None:
        names = ctx.command.list_commands(ctx)
        return f"command: {m.group(1)!r} is not valid; " + did_you_mean(close_matches(m.group(1), names)) + "one of: " + ", ".join(names)
    m = re.match(r"Got unexpected extra arguments?(?:\(s\))? \((.*)\)$", msg)
    if m:
        return f"arguments: {m.group(1)!r} is not valid; no more arguments (a flag takes no value), see {where}"
    return f"usage: {msg} (see {where})"


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised wherever the command is, so that they end it as Ctrl-C does: through
    every clean-up on the way out (outputs.write_all removes its temporary files), with one line. A
    KeyboardInterrupt, so that `except Exception` on the way does not swallow it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


_SIGNAL_WORDS = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated", getattr(signal, "SIGHUP", None): "hung up"}


def _raise_terminated(signum, frame):
    for s in (signal.SIGTERM, signal.SIGHUP):  # a second signal does not cut the clean-up short (SIGKILL still ends it)
        signal.signal(s, signal.SIG_IGN)
    raise Terminated(signum)


def _catch_signals() -> dict:
    """SIGTERM and SIGHUP raise Terminated while a command runs; returns the handlers they replace. Only
    the main thread may set handlers (a CliRunner in another thread keeps the defaults)."""
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGHUP"):
        return {}
    return {s: signal.signal(s, _raise_terminated) for s in (signal.SIGTERM, signal.SIGHUP)}


def _restore_signals(handlers: dict) -> None:
    for s, h in handlers.items():
        if h is not None:  # None: a handler set outside Python, which cannot be put back
            signal.signal(s, h)


def check_paths(outputs: list[tuple[str, str | None]], inputs: dict[str, str | list[str] | None] | None = None) -> None:
    """Refuses, before any work, an output that is an input (it would be overwritten with what was read
    from it) or another output (one would overwrite the other): outputs as (flag, path), inputs as
    {flag: path or paths}. Resolved paths compare, and where both exist os.path.samefile, so that
    `./a.csv` and `a.csv`, a symlink and its target, or hard links are one file; `-` (standard output)
    and inputs that are not files (registry names) take no part."""
    import os
    from pathlib import Path

    def same(a: str, b: str) -> bool:
        if Path(a).resolve() == Path(b).resolve():
            return True
        try:
            return os.path.samefile(a, b)
        except OSError:  # one of them does not exist yet
            return False

    files = [(f, p) for f, ps in (inputs or {}).items() for p in ([ps] if isinstance(ps, str) else ps or []) if os.path.isfile(p)]
    seen: list[tuple[str, str]] = []
    for flag, p in outputs:
        if not p or p == "-":
            continue
        for other, q in files:
            if same(p, q):
                raise InputError(flag.lstrip("-"), p, f"a path other than the {other} input ({q}), which {flag} would overwrite")
        for other, q in seen:
            if same(p, q):
                raise InputError(flag.lstrip("-"), p, f"a path no other output takes ({other} writes {q} too)")
        seen.append((flag, p))


class _EdgeGroup(TyperGroup):
    """The app's command group: whatever a command raises for bad input reaches the user as one line
    and an exit code, the same in-process (CliRunner) as from the console script. InputError, a
    usage error and an OS error are exit 2; Ctrl-C, SIGTERM and SIGHUP are 128 + the signal's number
    (130, 143, 129), after the same clean-up (outputs.write_all's); numpy's floating-point warnings
    stay inside (the results they would flag are refused by the edge checks instead)."""

    def make_context(self, info_name, args, parent=None, **extra):
        # the app's own options (`llm-codesign --bogus`): the same one line; no arguments at all show the help
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except UsageError as e:
            if NoArgsIsHelpError is not None and isinstance(e, NoArgsIsHelpError):
                raise
            typer.echo(f"error: {usage_line(e)}", err=True)
            raise typer.Exit(2) from None

    def invoke(self, ctx):
        import warnings

        import numpy as np

        from llm_codesign import outputs

        outputs.WRITTEN.clear()
        handlers = _catch_signals()
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                return super().invoke(ctx)
        except InputError as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(2) from None
        except UsageError as e:  # a value the option's type refuses, a missing option, an unknown command
            typer.echo(f"error: {usage_line(e, ctx)}", err=True)
            raise typer.Exit(2) from None
        except KeyboardInterrupt as e:  # Ctrl-C, or Terminated
            signum = getattr(e, "signum", signal.SIGINT)
            done = ", ".join("standard output" if p == "-" else p for p in outputs.WRITTEN)  # a signal after the renames
            try:
                typer.echo(f"error: {_SIGNAL_WORDS.get(signum, 'interrupted')}" + (f" after writing {done}" if done else "; nothing was written"),
                           err=True)
            except OSError:  # the terminal that hung up takes no line
                pass
            raise typer.Exit(128 + signum) from None
        except OSError as e:  # unreadable/unwritable files named on the command line
            import errno

            if e.errno == errno.EPIPE:  # stdout closed early (`| head`): Typer's quiet exit, not "error: file: Broken pipe"
                raise
            typer.echo(f"error: {os_error_line(e)}", err=True)
            raise typer.Exit(2) from None
        finally:
            _restore_signals(handlers)


app = typer.Typer(cls=_EdgeGroup, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Hardware-aware co-design of LLMs: each deployment's throughput, interactivity and accuracy, the frontier, shape lint and design, validated against measurements.")


def _print_version(value: bool) -> None:
    if value:
        from llm_codesign import __version__

        typer.echo(f"llm-codesign {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                       help="Print the installed version and exit.")) -> None:
    """Hardware-aware co-design of LLMs: each deployment's throughput, interactivity and accuracy, the frontier, shape lint and design, validated against measurements."""


def _fail(msg: str) -> None:
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(2)


def _console(*, stderr: bool = False):
    """A rich console on stdout; on stderr where a command's file goes to standard output (`-o -`)."""
    from rich.console import Console

    return Console(stderr=stderr)


def _table(title: str, columns: str, caption: str | None = None, **kw):
    """A terminal table that keeps its figures whole at 80 columns: no column rules, and per column in
    `columns` (space-separated `name:kind`, `_` for a space and `|` for a line break in a name) a kind: `n` a number, right-aligned
    on one line; `t` text that folds rather than being cut; `k` a short key kept on one line. A number column (header included) never
    shrinks below its width: the keys and texts fold to make room ("69.5" over "0B" reads as two figures, review 2026-12-06);
    a key is folded, never cut, where the console is too narrow for it even so: a model or GPU name is an identifier to copy.
    A text that does not fit even at its min_width is left out, the rightmost first (rich's last resort drew it blank)."""
    from rich import box

    settings = dict(title=title, caption=caption, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True, **kw)
    t = _keyed_table()(**settings)
    t.settings = settings  # a copy without the columns left out is built with them (_shown)
    for i, spec in enumerate(columns.split()):
        name, kind = spec.rsplit(":", 1)
        assert kind in ("n", "t", "k"), spec  # a programming error, never user input
        t.keys += [i] if kind == "k" else []
        t.nums += [i] if kind == "n" else []
        t.add_column(name.replace("_", " ").replace("|", "\n"), justify="right" if kind == "n" else "left", no_wrap=kind in ("n", "k"),
                     overflow="fold" if kind == "t" else "ellipsis", min_width=8 if kind == "t" else None)
    return t


@functools.lru_cache(maxsize=1)
def _keyed_table():
    """_table's rich Table (rich imported on first use): `k` cells that fold, `n` columns never narrowed."""
    from rich.measure import Measurement
    from rich.table import Table
    from rich.text import Text

    class _Keyed(Table):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.keys: list[int] = []
            self.nums: list[int] = []

        def add_row(self, *cells, **options):
            # a `k` column is laid out as one line (no_wrap: it is not shrunk while the others can be), but its cells wrap
            # where the console leaves too little even so: rich's last resort cut them with "…" (piped, a checkpoint id read
            # "RedHatAI/Meta-Llama-3.1-70B-Instruct-F…", newcomer review 2026-12-06); Text's own no_wrap and overflow win
            # over the column's (rich.text.Text.__rich_console__)
            cells = [Text.from_markup(c, overflow="fold") if i in self.keys and isinstance(c, str) else c for i, c in enumerate(cells)]
            for i in self.keys:
                if i < len(cells) and isinstance(cells[i], Text):
                    cells[i].no_wrap = False
            return super().add_row(*cells, **options)

        def __rich_console__(self, console, options):
            # rich's last resort narrows every column evenly, numbers too. Through its public API only (Column.min_width,
            # max_width, Measurement.get, add_column/add_row): each `n` column's min_width is its widest cell, header
            # included; where rich's own collapse of the texts cannot make the room, the folding columns get max_widths
            # (_fit) so that rich never needs its last resort
            cols = self.columns
            if not hasattr(self, "own"):  # the widths the caller set (models' precision column: max 14), kept
                self.own = [(c.max_width, c.min_width) for c in cols]
            for c, (mx, mn) in zip(cols, self.own, strict=True):  # as the caller left them, before this render's
                c.max_width, c.min_width = mx, mn
            full = [max(Measurement.get(console, options, x).maximum for x in (c.header, *c.cells)) for c in cols]
            full = [w if mx is None else min(w, mx) for w, (mx, _) in zip(full, self.own, strict=True)]
            for i in self.nums:
                cols[i].min_width = full[i]
            # what is not a cell: the box's two edges and a rule between columns, and each column's right padding but the
            # last's (pad_edge off; collapse_padding folds a left padding into the right one before it)
            n = len(cols)
            room = options.max_width - ((2 if self.show_edge else 0) + n - 1 if self.box else 0) - (n - 1) * self.padding[1]
            widths = _fit(full, self.nums, self.keys, [mn or 1 for _, mn in self.own], room)
            for i, w in widths.items():  # a folding column narrowed below its min_width (`t`: 8) takes that width too
                mx, mn = self.own[i]
                cols[i].max_width, cols[i].min_width = (w if w < full[i] else mx), (None if mn is None else min(w, mn))
            if all(widths.values()):
                return super().__rich_console__(console, options)
            return _shown(self, Table, widths).__rich_console__(console, options)

    return _Keyed


def _fit(full: list[int], nums: list[int], keys: list[int], floors: list[int], room: int) -> dict[int, int]:
    """The widths of a _table's folding columns (by index) that fit `room` characters of cells beside its number columns
    (`nums`) at their `full` widths, {} where rich's own collapse of the texts (down to their `floors`, the min_widths)
    makes the room: the texts to their floors, a character at a time from the widest; then out of the table (0), the
    rightmost first; then the keys (`keys`) to a character each (they fold)."""
    widths = {i: w for i, w in enumerate(full) if i not in nums}
    need = sum(full) - room
    texts = [i for i in widths if i not in keys]
    if need <= sum(widths[i] - floors[i] for i in texts):
        return {}

    def narrow(cols, floor) -> None:
        nonlocal need
        while need > 0:
            over = [i for i in cols if widths[i] > floor(i)]
            if not over:
                return
            j = max(over, key=lambda i: (widths[i], i))
            widths[j] -= 1
            need -= 1 + (2 if widths[j] == 0 else 0)  # a text taken to nothing is left out: its rule and padding go with it

    narrow(texts, lambda i: floors[i])
    for j in reversed(texts):
        narrow([j], lambda i: 0)
    narrow(keys, lambda i: 1)
    return widths


def _shown(t, table_cls, widths: dict[int, int]):
    """`t` without the columns _fit left out (width 0), built through Table's public add_column/add_row."""
    shown = [c for i, c in enumerate(t.columns) if widths.get(i, 1)]
    out = table_cls(**t.settings)
    for c in shown:
        out.add_column(c.header, justify=c.justify, no_wrap=c.no_wrap, overflow=c.overflow, min_width=c.min_width,
                       max_width=c.max_width, style=c.style, header_style=c.header_style, vertical=c.vertical)
    for row, cells in zip(t.rows, zip(*(list(c.cells) for c in shown), strict=True), strict=True):
        out.add_row(*cells, style=row.style, end_section=row.end_section)
    return out


def _dump(obj) -> None:
    """Strict JSON (no NaN or Infinity tokens) of a result the edge checks found finite."""
    from llm_codesign.spec.validation import check_result

    check_result(obj)
    typer.echo(json.dumps(obj, indent=2, default=float, allow_nan=False))


def _gpu(name):
    from llm_codesign.spec.hardware import get_gpu

    return get_gpu(name)


def _model(ref):
    """The model `ref` names; what the loader says of it beside its shape (an unknown model_type read as a standard
    decoder, spec.model.loader_facts) goes to stderr as one note line, leaving a command's answer on stdout whole."""
    from llm_codesign.spec.registry import get_model

    m = get_model(ref)
    for n in m.notes:
        if getattr(n, "kind", None) == "loader":
            typer.echo(f"note: {n}", err=True)
    return m


def _precision(model, weight, activation, kv, gpu=None):
    from llm_codesign.spec.plan import precision_for

    return precision_for(model, weight, activation, kv, gpu=gpu)


def _spec(spec, draft_len, acceptance, acceptance_rates, draft_model, *, model=None):
    from llm_codesign.spec.plan import spec_decoding

    return spec_decoding(spec, draft_len=draft_len, acceptance=acceptance, acceptance_rates=acceptance_rates, draft_model=draft_model,
                         model=model)


def _fmt(x: float, unit: str = "") -> str:
    for s, d in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= d:
            return f"{x / d:.2f}{s}{unit}"
    return f"{x:.2f}{unit}"


def _deployment(m, gpu, gpus_, *, tp, pp, ep, moe_tp, attention_dp, kvp, weight_dtype, activation_dtype, kv_dtype,
                backend, spec, draft_len, acceptance, acceptance_rates, draft_model, max_num_tokens, cpp):
    from llm_codesign.spec.plan import deployment

    g = _gpu(gpu)
    try:
        return deployment(m, gpu=g, num_gpus=gpus_, tp=tp, pp=pp, ep=ep, moe_tp=moe_tp, attention_dp=attention_dp, kvp=kvp,
                          weight_dtype=weight_dtype, activation_dtype=activation_dtype, kv_dtype=kv_dtype, engine=backend, spec=spec,
                          draft_len=draft_len, acceptance=acceptance, acceptance_rates=acceptance_rates, draft_model=draft_model,
                          max_num_tokens=max_num_tokens, cpp=cpp)
    except InputError as e:  # the GPUs as the CLI names them (spec.plan.deployment names its num_gpus keyword)
        if e.field == "num_gpus":
            raise InputError("gpus", e.value, e.valid) from None
        raise


# shared option declarations (vLLM / TensorRT-LLM vocabulary); the bounds (spec.plan's, which the API checks too) make a
# bad value one line naming the option
O_GPU = typer.Option(..., "--gpu", help="GPU id (see `gpus`) or a GPU .toml file.")
# export's --gpus: one instance's with --concurrency (its --replicas copy it, as estimate's), every GPU the search fills
# without it (newc8 #15: "Total GPUs" read as the sum over --replicas, which it never was)
O_GPUS = typer.Option(None, "--gpus", min=1, max=MAX_GPUS, help="With --concurrency: the GPUs of one instance, the parallel sizes "
                      "multiplying to it (--replicas copies it: 8 GPUs x --replicas 2 is 16 in all). Without: all the GPUs "
                      "searched, replicas of smaller instances filling them.")
# estimate and mix price one instance: `--gpus 8 --tp 4` is refused there, two TP4 replicas are export's and pareto's
O_GPUS_ONE = typer.Option(None, "--gpus", min=1, max=MAX_GPUS, help="GPUs of the one instance priced, per replica with --replicas "
                          "(8 GPUs x --replicas 2 is 16 in all): the parallel sizes multiply to it, TP taking what the others "
                          "leave (replicas of a smaller instance: pareto, compare, export).")
O_TP = typer.Option(None, "--tp", "--tensor-parallel-size", min=1, max=MAX_GPUS, help="Attention tensor-parallel size (of each "
                    "attention-DP rank).")
O_PP = typer.Option(None, "--pp", "--pipeline-parallel-size", min=1, max=MAX_GPUS, help="Pipeline stages (the layers split in order).")
O_EP = typer.Option(None, "--ep", "--expert-parallel-size", min=1, max=MAX_GPUS, help="Expert-parallel ranks (MoE experts split over them).")
O_MTP = typer.Option(None, "--moe-tp", min=1, max=MAX_GPUS, help="MoE tensor parallel (default: what EP and PP leave).")
O_ADP = typer.Option(None, "--attention-dp", min=1, max=MAX_GPUS, help="Attention data-parallel ranks, each of --tp GPUs: the GPUs "
                     "are tp x attention_dp (TensorRT-LLM's and vLLM's reading; without --gpus, a line says the count). SGLang's "
                     "--tp counts every GPU: its --tp 8 --dp 8 --enable-dp-attention is --tp 1 --attention-dp 8 here.")
O_KVP = typer.Option(None, "--kvp", min=1, max=MAX_GPUS, help="Helix KV-parallel ranks (sequence-sharded KV cache).")
O_W = typer.Option(None, "--weight-dtype", help="Weight format: bf16, fp16, fp8, fp8_block, nvfp4, mxfp4, int4 or int8 (default: the checkpoint's).")
O_A = typer.Option(None, "--activation-dtype", help="Activation format (default: what the weight format runs with on this GPU).")
O_KV = typer.Option(None, "--kv-dtype", help="KV-cache format, one of --weight-dtype's (default: the checkpoint's).")
K_FLAGS = ("--isl", "--osl", "--context")  # the options that take 1k (spec.plan.read_tokens, K_TOKENS, K_TEXT)


def token_count(value, flag: str, lo: int = 1, hi: int | None = MAX_STEP_TOKENS) -> int:
    """A token count as an option gives it (spec.plan.read_tokens: an integer, or a whole number of k, `8k` 8,192), said on
    standard error where read in k ("--isl 1k read as 1,024 tokens (InferenceX's 1k)"). Outside lo..hi or unreadable: a
    ValueError, which the one-line error names with what is valid (usage_line, _valid)."""
    if isinstance(value, int):
        return value
    n, k = read_tokens(value, lo, hi)
    if k:
        typer.echo(f"{flag} {str(value).strip()} read as {n:,} tokens (" + ("InferenceX's 1k)" if n == K_TOKENS else f"k = {K_TOKENS:,}, InferenceX's 1k)"), err=True)
    return n


def tokens_option(default, flag: str, *names: str, hi: int | None = MAX_STEP_TOKENS, help: str):
    """An option of tokens per request that takes `1k` too (token_count), its help saying so."""
    said = "/".join((flag, *names))  # roofline's --context is --isl too: both named where it was read
    return typer.Option(default, flag, *names, min=1, max=hi, parser=lambda v: token_count(v, said, hi=hi),
                        help=f"{help.rstrip('.')}; or in k: 1k = {K_TOKENS:,} tokens (InferenceX's 1k).")


O_ISL = tokens_option(1024, "--isl", help="Input tokens per request.")
O_OSL = tokens_option(1024, "--osl", help="Output tokens per request.")


def vendor_engines() -> str:
    """Each vendor's engine where --backend names none, as the options' help says it, from the registry
    (spec.engines.VENDOR_ENGINE, engine_for's rule), in VENDOR_NAMES' order whatever the registry's, the first vendor's
    "GPUs" said once: "trtllm on NVIDIA GPUs, sglang on AMD's"."""
    return ", ".join(f"{VENDOR_ENGINE[v]} on {VENDOR_NAMES[v]}" + (" GPUs" if i == 0 else "'s")
                     for i, v in enumerate(v for v in VENDOR_NAMES if v in VENDOR_ENGINE))


def _vendor_only() -> str:
    """The registered engines whose software ships for some vendors' GPUs only (Engine.vendors): "trtllm runs on
    NVIDIA's only, atom on AMD's"."""
    only = [(n, " or ".join(VENDOR_NAMES[v] + "'s" for v in e.vendors)) for n, e in ENGINES.items() if set(VENDOR_NAMES) - set(e.vendors)]
    return ", ".join(f"{n} runs on {vs} only" if i == 0 else f"{n} on {vs}" for i, (n, vs) in enumerate(only))


O_BACKEND = typer.Option(None, "--backend", "--engine", help=f"{listed()} (default: {vendor_engines()}"
                         + (f"; {_vendor_only()}" if _vendor_only() else "") + ").")
O_SPEC = typer.Option(None, "--spec", help="Speculative decoding: eagle3, mtp, draft, or ngram (prompt lookup: vLLM, SGLang and TensorRT-LLM; "
                      "give its --acceptance, the workload's hit rate).")
O_K = typer.Option(None, "--draft-len", min=1, max=16, help="Draft tokens per step.")
O_ACC = typer.Option(None, "--acceptance", help="Mean accepted tokens per step (1..k+1).")
O_RATES = typer.Option(None, "--acceptance-rates", help="Per-position acceptance rates r1,r2,...")
O_DRAFT = typer.Option(None, "--draft-model", help="Draft model for --spec draft.")
O_MNT = typer.Option(None, "--max-num-tokens", min=1, max=MAX_STEP_TOKENS,
                     help="Token budget per step: the prefill chunk, and in TensorRT-LLM, vLLM and ATOM "
                     "each decoding request's 1 + draft tokens too, so it caps the decode batch; default: the engine's own on the GPU.")
O_CAL = typer.Option(None, "--calibration", help="Calibration profile .toml.")
O_CHUNKED = typer.Option(
    None, "--chunked-prefill/--no-chunked-prefill",
    help="Whether the engine splits a prompt over steps (TensorRT-LLM enable_chunked_prefill; import reads it). Without it, "
         "TensorRT-LLM refuses a prompt over --max-num-tokens, and so does this. Default: the engine's (TensorRT-LLM off; "
         "left with its default budget too, a longer prompt is priced chunked).")


def priced_with(calibration: str | None) -> dict:
    """explore.export.priced_with: what a file keeps of the profile its figures are priced with."""
    from llm_codesign.explore.export import priced_with as recorded

    return recorded(calibration)
O_PREFIX = typer.Option(0.0, "--prefix-hit", help="Share of each prompt already in the prefix cache (0 to <1): not prefilled.")
ARRIVAL_HELP = ("How requests arrive: waves (identical requests kept in step by a closed loop, "
                "refilled in the cohorts the first wave's prefill formed, as a fixed-length benchmark runs them), closed_loop (each slot refilled as its request ends, lengths "
                "spread: bench_serving --max-concurrency --random-range-ratio 0.8), burst (every request sent at once, in lockstep).")
O_ARRIVAL = typer.Option(DEFAULT_ARRIVAL, "--arrival", help=ARRIVAL_HELP)
# mix's: waves only where its requests are identical (explore.lengths.mix_arrival)
O_MIX_ARRIVAL = typer.Option(None, "--arrival", help=ARRIVAL_HELP + " Default: waves where every request has one ISL and OSL, else "
                             "closed_loop: requests of different lengths end apart, so no cohort stays in step.")


def _progress():
    """A rich progress bar on stderr for long searches; when stderr is not a terminal (a log, CI), one
    plain line every 5 s of a search that runs that long, so quick runs print nothing."""
    from rich.console import Console

    con = Console(stderr=True)
    if not con.is_terminal:
        import time

        last = [None]  # the clock starts with the search (its first report), not with the set-up before it

        def plain(done, total):
            now = time.monotonic()
            if last[0] is None:
                last[0] = now
            elif now - last[0] >= 5.0 and total:
                last[0] = now
                typer.echo(f"searching: {done:,} of {total:,} ({100 * done / total:.0f}%)", err=True)

        return None, plain
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn  # a terminal's alone: its import is ~10 ms

    prog = Progress(TextColumn("searching"), BarColumn(), TextColumn("{task.completed:,}/{task.total:,}"), TimeRemainingColumn(),
                    console=con, transient=True)
    task = prog.add_task("search", total=1)

    def cb(done, total):
        prog.update(task, completed=done, total=total)

    return prog, cb


def _int_list(field: str, value: str, hi: int = MAX_CONCURRENCY) -> list[int]:
    """'1,16,256' -> [1, 16, 256]; anything else is a one-line error naming the field."""
    try:
        out = [int(x) for x in value.split(",") if x.strip()]
    except ValueError:
        out = []
    if not out or min(out) <= 0 or max(out) > hi:
        raise InputError(field, value, f"a comma-separated list of integers from 1 to {hi:,}, e.g. 1,16,256")
    return out


def token_list(flag: str, value: str, hi: int = MAX_CONCURRENCY) -> list[int]:
    """'1k,8k' -> [1024, 8192] (token_count each, said as read); anything else is a one-line error naming the field."""
    try:
        out = [token_count(x, flag, hi=hi) for x in value.split(",") if x.strip()]
    except ValueError:
        out = []
    if not out:
        raise InputError(flag.lstrip("-"), value, f"a comma-separated list of integers from 1 to {hi:,}, {K_TEXT}, e.g. 1k,8k")
    return out


def check_search_size(value: str, inst, n_gpus: int, *, fixed: int, free_ep: bool) -> None:
    """Refuses, before it starts, a pareto search too large to finish in seconds, naming the flag
    that narrows it (explore.search.check_search_size, the page's /api/pareto's check too). `inst`: the instance sizes of
    a --gpus range (None: the divisors of n_gpus); `fixed`: how many of --tp/--pp/--attention-dp/--kvp the user fixed."""
    from llm_codesign.explore.search import check_search_size as check

    if not 1 <= n_gpus <= MAX_GPUS:
        raise InputError("gpus", value, f"a GPU count from 1 to {MAX_GPUS:,}")
    check(value, inst, n_gpus, fixed=fixed, free_ep=free_ep, field="gpus", narrow="fix --tp/--pp/--ep")


def nothing_found(results: list[dict], gpus_value, slo: dict) -> InputError:
    """The one line for a search (pareto, sweep) with no deployment to show: the GPU count when no plan
    fits the model in memory, else the SLO option that filtered every fitting deployment out (explore.search.slo_shortfall:
    the best each unmet one reaches, and the precisions searched)."""
    from llm_codesign.explore.search import searched_what, slo_shortfall

    fitting = sum(int(r.get("fitting", 0)) for r in results)
    what = searched_what(results)
    short = slo_shortfall(results, slo)
    if short is not None:
        k, v, said, flags = short
        return InputError(k, v, f"an SLO that one of the {fitting:,} deployments of {what} that fit in memory meets"
                          + (f": {'; '.join(said)}" if said else "") + f" (loosen {flags})")
    return InputError("gpus", gpus_value, f"enough GPUs for {what} to fit: weights and KV cache exceed the memory of every plan "
                      "(more --gpus, or a smaller --weight-dtype / --kv-dtype)")


def on_gpus(model: str, instance_gpus: int, gpu_name: str, plan: str, replicas: int = 1) -> str:
    """A heading's "what on which GPUs": "llama-3.1-70b on 8x H200 SXM, TP8"; with replicas, every GPU the answer prices
    and what each copy is, "on 16x H200 SXM: 2 replicas of TP8 (8 GPUs each)" (estimate and import; "8x ... (x2 replicas)"
    read as 8 GPUs split in two, newc6 #21)."""
    if replicas > 1:
        return f"{model} on {instance_gpus * replicas}x {gpu_name}: {replicas} replicas of {plan} ({plural(instance_gpus, 'GPU')} each)"
    return f"{model} on {instance_gpus}x {gpu_name}, {plan}"


# beneath pareto's and compare's tables: the capture their points were priced with, which estimate's default is not
# (TensorRT-LLM's LLM API captures 1-32, 64 and 128 unpadded: a point at batch 66 pasted into estimate ran eagerly,
# TPOT 29.8 against the point's 19.6 ms, newc6 #4)
GRAPHS_NOTE = ("CUDA graphs: every point priced with graphs padded up to its batch, as export writes them; estimate prices the "
               "engine's default capture unless --cuda-graph-max-bs (pareto --json: each point's estimate_command)")
# a disaggregated point's decode workers alike: `disagg` without the capture priced 370 against the point's 856 tok/s/GPU (crev9 #1)
DISAGG_GRAPHS_NOTE = ("CUDA graphs: every point's decode workers priced with graphs padded up to their batch, as export writes them; "
                      "disagg prices the engine's default capture unless --decode-cuda-graph-max-bs (pareto --json: each point's "
                      "disagg_command)")


def plural(n: int, noun: str) -> str:
    """"1 GPU", "8 GPUs" (newc8 #15: "1 GPUs each")."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def check_replica_gpus(dep, gpus_: int | None, replicas: int | None) -> None:
    """Refuses in one line a --gpus that counts every replica's GPUs where it is one replica's (estimate's, export's with
    --concurrency): `--gpus 8 --tp 1 --replicas 8` names the fix, `--gpus 1 --replicas 8` (newc8 #15)."""
    own = int(dep.plan.gpus)
    if gpus_ and replicas and replicas > 1 and own != gpus_ and own * replicas == gpus_:
        raise InputError("gpus", gpus_, f"the GPUs of one replica with --replicas {replicas}: --gpus {own} --replicas {replicas} "
                                        f"runs {replicas} copies of {dep.plan.label()}, {gpus_} GPUs in all")


# pareto's and compare's GPU where --gpu is not given (pareto's model likewise): said on the answer's first line, never
# silent (newc12 #5; docs/modelling-notes.md#fixN5c-waves-ttft)
DEFAULT_GPU, DEFAULT_MODEL = "h200", "llama-3.1-70b"


def defaulted(value: str | None, option: str, default: str) -> tuple[str, str | None]:
    """(`value`, None), or (`default`, the line naming the option it stands for: "note: no --gpu given: default --gpu
    h200"), the line said (say_notes) only once every check has passed: a bad input is one line, the error's."""
    if value is not None:
        return value, None
    return default, (f"note: no {option} given: default {option} {default}" if option.startswith("-") else
                     f"note: no {option} given: default {default}")


def say_notes(*notes: str | None) -> None:
    """Each note on standard error, before the answer (defaulted's)."""
    for note in notes:
        if note:
            typer.echo(note, err=True)


def plan_note_line(dep) -> None:
    """The line where the GPUs were read off tp x attention_dp with TP > 1 (Deployment.plan_note,
    spec.plan.attention_dp_note), on standard error beside the answer, as the loader's notes (newc8 #9)."""
    if dep.plan_note:
        typer.echo(f"note: {dep.plan_note}", err=True)
