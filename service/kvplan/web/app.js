// kvplan planner page. Every figure comes from the API (same origin); this file only collects the
// inputs, keeps them in the URL, and draws the answers.
"use strict";

const GiB = 1024 ** 3;
// The seed's groups as the API requests them: the preset model on the seed's pooled GPU, its
// weights, and nothing else deducted (nonkv 0). B is one card of DeepSeek-V3 at TP 8.
const PRESETS = {
  A: { model: "llama-3-70b", f: "2", L: 80, Hkv: 8, D: 128, b: "bfloat16", T: 8192, gpu: "pool-160gib", mem: 160, util: 0.92, weights: 130, tp: "1", pp: "1", bs: "", q: 64, nonkv: "0" },
  B: { model: "deepseek-v3", f: "1", L: 61, Hkv: 1, D: 576, b: "bfloat16", T: 32768, gpu: "pool-141gib", mem: 141, util: 0.92, weights: 78.125, tp: "8", pp: "1", bs: "", q: 128, nonkv: "0" },
  C: { model: "llama-3-70b", f: "2", L: 80, Hkv: 8, D: 128, b: "bfloat16", T: 131072, gpu: "pool-160gib", mem: 160, util: 0.92, weights: 130, tp: "1", pp: "1", bs: "", q: 64, nonkv: "0" },
};
const FIELDS = ["model", "f", "L", "Hkv", "D", "b", "T", "gpu", "mem", "util", "weights", "tp", "pp", "bs", "engine", "nonkv"];
const $ = (id) => document.getElementById(id);
let queryHeads = 64;
let stage = 0;
let ledgerOpen = false;
let seq = 0;
let gpus = {};

function fmtInt(n) { return Number(n).toLocaleString("en-US"); }
// GiB to two decimals everywhere, as the text answers state them (core/units.py); MiB and KiB
// whole when they are, else to two decimals too.
function fmtGiB(bytes) { return (bytes / GiB).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 }) + " GiB"; }
function fmtUnit(v, unit) {
  return v.toLocaleString("en-US", Number.isInteger(v) ? {} : { minimumFractionDigits: 2, maximumFractionDigits: 2 }) + " " + unit;
}
function fmtBytes(n) {
  if (Math.abs(n) >= GiB) return fmtGiB(n);
  if (Math.abs(n) >= 1024 * 1024) return fmtUnit(n / 1024 / 1024, "MiB");
  if (Math.abs(n) >= 1024) return fmtUnit(n / 1024, "KiB");
  return fmtInt(n) + " B";
}
function setText(id, text) { $(id).textContent = text; }

// -- messages in a person's words -------------------------------------------------------------
// The API's messages are written for API users and name its fields. On the page each field
// becomes the control that sets it, by its label as the page shows it (quoted), or, where no
// control sets it, what to do in words. One table; the browser tests check every label is shown.
const FIELD_WORDS = {
  "overrides.model": { label: "model, if the log names none or a local path" },
  context_tokens: { label: "T, context tokens" },
  gpu_memory_bytes: { label: "GPU memory, GiB" },
  gpu_memory_utilization: { label: "GPU memory utilization" },
  weights_bytes: { label: "weights on this GPU, GiB" },
  weights_bytes_per_gpu: { label: "weights on this GPU, GiB" },
  kv_cache_dtype: { label: "b, bytes per element" },
  tensor_parallel_size: { label: "tensor parallel" },
  pipeline_parallel_size: { label: "pipeline parallel" },
  block_size: { label: "block size" },
  non_kv_bytes: { label: "memory besides weights" },
  target_concurrency: { label: "target concurrent requests" },
  cost_per_hour: { label: "cost per GPU-hour" },
  num_layers: { label: "L, KV layers" },
  num_kv_heads: { label: "KV heads per GPU" },
  head_dim: { label: "D, head dimension" },
  kv_lora_rank: { label: "D, head dimension" },
  concurrency_per_replica: { label: "requests per replica" },
  pooled_concurrency: { words: "the pooled figure" },
  cudagraph_bytes: { words: "the CUDA-graph memory" },
  max_model_len: { words: "vLLM's --max-model-len" },
  max_num_seqs: { words: "vLLM's --max-num-seqs" },
  max_num_batched_tokens: { words: "vLLM's --max-num-batched-tokens" },
  num_gpu_blocks_override: { words: "vLLM's --num-gpu-blocks-override" },
  kv_cache_memory_bytes: { words: "vLLM's --kv-cache-memory-bytes" },
  kv_offloading_bytes: { words: "the CPU KV offload size" },
  hybrid_kv_cache_manager: { words: "vLLM's hybrid KV-cache manager" },
  enforce_eager: { words: "vLLM's --enforce-eager" },
  kv_cache_dtype_skip_layers: { words: "the layers kept out of the quantized KV cache" },
  max_position_embeddings: { words: "the model's longest position" },
  weight_dtype: { words: "the weights' dtype" },
  gpus_per_node: { words: "the GPUs per node" },
  decode_context_parallel_size: { words: "vLLM's --decode-context-parallel-size" },
  data_parallel_attention: { words: "data-parallel attention" },
  num_blocks: { words: "the block count" },
  "overrides.hf_config": { words: "the model's config.json" },
  language_model_only: { words: "vLLM's --language-model-only" },
  mm_limit_zero: { words: "the modalities --limit-mm-per-prompt sets to 0" },
  data_parallel_size: { words: "vLLM's --data-parallel-size" },
  enable_expert_parallel: { words: "vLLM's --enable-expert-parallel" },
  cpu_offload_bytes: { words: "vLLM's --cpu-offload-gb" },
  mamba_cache_dtype: { words: "vLLM's --mamba-cache-dtype" },
  mamba_ssm_cache_dtype: { words: "vLLM's --mamba-ssm-cache-dtype" },
  enable_prefix_caching: { words: "vLLM's --enable-prefix-caching" },
  mamba_block_size: { words: "vLLM's --mamba-block-size" },
  cudagraph_capture_sizes: { words: "the CUDA-graph capture sizes" },
  max_cudagraph_capture_size: { words: "the largest CUDA-graph capture size" },
  enable_lora: { words: "vLLM's --enable-lora" },
  max_loras: { words: "vLLM's --max-loras" },
  max_lora_rank: { words: "vLLM's --max-lora-rank" },
  speculative_method: { words: "the speculative method" },
  speculative_model: { words: "the draft model" },
  num_speculative_tokens: { words: "the speculative tokens" },
};
const FIELD_RE = new RegExp("(?<![\\w.@/-])(" + Object.keys(FIELD_WORDS).sort((a, b) => b.length - a.length)
  .map((k) => k.replace(/\./g, "\\.")).join("|") + ")(?![\\w-])", "g");
function plain(text) {
  return text.replace(FIELD_RE, (k) => (FIELD_WORDS[k].label ? "“" + FIELD_WORDS[k].label + "”" : FIELD_WORDS[k].words));
}
// A warning as the page shows it: its message in those words; its code in a tooltip and a data
// attribute, never in the text. Info is a quiet note, a warning a notice (see style.css).
function noteEl(w, tag = "p") {
  const el = document.createElement(tag);
  const severity = w.severity || "warning";
  el.className = severity === "info" ? "note" : "notice";
  el.dataset.code = w.code;
  el.dataset.severity = severity;
  el.title = w.code;
  el.textContent = sentence(plain(w.message));
  return el;
}
// An error answer (4xx): its detail, less the field it opens with (the control is named instead).
function plainError(e) {
  let text = String(e.message || e);
  if (e.field && text.startsWith(e.field + ": ")) text = text.slice(e.field.length + 2);
  return sentence(plain(text));
}
function sentence(text) { return text.charAt(0).toUpperCase() + text.slice(1); }

// -- inputs and the URL -----------------------------------------------------------------------
function readState() {
  const s = {};
  for (const k of FIELDS) s[k] = $(k).value;
  s.stage = String(stage);
  if (ledgerOpen) s.ledger = "1";
  s.target = $("fleet-target").value;
  Object.assign(s, simState());
  Object.assign(s, trafficState());
  const fleet = fleetParam();
  if (fleet !== null) s.fleet = fleet;
  return s;
}
// Pickers whose value need not be one the page offers: a Hub id, or what a command sets (a KV
// dtype such as fp8_e5m2, TP 6, block size 256). The API judges the value.
const OPEN_PICKERS = ["model", "b", "tp", "pp", "bs"];
function writeState(s) {
  // A value from a shared URL or a command that no option offers gets its own option first.
  for (const k of OPEN_PICKERS) {
    const v = s[k] == null ? "" : String(s[k]);
    if (v && ![...$(k).options].some((o) => o.value === v)) $(k).append(new Option(v, v));
  }
  for (const k of FIELDS) if (s[k] !== undefined && s[k] !== null) $(k).value = String(s[k]);
  if (s.q) queryHeads = Number(s.q);
  if (s.target !== undefined) $("fleet-target").value = s.target;
  for (const [k, id] of Object.entries(SIM_PARAMS)) if (s[k] !== undefined) $(id).value = s[k];
  for (const [k, id] of Object.entries(TRAFFIC_PARAMS)) if (s[k] !== undefined) $(id).value = s[k];
  if (s.fleet !== undefined) applyFleetParam(s.fleet);
  $("Trange").value = String(Math.log2(Math.max(1, Number($("T").value))));
  $("Hkv").disabled = $("f").value === "1";
}
function saveUrl() {
  const s = readState();
  s.q = String(queryHeads);
  const params = new URLSearchParams(s);
  history.replaceState(null, "", "?" + params.toString());
}
function urlState() {
  const p = new URLSearchParams(location.search);
  if (![...p.keys()].length) return null;
  const s = {};
  for (const [k, v] of p) s[k] = v;
  return s;
}

// -- requests ---------------------------------------------------------------------------------
function geometry() {
  const L = Number($("L").value), D = Number($("D").value);
  if ($("f").value === "1") {
    const rope = D > 64 ? 64 : 1;
    return { name: "custom", num_layers: L, num_attention_heads: queryHeads, kv_lora_rank: D - rope,
             qk_rope_head_dim: rope, max_position_embeddings: Math.max(Number($("T").value), 131072) };
  }
  const hkv = Number($("Hkv").value) * Number($("tp").value);  // Hkv is per GPU: the model has Hkv × TP
  const q = Math.ceil(Math.max(queryHeads, hkv) / hkv) * hkv;  // query heads: a multiple of the KV heads
  return { name: "custom", num_layers: L, num_attention_heads: q, num_kv_heads: hkv, head_dim: D,
           max_position_embeddings: Math.max(Number($("T").value), 131072) };
}
function budgetBody() {
  const body = {
    model: $("model").value || { geometry: geometry() },
    // A GPU preset by its id (the API knows what vLLM sees of it); a size typed in, in bytes.
    gpu: $("gpu").value || undefined,
    gpu_memory_bytes: $("gpu").value ? undefined : Math.round(Number($("mem").value) * GiB),
    gpu_memory_utilization: Number($("util").value),
    // Empty weights: the API computes them from the model's parameter count.
    weights_bytes: $("weights").value === "" ? undefined : Math.round(Number($("weights").value) * GiB) * Number($("tp").value) * Number($("pp").value),
    context_tokens: Math.round(Number($("T").value)),
    kv_cache_dtype: $("b").value,
    tensor_parallel_size: Number($("tp").value),
    pipeline_parallel_size: Number($("pp").value),
    engine: $("engine").value || undefined,
    // "0": the seed's weights-only budget. Else vLLM's other memory is estimated — except for a
    // geometry typed in, which has no shape to estimate it from.
    non_kv_bytes: $("nonkv").value === "0" || !$("model").value ? 0 : undefined,
  };
  if ($("bs").value) body.block_size = Number($("bs").value);
  return body;
}
function flatten(obj, prefix = "", out = new URLSearchParams()) {
  for (const [k, v] of Object.entries(obj)) {
    if (v === undefined || v === null) continue;
    const key = prefix ? prefix + "." + k : k;
    if (typeof v === "object" && !Array.isArray(v)) flatten(v, key, out);
    else out.append(key, String(v));
  }
  return out;
}
async function api(path, options = {}) {
  const r = await fetch(path, { headers: { "Content-Type": "application/json", Accept: "application/json" }, ...options });
  const body = await r.json();
  if (!r.ok) throw Object.assign(new Error(body.detail || r.statusText), { field: body.field, status: r.status });
  return body;
}

