// The page of `llm-codesign serve`: a form, the JSON API (/api/*), a plotly frontier.
// Every name from the data goes in through textContent (never innerHTML), and through esc() into plotly,
// whose labels accept a few HTML tags. The form's state lives in the URL fragment: a link reproduces the view.
"use strict";

const $ = (id) => document.getElementById(id);
const WHAT_IF = ["hbm_tb_s", "memory_gb", "bf16_tflops", "fp8_tflops", "fp4_tflops", "scale_up_gb_s", "scale_up_domain"];
const FIELDS = ["model", "config", "num_gpus", "weight_dtype", "kv_dtype", "engine", "isl", "osl", "min_tps_user",
                "max_ttft_ms", "regime", "params", "baseline", "max_candidates", "wi_base", "wi_id", ...WHAT_IF.map((f) => "wi_" + f)];
let last = null;  // the last frontier: {req, series}
let GPUS = {};  // the catalog by id, for the what-if form's base figures

function esc(s) {
  return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function table(id, columns, rows, onclick) {
  // columns: [[header, kind]] with kind "t" for text (left) or "n" for numbers; rows: arrays of cells
  const t = el("table");
  t.id = id;
  const head = t.createTHead().insertRow();
  for (const [h, kind] of columns) head.appendChild(el("th", h, kind === "t" ? "t" : ""));
  const body = t.createTBody();
  rows.forEach((r, i) => {
    const tr = body.insertRow();
    r.forEach((c, j) => tr.appendChild(el("td", c, columns[j][1] === "t" ? "t" : "")));
    if (onclick) tr.addEventListener("click", () => onclick(i));
  });
  return t;
}

function fix(x, d) { return x === null || x === undefined ? "-" : Number(x).toFixed(d); }

function showError(msg) { $("error").textContent = msg ? String(msg).split("\n")[0] : ""; }

function status(msg, busy) {
  $("status").textContent = msg || "";
  $("status").className = busy ? "busy" : "";
}

async function api(path, body) {
  const r = await fetch(path, body === undefined ? {} : {
    method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
  let data = null;
  try { data = await r.json(); } catch (e) { data = null; }
  if (!r.ok) throw new Error((data && data.error) || `${path}: HTTP ${r.status}`);
  return data;
}

// ---- form state <-> URL fragment
function readForm() {
  const s = {};
  for (const f of FIELDS) s[f] = $(f).value;
  s.gpus = [...document.querySelectorAll("#gpus input:checked")].map((c) => c.value);
  s.wi_on = $("wi_on").checked ? "1" : "";
  return s;
}

function writeForm(s) {
  for (const f of FIELDS) if (s[f] !== undefined && s[f] !== null) $(f).value = s[f];
  if (s.gpus) for (const c of document.querySelectorAll("#gpus input")) c.checked = s.gpus.includes(c.value);
  $("wi_on").checked = s.wi_on === "1";
  if ($("wi_on").checked) $("what-if").open = true;
}

function saveHash(s, sel) {
  const p = new URLSearchParams();
  for (const f of FIELDS) if (s[f] !== "" && s[f] !== undefined) p.set(f, s[f]);
  p.set("gpus", s.gpus.join(","));
  if (s.wi_on) p.set("wi_on", "1");
  if (sel) p.set("sel", sel);
  history.replaceState(null, "", "#" + p.toString());
}

function loadHash() {
  if (location.hash.length < 2) return null;
  const p = new URLSearchParams(location.hash.slice(1));
  const s = {};
  for (const f of FIELDS) if (p.has(f)) s[f] = p.get(f);
  s.gpus = (p.get("gpus") || "").split(",").filter((g) => g);
  s.wi_on = p.get("wi_on") || "";
  s.sel = p.get("sel");
  return s;
}

// a field's text as a number when it reads as one; otherwise as typed, for the server to name it in a 422
function num(v) {
  const t = String(v).trim();
  if (t === "") return null;
  const x = Number(t);
  return Number.isFinite(x) ? x : t;
}

function modelRef(s) {
  if (s.config.trim()) {
    try { return {config: JSON.parse(s.config)}; } catch (e) { throw new Error(`config: not valid JSON (${e.message})`); }
  }
  return {model: s.model};
}

// the what-if GPU's request record (fields left empty keep the base's figures), or null when it is off
function whatIf(s) {
  if (!s.wi_on) return null;
  const w = {base: s.wi_base, id: s.wi_id.trim()};
  for (const f of WHAT_IF) { const v = num(s["wi_" + f]); if (v !== null) w[f] = v; }
  return w;
}

// the base GPU's figures in the form's units
function fillWhatIf(id) {
  const g = GPUS[id];
  if (!g) return;
  const t = g.peak_tflops, r = (x) => String(+Number(x).toPrecision(4));
  const v = {hbm_tb_s: g.hbm_tb_s, memory_gb: g.memory_gib * 2 ** 30 / 1e9, bf16_tflops: t.bf16 || 0, fp8_tflops: t.fp8 || 0,
             fp4_tflops: t.fp4 || 0, scale_up_gb_s: g.scale_up_gb_s, scale_up_domain: g.scale_up_domain};
  for (const f of WHAT_IF) $("wi_" + f).value = r(v[f]);
}

function dtypes(s) {
  const o = {};
  if (s.weight_dtype) o.weight_dtype = s.weight_dtype;
  if (s.kv_dtype) o.kv_dtype = s.kv_dtype;
  return o;
}

// ---- the frontier
async function runFrontier(sel) {
  const s = readForm();
  showError("");
  const wi = whatIf(s), gpus = wi ? [...s.gpus, wi.id] : s.gpus;
  if (!gpus.length) { showError("gpus: choose at least one GPU"); return; }
  let req;
  try {
    req = {...modelRef(s), ...dtypes(s), gpus, num_gpus: num(s.num_gpus), engine: s.engine, isl: num(s.isl),
           osl: num(s.osl), min_tps_user: num(s.min_tps_user), max_ttft_ms: num(s.max_ttft_ms), ...(wi ? {what_if: wi} : {})};
  } catch (e) { showError(e.message); return; }
  saveHash(s, null);
  status("searching deployments", true);
  try {
    const r = await api("/api/pareto", req);
    last = {req, series: r.series};
    plot(r.series);
    frontierTable(r.series);
    $("point").replaceChildren();
    const n = r.series.reduce((a, x) => a + x.frontier.length, 0);
    status(`${n} frontier points from ${r.series.reduce((a, x) => a + x.evaluated, 0).toLocaleString()} deployments`);
    runLint(s, req).catch((e) => showError(e.message));
    if (sel) {
      const [si, pi] = sel.split(":").map(Number);
      if (r.series[si] && r.series[si].frontier[pi]) await selectPoint(si, pi);
    }
  } catch (e) {
    status("");
    showError(e.message);
  }
}

function describe(p) {
  const d = p.deployment;
  return [`${d.plan} x${d.replicas}, batch ${d.concurrency_per_instance}`,
          `W ${d.weight_dtype} / A ${d.activation_dtype} / KV ${d.kv_dtype}` + (d.spec ? `, ${d.spec} k=${d.draft_len}` : ""),
          `${fix(p.tok_s_per_user, 1)} tok/s/user, ${fix(p.output_tok_s_per_gpu, 0)} tok/s/GPU`,
          `TTFT ${fix(p.ttft_ms, 0)} ms, TPOT ${fix(p.tpot_ms, 2)} ms`,
          `accuracy ${(p.accuracy && p.accuracy.short) || "none"}`];
}

const COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"];

function band(s, i) {
  // the frontier's band: each point's 80% interval on tok/s/GPU, a filled path (a layout shape, not a trace:
  // a click's curve number stays its series, and the legend its series alone)
  const pts = s.frontier.filter((p) => p.intervals && p.intervals.output_tok_s_per_gpu);
  if (!pts.length) return [];
  const edge = (k) => (p) => `${p.tok_s_per_user},${p.intervals.output_tok_s_per_gpu[k]}`;
  const path = "M" + pts.map(edge("hi80")).join("L") + "L" + pts.slice().reverse().map(edge("lo80")).join("L") + "Z";
  return [{type: "path", path, xref: "x", yref: "y", fillcolor: COLOURS[i % COLOURS.length], opacity: 0.18, line: {width: 0},
           layer: "below", name: "band"}];
}

function plot(series) {
  const traces = series.map((s, i) => ({
    type: "scatter", mode: "lines+markers", name: esc(`${s.model} on ${s.num_gpus}x ${s.gpu}`),
    x: s.frontier.map((p) => p.tok_s_per_user), y: s.frontier.map((p) => p.output_tok_s_per_gpu),
    text: s.frontier.map((p) => describe(p).map(esc).join("<br>")), hoverinfo: "text+name",
    customdata: s.frontier.map((_, j) => `${i}:${j}`), marker: {size: 8, color: COLOURS[i % COLOURS.length]},
    line: {color: COLOURS[i % COLOURS.length]},
  }));
  const layout = {margin: {l: 70, r: 20, t: 20, b: 50}, hovermode: "closest", legend: {orientation: "h", y: 1.08},
                  shapes: [].concat(...series.map(band)),
                  xaxis: {title: {text: "tokens/s per user"}}, yaxis: {title: {text: "output tokens/s per GPU"}}};
  const gd = $("plot");
  Plotly.react(gd, traces, layout, {displaylogo: false, responsive: true});
  if (!gd._llmClick) {
    gd.on("plotly_click", (ev) => { const pt = ev.points[0]; selectPoint(pt.curveNumber, pt.pointIndex); });
    gd._llmClick = true;
  }
}

function intervalRows(b) {
  // a point's 80% and 95% intervals per metric, the runs they come from and why they were widened
  if (!b) return [];
  const names = [["ttft_ms", "TTFT", " ms", 1], ["tpot_ms", "TPOT", " ms", 2], ["tok_s_per_user", "tokens/s per user", "", 1],
                 ["output_tok_s_per_gpu", "output tokens/s per GPU", "", 0]];
  const rows = names.filter(([k]) => b[k]).map(([k, name, unit, d]) =>
    [`${name}: 80% / 95% interval`, `${fix(b[k].lo80, d)}-${fix(b[k].hi80, d)}${unit} / ${fix(b[k].lo95, d)}-${fix(b[k].hi95, d)}${unit}`]);
  const said = [...new Set(Object.values(b).flatMap((x) => [`from ${x.source}`, ...x.widened]))];
  return rows.concat(said.map((t) => [t.startsWith("from ") ? "interval basis" : "beyond the runs", t]));
}

function frontierTable(series) {
  const rows = [], index = [];
  series.forEach((s, i) => s.frontier.forEach((p, j) => {
    const d = p.deployment;
    const g = p.intervals && p.intervals.output_tok_s_per_gpu;
    rows.push([s.gpu, fix(p.tok_s_per_user, 1), fix(p.output_tok_s_per_gpu, 0), fix(p.ttft_ms, 0), fix(p.tpot_ms, 2), d.plan,
               d.replicas, d.concurrency_per_instance, `${d.weight_dtype}/${d.kv_dtype}`, d.spec ? `${d.spec} k=${d.draft_len}` : "-",
               (p.accuracy && p.accuracy.short) || "none", g ? `${fix(g.lo80, 0)}-${fix(g.hi80, 0)}` : "-"]);
    index.push([i, j]);
  }));
  const box = $("frontier");
  if (!rows.length) {
    box.replaceChildren(el("div", "no deployment on the frontier: none fits these GPUs, or none meets the SLOs", "hint"));
    return;
  }
  box.replaceChildren(el("div", "click a row for its operators and estimate", "hint"),
    table("frontier-table", [["GPU", "t"], ["tok/s/user", "n"], ["tok/s/GPU", "n"], ["TTFT ms", "n"], ["TPOT ms", "n"], ["plan", "t"],
                             ["x", "n"], ["batch", "n"], ["W/KV", "t"], ["spec", "t"], ["accuracy", "t"], ["tok/s/GPU 80%", "n"]],
          rows, (k) => selectPoint(...index[k])));
}

async function selectPoint(si, pi) {
  const s = last.series[si], p = s.frontier[pi];
  const ref = last.req.config ? {config: last.req.config} : {model: last.req.model};
  status("pricing the point", true);
  try {
    const e = await api("/api/estimate", {...ref, gpu: s.gpu, deployment: p.deployment, isl: last.req.isl, osl: last.req.osl,
                                          ...(last.req.what_if ? {what_if: last.req.what_if} : {})});
    saveHash(readForm(), `${si}:${pi}`);
    // the chosen point stands out, the others dim (plotly's own selection state)
    Plotly.restyle($("plot"), {selectedpoints: last.series.map((_, i) => (i === si ? [pi] : []))});
    const box = $("point");
    const m = e.memory || {};
    const summary = [["deployment", `${e.plan}, ${e.precision}, ${e.backend}, ${p.deployment.instance_gpus}x ${s.gpu} per instance`],
      ["concurrency", e.concurrency], ["TTFT", `${fix(e.ttft_ms, 1)} ms`], ["TPOT", `${fix(e.tpot_ms, 2)} ms`],
      ["tokens/s per user", fix(e.tok_s_per_user, 1)], ["output tokens/s per GPU", fix(e.output_tok_s_per_gpu, 1)],
      ["memory per GPU", `weights ${fix(m.weights_gb, 1)} GB, KV ${fix(m.kv_gb, 1)} GB, free ${fix(m.free_gb, 1)} GB`],
      ["decode bound by", e.decode_bound], ["prefill bound by", e.prefill_bound], ...intervalRows(e.intervals)];
    const total = e.point_breakdown.reduce((a, o) => a + o.time_ms, 0);
    box.replaceChildren(
      el("h2", `Point ${pi + 1} of ${s.model} on ${s.gpu}: estimate`),
      table("estimate-table", [["metric", "t"], ["value", "t"]], summary),
      el("h2", "Per-operator time of its decode step"),
      table("breakdown-table", [["operator", "t"], ["kind", "t"], ["ms", "n"], ["share", "n"]],
            e.point_breakdown.map((o) => [o.name, o.kind, fix(o.time_ms, 3), `${fix(100 * o.time_ms / total, 1)}%`])),
      ...exportBox(e.export));
    status("");
  } catch (err) {
    status("");
    showError(err.message);
  }
}

function exportBox(x) {
  // the engine's launch configuration, as `llm-codesign export-point` writes it, with a download link
  if (!x) return [];
  const head = el("h2", `Launch configuration (${x.engine})`);
  if (x.error) return [head, el("div", x.error, "hint")];
  const a = el("a", `download ${x.file_name}`);
  a.id = "export-download";
  a.download = x.file_name;
  a.href = URL.createObjectURL(new Blob([x.text], {type: "text/plain"}));
  const pre = el("pre", x.text);
  pre.id = "export-text";
  pre.style.cssText = "background:#f6f8fa;padding:6px;max-height:260px;overflow:auto;font-size:12px";
  return [head, a, pre];
}

async function runLint(s, req) {
  const r = await api("/api/lint", {...modelRef(s), ...dtypes(s), gpu: req.gpus[0], regime: s.regime,
                                    ...(req.what_if ? {what_if: req.what_if} : {})});
  const box = $("lint");
  box.className = "";
  if (!r.findings.length) { box.replaceChildren(el("div", `no findings for ${r.model} on ${r.gpu}`, "hint")); return; }
  box.replaceChildren(table("lint-table", [["rule", "t"], ["severity", "t"], ["where", "t"], ["cost %", "n"], ["finding", "t"], ["fix", "t"]],
    r.findings.map((f) => [`${f.rule} ${f.rule_name}`, f.severity, f.where, fix(f.cost_pct, 1), f.message, f.fix])));
}

// ---- design
// POST /api/design as NDJSON: progress lines, then the result (or one error line)
async function designStream(req, onProgress) {
  const r = await fetch("/api/design", {method: "POST", body: JSON.stringify(req),
                                        headers: {"Content-Type": "application/json", "Accept": "application/x-ndjson"}});
  if (!r.ok) {
    let data = null;
    try { data = await r.json(); } catch (e) { data = null; }
    throw new Error((data && data.error) || `/api/design: HTTP ${r.status}`);
  }
  const reader = r.body.getReader(), dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const {done, value} = await reader.read();
    if (value) buf += dec.decode(value, {stream: true});
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const item = JSON.parse(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      if (item.progress) onProgress(...item.progress);
      else if (item.error) throw new Error(item.error);
      else return item.result;
    }
    if (done) throw new Error("/api/design: the answer ended early");
  }
}

async function runDesign() {
  const s = readForm();
  showError("");
  const wi = whatIf(s);
  const req = {params: num(s.params), gpu: s.gpus[0] || (wi ? wi.id : "h200"), num_gpus: num(s.num_gpus), max_candidates: num(s.max_candidates),
               regime: s.regime, engine: s.engine, ...(s.weight_dtype ? {weight_dtype: s.weight_dtype} : {}), ...(wi ? {what_if: wi} : {}),
               ...(s.baseline ? {baseline: s.baseline} : {})};
  saveHash(s, null);
  status("searching shapes (seconds to a minute)", true);
  try {
    const r = await designStream(req, (done, total) => status(`searching shapes: ${done} of ${total} priced`, true));
    const rows = r.designs.map((d, i) => {
      const sh = d.shape;
      const shape = `h${sh.hidden} L${sh.layers} H${sh.heads}/${sh.kv_heads} ` +
        (sh.experts ? `E${sh.experts} k${sh.top_k} w${sh.expert_inter}` : `ffn${sh.inter}`);
      const q = d.quality, e = d.envelope;
      return [i + 1, shape, `${fix(d.total_params / 1e9, 1)}B`, fix(d.quality_proxy, 4),
              `${q.delta_pct >= 0 ? "+" : ""}${fix(q.delta_pct, 2)}±${fix(q.sigma_pct, 2)}${q.extrapolated.length ? " x" : ""}`,
              e.inside ? "in" : `out: ${e.outside[0].bound}`, fix(d.objective, 1),
              `${d.deployment.plan} B=${d.deployment.concurrency_per_instance}`];
    });
    $("design").replaceChildren(el("h2", `Designs (${r.candidates.toLocaleString()} shapes, ${r.evaluated.toLocaleString()} deployments; ${r.objective})`),
      el("div", `loss % against ${r.reference.name} (${r.reference.basis}), with its 1-sigma band; x: extrapolated`, "hint"),
      table("design-table", [["#", "n"], ["shape", "t"], ["params", "n"], ["quality proxy", "n"], ["loss %", "n"], ["envelope", "t"],
                             [r.objective, "n"], ["deployment", "t"]], rows));
    status("");
  } catch (e) {
    status("");
    showError(e.message);
  }
}

// ---- the validation report (GET /api/accuracy: data/calibration/accuracy.toml)
function errCell(c) {
  if (!c) return "-";
  const f = (x) => Number(x).toFixed(1), sg = c.signed >= 0 ? `+${f(c.signed)}` : f(c.signed);
  return `${f(c.median)}% / ${f(c.p90)}% (${sg})`;
}

async function showValidation() {
  const r = await api("/api/accuracy");
  const t = r.table, box = $("validation"), parts = [];
  box.className = "";
  for (const n of r.notes) parts.push(el("div", n, "hint"));
  const serving = [];
  for (const [engine, bands] of Object.entries(t.serving || {}))
    for (const [band, c] of Object.entries(bands)) serving.push([engine, band, errCell(c.ttft_ms), errCell(c.tpot_ms), c.ttft_ms.n]);
  parts.push(el("h2", `Serving (${(t.serving_gpus || []).join(", ")}): by engine and requests in flight`),
             table("validation-serving", [["engine", "t"], ["requests", "t"], ["TTFT", "n"], ["TPOT", "n"], ["runs", "n"]], serving));
  const models = Object.entries(t.models || {}).map(([m, c]) => [m, errCell(c.ttft_ms), errCell(c.tpot_ms), c.ttft_ms.n]);
  parts.push(el("h2", "Serving: by model"),
             table("validation-models", [["model", "t"], ["TTFT", "n"], ["TPOT", "n"], ["runs", "n"]], models));
  const offline = Object.entries(t.offline || {}).map(([f, c]) => [f, errCell(c.output_tok_s_per_gpu), c.output_tok_s_per_gpu.n]);
  parts.push(el("h2", "Offline throughput (held out): by GPU family"),
             table("validation-offline", [["GPU family", "t"], ["tok/s/GPU", "n"], ["runs", "n"]], offline));
  const sp = (t.speculative || {}).output_tok_s_per_user;
  if (sp) parts.push(el("h2", "Speculative decoding (held out)"),
                     table("validation-spec", [["metric", "t"], ["error", "n"], ["runs", "n"]], [["tok/s/user", errCell(sp), sp.n]]));
  box.replaceChildren(...parts);
}

async function init() {
  try {
    const [models, gpus] = await Promise.all([api("/api/models"), api("/api/gpus")]);
    for (const m of models) {
      if (m.error) continue;
      const o = el("option", m.name);
      o.value = m.name;
      $("model").appendChild(o);
    }
    for (const g of gpus) {
      const lab = el("label"), c = el("input");
      c.type = "checkbox";
      c.value = g.id;
      c.name = "gpu";
      c.checked = g.id === "h200";
      lab.append(c, " " + g.id);
      lab.title = g.name;
      $("gpus").appendChild(lab);
    }
    $("model").value = "llama-3.1-8b";
    for (const g of gpus) {
      GPUS[g.id] = g;
      const o = el("option", g.id);
      o.value = g.id;
      $("wi_base").appendChild(o);
    }
    $("wi_base").value = "h200";
    fillWhatIf("h200");
  } catch (e) { showError(e.message); return; }
  $("form").addEventListener("submit", (ev) => { ev.preventDefault(); runFrontier(null); });
  $("run-design").addEventListener("click", runDesign);
  $("wi_base").addEventListener("change", () => fillWhatIf($("wi_base").value));
  showValidation().catch((e) => { $("validation").textContent = `validation report: ${e.message}`; });
  const s = loadHash();
  if (s) { writeForm(s); await runFrontier(s.sel); }
  document.body.dataset.ready = "1";
}

// a fragment typed or pasted into this tab (saveHash's replaceState fires no hashchange)
window.addEventListener("hashchange", () => { const s = loadHash(); if (s) { writeForm(s); runFrontier(s.sel); } });
init();
