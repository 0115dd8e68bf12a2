"""What tokens cost: a GPU-hour price (a figure, or a price file: data/prices.toml by default) turned
into dollars per million output tokens and per million tokens in and out, at a deployment's throughput.

Both figures charge the whole GPU time of serving to the tokens named: `usd_per_m_output_tokens` divides
it over the output tokens alone (what an API's output price competes with when input is free),
`usd_per_m_tokens` over every token read or written (the blended price)."""
from __future__ import annotations

import tomllib
from importlib import resources

import numpy as np

from llm_codesign.errors import InputError, parse_nested, read_text

# the dearest price a GPU-hour may have: 100x the dearest on-demand figure data/prices.toml cites (a hyperscaler's
# H200 at $7.00); $1e308 put an infinite $ per million tokens in sweep's Parquet (compare refused its own result)
MAX_USD_PER_GPU_HOUR = 1000.0


def load_prices(path: str | None = None) -> dict:
    """A price file: `[usd_per_gpu_hour]` gpu id -> dollars, its `source`, and optionally `[sources]`
    gpu id -> where that GPU's figure comes from (the bundled file cites each)."""
    try:
        if path:
            text = read_text(path, "gpu_hour_price", "a TOML price file")
        else:
            text = resources.files("llm_codesign").joinpath("data/prices.toml").read_text()
        data = parse_nested(tomllib.loads, text, "gpu_hour_price", path)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise InputError("gpu_hour_price", path, f"a TOML price file ({e})") from None
    table = data.get("usd_per_gpu_hour")
    if not isinstance(table, dict) or not all(isinstance(v, (int, float)) and 0 < v <= MAX_USD_PER_GPU_HOUR for v in table.values()):
        raise InputError("gpu_hour_price", path or "bundled", "a price file with [usd_per_gpu_hour] gpu = positive dollars, at most "
                         f"{MAX_USD_PER_GPU_HOUR:,.0f}")
    sources = data.get("sources", {})
    if not isinstance(sources, dict) or not all(isinstance(v, str) for v in sources.values()):
        raise InputError("gpu_hour_price", path or "bundled", "a price file whose [sources] maps gpu = \"where the price comes from\"")
    return {"usd_per_gpu_hour": {k.lower(): float(v) for k, v in table.items()}, "source": data.get("source", str(path)),
            "sources": {k.lower(): v for k, v in sources.items()}}


def _same_base(gpu) -> str:
    """The catalog id a derived GPU (Gpu.base_id: the page's what-if) is priced as, where it is that GPU in every figure
    (Gpu.figures); "" where it has none or changes one: a price is the product's, not a figure's (review crev #6)."""
    from llm_codesign.spec.hardware import get_gpu

    base_id = getattr(gpu, "base_id", "")
    try:
        return base_id.lower() if base_id and gpu.figures() == get_gpu(base_id).figures() else ""
    except InputError:  # a base outside the catalog (a TOML's): no bundled price to carry
        return ""


def gpu_hour_price(gpu, price: str | float | None) -> tuple[float, str] | None:
    """(dollars per GPU-hour, where the figure comes from) for `gpu`: `price` is a number, `bundled`
    (data/prices.toml) or a price file's path; None when no price was asked for."""
    if price is None:
        return None
    try:
        usd = float(price)
    except (TypeError, ValueError):
        usd = None
    if usd is not None:
        if not np.isfinite(usd) or not 0 < usd <= MAX_USD_PER_GPU_HOUR:
            raise InputError("gpu_hour_price", price, f"a positive number of dollars per GPU-hour up to {MAX_USD_PER_GPU_HOUR:,.0f}, "
                             "`bundled`, or a price file")
        return usd, "--gpu-hour-price"
    bundled = str(price) == "bundled"
    prices = load_prices(None if bundled else str(price))
    table = prices["usd_per_gpu_hour"]
    base = _same_base(gpu)
    for key in (gpu.id.lower(), *(a.lower() for a in getattr(gpu, "aliases", ())), *((base,) if base else ())):
        if key in table:
            return table[key], prices["sources"].get(key, prices["source"])
    if getattr(gpu, "base_id", "") and not base and gpu.base_id.lower() in table:
        raise InputError("gpu_hour_price", price, f"a number of dollars per GPU-hour: {gpu.id} changes {gpu.base_id}'s figures, and "
                                                  f"{gpu.base_id}'s price is not its own")
    listed = "the bundled prices cite" if bundled else f"the price file {price} lists"
    raise InputError("gpu_hour_price", gpu.id, f"a GPU {listed} ({', '.join(sorted(table))}), a number of dollars per GPU-hour"
                     + (", or a price file" if bundled else ""))


def token_costs(usd_per_gpu_hour: float, output_tok_s_per_gpu, isl, osl) -> dict:
    """Dollars per million output tokens and per million tokens in and out (arrays broadcast)."""
    out = np.asarray(output_tok_s_per_gpu, float)
    per_m = usd_per_gpu_hour / 3600.0 * 1e6
    with np.errstate(divide="ignore"):
        usd_out = np.where(out > 0, per_m / np.where(out > 0, out, 1.0), np.inf)
    io = usd_out * np.asarray(osl, float) / (np.asarray(isl, float) + np.asarray(osl, float))
    if usd_out.ndim == 0:
        return {"usd_per_gpu_hour": usd_per_gpu_hour, "usd_per_m_output_tokens": float(usd_out), "usd_per_m_tokens": float(io)}
    return {"usd_per_gpu_hour": usd_per_gpu_hour, "usd_per_m_output_tokens": usd_out, "usd_per_m_tokens": io}


def cost_of(gpu, price: str | float | None, output_tok_s_per_gpu, isl, osl) -> dict | None:
    """`token_costs` at the price `gpu_hour_price` finds for `gpu`, with its source; None without a price."""
    found = gpu_hour_price(gpu, price)
    if found is None:
        return None
    return token_costs(found[0], output_tok_s_per_gpu, isl, osl) | {"price_source": found[1]}