// -- rendering --------------------------------------------------------------------------------
function render(b) {
  const c = b.concurrency;
  setText("out-per-token", fmtBytes(b.per_token.bytes_per_token));
  setText("out-per-token-x", fmtInt(b.per_token.bytes_per_token) + " B · " +
    b.per_token.mha_equivalent_ratio.toFixed(1) + "× smaller than the MHA form");
  setText("out-kv-request", fmtBytes(b.kv_bytes_per_request));
  setText("out-budget", fmtGiB(b.available_kv_bytes));
  setText("out-budget-x", "(" + fmtInt(b.available_kv_bytes) + " B)");
  setText("out-blocks", fmtInt(b.num_blocks));
  const unrounded = b.available_kv_bytes > 0 ? b.available_kv_bytes / b.bytes_per_block : 0;
  const blockSizes = [...new Set(b.groups.map((g) => g.block_size))].join(" / ");
  setText("out-blocks-x", "(unrounded " + unrounded.toFixed(2) + "; " + fmtInt(b.usable_blocks) + " usable × " + blockSizes + " tokens = " + fmtInt(b.token_slots) + " slots; " + fmtInt(b.blocks_per_request) + " per request)");
  renderGroups(b);
  setText("out-concurrency", fmtInt(c.guaranteed));
  setText("out-concurrency-x", "(unrounded " + c.guaranteed_unrounded.toFixed(4) + ")" +
    (c.schedulable < c.guaranteed ? " · vLLM runs " + fmtInt(c.schedulable) + " at once, its " + plain("max_num_seqs") : ""));
  setText("out-floor", fmtInt(c.budget_floor));
  setText("out-floor-x", "(unrounded " + c.budget_unrounded.toFixed(4) + ")");
  setText("out-maxctx", fmtInt(b.max_context_tokens) + " tokens");
  setText("out-maxctx-x", "limited by " + (LIMITED_BY[b.max_context_limited_by] || b.max_context_limited_by.replace(/_/g, " ")));
  setText("out-vllm", "Maximum concurrency for " + fmtInt(b.context_tokens) + " tokens per request: " + c.vllm_reported.toFixed(2) + "x · GPU KV cache size: " + fmtInt(b.kv_cache_size_tokens) + " tokens");
  $("weights").placeholder = (b.weights_bytes_per_gpu / GiB).toFixed(3) + " (from parameters)";
  setText("out-engine", b.engine);
  setText("out-registry", b.registry_version);
  renderGpu(b);
  renderBudgetWarnings(b);
  const m = b.memory;
  setText("out-nonkv", m && m.non_kv_source === "estimated"
    ? fmtGiB(b.non_kv_bytes + b.cudagraph_bytes) + " estimated (activation " + fmtGiB(m.activation_bytes) +
      ", non-torch " + fmtGiB(m.non_torch_bytes) + (m.cudagraph_subtracted ? ", CUDA graphs " + fmtGiB(b.cudagraph_bytes) : "") + ")"
    : fmtGiB(b.non_kv_bytes + b.cudagraph_bytes) + (m ? " (" + m.non_kv_source + ")" : ""));
  setText("out-band", b.band ? fmtInt(b.band.concurrency_low) + "–" + fmtInt(b.band.concurrency_high) + " requests across the calibration band" : "—");
  renderDominance(b);
}
const LIMITED_BY = { max_model_len: plain("max_model_len"), kv_cache: "the KV cache" };
// Where an info note goes: beside the figure it explains (the row's id); the others in the notes
// list under the figures. A warning is a notice above them; an error (a 4xx) is red, in #error.
const NOTE_HOME = {
  non_kv_estimated: "row-nonkv", nominal_gpu_memory: "row-gpu", block_size_raised: "row-blocks",
  num_gpu_blocks_overridden: "row-blocks", hybrid_padding: "groups-row", hybrid_manager_disabled: "groups-row",
  max_num_seqs_limits: "row-concurrency", offload_is_not_concurrency: "row-concurrency",
  mla_replicated_under_tp: "row-per-token", kv_heads_replicated: "row-per-token",
};
function renderBudgetWarnings(b) {
  for (const old of document.querySelectorAll("#readouts .figures .note")) old.remove();
  const warn = $("warning");
  const notes = $("notes");
  warn.replaceChildren();
  notes.replaceChildren();
  // The warning that empties the answer first.
  const ordered = [...b.warnings].sort((x, y) => (y.code === "budget_insufficient") - (x.code === "budget_insufficient"));
  for (const w of ordered) {
    if ((w.severity || "warning") !== "info") { warn.append(noteEl(w)); continue; }
    let home = $(NOTE_HOME[w.code] || "");
    if (home && home.hidden) home = $("row-blocks");  // a hybrid note when the groups row is not shown
    if (home) home.querySelector("dd").append(noteEl(w));
    else notes.append(noteEl(w, "li"));
  }
  warn.hidden = !warn.children.length;
  $("notes-box").hidden = !notes.children.length;
}
// The GPU's memory as the plan used it, and what else it is called: the driver's (or nominal)
// figure and what vLLM sees (torch's total), each by its name.
function gpuFigures(g) {
  const driver = g.nominal ? "nominal" : (/^(\S+-smi)\b/.exec(g.memory_source) || [])[1] || "";
  const parts = [g.name, (driver ? driver + " " : "") + fmtGiB(g.memory_bytes)];
  if (g.vllm_memory_bytes != null) parts.push("vLLM sees " + fmtGiB(g.vllm_memory_bytes));
  return { driver, text: parts.join(" · ") };
}
// The figure a budget on these inputs uses: what vLLM sees when vLLM's other memory is
// estimated (the memory model), else the driver's (the seed's weights-only budget).
function plannedMemory(g) {
  return $("nonkv").value !== "0" && g.vllm_memory_bytes != null ? g.vllm_memory_bytes : g.memory_bytes;
}
function showGpuFigures(used) {
  const g = gpus[$("gpu").value];
  const box = $("gpu-figures");
  box.replaceChildren();
  if (!g) { box.hidden = true; return; }
  const { driver, text } = gpuFigures(g);
  // Which of two figures the plan uses; a preset with one figure needs no saying.
  const which = g.vllm_memory_bytes == null ? "" : used === g.vllm_memory_bytes ? "vLLM's" : (driver || "the driver") + "'s";
  box.append(text + (which ? " · the plan uses " + which : ""));
  box.hidden = false;
}
function setMemInput(bytes) { $("mem").value = String(+(bytes / GiB).toFixed(4)); }
function renderGpu(b) {
  const g = gpus[b.gpu || ""];
  if (g) setMemInput(b.gpu_memory_bytes);  // the input holds the figure the plan used
  showGpuFigures(b.gpu_memory_bytes);
  setText("out-gpu", fmtGiB(b.gpu_memory_bytes));
  let what = "as typed";
  if (g) {
    const { driver } = gpuFigures(g);
    what = g.vllm_memory_bytes === b.gpu_memory_bytes ? "what vLLM sees of " + (driver ? driver + "'s " : "") + fmtGiB(g.memory_bytes)
      : (driver === "nominal" ? "the nominal figure" : driver ? driver + "'s figure" : "the preset's figure") + (g.vllm_memory_bytes != null ? "; vLLM sees " + fmtGiB(g.vllm_memory_bytes) : "");
  }
  setText("out-gpu-x", what + " · × " + b.gpu_memory_utilization + " = " + fmtGiB(b.gpu_memory_bytes * b.gpu_memory_utilization) + " vLLM may use");
}
// A hybrid model's KV-cache groups: which kind, how many layers, and the blocks each charges.
const CHARGES = { sliding_attention: "the window", sliding_window_mla: "the window", chunked_attention: "the chunk", mamba: "state, whatever the context",
  mamba_replicated: "state on every TP rank, whatever the context", circular_buffer: "one ring page, whatever the context" };
