"""Shared pieces of the command line: the Typer app, one-line errors, option declarations and the
lookups every command uses."""
from __future__ import annotations

import json
from typing import Optional

import typer

from llm_codesign.errors import InputError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Hardware-aware co-design of LLMs: roofline, estimate, pareto, lint, validate.")


def _print_version(value: bool) -> None:
    if value:
        from llm_codesign import __version__

        typer.echo(f"llm-codesign {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                       help="Print the installed version and exit.")) -> None:
    """Hardware-aware co-design of LLMs: roofline, estimate, pareto, lint, validate."""


def _fail(msg: str) -> None:
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(2)


def _console():
    from rich.console import Console

    return Console()


def _table(title: str, columns: str, caption: str | None = None, **kw):
    """A terminal table that keeps its figures whole at 80 columns: no column rules, and per column in
    `columns` (space-separated `name:kind`, `_` for a space in a name) a kind: `n` a number, right-aligned
    and never wrapped; `t` text that folds rather than being cut; `k` a short key kept on one line."""
    from rich import box
    from rich.table import Table

    t = Table(title=title, caption=caption, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True, **kw)
    for spec in columns.split():
        name, kind = spec.rsplit(":", 1)
        assert kind in ("n", "t", "k"), spec  # a programming error, never user input
        t.add_column(name.replace("_", " "), justify="right" if kind == "n" else "left", no_wrap=kind in ("n", "k"),
                     overflow="fold" if kind == "t" else "ellipsis", min_width=8 if kind == "t" else None)
    return t


def _dump(obj) -> None:
    typer.echo(json.dumps(obj, indent=2, default=float))


def _gpu(name):
    from llm_codesign.spec.hardware import get_gpu

    return get_gpu(name)


def _model(ref):
    from llm_codesign.spec.registry import get_model

    return get_model(ref)


def _precision(model, weight, activation, kv):
    from dataclasses import replace

    from llm_codesign.spec.precision import Precision, get_dtype

    p = model.default_precision
    if weight:
        p = Precision.of(weight, activation, kv or p.kv.name)
    else:
        if activation:
            p = replace(p, activation=get_dtype(activation, "activation_dtype"))
        if kv:
            p = replace(p, kv=get_dtype(kv, "kv_dtype"))
    return p


def _spec(spec, draft_len, acceptance, acceptance_rates, draft_model):
    from llm_codesign.spec.plan import SpecDecoding

    if spec is None or spec == "none":
        if acceptance is not None or acceptance_rates:
            raise InputError("spec", spec, "--spec mtp|eagle3|draft when --acceptance or --acceptance-rates is given")
        return None
    rates = ()
    if acceptance_rates:
        try:
            rates = tuple(float(x) for x in acceptance_rates.split(","))
        except ValueError:
            raise InputError("acceptance_rates", acceptance_rates, "comma-separated probabilities, e.g. 0.8,0.6,0.5") from None
    k = draft_len or (len(rates) if rates else 3)
    return SpecDecoding(spec, k, acceptance, rates, draft_model)


def _fmt(x: float, unit: str = "") -> str:
    for s, d in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= d:
            return f"{x / d:.2f}{s}{unit}"
    return f"{x:.2f}{unit}"


def _deployment(m, gpu, gpus_, tp, pp, ep, moe_tp, attention_dp, kvp, weight_dtype, activation_dtype, kv_dtype,
                backend, spec, draft_len, acceptance, acceptance_rates, draft_model, max_num_tokens, cpp):
    from llm_codesign.spec.plan import Deployment, Plan

    g = _gpu(gpu)
    for name, v in (("tp", tp), ("pp", pp), ("ep", ep), ("attention_dp", attention_dp), ("kvp", kvp),
                    ("max_num_tokens", max_num_tokens)):
        if v is not None and v < 1:
            raise InputError(name, v, "a positive integer")
    tp_, pp_, ep_, adp_, kvp_ = tp or 1, pp or 1, ep or 1, attention_dp or 1, kvp or 1
    n = gpus_ or tp_ * pp_ * adp_ * kvp_
    if n < 1:
        raise InputError("gpus", n, "a positive integer")
    if tp is None and gpus_ and n % (pp_ * adp_ * kvp_) == 0:
        tp_ = n // (pp_ * adp_ * kvp_)
    if m.is_moe:
        mtp = moe_tp if moe_tp is not None else max(n // (ep_ * pp_), 1)
    else:
        mtp = moe_tp or 1
    return Deployment(gpu=g, num_gpus=n, plan=Plan(tp_, pp_, ep_, mtp, adp_, kvp_),
                      precision=_precision(m, weight_dtype, activation_dtype, kv_dtype), backend=backend,
                      spec=_spec(spec, draft_len, acceptance, acceptance_rates, draft_model),
                      max_num_tokens=max_num_tokens, cpp=cpp)


# shared option declarations (vLLM / TensorRT-LLM vocabulary)
O_GPU = typer.Option(..., "--gpu", help="GPU id (see `gpus`), comma list for pareto comparison, or a .toml.")
O_GPUS = typer.Option(None, "--gpus", help="Total GPUs.")
O_TP = typer.Option(None, "--tp", "--tensor-parallel-size", help="Attention tensor-parallel size.")
O_PP = typer.Option(None, "--pp", "--pipeline-parallel-size")
O_EP = typer.Option(None, "--ep", "--expert-parallel-size")
O_MTP = typer.Option(None, "--moe-tp", help="MoE tensor parallel (default: what EP and PP leave).")
O_ADP = typer.Option(None, "--attention-dp", help="Attention data-parallel ranks.")
O_KVP = typer.Option(None, "--kvp", help="Helix KV-parallel ranks (sequence-sharded KV cache).")
O_W = typer.Option(None, "--weight-dtype")
O_A = typer.Option(None, "--activation-dtype")
O_KV = typer.Option(None, "--kv-dtype")
O_ISL = typer.Option(1024, "--isl", help="Input tokens per request.")
O_OSL = typer.Option(1024, "--osl", help="Output tokens per request.")
O_BACKEND = typer.Option("trtllm", "--backend", help="trtllm, vllm or sglang.")
O_SPEC = typer.Option(None, "--spec", help="Speculative decoding: eagle3, mtp or draft.")
O_K = typer.Option(None, "--draft-len", help="Draft tokens per step.")
O_ACC = typer.Option(None, "--acceptance", help="Mean accepted tokens per step (1..k+1).")
O_RATES = typer.Option(None, "--acceptance-rates", help="Per-position acceptance rates r1,r2,...")
O_DRAFT = typer.Option(None, "--draft-model", help="Draft model for --spec draft.")
O_MNT = typer.Option(None, "--max-num-tokens",
                     help="Token budget per step (chunked prefill); default: the engine's own on the GPU.")
O_CAL = typer.Option(None, "--calibration", help="Calibration profile .toml.")


def _progress():
    """A rich progress bar on stderr for long searches (silent when stderr is not a terminal)."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    con = Console(stderr=True)
    if not con.is_terminal:
        return None, None
    prog = Progress(TextColumn("searching"), BarColumn(), TextColumn("{task.completed:,}/{task.total:,}"), TimeRemainingColumn(),
                    console=con, transient=True)
    task = prog.add_task("search", total=1)

    def cb(done, total):
        prog.update(task, completed=done, total=total)

    return prog, cb


def _int_list(field: str, value: str) -> list[int]:
    """'1,16,256' -> [1, 16, 256]; anything else is a one-line error naming the field."""
    try:
        out = [int(x) for x in value.split(",") if x.strip()]
    except ValueError:
        out = []
    if not out or min(out) <= 0:
        raise InputError(field, value, "a comma-separated list of positive integers, e.g. 1,16,256")
    return out


def _ints(v: Optional[int]):
    return None if v is None else (v,)
