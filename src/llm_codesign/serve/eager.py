"""What a decode step outside the CUDA graphs costs, said once for an aggregated estimate (serve.estimate) and a
disaggregated decode pool (serve.disagg) alike: the capture in words, the note and its advice."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from llm_codesign.serve.aggregated import (
    DECODE_LAUNCH_RANGE_S,
    GRAPH_PIECE_RANGE_S,
    GRAPH_PIECE_S,
    LAUNCH_JITTER_RANGE_S,
    LAUNCH_JITTER_S,
    Serving,
    default_capture,
    draft_lengths,
    launch_range,
    stage_ranks,
)
from llm_codesign.spec.harness import SchedulerFlags
from llm_codesign.spec.plan import Deployment


@dataclass(frozen=True)
class EagerDecode:
    """Where the answer's decode step runs without CUDA graphs (serve.aggregated.graph_misses: the batch per rank is above
    the capture or, where it does not pad, not among its sizes): that batch, the capture in words (the deployment's
    cuda_graph_max_bs, else the engine's default, Engine.graphs_default), the host launches it adds a step and their
    share of TPOT (the breakdown's host/eager_launches row, the same arrays), the padded capture that covers the batch,
    how to set it, and the note that says it all."""
    batch_per_rank: float
    captured: str
    extra_s: float
    tpot_s: float  # the row's share of TPOT, in seconds
    share: float  # of TPOT
    cuda_graph_max_bs: int
    avoid: str
    note: str
    # TPOT's (down, up) log moves with the launches at DECODE_LAUNCH_RANGE_S's ends (serve.aggregated.eager_tpot_moves):
    # the intervals' eager term (Context.eager), each side of the band its own; TTFT's likewise (eager_ttft_moves:
    # the decode steps it waits out; Context.eager_ttft)
    moves: tuple[float, float] = (0.0, 0.0)
    ttft_moves: tuple[float, float] = (0.0, 0.0)
    piecewise: bool = False  # the step replays vLLM's piecewise graphs (piecewise_note), not a whole eager step

    def to_dict(self) -> dict:
        return {"batch_per_rank": self.batch_per_rank, "captured": self.captured, "extra_ms_per_step": self.extra_s * 1e3,
                "tpot_ms": self.tpot_s * 1e3, "share_of_tpot": self.share, "cuda_graph_max_bs": self.cuda_graph_max_bs,
                "avoid": self.avoid, "note": self.note, "tpot_log_moves": list(self.moves), "ttft_log_moves": list(self.ttft_moves)} | \
            ({"piecewise": True} if self.piecewise else {})


# how each engine's launch sets a padded capture up to n (the advice of EagerDecode): TensorRT-LLM's extra LLM API options
# (CudaGraphConfig enable_padding / max_batch_size, tensorrt_llm/llmapi/llm_args.py:175-255@00043967), SGLang's flag
# (spec.harness SchedulerFlags.cuda_graph_max_bs; its default cap, Engine.graphs_default, misses batches above 256 / 512),
# vLLM's; another engine's said generically
GRAPH_OPTION = {"trtllm": "`cuda_graph_config: {{enable_padding: true, max_batch_size: {n}}}` in the extra LLM API options",
                # 0.5.23's argparse reads the single-phase --cuda-graph-max-bs as an ambiguous prefix of -decode / -prefill
                # (data/engines/sglang.toml:142-144), and our export writes -decode
                "sglang": "`--cuda-graph-max-bs-decode {n}` (`--cuda-graph-max-bs {n}` before 0.5.23)",
                # vLLM counts its capture in tokens per decode step: a request's 1 + k (explore/export_engines/vllm.py)
                "vllm": "`--max-cudagraph-capture-size {n}` (x (1 + k) with a draft of k), without --enforce-eager"}


def decode_capture(dep: Deployment, flags: SchedulerFlags | None = None, *, exported: bool = False) -> tuple[float, bool]:
    """(largest batch per rank, padded) of the engine's default decode capture for `dep` under the run's `flags` (None: the
    engine's defaults), as the pricing reads it: serve.aggregated.default_capture at the draft length and with the flags
    evaluate prices the step with (draft_lengths, Serving.flags: its max_running_requests is vLLM's max_num_seqs, so
    vLLM's min(2 x max_num_seqs x (1 + k), 512 or 1,024 on Blackwell) tokens, docs/modelling-notes.md#sgcap-default-caps).
    The one reading of it for the eager note (captured_text, eager_note) and an export's capture (written_capture), so
    that neither says a cap the pricing does not use. `exported`: the default of the release an export writes for instead
    (Engine.export_graphs_default), which written_capture holds against the priced one."""
    top, padded = default_capture(dep.engine, dep.gpu, dep.plan, k=draft_lengths(dep.spec)[0], flags=Serving.of(dep).flags(flags),
                                  exported=exported)
    return float(np.asarray(top, float).reshape(-1)[0]), bool(padded)


def captured_text(dep: Deployment, flags: SchedulerFlags | None = None) -> str:
    """The decode CUDA graphs `dep` captures, in words: the deployment's padded cuda_graph_max_bs, else the engine's own
    default (decode_capture under the run's `flags`; an unpadded one's sizes as serve.aggregated.graph_misses holds them:
    1-32, the powers of 2 from 64 below its max, and the max)."""
    if dep.cuda_graph_max_bs == 0:  # an imported launch that turns graphs off (Deployment.cuda_graph_max_bs 0)
        return "none: the launch turns CUDA graphs off"
    if dep.piecewise_graphs:  # vLLM's cudagraph_mode PIECEWISE: the same sizes, each a graph piece between attention ops
        return captured_text(replace(dep, piecewise_graphs=False), flags) + ", as graph pieces between the attention ops (PIECEWISE)"
    if dep.cuda_graph_max_bs is not None:
        return f"padded graphs up to {int(dep.cuda_graph_max_bs)} per rank (the deployment's cuda_graph_max_bs)"
    top, padded = decode_capture(dep, flags)
    if padded:
        return f"{dep.engine.title}'s default: " + ("every batch" if np.isinf(top) else f"padded graphs up to {top:g} per rank")
    sizes = [f"1-{min(32, int(top)):d}", *(f"{2 ** k}" for k in range(6, 64) if 2 ** k < top), *([f"{top:g}"] if top > 32 else [])]
    return f"{dep.engine.title}'s default where the launch sets none: batches {', '.join(sizes)} per rank, unpadded"


def eager_note(dep: Deployment, *, batch: float, extra_s: float, part_s: float, tpot_s: float, moves: tuple[float, float],
               ttft_moves: tuple[float, float] = (0.0, 0.0), here: str = "--cuda-graph-max-bs",
               flags: SchedulerFlags | None = None, piecewise: bool = False) -> EagerDecode:
    """EagerDecode for `dep`'s decode step at `batch` per rank whose eager launches add `extra_s` a step and `part_s` to
    a TPOT of `tpot_s` (0 and 0 where the kernels hide them at DECODE_LAUNCH_S but not at the range's upper end: a one-line
    note): an aggregated estimate's (from its breakdown row) and a disaggregated decode pool's (serve.disagg.estimate_disagg,
    from evaluate_disagg's decode_eager_s; `here` the tool's own option) alike. `flags`: the run's scheduler flags the step
    was priced with (None: the engine's defaults, as an estimate prices), so that the capture it names is the priced one
    (decode_capture). `moves`, `ttft_moves`: TPOT's and TTFT's log moves at the launch cost's range's ends
    (serve.aggregated.eager_tpot_moves, eager_ttft_moves), the intervals' terms. `piecewise`: the step replays vLLM's
    piecewise graphs (serve.aggregated.piecewise_launches), its note piecewise_note's."""
    if piecewise:
        return piecewise_note(dep, batch=batch, extra_s=extra_s, part_s=part_s, tpot_s=tpot_s, moves=moves,
                              ttft_moves=ttft_moves, flags=flags)
    n, ranks, title = int(np.ceil(batch - 1e-9)), int(np.asarray(stage_ranks(dep.plan)).reshape(-1)[0]), dep.engine.title
    avoid = GRAPH_OPTION.get(dep.engine.name, f"a CUDA-graph capture padded up to {{n}} in {title}'s launch options").format(n=n) + \
        f" (here: {here} {n}, Deployment.cuda_graph_max_bs, priced as padded graphs up to {n})"
    if dep.cuda_graph_max_bs == 0:  # graphs off (0): the launch's own choice, so the advice turns them back on first
        avoid = f"CUDA graphs turned back on (the launch turns them off; {here} 0 here), then {avoid}"
    # a pipeline's micro-batches hold running / m on average; the graphs see the busiest, its ceiling (graph_misses)
    held = f"a batch of {batch:.4g} per rank" if abs(batch - n) < 1e-9 else \
        f"a micro-batch of up to {n} per rank (the busiest; {batch:.4g} on average)"
    captured, moves = captured_text(dep, flags), tuple(float(x) for x in moves)
    common = dict(batch_per_rank=batch, captured=captured, cuda_graph_max_bs=n, avoid=avoid, moves=moves,
                  ttft_moves=tuple(float(x) for x in ttft_moves))
    if extra_s <= 0:  # hidden at 35 us, shown at the upper end (docs/modelling-notes.md#eagerfix-eager-sides)
        note = (f"decode runs without CUDA graphs: {held} is not captured ({captured}); its host launches at "
                f"{launch_range()} hide under its kernels, but at {DECODE_LAUNCH_RANGE_S[1] * 1e6:.3g} us they would add "
                f"+{tpot_s * np.expm1(moves[1]) * 1e3:.3g} ms to TPOT: the intervals widen above only. Avoid it with {avoid}")
        return EagerDecode(extra_s=0.0, tpot_s=0.0, share=0.0, note=note, **common)
    return EagerDecode(extra_s=extra_s, tpot_s=part_s, share=part_s / tpot_s, note=_shown(held, captured, avoid, extra_s=extra_s,
                       share=part_s / tpot_s, ranks=ranks, moves=moves), **common)


def _shown(held: str, captured: str, avoid: str, *, extra_s: float, share: float, ranks: int, moves: tuple) -> str:
    """eager_note's note where the launches outlast the kernels at DECODE_LAUNCH_S."""
    # the step's launches are priced, not fitted (serve.aggregated.decode_launch_host, docs/modelling-notes.md#ppeager-eager):
    # each at DECODE_LAUNCH_S, and at several ranks each collective waits for the slowest rank's launch jitter; the step
    # takes the longer of the launches and its kernels, so the row is the launches beyond the kernels. No campaign row
    # decodes eagerly (#cg128-default-graphs): each side of the intervals widens by TPOT's move at its end of the launch
    # cost's range (eager_tpot_moves; docs/modelling-notes.md#eagerfix-eager-sides)
    lo, hi = (x * 1e6 for x in LAUNCH_JITTER_RANGE_S)
    jitter = (f", and each collective waits for the slowest of the {ranks} ranks' launches (jitter "
              f"{LAUNCH_JITTER_S * 1e6:.3g} us a launch, range {lo:.3g}-{hi:.3g} us)") if ranks > 1 else ""
    widen = (f"TPOT x{np.exp(-moves[0]):.2f}-x{np.exp(moves[1]):.2f} with the launches at the range's ends; each side of "
             "the intervals widens by its own end's move")
    return (f"decode runs without CUDA graphs: {held} is not captured ({captured}), so each "
            f"step launches every kernel from the host: +{extra_s * 1e3:.3g} ms a step beyond its kernels, {share:.0%} of "
            f"TPOT (host/eager_launches). Avoid it with {avoid}. The launches are priced at {launch_range()} per fused "
            f"operator (standing for the unfused kernels an eager forward runs beside it){jitter}, not fitted; no measured "
            f"run decodes without CUDA graphs, so this part is unmeasured for decode ({widen})")


def piecewise_note(dep: Deployment, *, batch: float, extra_s: float, part_s: float, tpot_s: float, moves: tuple[float, float],
                   ttft_moves: tuple[float, float] = (0.0, 0.0), flags: SchedulerFlags | None = None) -> EagerDecode:
    """EagerDecode for a decode step that replays vLLM's piecewise graphs (Deployment.piecewise_graphs: cudagraph_mode
    PIECEWISE, -O1) whose host launches outlast its kernels by `extra_s` a step: each layer's attention ops launched from the
    host between the pieces, each piece a replay (serve.aggregated.piecewise_launches); `extra_s` 0 where the kernels hide
    them at DECODE_LAUNCH_S but not at the range's upper end (a one-line note, as eager_note's). `moves`, `ttft_moves` as
    eager_note's (the attention ops' launches moved to the range's ends, the pieces' replays held). The advice: vLLM's
    default full decode graph (FULL_AND_PIECEWISE)."""
    n = int(np.ceil(batch - 1e-9))
    avoid = ("vLLM's default decode graph, one full graph a step (cudagraph_mode FULL_AND_PIECEWISE, -O2; here: "
             "Deployment.piecewise_graphs false)")
    moves = tuple(float(x) for x in moves)
    common = dict(batch_per_rank=batch, captured=captured_text(dep, flags), cuda_graph_max_bs=n, avoid=avoid, moves=moves,
                  ttft_moves=tuple(float(x) for x in ttft_moves), piecewise=True)
    head = (f"decode replays vLLM's piecewise CUDA graphs (cudagraph_mode PIECEWISE): a batch of {batch:.4g} per rank "
            "launches each layer's attention and KV-cache write from the host between the graph pieces")
    if extra_s <= 0:  # hidden at 35 us, shown at the upper end (docs/modelling-notes.md#eagerfix-eager-sides)
        note = (f"{head}; at {launch_range()} they hide under its kernels, but at {DECODE_LAUNCH_RANGE_S[1] * 1e6:.3g} us "
                f"they would add +{tpot_s * np.expm1(moves[1]) * 1e3:.3g} ms to TPOT: the intervals widen above only. "
                f"Avoid it with {avoid}")
        return EagerDecode(extra_s=0.0, tpot_s=0.0, share=0.0, note=note, **common)
    lo, hi = (x * 1e6 for x in GRAPH_PIECE_RANGE_S)
    widen = (f"TPOT x{np.exp(-moves[0]):.2f}-x{np.exp(moves[1]):.2f} with the launches at the range's ends; each side of "
             "the intervals widens by its own end's move")
    note = (f"{head}, +{extra_s * 1e3:.3g} ms a step beyond its kernels, {part_s / tpot_s:.0%} of TPOT (host/eager_launches). "
            f"Avoid it with {avoid}. Each op is priced at {launch_range()}, each piece's replay at {GRAPH_PIECE_S * 1e6:.3g} us "
            f"(range {lo:.3g}-{hi:.3g} us), not fitted; no measured run decodes piecewise ({widen})")
    return EagerDecode(extra_s=extra_s, tpot_s=part_s, share=part_s / tpot_s, note=note, **common)