function renderGroups(b) {
  const row = $("groups-row");
  const list = $("out-groups");
  list.replaceChildren();
  row.hidden = b.groups.length < 2;
  b.groups.forEach((g) => {
    const item = document.createElement("li");
    item.textContent = g.groups + " × " + g.kind.replace(/_/g, " ") + " · " + fmtInt(g.layers) + " layers · " +
      fmtInt(g.blocks_per_request) + " block" + (g.blocks_per_request === 1 ? "" : "s") + " of " + g.block_size +
      " tokens each per request" + (CHARGES[g.kind] ? " (" + CHARGES[g.kind] + ")" : "");
    list.append(item);
  });
}
function renderDominance(b) {
  const f = $("f").value === "1" ? 1 : 2;
  const L = b.per_token.by_kind.reduce((s, k) => s + k.layers, 0);
  const hkv = $("f").value === "1" ? 1 : b.per_token.kv_heads_per_gpu;
  const D = Number($("D").value);
  const bytes = b.per_token.bytes_per_token / (f * L * hkv * D);
  const factors = [["f", f], ["L", L], ["Hkv", hkv], ["D", D], ["b", bytes]];
  const logs = factors.map(([, v]) => Math.max(0, Math.log2(v)));
  const total = logs.reduce((a, x) => a + x, 0) || 1;
  const top = logs.indexOf(Math.max(...logs));
  const box = $("dominance");
  box.replaceChildren();
  factors.forEach(([name, v], i) => {
    const row = document.createElement("div");
    row.className = "bar" + (i === top ? " top" : "");
    row.dataset.factor = name;
    const label = document.createElement("span");
    label.className = "label";
    label.textContent = name + " = " + (Number.isInteger(v) ? fmtInt(v) : v.toFixed(4));
    const fill = document.createElement("span");
    fill.className = "fill";
    fill.style.width = (100 * logs[i] / total).toFixed(1) + "%";
    const note = document.createElement("span");
    note.className = "note";
    note.textContent = (100 * logs[i] / total).toFixed(0) + "%" + (i === top ? " — dominates" : "");
    row.append(label, fill, note);
    box.append(row);
  });
}
// Round maxima to a 1-2-5 step so gridlines fall on readable values.
function niceStep(max, ticks) {
  const raw = Math.max(max, 1) / ticks;
  const mag = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw);
}
function shortTokens(v) { return v >= 1024 ? fmtInt(Math.round(v / 1024)) + "K" : fmtInt(v); }
function renderChart(points, T) {
  const svg = $("chart");
  svg.replaceChildren();
  const ns = "http://www.w3.org/2000/svg";
  const el = (tag, attrs, text) => {
    const e = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svg.append(e);
    return e;
  };
  renderChartTable(points);
  if (!points.length) return;
  const xs = points.map((p) => Math.log2(p.value));
  const x0 = Math.min(...xs), x1 = Math.max(...xs, x0 + 1);
  const ymax = Math.max(...points.map((p) => Math.max(p.vllm_reported, p.guaranteed)), 1);
  const step = niceStep(ymax, 4), y1 = Math.ceil(ymax / step) * step;
  // The margins follow the text's size (larger on a phone, style.css), so nothing overlaps.
  const fs = parseFloat(getComputedStyle(svg).getPropertyValue("--chart-font")) || 13;
  const tickChars = Math.max(...[0, y1].map((v) => fmtInt(v).length));
  const W = 640, left = Math.ceil(fs * 1.6 + 10 + tickChars * fs * 0.62), right = 34;
  const top = Math.ceil(fs * 2.6), bottom = Math.ceil(fs * 3.5 + 8), H = 190 + top + bottom;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const X = (v) => left + (W - left - right) * (Math.log2(v) - x0) / (x1 - x0);
  const Y = (v) => H - bottom - (H - top - bottom) * v / y1;
  for (let v = 0; v <= y1 + 1e-9; v += step) {  // gridlines from zero, each labelled
    el("line", { x1: left, y1: Y(v), x2: W - right, y2: Y(v), class: v === 0 ? "axis" : "grid" });
    el("text", { x: left - 8, y: Y(v) + fs * 0.35, class: "tick", "text-anchor": "end" }, fmtInt(v));
  }
  el("line", { x1: left, y1: top, x2: left, y2: H - bottom, class: "axis" });
  el("text", { x: (left + W - right) / 2, y: H - fs * 0.4, class: "axis-label", "text-anchor": "middle" }, "context tokens per request (log scale)");
  const yLabel = fs * 0.9, mid = (top + H - bottom) / 2;
  el("text", { x: yLabel, y: mid, class: "axis-label", "text-anchor": "middle", transform: `rotate(-90 ${yLabel} ${mid})` }, "concurrent requests");
  let lastLabel = -Infinity;  // x labels that would touch are skipped, never overlapped
  for (const p of points) {
    const x = X(p.value);
    el("line", { x1: x, y1: H - bottom, x2: x, y2: H - bottom + 4, class: "axis" });
    if (x - lastLabel >= fs * 3.6) { el("text", { x, y: H - bottom + fs * 1.7 + 4, class: "tick", "text-anchor": "middle" }, shortTokens(p.value)); lastLabel = x; }
  }
  el("polyline", { points: points.map((p) => X(p.value) + "," + Y(p.guaranteed)).join(" "), class: "guaranteed" });
  el("polyline", { points: points.map((p) => X(p.value) + "," + Y(p.vllm_reported)).join(" "), class: "reported" });
  for (const p of points) {
    el("circle", { cx: X(p.value), cy: Y(p.guaranteed), r: 3.5, class: "dot" }).append(
      Object.assign(document.createElementNS(ns, "title"), { textContent: fmtInt(p.value) + " tokens: " + fmtInt(p.guaranteed) + " guaranteed, vLLM logs " + p.vllm_reported.toFixed(2) + "x" }));
  }
  if (T && Math.log2(T) >= x0 && Math.log2(T) <= x1) {
    el("line", { x1: X(T), y1: top, x2: X(T), y2: H - bottom, class: "now" });
    // Inside the plot, beside the line: clear of the legend above it.
    const rightSide = X(T) < W - fs * 8;
    el("text", { x: X(T) + (rightSide ? 6 : -6), y: top + fs * 1.2, class: "now-label", "text-anchor": rightSide ? "start" : "end" }, "T = " + shortTokens(T));
  }
  // The legend above the plot, each entry placed after the one before it has been measured.
  let lx = left + 4;
  const ly = top - fs * 1.3;
  for (const [cls, name] of [["guaranteed", "guaranteed"], ["reported", "vLLM would log"]]) {
    el("line", { x1: lx, y1: ly - fs * 0.3, x2: lx + 24, y2: ly - fs * 0.3, class: cls });
    const text = el("text", { x: lx + 28, y: ly, class: "legend" }, name);
    lx += 28 + text.getComputedTextLength() + fs * 1.5;
  }
}
// -- the fleet --------------------------------------------------------------------------------
// A row of inputs per catalog GPU type: in the fleet or not, how many GPUs, what a GPU-hour costs.
// By default every real GPU type is in (the seed's abstract pools are not), one node of 8 each,
// every cost 1; the GPU chosen above is always in, first.
const FLEET_COUNT = "8", FLEET_COST = "1";
let fleetSeq = 0;
function buildFleetInputs(list) {
  const tbody = $("fleet-types-table").tBodies[0];
  for (const g of list) {
    const tr = tbody.insertRow();
    tr.dataset.gpu = g.id;
    tr.dataset.default = g.vendor === "abstract" ? "0" : "1";
    tr.dataset.use = tr.dataset.default;
    const use = Object.assign(document.createElement("input"), { type: "checkbox", id: "fleet-use-" + g.id });
    use.addEventListener("change", () => { tr.dataset.use = use.checked ? "1" : "0"; });
    const label = document.createElement("label");
    label.htmlFor = use.id;
    const name = document.createElement("span");
    name.textContent = g.id;
    label.append(use, name);
    tr.insertCell().append(label);
    const count = Object.assign(document.createElement("input"), { type: "number", id: "fleet-count-" + g.id, min: "1", max: "1000000", step: "1", value: FLEET_COUNT });
    count.setAttribute("aria-label", g.id + ": GPUs in the fleet");
    const cost = Object.assign(document.createElement("input"), { type: "number", id: "fleet-cost-" + g.id, min: "0", step: "0.01", value: FLEET_COST });
    cost.setAttribute("aria-label", g.id + ": cost per GPU-hour (empty: not in the mix)");
    tr.insertCell().append(count);
    tr.insertCell().append(cost);
  }
}
function fleetRows() { return [...$("fleet-types-table").tBodies[0].rows]; }
// The chosen GPU's row is ticked and fixed; the others show their own choice.
function syncFleetRows() {
  const chosen = $("gpu").value;
  let used = 0;
  for (const tr of fleetRows()) {
    const box = $("fleet-use-" + tr.dataset.gpu);
    box.disabled = tr.dataset.gpu === chosen;
    box.checked = box.disabled || tr.dataset.use === "1";
    box.title = box.disabled ? "the GPU chosen above is always in the fleet" : "";
    used += box.checked;
  }
  setText("fleet-types-count", used + " of " + fleetRows().length + " types, their counts and costs");
}
// The URL keeps the fleet only where it differs from the default: "id:count:cost" a type in it.
function fleetParam() {
  const rows = fleetRows();
  const same = rows.every((tr) => tr.dataset.use === tr.dataset.default &&
    $("fleet-count-" + tr.dataset.gpu).value === FLEET_COUNT && $("fleet-cost-" + tr.dataset.gpu).value === FLEET_COST);
  if (same) return null;
  return rows.filter((tr) => tr.dataset.use === "1" || tr.dataset.gpu === $("gpu").value)  // the chosen GPU is always in
    .map((tr) => [tr.dataset.gpu, $("fleet-count-" + tr.dataset.gpu).value, $("fleet-cost-" + tr.dataset.gpu).value].join(":")).join(",");
}
function applyFleetParam(text) {
  const given = new Map(text.split(",").filter(Boolean).map((e) => { const [id, count, cost] = e.split(":"); return [id, { count, cost }]; }));
  for (const tr of fleetRows()) {
    const g = given.get(tr.dataset.gpu);
    tr.dataset.use = g ? "1" : "0";
    $("fleet-count-" + tr.dataset.gpu).value = g && g.count !== undefined ? g.count : FLEET_COUNT;
    $("fleet-cost-" + tr.dataset.gpu).value = g && g.cost !== undefined ? g.cost : FLEET_COST;
  }
}
// POST /v1/fleet: the budget's model and memory knobs, T as the workload, the fleet and the target.
function fleetBody(body) {
  const chosen = body.gpu;
  const rows = fleetRows().filter((tr) => tr.dataset.gpu === chosen || tr.dataset.use === "1");
  rows.sort((a, b) => (b.dataset.gpu === chosen) - (a.dataset.gpu === chosen));
  const fleet = rows.map((tr) => {
    const cost = $("fleet-cost-" + tr.dataset.gpu).value;
    return { gpu: tr.dataset.gpu, count: Number($("fleet-count-" + tr.dataset.gpu).value), cost_per_hour: cost === "" ? undefined : Number(cost) };
  });
  const target = $("fleet-target").value;
  return {
    model: body.model, workload: { context_tokens: body.context_tokens }, fleet,
    target_concurrency: target === "" ? undefined : Number(target),
    gpu_memory_utilization: body.gpu_memory_utilization, kv_cache_dtype: body.kv_cache_dtype,
    weights_bytes: body.weights_bytes, non_kv_bytes: body.non_kv_bytes, block_size: body.block_size, engine: body.engine,
  };
}
async function updateFleet(body) {
  const mine = ++fleetSeq;
  syncFleetRows();
  const req = fleetBody(body);
  if (!req.fleet.length) { showFleet(null, "Tick a GPU type (or choose a GPU above) to plan a fleet."); return; }
  try {
    const f = await api("/v1/fleet", { method: "POST", body: JSON.stringify(req) });
    if (mine === fleetSeq) showFleet(f, "");
  } catch (e) {
    if (mine === fleetSeq) showFleet(null, "Fleet: " + plainError(e));
  }
}
function fmtCost(x) { return x == null ? "—" : x.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 }); }
function plural(n, noun) { return fmtInt(n) + " " + noun + (n === 1 ? "" : "s"); }
// Why the answer has no mix, from the answer itself: nothing fits, or what fits has no cost.
function noMixReason(f) {
  const fitting = (f.gpu_types || []).filter((t) => t.best);
  if (!fitting.length) return "No mix: no layout of any GPU type in the fleet holds a request of this context.";
  if (!fitting.some((t) => t.best.cost_per_hour != null)) return "No mix: the GPU types that fit have no cost; give one.";
  return "No mix: see the warnings.";
}
function showFleet(f, status) {
  setText("fleet-status", status);
  $("fleet-mix-box").hidden = !(f && f.cheapest_mix);
  $("fleet-table").hidden = !f;
  $("fleet-warnings").hidden = true;
  $("fleet-notes").hidden = true;
  $("fleet-pooled-note").hidden = true;
  if (!f) return;
  const m = f.cheapest_mix;
  if (m) renderMix(f, m);
  else setText("fleet-status", f.target_concurrency == null ? "Give a target to see the cheapest mix." : noMixReason(f));
  // Every warning the fleet answer carries, beside the mix it qualifies: a notice when the plan
  // may not hold, a quiet note when it says how a figure was obtained.
  const warn = $("fleet-warnings");
  const notes = $("fleet-notes");
  warn.replaceChildren();
  notes.replaceChildren();
  for (const old of document.querySelectorAll("#fleet-mix-box .note")) old.remove();
  for (const w of f.warnings || []) {  // empty lists are left out of an answer
    if ((w.severity || "warning") !== "info") warn.append(noteEl(w));
    else if (w.code === "cheapest_mix_search_limit" && m) $("fleet-mix-box").append(noteEl(w));
    else notes.append(noteEl(w, "li"));
  }
  warn.hidden = !warn.children.length;
  notes.hidden = !notes.children.length;
  renderFleetTable(f);
}
const MIX_COLUMNS = ["GPU type", "layout", "replicas", "GPUs", "concurrent requests", "cost per hour"];
function renderMix(f, m) {
  setText("mix-target", fmtInt(f.target_concurrency));
  const tbody = $("mix-table").tBodies[0];
  tbody.replaceChildren();
  for (const p of m.parts) {
    const tr = tbody.insertRow();
    tr.dataset.gpu = p.gpu;
    [p.gpu, p.layout, fmtInt(p.replicas), fmtInt(p.gpus), fmtInt(p.concurrency), fmtCost(p.cost_per_hour)].forEach((v, i) => {
      const td = tr.insertCell();
      td.textContent = v;
      td.dataset.label = MIX_COLUMNS[i];
    });
  }
  setText("mix-concurrency", fmtInt(m.concurrency));
  setText("mix-cost", fmtCost(m.cost_per_hour));
  setText("mix-how", (m.method === "exact" ? "Proven the cheapest" : "The cheapest the search found before its limit, not proven the cheapest") +
    (m.within_fleet ? ", from the GPUs the fleet has." : "; the fleet's GPUs cannot reach the target, so it counts the replicas each type would need.") +
    " The fleet holds " + fmtInt(f.total_concurrency) + " concurrent requests under each type's best layout.");
}
// One row group a GPU type: a line with its best layout and what the target takes of it, a button
// that shows or hides its layouts. Shown unless the reader hid them: the chosen GPU's and the mix's.
const FLEET_COLUMNS = ["layout", "fits", "replicas", "requests per replica", "in all", "cost per hour", "note"];
const fleetShown = new Map();
function renderFleetTable(f) {
  const table = $("fleet-table");
  for (const old of [...table.tBodies]) old.remove();
  const inMix = new Set(f.cheapest_mix ? f.cheapest_mix.parts.map((p) => p.gpu) : []);
  let pooledShown = false;
  for (const t of f.gpu_types) {
    const tbody = table.createTBody();
    tbody.dataset.gpu = t.gpu;
    tbody.id = "fleet-rows-" + t.gpu;
    const th = document.createElement("th");
    th.scope = "rowgroup";
    th.colSpan = FLEET_COLUMNS.length;
    const s = t.target;
    const open = fleetShown.has(t.gpu) ? fleetShown.get(t.gpu) : t.gpu === $("gpu").value || inMix.has(t.gpu);
    const toggle = document.createElement("button");
    toggle.type = "button";
    toggle.className = "fleet-type";
    toggle.setAttribute("aria-expanded", String(open));
    toggle.setAttribute("aria-controls", tbody.id);
    toggle.textContent = t.gpu + " × " + fmtInt(t.count) + " (" + t.gpus_per_node + " per node) · best: " +
      (t.best ? t.best.name + ", " + fmtInt(t.best.total_concurrency) + " concurrent" : "nothing fits") +
      (s ? " · for " + fmtInt(f.target_concurrency) + ": " + plural(s.replicas, "replica") + " of " + s.layout + ", " +
        plural(s.gpus, "GPU") + (s.available ? "" : " (more than the fleet has)") : "");
    toggle.addEventListener("click", () => {
      const now = toggle.getAttribute("aria-expanded") !== "true";
      fleetShown.set(t.gpu, now);
      toggle.setAttribute("aria-expanded", String(now));
      for (const r of tbody.rows) if (r.dataset.layout) r.hidden = !now;
    });
    th.append(toggle);
    tbody.insertRow().append(th);
    for (const l of t.layouts || []) {
      const tr = tbody.insertRow();
      tr.dataset.layout = l.name;
      tr.hidden = !open;
      let note = plain(l.reason || "");
      if (l.feasible && l.pooled_concurrency != null && l.pooled_concurrency !== l.concurrency_per_replica) {
        note = "pooled: " + fmtInt(l.pooled_concurrency) + " if the GPUs' memory were one budget — not a deployment, each GPU holds its own KV";
        tr.dataset.pooled = "1";
        pooledShown = true;
      } else if (l.feasible && l.per_rank) {
        note = l.per_rank.ranks + " attention ranks × " + fmtInt(l.per_rank.concurrency_per_rank) + " requests";
      }
      const cells = [l.name, l.feasible ? "yes" : "no", l.feasible ? fmtInt(l.replicas) : "—",
                     l.feasible ? fmtInt(l.concurrency_per_replica) : "—", l.feasible ? fmtInt(l.total_concurrency) : "—",
                     l.feasible ? fmtCost(l.cost_per_hour) : "—", note];
      cells.forEach((v, i) => {
        const td = tr.insertCell();
        td.textContent = v;
        td.dataset.label = FLEET_COLUMNS[i];
        if (v === "—" || v === "") td.className = "empty";
      });
      if (!l.feasible) tr.dataset.reason = l.reason_code;
      if (t.best && t.best.name === l.name) tr.dataset.best = "1";
    }
  }
  $("fleet-pooled-note").hidden = !pooledShown;
}
// The chart's values as a table: readable without a mouse, by keyboard and screen readers.
function renderChartTable(points) {
  const tbody = $("chart-table").tBodies[0];
  tbody.replaceChildren();
  for (const p of points) {
    const tr = tbody.insertRow();
    for (const v of [fmtInt(p.value), fmtInt(p.guaranteed), p.vllm_reported.toFixed(2) + "x"]) tr.insertCell().textContent = v;
  }
}
// A table of class "cards" is a card a row on a phone (style.css): each cell says its column.
function labelCells(table) {
  const names = [...table.tHead.rows[0].cells].map((th) => th.textContent);
  for (const row of table.tBodies[0].rows) [...row.cells].forEach((td, i) => { td.dataset.label = names[i]; });
}
function renderLedger(steps) {
  const table = document.createElement("table");
  const head = table.createTHead().insertRow();
  for (const h of ["step", "value", "unit", "formula", "inputs", "vLLM source"]) {
    const th = document.createElement("th");
    th.textContent = h;
    head.append(th);
  }
  const body = table.createTBody();
  for (const s of steps) {
    const row = body.insertRow();
    const inputs = Object.entries(s.inputs).filter(([, v]) => v !== null).map(([k, v]) => k + "=" + v).join(", ");
    for (const v of [s.name, typeof s.value === "number" ? fmtInt(s.value) : String(s.value), s.unit, s.formula, inputs, s.source]) {
      row.insertCell().textContent = v;
    }
  }
  table.className = "cards";
  labelCells(table);
  $("ledger").replaceChildren(table);
}
function renderBlockTable(snap) {
  const box = $("blocktable");
  box.replaceChildren();
  const names = ["A", "B"];
  const tables = new Map(snap.tables.map((t) => [t.request, t]));
  for (const id of [0, 1]) {
    const row = document.createElement("div");
    row.className = "req";
    const t = tables.get(id);
    const title = document.createElement("span");
    title.className = "req-name";
    title.textContent = "request " + names[id] + (t ? " · " + fmtInt(t.tokens) + " tokens" : snap.finished.includes(id) ? " · finished" : " · waiting");
    row.append(title);
    (t ? t.blocks : []).forEach((phys, logical) => {
      const cell = document.createElement("span");
      const ref = snap.ref_cnt[phys] || 0;
      cell.className = "blk" + (ref > 1 ? " shared" : "");
      cell.dataset.physical = phys;
      cell.dataset.ref = ref;
      cell.textContent = logical + "→" + phys + (ref > 1 ? " ×" + ref : "");
      cell.title = "logical " + logical + " → physical " + phys + ", ref_cnt " + ref;
      row.append(cell);
    });
    box.append(row);
  }
  const refs = document.createElement("p");
  refs.className = "refs";
  refs.id = "ref-cnt";
  refs.textContent = "ref_cnt of the shared prefix blocks 1, 2: " + (snap.ref_cnt[1] || 0) + ", " + (snap.ref_cnt[2] || 0);
  box.append(refs);
  const q = document.createElement("div");
  q.className = "queue";
  q.id = "free-queue";
  const label = document.createElement("span");
  label.className = "req-name";
  label.textContent = "free queue, head → tail";
  q.append(label);
  for (const b of snap.free_queue) {
    const cell = document.createElement("span");
    cell.className = "blk free" + (snap.cached.includes(b) ? " cached" : "");
    cell.textContent = String(b);
    cell.title = snap.cached.includes(b) ? "cached (hash kept): evicted in LRU order" : "no hash: reused first";
    q.append(cell);
  }
  box.append(q);
}

// -- wiring -----------------------------------------------------------------------------------
let timer = null;
function schedule() {
  clearTimeout(timer);
  timer = setTimeout(update, 120);
}
// A preset button is pressed exactly while the inputs are that preset's.
function markPreset() {
  const state = readState();
  for (const btn of document.querySelectorAll(".preset")) {
    const p = PRESETS[btn.dataset.preset];
    const same = Object.keys(p).every((k) => k === "q" || String(p[k]) === String(state[k] ?? ""));
    btn.setAttribute("aria-pressed", String(same));
  }
}
async function update() {
  markPreset();
  saveUrl();
  const mine = ++seq;
  const body = budgetBody();
  updateFleet(body);
  try {
    // One request a change: the ledger comes with the answer when it is open.
    const b = await api("/v1/budget" + (ledgerOpen ? "?explain=true" : ""), { method: "POST", body: JSON.stringify(body) });
    if (mine !== seq) return;
    $("error").hidden = true;
    render(b);
    if (ledgerOpen) renderLedger(b.ledger || []);
    followBlockSize(Math.min(...b.groups.map((g) => g.block_size))).catch(() => {});
    const q = flatten({ ...body, vary: "context_tokens", context_tokens: undefined });
    const sweep = await api("/v1/sweep?" + q.toString());
    if (mine === seq) renderChart(sweep.points, body.context_tokens);
  } catch (e) {
    if (mine !== seq) return;
    const err = $("error");
    err.hidden = false;
    err.textContent = plainError(e);
  }
}
// The seed's picture in the chosen model's block size: two requests sharing a two-block prefix,
// in a pool of 16 blocks; lengths are counted in blocks so the picture keeps its shape.
let storyBlockSize = 0;
let snaps = [];
async function loadBlockStory(bs) {
  const k = bs / 16;
  const body = {
    num_blocks: 16, block_size: bs, snapshot_steps: [4, 10, 20],
    workload: { requests: [
      { prompt_tokens: 120 * k, output_tokens: 9, prefix_id: "sys", prefix_tokens: 32 * k },
      { prompt_tokens: 72 * k, output_tokens: 17, prefix_id: "sys", prefix_tokens: 32 * k },
    ] },
  };
  const r = await api("/v1/simulate", { method: "POST", body: JSON.stringify(body) });
  storyBlockSize = bs;
  setText("story-block-size", String(bs));
  return r.snapshots;
}
async function followBlockSize(bs) {
  if (!bs || bs === storyBlockSize) return;
  snaps = await loadBlockStory(bs);
  renderBlockTable(snaps[stage]);
}
// A Hub id keeps its slash: the server reads org/name[@revision] from the path.
function modelPath(id) {
  return id.split("/").map(encodeURIComponent).join("/");
}
// Type a Hugging Face id, see it resolve: its commit and the weights its checkpoint loads; it
// then becomes the model every answer is asked for.
async function resolveHubId() {
  const id = $("hub-id").value.trim();
  const status = $("hub-status");
  if (!id) { status.textContent = ""; return; }
  status.textContent = "resolving " + id + " …";
  try {
    const m = await api("/v1/models/" + modelPath(id));
    const sha = m.hub ? m.hub.sha.slice(0, 12) : "preset";
    const weights = m.loaded_weights ? " · weights " + fmtGiB(m.loaded_weights.total_bytes) + " as stored" : "";
    status.textContent = id + " → " + (m.hub ? "commit " + sha : "the preset " + m.id) + " · " + m.attention + weights;
    let option = [...$("model").options].find((o) => o.value === id);
    if (!option) { option = new Option(id + (m.hub ? " @ " + sha : ""), id); $("model").append(option); }
    $("model").value = id;
    $("model").dispatchEvent(new Event("input"));
  } catch (e) {
    status.textContent = id + ": " + e.message;
  }
}
// A model chosen: its factors (KV heads per GPU at the chosen TP), its weights from its parameters.
async function loadModel(id) { modelFactors(await api("/v1/models/" + modelPath(id))); }
function modelFactors(m) {
  const g = m.geometry;
  const mla = g.kv_lora_rank != null;
  writeState({ f: mla ? "1" : "2", L: g.num_layers, Hkv: mla ? 1 : Math.max(1, g.num_kv_heads / Number($("tp").value)),
               D: mla ? g.kv_lora_rank + g.qk_rope_head_dim : g.head_dim, q: g.num_attention_heads, weights: "" });
}
// -- a vllm serve command -----------------------------------------------------------------------
// POST /v1/plan reads the command on the page's GPU and engine; its answer sets every control a
// setting of it stands for, and each flag is listed with what it does to the plan. The command
// itself stays out of the URL (it may carry an --api-key); the controls it set are in it.
// The control each planned field sets, by the field FIELD_WORDS names that control by.
const COMMAND_CONTROLS = {
  max_model_len: "context_tokens", tensor_parallel_size: "tensor_parallel_size", pipeline_parallel_size: "pipeline_parallel_size",
  block_size: "block_size", gpu_memory_utilization: "gpu_memory_utilization", kv_cache_dtype: "kv_cache_dtype",
  quantization: "weights_bytes_per_gpu",  // the weights the scheme loads, typed in: the page has no quantization control
};
// A field a command's out-of-bounds value is named by (`$.max_num_seqs`), as its flag: the user
// typed the flag. Most are the flag's name; these are not.
const FIELD_FLAGS = { kv_offloading_bytes: "--kv-offloading-size", hybrid_kv_cache_manager: "--disable-hybrid-kv-cache-manager" };
function commandError(e) {
  const text = String(e.message || e).replace(/`\$\.([a-z_]+)`/g, (_, k) => FIELD_FLAGS[k] || "--" + k.replace(/_/g, "-"));
  return plainError({ message: text, field: e.field });
}
function flagEffect(f) {
  if (f.effect === "memory") return "not modelled";
  if (f.effect === "none" || f.field === "served_model_name") return "no memory effect";
  if (f.field === "model" || f.field === "revision") return "planned → “Model”";
  if (COMMAND_CONTROLS[f.field]) return "planned → " + plain(COMMAND_CONTROLS[f.field]);
  return "planned, no control here";
}
// A flag's value as vLLM read it (32k is 32000, 1G 1073741824); JSON for a list or an object.
function flagValue(v) { return typeof v === "string" ? v : JSON.stringify(v); }
let commandSeq = 0;
async function planCommand() {
  const status = $("command-status");
  const err = $("command-error");
  err.hidden = true;
  $("command").removeAttribute("aria-invalid");
  const command = $("command").value;
  if (!command.trim()) { status.textContent = "Paste a command first."; return; }
  const mine = ++commandSeq;
  const page = budgetBody();
  const ask = { command, gpu: page.gpu, gpu_memory_bytes: page.gpu_memory_bytes, engine: page.engine };
  status.textContent = "reading the command …";
  try {
    let p, pageModel = false;
    try {
      p = await api("/v1/plan", { method: "POST", body: JSON.stringify(ask) });
    } catch (e) {
      // A command that names no model, or a local path: the model chosen on the page, if one is.
      if (e.field !== "model" || !/names no model|local path/.test(e.message)) throw e;
      if (!$("model").value) throw new Error("the command names no model kvplan can read (none, or a local path): choose one under “Model”, then plan the command again");
      p = await api("/v1/plan", { method: "POST", body: JSON.stringify({ ...ask, model: $("model").value }) });
      pageModel = true;
    }
    if (mine !== commandSeq) return;
    await applyPlan(p, pageModel);
    if (mine !== commandSeq) return;
    renderCommand(p, pageModel);
    update();
  } catch (e) {
    if (mine !== commandSeq) return;
    // A refusal (4xx) is an error, in red, beside the box; the table of an earlier command goes.
    status.textContent = "";
    $("command-flags").hidden = true;
    $("command-notes").hidden = true;
    err.textContent = commandError(e);
    err.hidden = false;
    $("command").setAttribute("aria-invalid", "true");
  }
}
// The controls the answer maps onto, each as the plan used it: the model, T (the command's
// max_model_len, else the model's), the layout, block size, KV dtype, utilization; weights from
// the model unless a quantization changed them, and vLLM's other memory estimated, as the plan did.
async function applyPlan(p, pageModel) {
  const s = p.command.settings;
  const tp = s.tensor_parallel_size || 1, pp = s.pipeline_parallel_size || 1;
  const id = pageModel ? $("model").value : p.model;
  const m = id ? await api("/v1/models/" + modelPath(id)) : null;  // first: if it fails, no control has changed
  writeState({ model: id || undefined, T: p.context_tokens, util: p.gpu_memory_utilization, tp, pp, bs: s.block_size || "",
               b: p.per_token.kv_cache_dtype, nonkv: "" });
  if (m) modelFactors(m);  // KV heads per GPU at the command's TP
  if (s.quantization) writeState({ weights: +(p.weights_bytes / (tp * pp) / GiB).toFixed(4) });
  const g = gpus[$("gpu").value];
  if (g) { setMemInput(plannedMemory(g)); showGpuFigures(plannedMemory(g)); }
}
const FLAG_COLUMNS = ["option", "value", "effect"];
function renderCommand(p, pageModel) {
  const c = p.command;
  const table = $("command-flags");
  const tbody = table.tBodies[0];
  tbody.replaceChildren();
  const unmodelled = [], uncontrolled = [];
  let planned = 0;
  for (const f of c.flags) {
    const tr = tbody.insertRow();
    tr.dataset.option = f.option;
    tr.dataset.effect = f.effect;
    const effect = flagEffect(f);
    [f.option, flagValue(f.value), effect].forEach((v, i) => {
      const td = tr.insertCell();
      td.textContent = v;
      td.dataset.label = FLAG_COLUMNS[i];
    });
    if (f.given !== f.option) tr.cells[0].title = "given as " + f.given;
    if (f.note) {
      const note = sentence(plain(f.note));
      tr.cells[2].title = note;
      if (f.effect === "memory") {  // what kvplan leaves out, on a line of its own under the flag
        const line = tbody.insertRow();
        line.className = "flag-note";
        line.dataset.effect = f.effect;
        const td = line.insertCell();
        td.colSpan = FLAG_COLUMNS.length;
        td.className = "note";
        td.textContent = note;
      }
    }
    if (f.effect === "memory") unmodelled.push(f.option);
    else if (effect.startsWith("planned")) planned += 1;
    if (effect === "planned, no control here") uncontrolled.push(f.option);
  }
  table.hidden = !c.flags.length;
  const model = pageModel ? "The model chosen below, " + p.model + "," : c.model && c.model !== p.model ? c.model + " → " + p.model : p.model;
  const where = p.gpu || fmtGiB(p.gpu_memory_bytes);
  const counts = c.flags.length ? plural(c.flags.length, "flag") + ": " + planned + " planned, " + unmodelled.length + " not modelled"
    : "no flags: vLLM's defaults";
  $("command-status").textContent = model + " on " + where + ": " + plural(p.concurrency.guaranteed, "concurrent request") +
    " of " + fmtInt(p.context_tokens) + " tokens, as the command plans them · " + counts + ".";
  const notes = $("command-notes");
  notes.replaceChildren();
  const lines = [];
  if (pageModel) lines.push("The command names no model kvplan can read (none, or a local path): it is planned for the model chosen below.");
  const them = (list) => (list.length === 1 ? "it" : "them");
  if (unmodelled.length) {
    lines.push("Not modelled: " + unmodelled.join(", ") + (unmodelled.length === 1 ? " changes" : " change") +
      " what vLLM allocates; the plan is the engine's without " + them(unmodelled) + ".");
  }
  if (uncontrolled.length) {
    lines.push("No control here for " + uncontrolled.join(", ") + ": the command's plan above counts " + them(uncontrolled) +
      ", the figures on the page do not.");
  }
  for (const text of lines) { const li = document.createElement("li"); li.textContent = text; notes.append(li); }
  notes.hidden = !lines.length;
}
// Incident review: the pasted log goes to /v1/reconcile; every figure is shown as text (never HTML).
async function reconcileLog() {
  const log = $("reconcile-log").value;
  const status = $("reconcile-status");
  const table = $("reconcile-table");
  const notes = $("reconcile-notes");
  const err = $("reconcile-error");
  const warn = $("reconcile-warnings");
  table.hidden = true;
  err.hidden = true;
  warn.hidden = true;
  notes.replaceChildren();
  warn.replaceChildren();
  $("reconcile-model").removeAttribute("aria-invalid");
  if (!log.trim()) { status.textContent = "Paste a log first."; return; }
  status.textContent = "reading " + log.split("\n").length + " lines …";
  const model = $("reconcile-model").value.trim();
  const body = { log, overrides: model ? { model } : undefined };
  try {
    const r = await api("/v1/reconcile", { method: "POST", body: JSON.stringify(body) });
    status.textContent = r.model + " · engine " + r.engine + " (" + r.engine_source + ") · " +
      (r.rows.length ? Math.round(r.reproduced_share * 100) + "% of " + r.rows.length + " figures reproduced"
                     : r.figures.length + " figures read");
    // The engine did not start: said first. No plan: what is missing, naming the control to fill.
    if (r.failure) {
      const p = document.createElement("p");
      p.className = "notice";
      p.textContent = "The engine did not start: " + plain(r.failure.detail) + " (line " + r.failure.line + "). " +
        sentence(plain(r.failure.kvplan_says)) + ".";
      warn.append(p);
    }
    if (r.not_planned) {
      const p = document.createElement("p");
      p.className = "notice";
      // The page has no config box: its name for the field is enough, without the API's gloss.
      p.textContent = "Not planned: " + plain(r.not_planned.replace(" (its config.json)", "")) + ".";
      warn.append(p);
      if (r.not_planned.includes("overrides.model")) $("reconcile-model").setAttribute("aria-invalid", "true");
    }
    const tbody = table.tBodies[0];
    tbody.replaceChildren();
    for (const row of r.rows) {
      const tr = tbody.insertRow();
      for (const v of [row.figure, String(row.vllm), row.kvplan == null ? "—" : String(row.kvplan), row.verdict,
                       row.step ? "ledger step " + row.step : "", String(row.vllm_line)]) {
        tr.insertCell().textContent = v;
      }
      tr.dataset.verdict = row.verdict;
    }
    labelCells(table);
    table.hidden = !r.rows.length;  // nothing compared: no empty table
    const lines = [plain(r.observed_non_kv_note)];
    if (r.observed_non_kv_bytes != null) lines.unshift("memory besides weights the engine saw: " + fmtGiB(r.observed_non_kv_bytes) + " (" + fmtInt(r.observed_non_kv_bytes) + " B)");
    for (const w of r.what_ifs) lines.push(w.question + ": " + w.answer);
    for (const text of lines) { const li = document.createElement("li"); li.textContent = text; notes.append(li); }
    // The plan's own warnings, by severity: notices above the notes, info among them.
    for (const w of (r.plan && r.plan.warnings) || []) {
      if ((w.severity || "warning") === "info") notes.append(noteEl(w, "li"));
      else warn.append(noteEl(w));
    }
    warn.hidden = !warn.children.length;
  } catch (e) {
    // A refusal (4xx) is an error, in red, naming the control to change rather than the field.
    status.textContent = "";
    err.textContent = plainError(e);
    err.hidden = false;
    if (e.field === "overrides.model") { $("reconcile-model").setAttribute("aria-invalid", "true"); }
  }
}
// -- a simulation in time ---------------------------------------------------------------------
// POST /v1/simulate on the pool the controls above describe: a seeded generator (a rate or a
// closed loop) as JSON, or a trace file as the body with the pool in the query. The answer's
// latency, throughput and goodput are drawn, the pool over time charted, and beside the latency
// the note saying which figures are exact and how far the step-time model was off where measured.
const SIM_LATENCY = [["queue_ms", "queued before the first step"], ["ttft_ms", "time to first token"],
  ["tpot_ms", "time per output token"], ["itl_ms", "inter-token latency"], ["e2e_ms", "end-to-end"]];
const SIM_SHORT = { queue_ms: "queue", ttft_ms: "TTFT", tpot_ms: "TPOT", itl_ms: "ITL", e2e_ms: "end-to-end" };
// A refusal names the control to change: the request's field by the label the page shows it by.
const SIM_CONTROLS = {
  model: "Model", gpu: "GPU", "workload.generator.arrival_rate_per_s": "requests per second",
  "workload.generator.concurrency": "requests in flight", "workload.generator.count": "requests in all",
  "workload.generator.prompt.value": "prompt tokens each", "workload.generator.output.value": "output tokens each",
  "workload.concurrency": "requests in flight at most", concurrency: "requests in flight at most",
  time_scale: "stretch arrival times ×", "goodput.ttft_ms": "time to first token at most, ms",
  "goodput.tpot_ms": "time per output token at most, ms", "goodput.e2e_ms": "end-to-end latency at most, ms",
  tokenize_us_per_token: "tokenizer, µs a prompt token",
};
const SIM_INPUTS = {
  "workload.generator.arrival_rate_per_s": "sim-rate", "workload.generator.concurrency": "sim-concurrency",
  "workload.generator.count": "sim-count", "workload.generator.prompt.value": "sim-prompt",
  "workload.generator.output.value": "sim-output", "workload.concurrency": "sim-trace-concurrency",
  concurrency: "sim-trace-concurrency", time_scale: "sim-time-scale", "goodput.ttft_ms": "sim-slo-ttft",
  "goodput.tpot_ms": "sim-slo-tpot", "goodput.e2e_ms": "sim-slo-e2e", tokenize_us_per_token: "sim-tokenize",
};
function simError(e) {
  const field = e.field || "";
  let text = String(e.message || e);
  if (field && text.startsWith(field + ": ")) text = text.slice(field.length + 2);
  const row = /^trace\[line (\d+)\](?:\.(.+))?$/.exec(field);  // a trace's row and column, in words
  if (row) return "The trace, line " + fmtInt(Number(row[1])) + (row[2] ? ", column " + row[2] : "") + ": " + plain(text);
  if (field.startsWith("trace")) return "The trace: " + plain(text);
  if (SIM_CONTROLS[field]) return "“" + SIM_CONTROLS[field] + "”: " + plain(text);
  return sentence(plain(text));
}
// The simulation's inputs in the URL, each only where it differs from the page's default (a trace
// is never in it: it may be large, or private).
const SIM_PARAMS = { sim: "sim-source", rate: "sim-rate", inflight: "sim-concurrency", n: "sim-count", prompt: "sim-prompt",
  output: "sim-output", ttft: "sim-slo-ttft", tpot: "sim-slo-tpot", e2e: "sim-slo-e2e", scale: "sim-time-scale",
  trace_inflight: "sim-trace-concurrency", tok: "sim-tokenize" };
function simState() {
  const s = {};
  for (const [k, id] of Object.entries(SIM_PARAMS)) {
    const el = $(id);
    if (el.value !== (el.tagName === "SELECT" ? el.options[0].value : el.defaultValue)) s[k] = el.value;
  }
  return s;
}
function simSource() { return $("sim-source").value; }
function showSimSource() {
  const src = simSource();
  $("sim-generator").hidden = src === "trace";
  $("sim-trace").hidden = src !== "trace";
  $("sim-rate-row").hidden = src !== "rate";
  $("sim-concurrency-row").hidden = src !== "concurrency";
}
// The pool: the budget's inputs less the context (a simulation's requests give their own lengths).
function simPool() {
  const pool = budgetBody();
  delete pool.context_tokens;
  return pool;
}
function simTargets() {
  const t = {};
  for (const [k, id] of [["ttft_ms", "sim-slo-ttft"], ["tpot_ms", "sim-slo-tpot"], ["e2e_ms", "sim-slo-e2e"]]) {
    if ($(id).value !== "") t[k] = Number($(id).value);
  }
  return Object.keys(t).length ? t : undefined;
}
// The server's tokenizer rate, when given (empty: the service's prior).
function simTokenize() {
  return $("sim-tokenize").value === "" ? undefined : Number($("sim-tokenize").value);
}
function simGenerator() {
  const g = { count: Number($("sim-count").value),
              prompt: { kind: "fixed", value: Number($("sim-prompt").value) },
              output: { kind: "fixed", value: Number($("sim-output").value) } };
  if (simSource() === "rate") g.arrival_rate_per_s = Number($("sim-rate").value);
  else g.concurrency = Number($("sim-concurrency").value);
  return g;
}
// A trace's media type from its first line: Azure's CSV opens with its header, the rest is JSONL.
function traceType(head) {
  return /^\s*(\ufeff)?TIMESTAMP/.test(head) ? "text/csv" : "application/x-ndjson";
}
async function simTraceRequest() {
  const file = $("sim-trace-file").files[0];
  const body = file || $("sim-trace-text").value;
  const head = file ? await file.slice(0, 256).text() : body;
  if (!file && !body.trim()) throw Object.assign(new Error("choose a trace file or paste one"), { field: "trace" });
  const q = flatten({ ...simPool(), goodput: simTargets() });
  if ($("sim-trace-concurrency").value !== "") q.append("concurrency", $("sim-trace-concurrency").value);
  if ($("sim-time-scale").value !== "" && Number($("sim-time-scale").value) !== 1) q.append("time_scale", $("sim-time-scale").value);
  if (simTokenize() !== undefined) q.append("tokenize_us_per_token", $("sim-tokenize").value);
  return { path: "/v1/simulate?" + q.toString(), options: { method: "POST", body, headers: { "Content-Type": traceType(head), Accept: "application/json" } },
           what: file ? file.name : "the pasted trace" };
}
let simSeq = 0;
async function runSimulation() {
  const mine = ++simSeq;
  const err = $("sim-error");
  err.hidden = true;
  $("sim-warnings").hidden = true;
  for (const el of document.querySelectorAll("#sim-form [aria-invalid]")) el.removeAttribute("aria-invalid");
  const status = $("sim-status");
  try {
    let req;
    if (simSource() === "trace") req = await simTraceRequest();
    else {
      const body = { ...simPool(), goodput: simTargets(), tokenize_us_per_token: simTokenize(), workload: { generator: simGenerator() } };
      req = { path: "/v1/simulate", options: { method: "POST", body: JSON.stringify(body) }, what: plural(body.workload.generator.count, "request") };
    }
    status.textContent = "simulating " + req.what + " …";
    const r = await api(req.path, req.options);
    if (mine !== simSeq) return;
    renderSimulation(r);
  } catch (e) {
    if (mine !== simSeq) return;
    // A refusal (4xx) is an error, in red, naming the control (or the trace's line) to change.
    status.textContent = "";
    $("sim-result").hidden = true;
    err.textContent = simError(e);
    err.dataset.field = e.field || "";
    err.hidden = false;
    const input = $(SIM_INPUTS[e.field] || (String(e.field || "").startsWith("trace") ? "sim-trace-text" : ""));
    if (input) input.setAttribute("aria-invalid", "true");
  }
}
// Milliseconds as people read them: ms below ten seconds, seconds above.
function fmtMs(ms) {
  if (ms >= 10000) return (ms / 1000).toLocaleString("en-US", { maximumFractionDigits: 1, minimumFractionDigits: 1 }) + " s";
  return ms.toLocaleString("en-US", { maximumFractionDigits: ms < 10 ? 2 : 1, minimumFractionDigits: ms < 10 ? 2 : 1 }) + " ms";
}
function fmtRate(x, digits = 2) { return x.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }); }
function renderSimulation(r) {
  const timed = !!r.latency;
  $("sim-result").hidden = false;
  const who = (r.model ? r.model + " on " + (r.gpu || "the pool") + " · " : "") + r.pool;
  $("sim-status").textContent = who + " · " + fmtInt(r.completed) + " of " + plural(r.requests, "request") + " completed in " +
    plural(r.steps, "step") + (timed ? ", over " + fmtRate(r.throughput.duration_s, 1) + " s modelled" : "") + ".";
  const warn = $("sim-warnings");
  warn.replaceChildren();
  for (const w of r.warnings || []) warn.append(noteEl(w));
  warn.hidden = !warn.children.length;
  for (const el of document.querySelectorAll("#sim-result .sim-latency, #sim-latency-chart")) el.hidden = !timed;
  if (timed) {
    renderSimLatency(r.latency);
    renderLatencyChart(r.latency);
    const n = r.timing;
    setText("sim-validation", "The model's error: " + n.validation + ".");
    setText("sim-exact", sentence(n.exact) + ".");
    setText("sim-modelled", sentence(n.modelled.replace("time_s", "the time axis")) + ".");  // the page's words, not a field's
    $("sim-exact").title = n.step_time_model;
  }
  const t = r.throughput;
  setText("sim-out-rps", timed ? fmtRate(t.requests_per_s) : "—");
  setText("sim-out-rps-x", timed ? fmtInt(Math.round(t.total_tokens_per_s)) + " tokens/s in all · modelled" : "needs arrivals in seconds");
  setText("sim-out-otps", timed ? fmtInt(Math.round(t.output_tokens_per_s)) : "—");
  setText("sim-out-otps-x", timed ? fmtInt(t.output_tokens) + " output tokens over " + fmtRate(t.duration_s, 1) + " s · modelled" : "");
  $("sim-row-goodput").hidden = !r.goodput;
  if (r.goodput) {
    const g = r.goodput;
    const targets = Object.entries(g.targets).filter(([, v]) => v != null)
      .map(([k, v]) => ({ ttft_ms: "TTFT", tpot_ms: "TPOT", e2e_ms: "end-to-end" }[k] + " ≤ " + fmtMs(v)));
    setText("sim-out-goodput", fmtRate(g.requests_per_s) + " requests/s");
    setText("sim-out-goodput-x", fmtInt(g.requests_met) + " of " + fmtInt(r.requests) + " (" + (100 * g.share_met).toFixed(1) + "%) met " + targets.join(", ") + " · modelled");
  }
  setText("sim-out-completed", fmtInt(r.completed) + " of " + fmtInt(r.requests));
  setText("sim-out-completed-x", plural(r.steps, "step") + " · at most " + fmtInt(timed ? r.peak_in_flight : r.peak_running) + (timed ? " in flight" : " running") + " · exact");
  setText("sim-out-preemptions", fmtInt(r.preemptions));
  setText("sim-out-preemptions-x", fmtInt(r.recomputed_tokens) + " tokens thrown away and recomputed · prefix cache " + (100 * r.cache_hit_rate_tokens).toFixed(1) + "% of prompt tokens · exact");
  setText("sim-out-blocks", "peak " + fmtInt(r.peak_blocks_in_use));
  setText("sim-out-blocks-x", "mean " + fmtRate(r.mean_blocks_in_use, 1) + " of " + fmtInt(r.usable_blocks) + " usable, " + r.block_size + " tokens each · exact");
  renderTimeChart(r);
}
function renderSimLatency(lat) {
  const tbody = $("sim-latency-table").tBodies[0];
  tbody.replaceChildren();
  for (const [key, name] of SIM_LATENCY) {
    const d = lat[key];
    const tr = tbody.insertRow();
    tr.dataset.metric = key;
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = name;
    tr.append(th);
    for (const v of [d.mean, d.p50, d.p90, d.p99]) tr.insertCell().textContent = fmtMs(v);
  }
}
// An SVG drawing helper: elements appended to `svg`, attributes and text set.
function svgDraw(svg) {
  const ns = "http://www.w3.org/2000/svg";
  return (tag, attrs, text) => {
    const e = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svg.append(e);
    return e;
  };
}
function svgTitle(el, text) {
  el.append(Object.assign(document.createElementNS("http://www.w3.org/2000/svg", "title"), { textContent: text }));
}
// Each latency a row on a log scale of milliseconds: a box from p50 to p90, a whisker to p99, the
// mean a dot. A zero (no queue) sits at the scale's left end.
function renderLatencyChart(lat) {
  const svg = $("sim-latency-chart");
  svg.replaceChildren();
  const el = svgDraw(svg);
  const fs = parseFloat(getComputedStyle(svg).getPropertyValue("--chart-font")) || 13;
  const values = SIM_LATENCY.flatMap(([k]) => ["mean", "p50", "p90", "p99"].map((p) => lat[k][p])).filter((v) => v > 0);
  const lo = 10 ** Math.floor(Math.log10(Math.min(...values, 1)));
  const hi = 10 ** Math.ceil(Math.log10(Math.max(...values, lo * 10)));
  // Short names on the chart (the table gives the long ones), measured for the left margin.
  const names = SIM_LATENCY.map(([k]) => SIM_SHORT[k]);
  const probe = el("text", { class: "tick" }, names.reduce((a, b) => (b.length > a.length ? b : a)));
  const labelW = Math.ceil(probe.getComputedTextLength()) + 14;
  probe.remove();
  const W = 640, left = labelW, right = 24, top = Math.ceil(fs * 2.4), rowH = Math.max(26, fs * 2.1);
  const bottom = Math.ceil(fs * 3.4 + 6), H = top + rowH * names.length + bottom;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const X = (ms) => left + (W - left - right) * (Math.log10(Math.max(ms, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo));
  const decades = Math.round(Math.log10(hi / lo));
  let lastLabel = -Infinity;
  for (let i = 0; i <= decades; i++) {
    const v = lo * 10 ** i, x = X(v);
    el("line", { x1: x, y1: top, x2: x, y2: H - bottom, class: i === 0 ? "axis" : "grid" });
    if (x - lastLabel >= fs * 4) { el("text", { x, y: H - bottom + fs * 1.3 + 2, class: "tick", "text-anchor": "middle" }, v >= 1000 ? fmtInt(v / 1000) + " s" : (v < 1 ? String(+v.toPrecision(1)) : fmtInt(v)) + " ms"); lastLabel = x; }
  }
  el("text", { x: (left + W - right) / 2, y: H - fs * 0.4, class: "axis-label", "text-anchor": "middle" }, "per request, modelled (log scale)");
  SIM_LATENCY.forEach(([key, long], i) => {
    const d = lat[key], y = top + rowH * i + rowH / 2, h = rowH * 0.5, name = SIM_SHORT[key];
    el("text", { x: left - 8, y: y + fs * 0.35, class: "tick", "text-anchor": "end" }, name);
    const g = el("g", { class: "whisker", "data-metric": key });
    const draw = svgDraw(g);
    draw("line", { x1: X(d.p50), y1: y, x2: X(d.p99), y2: y, class: "whisker-line" });
    draw("line", { x1: X(d.p99), y1: y - h / 2, x2: X(d.p99), y2: y + h / 2, class: "whisker-line" });
    draw("rect", { x: X(d.p50), y: y - h / 2, width: Math.max(2, X(d.p90) - X(d.p50)), height: h, class: "box" });
    draw("circle", { cx: X(d.mean), cy: y, r: 4, class: "mean" });
    svgTitle(g, long + ": mean " + fmtMs(d.mean) + ", p50 " + fmtMs(d.p50) + ", p90 " + fmtMs(d.p90) + ", p99 " + fmtMs(d.p99));
  });
  // The legend above the plot.
  let lx = left;
  const ly = top - fs * 0.9;
  const items = [["box", "p50 to p90"], ["whisker-line", "to p99"], ["mean", "mean"]];
  for (const [cls, text] of items) {
    if (cls === "box") el("rect", { x: lx, y: ly - fs * 0.75, width: 18, height: fs * 0.8, class: cls });
    else if (cls === "mean") el("circle", { cx: lx + 9, cy: ly - fs * 0.35, r: 4, class: cls });
    else el("line", { x1: lx, y1: ly - fs * 0.35, x2: lx + 18, y2: ly - fs * 0.35, class: cls });
    const t = el("text", { x: lx + 24, y: ly, class: "legend" }, text);
    lx += 24 + t.getComputedTextLength() + fs * 1.5;
  }
}
// Two panels on one time axis: KV blocks in use against the usable blocks; running and waiting
// requests. An untimed run (no time_s) is drawn against steps.
function renderTimeChart(r) {
  const svg = $("sim-time-chart");
  svg.replaceChildren();
  const el = svgDraw(svg);
  const pts = r.series || [];
  const timed = pts.length > 0 && pts[0].time_s !== undefined;
  const at = (p) => (timed ? p.time_s : p.step);
  renderSeriesTable(pts, timed);
  if (!pts.length) return;
  const fs = parseFloat(getComputedStyle(svg).getPropertyValue("--chart-font")) || 13;
  const x1 = Math.max(at(pts[pts.length - 1]), 1e-9);
  const xstep = niceStep(x1, 5), xmax = Math.ceil(x1 / xstep) * xstep;
  const bmax = Math.max(r.usable_blocks, 1);
  const rmax = Math.max(...pts.map((p) => Math.max(p.running, p.waiting)), 1);
  const rstep = niceStep(rmax, 3), rtop = Math.ceil(rmax / rstep) * rstep;
  const bstep = niceStep(bmax, 3), btop = Math.ceil(bmax / bstep) * bstep;
  const tickChars = Math.max(fmtInt(btop).length, fmtInt(rtop).length);
  const W = 640, left = Math.ceil(fs * 1.6 + 10 + tickChars * fs * 0.62), right = 24;
  const top = Math.ceil(fs * 2.4), panel = 120, gap = Math.ceil(fs * 3), bottom = Math.ceil(fs * 3.4 + 6);
  const H = top + panel * 2 + gap + bottom;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const X = (v) => left + (W - left - right) * v / xmax;
  const panels = [
    { y0: top, max: btop, step: bstep, label: "KV blocks", lines: [["blocks", "blocks_used", "KV blocks in use"]] },
    { y0: top + panel + gap, max: rtop, step: rstep, label: "requests", lines: [["running", "running", "running"], ["waiting", "waiting", "waiting"]] },
  ];
  for (const pn of panels) {
    const Y = (v) => pn.y0 + panel - panel * v / pn.max;
    for (let v = 0; v <= pn.max + 1e-9; v += pn.step) {
      el("line", { x1: left, y1: Y(v), x2: W - right, y2: Y(v), class: v === 0 ? "axis" : "grid" });
      el("text", { x: left - 8, y: Y(v) + fs * 0.35, class: "tick", "text-anchor": "end" }, fmtInt(v));
    }
    el("line", { x1: left, y1: pn.y0, x2: left, y2: pn.y0 + panel, class: "axis" });
    const mid = pn.y0 + panel / 2, yl = fs * 0.9;
    el("text", { x: yl, y: mid, class: "axis-label", "text-anchor": "middle", transform: `rotate(-90 ${yl} ${mid})` }, pn.label);
    if (pn.label === "KV blocks") {
      el("line", { x1: left, y1: Y(r.usable_blocks), x2: W - right, y2: Y(r.usable_blocks), class: "capacity" });
    }
    for (const [cls, key] of pn.lines) {
      el("polyline", { points: pts.map((p) => X(at(p)).toFixed(1) + "," + Y(p[key]).toFixed(1)).join(" "), class: "series " + cls, "data-series": key });
    }
    // Legend above the panel, entries placed after the one before is measured.
    let lx = left + 4;
    const ly = pn.y0 - fs * 0.6;
    const entries = pn.lines.map(([cls, , name]) => [cls, name]);
    if (pn.label === "KV blocks") entries.push(["capacity", fmtInt(r.usable_blocks) + " usable (exact)"]);
    for (const [cls, name] of entries) {
      el("line", { x1: lx, y1: ly - fs * 0.3, x2: lx + 24, y2: ly - fs * 0.3, class: cls === "capacity" ? "capacity" : "series " + cls });
      const t = el("text", { x: lx + 28, y: ly, class: "legend" }, name);
      lx += 28 + t.getComputedTextLength() + fs * 1.5;
    }
  }
  const base = top + panel * 2 + gap;
  let lastLabel = -Infinity;
  for (let v = 0; v <= xmax + 1e-9; v += xstep) {
    const x = X(v);
    el("line", { x1: x, y1: base, x2: x, y2: base + 4, class: "axis" });
    if (x - lastLabel >= fs * 3.6) { el("text", { x, y: base + fs * 1.3 + 4, class: "tick", "text-anchor": "middle" }, fmtInt(+v.toPrecision(6))); lastLabel = x; }
  }
  el("text", { x: (left + W - right) / 2, y: H - fs * 0.4, class: "axis-label", "text-anchor": "middle" },
     timed ? "seconds from the start of the run (modelled)" : "engine steps");
}
function renderSeriesTable(pts, timed) {
  const tbody = $("sim-series-table").tBodies[0];
  tbody.replaceChildren();
  for (const p of pts) {
    const tr = tbody.insertRow();
    for (const v of [timed ? p.time_s.toFixed(3) : "—", fmtInt(p.step), fmtInt(p.blocks_used), fmtInt(p.running), fmtInt(p.waiting)]) tr.insertCell().textContent = v;
  }
}
// -- traffic: the rate a replica sustains, and the replicas a rate needs ------------------------
// POST /v1/capacity on the pool the controls above describe, for a workload's shape (its length
// distributions and shared system prompt, no rate) and latency targets: the highest rate that
// meets every target, what binds first, and each simulated rate's latency, charted against the
// targets. Or POST /v1/fleet with a target rate: replicas per GPU type × layout, and the cheapest mix.
const TRAFFIC_TARGETS = [["ttft_p90_ms", "traffic-ttft-p90"], ["tpot_p99_ms", "traffic-tpot-p99"],
  ["itl_p99_ms", "traffic-itl-p99"], ["e2e_p99_ms", "traffic-e2e-p99"]];
const SLO_METRICS = { queue: "queue time", ttft: "TTFT", tpot: "TPOT", itl: "ITL", e2e: "end-to-end" };
const BINDING_WORDS = { kv_capacity: "the KV-cache pool", max_num_seqs: "running slots (max_num_seqs)",
  max_num_batched_tokens: "the step's token budget", compute: "compute" };
// A refusal names the control: the request's field (less "workload." or "traffic.") by its label.
const TRAFFIC_CONTROLS = {
  count: ["traffic-count", "requests simulated at each rate"],
  "prompt.mean": ["traffic-prompt", "prompt tokens, mean"], "prompt.value": ["traffic-prompt", "prompt tokens, mean"],
  "prompt.sigma": ["traffic-prompt-sigma", "prompt spread, σ of the log"],
  "output.mean": ["traffic-output", "output tokens, mean"], "output.value": ["traffic-output", "output tokens, mean"],
  "output.sigma": ["traffic-output-sigma", "output spread, σ of the log"],
  system_prompt_share: ["traffic-share", "share of requests with the shared system prompt"],
  system_prompt_tokens: ["traffic-system", "shared system prompt, tokens"],
  target_rate: ["traffic-rate", "target requests per second"],
  "slo.ttft_p90_ms": ["traffic-ttft-p90", "time to first token, p90 at most, ms"],
  "slo.tpot_p99_ms": ["traffic-tpot-p99", "time per output token, p99 at most, ms"],
  "slo.itl_p99_ms": ["traffic-itl-p99", "inter-token latency, p99 at most, ms"],
  "slo.e2e_p99_ms": ["traffic-e2e-p99", "end-to-end latency, p99 at most, ms"],
  slo: ["traffic-ttft-p90", "Latency targets"],
  model: ["", "Model"], gpu: ["", "GPU"],
};
function trafficControl(field) {
  return TRAFFIC_CONTROLS[String(field || "").replace(/^(workload|traffic)\./, "")];
}
// A target's field in words: ttft_p90_ms is "TTFT p90".
function sloName(field) {
  const m = /^(queue|ttft|tpot|itl|e2e)_(mean|p50|p90|p99)_ms$/.exec(field);
  return m ? SLO_METRICS[m[1]] + " " + m[2] : field;
}
function sloWords(text) {
  return text.replace(/\b(?:queue|ttft|tpot|itl|e2e)_(?:mean|p50|p90|p99)_ms\b/g, sloName)
    .replace(/\bmax_rate_per_s\b/g, "the sustainable rate");
}
function trafficError(e) {
  let text = String(e.message || e);
  if (e.field && text.startsWith(e.field + ": ")) text = text.slice(e.field.length + 2);
  const c = trafficControl(e.field);
  text = sloWords(plain(text));
  return c ? "“" + c[1] + "”: " + text : sentence(text);
}
// The traffic inputs in the URL, each only where it differs from the page's default.
const TRAFFIC_PARAMS = { tmode: "traffic-mode", tn: "traffic-count", tpk: "traffic-prompt-kind", tpm: "traffic-prompt",
  tps: "traffic-prompt-sigma", tok: "traffic-output-kind", tom: "traffic-output", tos: "traffic-output-sigma",
  tshare: "traffic-share", tsys: "traffic-system", tttft: "traffic-ttft-p90", ttpot: "traffic-tpot-p99",
  titl: "traffic-itl-p99", te2e: "traffic-e2e-p99", trate: "traffic-rate", tgpus: "traffic-gpus" };
function trafficState() {
  const s = {};
  for (const [k, id] of Object.entries(TRAFFIC_PARAMS)) {
    const el = $(id);
    if (el.value !== (el.tagName === "SELECT" ? el.options[0].value : el.defaultValue)) s[k] = el.value;
  }
  return s;
}
function showTrafficInputs() {
  $("traffic-fleet-inputs").hidden = $("traffic-mode").value !== "fleet";
  $("traffic-prompt-sigma-row").hidden = $("traffic-prompt-kind").value !== "lognormal";
  $("traffic-output-sigma-row").hidden = $("traffic-output-kind").value !== "lognormal";
  $("traffic-go").textContent = $("traffic-mode").value === "fleet" ? "Size the fleet" : "Find the rate";
}
function trafficLength(which) {
  const v = Number($("traffic-" + which).value);
  return $("traffic-" + which + "-kind").value === "fixed" ? { kind: "fixed", value: v }
    : { kind: "lognormal", mean: v, sigma: Number($("traffic-" + which + "-sigma").value) };
}
function trafficShape() {
  const shape = { count: Number($("traffic-count").value), prompt: trafficLength("prompt"), output: trafficLength("output") };
  const share = Number($("traffic-share").value || 0), tokens = Number($("traffic-system").value || 0);
  if (share) shape.system_prompt_share = share;
  if (tokens) shape.system_prompt_tokens = tokens;
  return shape;
}
function trafficSlo() {
  const slo = {};
  for (const [field, id] of TRAFFIC_TARGETS) if ($(id).value !== "") slo[field] = Number($(id).value);
  return slo;
}
// Requests a second as people read them: three significant figures, commas above a thousand.
function fmtPerS(x) {
  if (x >= 1000) return fmtInt(Math.round(x));
  return x.toLocaleString("en-US", { maximumSignificantDigits: 3 });
}
let trafficSeq = 0;
async function runTraffic() {
  const mine = ++trafficSeq;
  const err = $("traffic-error");
  err.hidden = true;
  $("traffic-reason").hidden = true;
  for (const el of document.querySelectorAll("#traffic-form [aria-invalid]")) el.removeAttribute("aria-invalid");
  const status = $("traffic-status");
  const fleet = $("traffic-mode").value === "fleet";
  try {
    const pool = simPool();
    let path, body;
    if (fleet) {
      body = fleetBody(budgetBody());
      if ($("traffic-gpus").value === "chosen") {
        if (!pool.gpu) throw Object.assign(new Error("choose a GPU above (or the fleet's GPU types) to size a fleet"), { field: "gpu" });
        body.fleet = body.fleet.filter((g) => g.gpu === pool.gpu);
      }
      delete body.target_concurrency;
      Object.assign(body, { target_rate: Number($("traffic-rate").value), slo: trafficSlo(), traffic: trafficShape() });
      path = "/v1/fleet";
      status.textContent = "searching each layout's rate on " + plural(body.fleet.length, "GPU type") + " …";
    } else {
      body = { ...pool, workload: trafficShape(), slo: trafficSlo() };
      path = "/v1/capacity";
      status.textContent = "simulating " + plural(body.workload.count, "request") + " at rising rates …";
    }
    const r = await api(path, { method: "POST", body: JSON.stringify(body) });
    if (mine !== trafficSeq) return;
    if (fleet) renderTrafficFleet(r); else renderCapacity(r, body.workload.count);
  } catch (e) {
    if (mine !== trafficSeq) return;
    status.textContent = "";
    $("traffic-result").hidden = true;
    $("traffic-fleet-result").hidden = true;
    err.textContent = trafficError(e);
    err.dataset.field = e.field || "";
    err.hidden = false;
    const c = trafficControl(e.field);
    if (c && c[0]) $(c[0]).setAttribute("aria-invalid", "true");
  }
}
function showTrafficReason(text) {
  const box = $("traffic-reason");
  box.replaceChildren();
  if (!text) { box.hidden = true; return; }
  const p = document.createElement("p");
  p.className = "notice";
  p.textContent = sentence(sloWords(plain(text)));
  box.append(p);
  box.hidden = false;
}
function renderCapacity(s, count) {
  $("traffic-fleet-result").hidden = true;
  $("traffic-result").hidden = false;
  const found = s.max_rate_per_s > 0;
  $("traffic-status").textContent = s.model + " on " + (s.gpu || "the pool") + " · " + s.pool + " · " +
    plural(count, "request") + " at each rate · " + plural(s.points, "simulation") + ".";
  setText("traffic-out-rate", found ? fmtPerS(s.max_rate_per_s) + " requests/s" : "none");
  $("traffic-out-rate").dataset.rate = String(s.max_rate_per_s);
  setText("traffic-out-rate-x", found
    ? "every target met; at " + fmtPerS(s.max_rate_per_s * (1 + s.tolerance)) + "/s one is missed (searched to " +
      +(100 * s.tolerance).toFixed(1) + "%) · modelled"
    : "no rate meets every target · modelled");
  const b = s.binding;
  setText("traffic-out-binding", BINDING_WORDS[b.constraint] || b.constraint);
  $("traffic-out-binding").dataset.constraint = b.constraint;
  setText("traffic-out-binding-x", sentence(sloWords(plain(b.why))));
  showTrafficReason(s.reason);
  // The targets at the rate and at the first rate above it that missed one.
  const at = s.at_max, above = s.above_max;
  setText("traffic-at-head", at ? "at " + fmtPerS(at.rate_per_s) + "/s" : "at the rate");
  setText("traffic-above-head", above ? "at " + fmtPerS(above.rate_per_s) + "/s" : "just above");
  const tbody = $("traffic-checks-table").tBodies[0];
  tbody.replaceChildren();
  const checks = (at || above).checks;
  checks.forEach((c, i) => {
    const tr = tbody.insertRow();
    tr.dataset.target = c.target;
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = sloName(c.target);
    tr.append(th);
    tr.insertCell().textContent = fmtMs(c.limit_ms);
    for (const p of [at, above]) {
      const td = tr.insertCell();
      if (!p) { td.textContent = "—"; continue; }
      const k = p.checks[i];
      td.textContent = fmtMs(k.value_ms) + (k.met ? " ✓" : " ✗ missed");
      td.className = k.met ? "met" : "missed";
    }
  });
  renderRateChart(s);
  renderCurveTable(s);
  setText("traffic-method", "How: " + sloWords(s.method.replace("max_rate_per_s", "the sustainable rate")) + ".");
}
// Ticks on a log axis: 1-2-5 a decade when the range is short, else one a decade.
function logTicks(lo, hi) {
  const out = [];
  for (const mults of [[1, 2, 5], [1]]) {
    out.length = 0;
    for (let k = Math.floor(Math.log10(lo)); k <= Math.ceil(Math.log10(hi)); k++) {
      for (const m of mults) { const v = m * 10 ** k; if (v >= lo * 0.999 && v <= hi * 1.001) out.push(v); }
    }
    if (out.length <= 7) break;
  }
  if (out.length > 7) return out.filter((_, i) => i % Math.ceil(out.length / 6) === 0);
  return out;
}
function fmtTick(v, unit) {
  if (unit === "ms") return v >= 1000 ? +(v / 1000).toPrecision(3) + " s" : +v.toPrecision(3) + " ms";
  return (v < 1 ? String(+v.toPrecision(1)) : fmtInt(v)) + "/s";
}
// Each target's latency against the rate, both on log scales: a line a target through the
// simulated rates, a filled point where it was met and a hollow one where missed, the target a
// dashed line in its colour, and the sustainable rate a vertical line.
function renderRateChart(s) {
  const svg = $("traffic-chart");
  svg.replaceChildren();
  const el = svgDraw(svg);
  const fs = parseFloat(getComputedStyle(svg).getPropertyValue("--chart-font")) || 13;
  const pts = s.curve;
  const targets = pts[0].checks.map((c) => c.target);
  const rates = pts.map((p) => p.rate_per_s);
  const values = pts.flatMap((p) => p.checks.map((c) => c.value_ms)).concat(pts[0].checks.map((c) => c.limit_ms)).filter((v) => v > 0);
  let xlo = Math.min(...rates), xhi = Math.max(...rates);
  if (xhi / xlo < 4) { xlo /= 1.5; xhi *= 1.5; }
  const ylo = Math.min(...values) / 1.3, yhi = Math.max(...values) * 1.3;
  // The legend first: its rows set the plot's top.
  const W = 640, right = 24;
  const legend = targets.map((t, i) => [i, sloName(t) + " ≤ " + fmtMs(pts[0].checks[i].limit_ms)]);
  legend.push(["met", "every target met"], ["missed", "a target missed"]);
  if (s.max_rate_per_s > 0) legend.push(["rate", "sustainable: " + fmtPerS(s.max_rate_per_s) + "/s"]);
  let lx = 0, rows = 1;
  const placed = [];
  for (const [key, text] of legend) {
    const probe = el("text", { class: "legend" }, text);
    const w = 28 + probe.getComputedTextLength() + fs * 1.2;
    probe.remove();
    if (lx > 0 && lx + w > W - right - 8) { lx = 0; rows += 1; }
    placed.push([key, text, lx, rows]);
    lx += w;
  }
  const yTicks = logTicks(ylo, yhi), xTicks = logTicks(xlo, xhi);
  const tickW = Math.max(...yTicks.map((v) => fmtTick(v, "ms").length)) * fs * 0.62;
  const left = Math.ceil(fs * 1.6 + 10 + tickW);
  const top = Math.ceil(fs * 1.6 * rows + fs * 1.6), plotH = 200, bottom = Math.ceil(fs * 3.4 + 6);
  const H = top + plotH + bottom;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const X = (v) => left + (W - left - right) * (Math.log10(v) - Math.log10(xlo)) / (Math.log10(xhi) - Math.log10(xlo));
  const Y = (v) => top + plotH - plotH * (Math.log10(Math.max(v, ylo)) - Math.log10(ylo)) / (Math.log10(yhi) - Math.log10(ylo));
  for (const [key, text, x0, row] of placed) {
    const x = left + x0, y = fs * 1.3 + (row - 1) * fs * 1.6;
    if (typeof key === "number") el("line", { x1: x, y1: y - fs * 0.3, x2: x + 22, y2: y - fs * 0.3, class: "slo-line s" + key });
    else if (key === "rate") el("line", { x1: x + 11, y1: y - fs * 0.9, x2: x + 11, y2: y + fs * 0.2, class: "capacity" });
    else el("circle", { cx: x + 11, cy: y - fs * 0.3, r: 4, class: "rate-point " + key });
    el("text", { x: x + 28, y, class: "legend" }, text);
  }
  for (const v of yTicks) {
    el("line", { x1: left, y1: Y(v), x2: W - right, y2: Y(v), class: "grid" });
    el("text", { x: left - 8, y: Y(v) + fs * 0.35, class: "tick", "text-anchor": "end" }, fmtTick(v, "ms"));
  }
  el("line", { x1: left, y1: top, x2: left, y2: top + plotH, class: "axis" });
  el("line", { x1: left, y1: top + plotH, x2: W - right, y2: top + plotH, class: "axis" });
  let lastLabel = -Infinity;
  for (const v of xTicks) {
    const x = X(v);
    el("line", { x1: x, y1: top + plotH, x2: x, y2: top + plotH + 4, class: "axis" });
    if (x - lastLabel >= fs * 4) { el("text", { x, y: top + plotH + fs * 1.3 + 4, class: "tick", "text-anchor": "middle" }, fmtTick(v, "rate")); lastLabel = x; }
  }
  const mid = top + plotH / 2, yl = fs * 0.9;
  el("text", { x: yl, y: mid, class: "axis-label", "text-anchor": "middle", transform: `rotate(-90 ${yl} ${mid})` }, "latency");
  el("text", { x: (left + W - right) / 2, y: H - fs * 0.4, class: "axis-label", "text-anchor": "middle" }, "requests per second (log scales; modelled)");
  if (s.max_rate_per_s > 0) {
    const x = X(s.max_rate_per_s);
    const line = el("line", { x1: x, y1: top, x2: x, y2: top + plotH, class: "capacity", "data-rate": s.max_rate_per_s });
    svgTitle(line, "sustainable: " + fmtPerS(s.max_rate_per_s) + " requests/s");
  }
  targets.forEach((t, i) => {
    const limit = pts[0].checks[i].limit_ms;
    const target = el("line", { x1: left, y1: Y(limit), x2: W - right, y2: Y(limit), class: "slo-line s" + i, "data-target": t });
    svgTitle(target, sloName(t) + " target: " + fmtMs(limit));
    const g = el("g", { class: "rate-series", "data-target": t });
    const draw = svgDraw(g);
    draw("polyline", { points: pts.map((p) => X(p.rate_per_s).toFixed(1) + "," + Y(p.checks[i].value_ms).toFixed(1)).join(" "), class: "series s" + i });
    for (const p of pts) {
      const c = p.checks[i];
      const dot = draw("circle", { cx: X(p.rate_per_s), cy: Y(c.value_ms), r: 4, class: "rate-point s" + i + (p.meets ? " met" : " missed"), "data-rate": p.rate_per_s });
      svgTitle(dot, fmtPerS(p.rate_per_s) + "/s: " + sloName(t) + " " + fmtMs(c.value_ms) + (c.met ? " (met)" : " (missed)"));
    }
  });
}
function renderCurveTable(s) {
  const table = $("traffic-curve-table");
  const targets = s.curve[0].checks.map((c) => c.target);
  const head = table.tHead.rows[0];
  head.replaceChildren();
  for (const text of ["requests/s", "every target", ...targets.map(sloName)]) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = text;
    head.append(th);
  }
  const tbody = table.tBodies[0];
  tbody.replaceChildren();
  for (const p of s.curve) {
    const tr = tbody.insertRow();
    tr.dataset.meets = String(p.meets);
    for (const v of [fmtPerS(p.rate_per_s), p.meets ? "met" : "missed", ...p.checks.map((c) => fmtMs(c.value_ms))]) tr.insertCell().textContent = v;
  }
}
function renderTrafficFleet(f) {
  $("traffic-result").hidden = true;
  $("traffic-fleet-result").hidden = false;
  const t = f.traffic;
  const sized = t.layouts.filter((l) => l.replicas_needed != null).length;
  $("traffic-status").textContent = f.model + " · " + fmtPerS(t.target_rate_per_s) + " requests/s · " +
    plural(t.layouts.length, "layout") + " searched, " + sized + " meet the targets.";
  showTrafficReason(sized ? "" : "No layout meets every target at any rate: " + (t.layouts[0] ? t.layouts[0].reason : ""));
  const tbody = $("traffic-layouts-table").tBodies[0];
  tbody.replaceChildren();
  for (const l of t.layouts) {
    const tr = tbody.insertRow();
    tr.dataset.gpu = l.gpu;
    tr.dataset.layout = l.layout;
    const ok = l.replicas_needed != null;
    const gpusText = ok ? fmtInt(l.gpus_needed) + (l.available ? "" : " · more than the fleet has") : "—";
    for (const v of [l.gpu, l.layout, ok ? fmtPerS(l.max_rate_per_s) : "none", ok ? fmtInt(l.replicas_needed) : "no rate meets the targets",
                     gpusText, fmtCost(l.cost_per_hour), BINDING_WORDS[l.binding.constraint] || l.binding.constraint]) tr.insertCell().textContent = v;
    tr.cells[6].title = sentence(sloWords(plain(l.binding.why)));
    if (l.reason) tr.cells[ok ? 2 : 3].title = sentence(sloWords(plain(l.reason)));
  }
  labelCells($("traffic-layouts-table"));
  const m = t.cheapest_mix;
  $("traffic-mix-box").hidden = !m;
  if (m) {
    setText("traffic-mix-target", fmtPerS(t.target_rate_per_s));
    const body = $("traffic-mix-table").tBodies[0];
    body.replaceChildren();
    for (const p of m.parts) {
      const tr = body.insertRow();
      for (const v of [p.gpu, p.layout, fmtInt(p.replicas), fmtInt(p.gpus), fmtPerS(p.rate_per_s), fmtCost(p.cost_per_hour)]) tr.insertCell().textContent = v;
    }
    labelCells($("traffic-mix-table"));
    setText("traffic-mix-rate", fmtPerS(m.rate_per_s));
    setText("traffic-mix-cost", fmtCost(m.cost_per_hour));
    setText("traffic-mix-how", (m.within_fleet ? "Within the fleet's GPUs" : "More GPUs than the fleet has: as many as each type would need") +
      " · " + (m.method === "exact" ? "the cheapest, found exactly" : m.method) + " · one layout a GPU type, its cheapest per request/s.");
  }
  setText("traffic-fleet-method", "How: " + sloWords(plain(t.method)) + ".");
}
async function init() {
  const [models, gpuList, engines] = await Promise.all([api("/v1/models"), api("/v1/gpus"), api("/v1/engines")]);
  for (const m of models.models) $("model").append(new Option(m.id + " (" + m.attention + ")", m.id));
  for (const g of gpuList.gpus) {
    gpus[g.id] = g;
    const seen = g.vllm_memory_bytes != null ? "vLLM sees " + fmtGiB(g.vllm_memory_bytes) : (g.nominal ? "nominal " : "") + fmtGiB(g.memory_bytes);
    $("gpu").append(new Option(g.id + " · " + seen, g.id));
  }
  buildFleetInputs(gpuList.gpus);
  for (const e of engines.engines) $("engine").append(new Option(e.id + (e.id === engines.default ? " (default)" : ""), e.id));
  $("engine").value = engines.default;
  const initial = urlState() || PRESETS.A;
  writeState(initial);
  stage = Number(initial.stage || 0);
  ledgerOpen = initial.ledger === "1";
  $("ledger").hidden = !ledgerOpen;
  $("ledger-toggle").setAttribute("aria-expanded", String(ledgerOpen));
  $("ledger-toggle").textContent = ledgerOpen ? "Hide the ledger" : "Show the ledger";

  for (const btn of document.querySelectorAll(".preset")) {
    btn.addEventListener("click", () => { writeState({ ...PRESETS[btn.dataset.preset], engine: $("engine").value }); update(); });
  }
  $("controls").addEventListener("input", markPreset);
  for (const k of ["f", "L", "Hkv", "D"]) $(k).addEventListener("input", () => { $("model").value = ""; $("Hkv").disabled = $("f").value === "1"; schedule(); });
  for (const k of ["b", "T", "util", "weights", "tp", "pp", "bs", "engine", "nonkv"]) $(k).addEventListener("input", schedule);
  $("nonkv").addEventListener("input", () => { const g = gpus[$("gpu").value]; if (g) { setMemInput(plannedMemory(g)); showGpuFigures(plannedMemory(g)); } });
  $("mem").addEventListener("input", () => { $("gpu").value = ""; schedule(); });
  $("Trange").addEventListener("input", () => {
    const t = 2 ** Number($("Trange").value);
    $("T").value = String(t >= 1024 ? Math.round(t / 1024) * 1024 : Math.round(t));  // 32,768 steps to 46,080, not 32,996
    schedule();
  });
  $("T").addEventListener("input", () => { $("Trange").value = String(Math.log2(Math.max(1, Number($("T").value)))); });
  $("gpu").addEventListener("input", () => {
    const g = gpus[$("gpu").value];
    if (g) setMemInput(plannedMemory(g));  // before the answer: the figure it will use
    showGpuFigures(g ? plannedMemory(g) : null);
    schedule();
  });
  $("hub-id").addEventListener("change", resolveHubId);
  // The fleet's own inputs ask only for the fleet: the budget and the sweep do not change.
  let fleetTimer = null;
  const scheduleFleet = () => {
    clearTimeout(fleetTimer);
    fleetTimer = setTimeout(() => { saveUrl(); updateFleet(budgetBody()); }, 120);
  };
  $("fleet-target").addEventListener("input", scheduleFleet);
  $("fleet-types-table").addEventListener("input", scheduleFleet);
  $("reconcile-form").addEventListener("submit", (e) => { e.preventDefault(); reconcileLog(); });
  $("sim-form").addEventListener("submit", (e) => { e.preventDefault(); runSimulation(); });
  $("sim-source").addEventListener("input", showSimSource);
  $("sim-form").addEventListener("input", (e) => { if (e.target.type !== "file" && e.target.tagName !== "TEXTAREA") saveUrl(); });
  // One trace at a time: a file chosen clears what was pasted, and a paste the file.
  $("sim-trace-file").addEventListener("change", () => { if ($("sim-trace-file").files.length) $("sim-trace-text").value = ""; });
  $("sim-trace-text").addEventListener("input", () => { $("sim-trace-file").value = ""; });
  showSimSource();
  $("traffic-form").addEventListener("submit", (e) => { e.preventDefault(); runTraffic(); });
  $("traffic-form").addEventListener("input", () => { showTrafficInputs(); saveUrl(); });
  showTrafficInputs();
  $("model").addEventListener("input", async () => {
    const id = $("model").value;
    if (id) await loadModel(id);
    schedule();
  });
  $("command-form").addEventListener("submit", (e) => { e.preventDefault(); planCommand(); });
  $("command").addEventListener("paste", () => setTimeout(planCommand, 0));  // planned as it lands; the button plans an edit
  $("controls").addEventListener("submit", (e) => e.preventDefault());
  $("ledger-toggle").addEventListener("click", () => {
    ledgerOpen = !ledgerOpen;
    $("ledger").hidden = !ledgerOpen;
    $("ledger-toggle").setAttribute("aria-expanded", String(ledgerOpen));
    $("ledger-toggle").textContent = ledgerOpen ? "Hide the ledger" : "Show the ledger";
    update();
  });
  snaps = await loadBlockStory(16);
  const showStage = (i) => {
    stage = i;
    renderBlockTable(snaps[i]);
    for (const b of document.querySelectorAll(".stage")) b.setAttribute("aria-pressed", String(Number(b.dataset.stage) === i));
    saveUrl();
  };
  for (const b of document.querySelectorAll(".stage")) b.addEventListener("click", () => showStage(Number(b.dataset.stage)));
  showStage(stage);
  await update();
  document.body.dataset.ready = "1";
}
window.addEventListener("DOMContentLoaded", () => {
  init().catch((e) => { $("error").hidden = false; $("error").textContent = String(e.message || e); });
});
