"""Record the answers of the service as it is now to thousands of requests across every endpoint,
for tests/replay/test_replay.py to replay against later code (a behaviour-preserving refactor must
answer every one byte for byte the same).

    PYTHONPATH=service:. .venv/bin/python -m tests.replay.record [--out PATH] [--sha-only]

Record against the code whose behaviour is the reference: the refactor of the service's modules
was recorded at commit 97a9f16 (a worktree of it, `PYTHONPATH=<worktree>/service:<worktree>`).
The recording holds whatever that code answered, mistakes included: it pins behaviour, it does not
judge it.

The requests are generated here, in a fixed order with no randomness: every model preset on
several GPUs, engines (each profile and plain vLLM versions), KV dtypes, TP/PP/DCP layouts,
contexts, quantizations and memory overrides; every config.json the repository and shared/ hold,
inline (`{"hf_config": …}`) and resolved (`POST /v1/models/resolve`) and sent back as
`{"geometry": …}`; Hub ids read from the loopback fake Hub (tests/hub/fakehub.py), with a token,
offline from the disk cache and with the Hub gone; batches, fleets, sweeps, small simulations,
reconciles of every real vLLM log in shared/data/vllm-memlogs, and errors of every kind (misspelt
fields, wrong types, bool or float for an integer, negative and oversize numbers, unknown presets
and routes, bad JSON, wrong media types, 404, 405, 413, 414, 415). Some requests are sent twice,
apart, so the answer caches' second path is recorded too.

Recording format (gzip, one JSON object a line, see harness.py): the request (endpoint template,
method, path, query string, headers set, body, the Hub phase, what is not compared) and the answer
(status, content type, the response headers but those listed in harness.IGNORED_HEADERS, sha256
and length of the body, and the body itself unless --sha-only).

Nondeterminism, found by recording in separate processes (one with PYTHONHASHSEED=0, two at once
on a loaded machine) and diffing, and how it is handled (see harness.py): the fake Hub's port, in
Hub errors (replaced by harness.HUB_URL); /metrics (counters and timings: its body and length are
not compared); Last-Modified and ETag of static files (from the file's mtime: not compared);
request ids (random unless the request names one: every request sends X-Request-ID). Nothing else
varied: the recordings were byte for byte the same.

One answer depends on the process's history: the answer cache keeps a pinned Hub commit's answer,
`"from_cache": false` included, and gives it back while the Hub is offline or down, where a fresh
answer says `"from_cache": true`. Another test of the same pytest run can put such an answer there
first, so the offline and down phases ask scenarios no other test asks (context_tokens 7777).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from kvplan.api.openapi import FLEET_EXAMPLES, SIMULATE_EXAMPLES
from tests.api.test_http_hygiene import NOT_JSON
from tests.hub import repos
from tests.replay.harness import (
    RECORDING,
    Answer,
    Req,
    Service,
    answer_to_json,
    req_to_json,
    service,
    write_recording,
)

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"
CONFIG_DIRS = (
    SHARED / "hf-configs",
    ROOT / "tests" / "core" / "data" / "hf-configs",
    ROOT / "tests" / "calibration" / "data" / "hf-configs",
    ROOT / "tests" / "hub" / "data",
)
PRESET_DIR = ROOT / "service" / "kvplan" / "presets" / "data" / "models"
MEMLOGS = SHARED / "vllm-memlogs" / "train.jsonl"
MEMLOGS_COPY = ROOT / "tests" / "calibration" / "data" / "vllm-memlogs.jsonl"
RECONCILE_DATA = ROOT / "tests" / "reconcile" / "data"

MODELS = [
    "command-r7b", "deepseek-r1", "deepseek-v2-lite", "deepseek-v3", "deepseek-v3.2", "falcon-h1-7b",
    "gemma-3-27b", "glm-4.5", "glm-5", "gpt-oss-120b", "gpt-oss-20b", "granite-4.0-h-small",
    "jamba-1.5-mini", "kimi-k2", "llama-2-7b", "llama-3-70b", "llama-3-8b", "llama-3.1-405b",
    "llama-3.1-70b", "llama-3.1-8b", "llama-4-maverick", "llama-4-scout", "mistral-7b-v0.3",
    "mixtral-8x7b", "qwen2.5-72b", "qwen2.5-7b", "qwen3-235b-a22b", "qwen3-30b-a3b", "qwen3-32b",
    "qwen3-8b", "qwen3-next-80b-a3b"
]  # fmt: skip
GPUS = [
    "a100-40gb", "a100-80gb", "h100-sxm-80gb", "h100-pcie-80gb", "h200-141gb", "h20-96gb", "b200-180gb",
    "gb200-186gb", "l40s-48gb", "l4-24gb", "rtx-4090-24gb", "mi300x-192gb", "mi325x-256gb",
    "pool-80gib", "pool-141gib", "pool-160gib"
]  # fmt: skip
PROFILES = ["vllm@e740bad", "vllm@0.33", "vllm@0.10", "vllm@0.19"]
VERSIONS = [
    "0.19.0", "0.10", "0.33", "0.6.3", "0.8.5", "0.9.2", "0.10.1.1", "0.11.0", "vllm@0.11.1", "0.18.0",
    "0.29.1", "0.33.0", "1.0.0", "v0.19.0", "0.19.0rc1", "latest", "vllm@9", "0.5"
]  # fmt: skip
KV_DTYPES = [
    "auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "int8_per_token_head",
    "fp8_per_token_head", "int4_per_token_head", "nvfp4", "fp8_ds_mla"
]  # fmt: skip
QUANTS = ["fp8", "awq", "gptq", "bitsandbytes", "modelopt_fp4"]
WEIGHT_DTYPES = [
    "float32", "bfloat16", "float16", "fp8", "int8", "int4", "mxfp4", "nvfp4", "bf16", "fp16", "fp32",
    "float", "half", "fp8_e4m3", "w8a8", "awq", "gptq"
]  # fmt: skip
GIB = 1 << 30
SEED_A = {
    "model": "llama-3-70b",
    "gpu": "pool-160gib",
    "weights_bytes": 130 * GIB,
    "context_tokens": 8192,
    "non_kv_bytes": 0,
}
SEED_B = {
    "model": "deepseek-v3",
    "gpu": "pool-141gib",
    "weights_bytes": 625 * GIB,
    "context_tokens": 32768,
    "tensor_parallel_size": 8,
    "non_kv_bytes": 0,
}
SEED_C = {**SEED_A, "context_tokens": 131072}
JSON_CT = ("content-type", "application/json")
TEXT_ACCEPT = ("accept", "text/plain")


def generator(
    count: int, rate: float, prompt: Any, output: Any, seed: int | None = None, **extra: Any
) -> Any:
    """A simulate request's workload generator, its keys in the order the recording sends them."""
    seeded = {} if seed is None else {"seed": seed}
    return {"count": count, "arrival_rate": rate, **seeded, "prompt": prompt, "output": output, **extra}


def lognormal(mean: float, sigma: float) -> dict[str, Any]:
    return {"kind": "lognormal", "mean": mean, "sigma": sigma}


def uniform(low: int, high: int) -> dict[str, Any]:
    return {"kind": "uniform", "low": low, "high": high}


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def qs(params: dict[str, Any] | list[tuple[str, Any]]) -> str:
    items = params.items() if isinstance(params, dict) else params
    return urlencode([(k, v if isinstance(v, str) else json.dumps(v)) for k, v in items])


class Recorder:
    """Sends each request as it is generated (later requests may use earlier answers) and keeps
    the request with its answer."""

    def __init__(self, svc: Service, full_bodies: bool) -> None:
        self.svc = svc
        self.full_bodies = full_bodies
        self.records: list[dict[str, Any]] = []
        self.phase = "online"

    def send(self, req: Req) -> Answer:
        req.phase = self.phase
        answer = self.svc.send(len(self.records), req)
        self.records.append({**req_to_json(req), **answer_to_json(answer, self.full_bodies)})
        return answer

    def get(
        self,
        endpoint: str,
        path: str,
        query: str | dict[str, Any] | list[tuple[str, Any]] = "",
        headers: Iterable[tuple[str, str]] = (),
        method: str = "GET",
        unchecked: tuple[str, ...] = (),
    ) -> Answer:
        q = query if isinstance(query, str) else qs(query)
        if method != "GET" and endpoint.startswith("GET "):
            endpoint = method + endpoint[3:]
        return self.send(Req(method, path, q, list(headers), None, endpoint, unchecked=unchecked))

    def post(
        self,
        endpoint: str,
        path: str,
        body: Any,
        query: str | dict[str, Any] = "",
        headers: Iterable[tuple[str, str]] | None = None,
        method: str = "POST",
    ) -> Answer:
        """A JSON body (any Python value), or bytes sent as they are (headers as given)."""
        raw = body if isinstance(body, bytes) else dumps(body)
        hs = list(headers) if headers is not None else [JSON_CT]
        q = query if isinstance(query, str) else qs(query)
        return self.send(Req(method, path, q, hs, raw, endpoint))


# --------------------------------------------------------------------------------------------- data


def hf_configs() -> list[tuple[str, dict[str, Any]]]:
    """Every config.json in the repository and shared/, and every preset's own, once each by
    content, in name order."""
    seen: dict[str, tuple[str, dict[str, Any]]] = {}
    for d in CONFIG_DIRS:
        for p in sorted(d.glob("*.json")) if d.is_dir() else []:
            cfg = json.loads(p.read_text())
            seen.setdefault(json.dumps(cfg, sort_keys=True), (p.stem, cfg))
    for p in sorted(PRESET_DIR.glob("*.json")):
        cfg = json.loads(p.read_text())["config"]
        seen.setdefault(json.dumps(cfg, sort_keys=True), (f"preset:{p.stem}", cfg))
    return sorted(seen.values(), key=lambda x: x[0])


def memlogs() -> list[dict[str, Any]]:
    path = MEMLOGS if MEMLOGS.exists() else MEMLOGS_COPY
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def config_index() -> dict[str, dict[str, Any]]:
    """The config of each model the memlogs name, as the reconcile report finds it."""
    from tests.calibration.memory import _configs

    return _configs()


# ---------------------------------------------------------------------------------------- the cases


def operations(r: Recorder) -> None:
    static = ("last-modified", "etag")
    for path in ("/healthz", "/readyz"):
        ep = f"GET {path}"
        r.get(ep, path)
        r.get(ep, path, {"format": "text"})
        r.get(ep, path, {"format": "json"})
        r.get(ep, path, {"format": "csv"})
        r.get(ep, path, headers=[TEXT_ACCEPT])
        r.get(ep, path, method="HEAD")
        r.get(f"OPTIONS {path}", path, method="OPTIONS")
    r.get("GET /metrics", "/metrics", unchecked=("body",))
    r.get("GET /metrics", "/metrics", method="HEAD", unchecked=("body",))
    r.get("GET /schema/openapi.json", "/schema/openapi.json")
    r.get("GET /schema/openapi.json", "/schema/openapi.json", method="HEAD")
    r.get("GET /schema", "/schema")
    r.get("GET /schema/{path}", "/schema/swagger")
    r.get("GET /schema/{path}", "/schema/redoc")
    r.get("GET /schema/oauth2-redirect.html", "/schema/oauth2-redirect.html")
    for asset in ("swagger-ui.css", "swagger-ui-bundle.js", "swagger-ui-standalone-preset.js", "nope.js"):
        r.get("GET /schema/assets/{file_path}", f"/schema/assets/{asset}", unchecked=static)
    r.get("GET /", "/", unchecked=static)
    r.get("GET /", "/", method="HEAD", unchecked=static)
    for f in ("index.html", "app.js", "style.css", "nope.css", "../app/app.py"):
        r.get("GET /web/{file_path}", f"/web/{f}", unchecked=static)
    r.get("GET /bench/constant", "/bench/constant")


def catalog(r: Recorder) -> None:
    for path, ep in (
        ("/v1/models", "GET /v1/models"),
        ("/v1/gpus", "GET /v1/gpus"),
        ("/v1/engines", "GET /v1/engines"),
    ):
        r.get(ep, path)
        r.get(ep, path, {"format": "text"})
        r.get(ep, path, {"format": "json"})
        r.get(ep, path, {"format": "csv"})
        r.get(ep, path, {"format": ""})
        r.get(ep, path, {"explain": "true"})
        r.get(ep, path, headers=[TEXT_ACCEPT])
        r.get(ep, path, headers=[("accept", "text/plain, application/json")])
        r.get(ep, path, headers=[("accept", "text/html")])
        r.get(ep, path, method="HEAD")
        r.get(f"OPTIONS {path}", path, method="OPTIONS")
        r.post(f"POST {path}", path, {})
    ep = "GET /v1/models/{model_id}"
    reg_models = [json.loads((PRESET_DIR / f"{m}.json").read_text()) for m in MODELS]
    for m in reg_models:
        r.get(ep, f"/v1/models/{m['id']}")
        r.get(ep, f"/v1/models/{m['id']}", {"format": "text"})
        r.get(ep, f"/v1/models/{quote(m['name'], safe='')}")
        r.get(ep, f"/v1/models/{m['hf_repo']}")
    for m in reg_models[:6]:
        r.get(ep, f"/v1/models/{m['id']}", headers=[TEXT_ACCEPT])
        r.get(ep, f"/v1/models/{m['id'].upper()}")
        r.get(ep, f"/v1/models/{m['hf_repo'].lower()}")
    for bad in (
        "llama-3-7b",
        "llama",
        "gpt",
        "nope",
        "x" * 201,
        "x" * 200,
        "%20",
        "caf%C3%A9",
        "-",
        "..",
        "llama-3-70b/extra/more",
        "llama-3-70b%2Fextra",
        "%00",
        "deepseek-v4",
    ):
        r.get(ep, f"/v1/models/{bad}")
    r.get(ep, "/v1/models/llama-3-7b", {"format": "text"})
    r.get(ep, "/v1/models/")
    ep = "GET /v1/gpus/{gpu_id}"
    for g in GPUS:
        r.get(ep, f"/v1/gpus/{g}")
        r.get(ep, f"/v1/gpus/{g}", {"format": "text"})
    for g in GPUS[:4]:
        r.get(ep, f"/v1/gpus/{g}", headers=[TEXT_ACCEPT])
        r.get(ep, f"/v1/gpus/{g}", method="HEAD")
        r.get(ep, f"/v1/gpus/{g.upper()}")
    for bad in ("h100", "h101", "a100", "NVIDIA H100 80GB HBM3", "x" * 201, "mi300", "h100-sxm-80gb/x"):
        r.get(ep, f"/v1/gpus/{quote(bad, safe='/')}")
    r.get(ep, "/v1/gpus/h100", {"format": "text"})


def resolve_and_inline(r: Recorder) -> None:
    """Every config inline, resolved, and its geometry sent back inline."""
    gpus = ["h100-sxm-80gb", "h200-141gb", "a100-80gb", "b200-180gb", "mi300x-192gb", "l40s-48gb"]
    inlines: list[dict[str, Any]] = []
    for i, (name, cfg) in enumerate(hf_configs()):
        gpu = gpus[i % len(gpus)]
        res = r.post("POST /v1/models/resolve", "/v1/models/resolve", cfg)
        if i % 3 == 0:
            r.post("POST /v1/models/resolve", "/v1/models/resolve", {"hf_config": cfg, "name": name})
        inline = {"hf_config": cfg, "name": name}
        r.post("POST /v1/per-token", "/v1/per-token", {"model": inline, "context_tokens": 32768})
        r.post("POST /v1/budget", "/v1/budget", {"model": inline, "gpu": gpu, "context_tokens": 8192})
        if i % 2 == 0:
            r.post("POST /v1/budget", "/v1/budget", {"model": inline, "gpu": gpu}, {"format": "text"})
        else:
            r.post(
                "POST /v1/budget",
                "/v1/budget",
                {
                    "model": {"hf_config": cfg},
                    "gpu": "h200-141gb",
                    "kv_cache_dtype": "fp8",
                    "tensor_parallel_size": 2,
                },
                {"explain": "true"},
            )
        profile = PROFILES[i % len(PROFILES)]
        for tp in (2, 4, 8):
            r.post(
                "POST /v1/budget",
                "/v1/budget",
                {
                    "model": inline,
                    "gpu": "h200-141gb",
                    "tensor_parallel_size": tp,
                    "engine": profile,
                    "context_tokens": 32768,
                },
            )
        r.post(
            "POST /v1/per-token",
            "/v1/per-token",
            {"model": inline, "kv_cache_dtype": KV_DTYPES[i % len(KV_DTYPES)]},
            {"explain": "true"},
        )
        if i % 5 == 0:
            r.post(
                "POST /v1/fleet",
                "/v1/fleet",
                {
                    "model": inline,
                    "workload": {"context_tokens": 8192},
                    "fleet": [{"gpu": "h100-sxm-80gb", "count": 8}, {"gpu": "l40s-48gb", "count": 8}],
                },
            )
        if res.status == 200:
            geometry = json.loads(res.body)["geometry"]
            g = {"geometry": geometry}
            r.post("POST /v1/budget", "/v1/budget", {"model": g, "gpu": gpu, "context_tokens": 8192})
            r.post(
                "POST /v1/per-token",
                "/v1/per-token",
                {"model": g, "context_tokens": 32768},
                {"format": "text"},
            )
            r.get("GET /v1/per-token", "/v1/per-token", dotted("model.geometry", geometry))
            r.get(
                "GET /v1/budget",
                "/v1/budget",
                [*dotted("model.geometry", geometry), ("gpu", gpu), ("tensor_parallel_size", "2")],
            )
            if i % 4 == 0:
                r.post(
                    "POST /v1/budget",
                    "/v1/budget",
                    {
                        "model": {"geometry": geometry, "name": name},
                        "gpu": "h100-sxm-80gb",
                        "weights_bytes": 10 * GIB,
                        "non_kv_bytes": GIB,
                    },
                )
        inlines.append({"model": inline, "gpu": gpu, "context_tokens": 4096})
    r.post("POST /v1/budget/batch", "/v1/budget/batch", {"scenarios": inlines})
    r.post("POST /v1/budget/batch", "/v1/budget/batch", {"scenarios": inlines[::7]}, {"format": "text"})


def dotted(prefix: str, obj: dict[str, Any]) -> list[tuple[str, str]]:
    """A nested object as a query string's dotted parameters (lists comma-separated)."""
    out: list[tuple[str, str]] = []
    for k, v in obj.items():
        if v is None:
            continue
        if isinstance(v, dict):
            out += dotted(f"{prefix}.{k}", v)
        elif isinstance(v, list):
            out.append((f"{prefix}.{k}", ",".join(map(str, v))))
        else:
            out.append((f"{prefix}.{k}", str(v).lower() if isinstance(v, bool) else str(v)))
    return out


def per_token(r: Recorder) -> None:
    ep_get, ep_post, path = "GET /v1/per-token", "POST /v1/per-token", "/v1/per-token"
    for m in MODELS:
        r.get(ep_get, path, {"model": m})
        r.get(ep_get, path, {"model": m, "format": "text"})
        r.get(ep_get, path, {"model": m, "explain": "true"})
        r.get(ep_get, path, {"model": m, "context_tokens": "128K"}, headers=[TEXT_ACCEPT])
        r.post(ep_post, path, {"model": m})
        r.post(ep_post, path, {"model": m, "context_tokens": 131072}, {"explain": "true"})
        for dt in KV_DTYPES:
            r.post(ep_post, path, {"model": m, "kv_cache_dtype": dt, "context_tokens": 8192})
        for tp in (2, 4, 8, 16):
            r.get(ep_get, path, {"model": m, "tensor_parallel_size": tp})
        r.get(ep_get, path, {"model": m, "tensor_parallel_size": 3})
        r.post(ep_post, path, {"model": m, "pipeline_parallel_size": 2, "tensor_parallel_size": 2})
        r.post(ep_post, path, {"model": m, "decode_context_parallel_size": 2, "tensor_parallel_size": 4})
    for m in MODELS[::3]:
        for e in PROFILES + VERSIONS:
            r.get(ep_get, path, {"model": m, "engine": e, "tensor_parallel_size": 2})
        r.post(ep_post, path, {"model": m, "engine": "0.19.0"}, {"format": "text"})
        r.post(ep_post, path, {"model": m, "kv_cache_dtype": "fp8", "kv_cache_dtype_skip_layers": [0, 1]})
        r.post(
            ep_post,
            path,
            {"model": m, "kv_cache_dtype": "fp8", "kv_cache_dtype_skip_layers": ["sliding_window"]},
        )
        r.get(
            ep_get,
            path,
            {"model": m, "kv_cache_dtype": "fp8", "kv_cache_dtype_skip_layers": "0,2,sliding_window"},
        )
        for w in ("40", "120", "400", "39", "401", "abc"):
            r.get(ep_get, path, {"model": m, "format": "text", "width": w})
    for dcp in (1, 2, 4, 8, 16):
        for m in ("deepseek-v3", "kimi-k2", "llama-3-70b", "qwen3-next-80b-a3b", "glm-5"):
            r.post(
                ep_post, path, {"model": m, "decode_context_parallel_size": dcp, "tensor_parallel_size": 8}
            )
    for tp, pp in ((1, 2), (2, 4), (8, 2), (4, 8), (1, 1024), (1024, 1)):
        r.get(
            ep_get,
            path,
            {"model": "llama-3.1-405b", "tensor_parallel_size": tp, "pipeline_parallel_size": pp},
        )


def budget(r: Recorder) -> None:
    ep_get, ep_post, path = "GET /v1/budget", "POST /v1/budget", "/v1/budget"
    for seed in (SEED_A, SEED_B, SEED_C):
        r.post(ep_post, path, seed)
        r.post(ep_post, path, seed, {"format": "text"})
        r.post(ep_post, path, seed, {"explain": "true"})
        r.get(ep_get, path, seed)
        r.get(ep_get, path, {**seed, "format": "text"})
        r.get(ep_get, path, {**seed, "explain": "1"})
    for m in MODELS:
        for g in GPUS:
            r.post(ep_post, path, {"model": m, "gpu": g, "context_tokens": 8192})
        r.get(ep_get, path, {"model": m, "gpu": "h100-sxm-80gb", "format": "text"})
        r.get(ep_get, path, {"model": m, "gpu": "h200-141gb", "tensor_parallel_size": 8, "format": "text"})
        r.get(ep_get, path, {"model": m, "gpu": "mi300x-192gb", "tensor_parallel_size": 4, "explain": "true"})
        r.get(ep_get, path, {"model": m, "gpu": "b200-180gb", "context_tokens": "32K"}, headers=[TEXT_ACCEPT])
        r.post(
            ep_post,
            path,
            {"model": m, "gpu": "a100-80gb", "tensor_parallel_size": 8, "context_tokens": 32768},
            {"explain": "true"},
        )
        r.post(
            ep_post,
            path,
            {
                "model": m,
                "gpu": "h100-sxm-80gb",
                "tensor_parallel_size": 8,
                "pipeline_parallel_size": 2,
                "context_tokens": 131072,
            },
            {"format": "text"},
        )
        for e in PROFILES:
            r.post(
                ep_post, path, {"model": m, "gpu": "h100-sxm-80gb", "engine": e, "tensor_parallel_size": 4}
            )
    for m in MODELS[::2]:
        for dt in KV_DTYPES:
            r.post(
                ep_post,
                path,
                {
                    "model": m,
                    "gpu": "h200-141gb",
                    "kv_cache_dtype": dt,
                    "tensor_parallel_size": 8,
                    "context_tokens": 16384,
                },
            )
        for q in QUANTS:
            r.post(
                ep_post,
                path,
                {"model": m, "gpu": "h100-sxm-80gb", "quantization": q, "tensor_parallel_size": 4},
            )
        for e in VERSIONS:
            r.get(ep_get, path, {"model": m, "gpu": "h100-sxm-80gb", "engine": e, "tensor_parallel_size": 4})
    for m in ("llama-3-8b", "qwen3-8b", "gpt-oss-20b", "deepseek-v2-lite", "falcon-h1-7b"):
        for wd in WEIGHT_DTYPES:
            r.post(ep_post, path, {"model": m, "gpu": "l40s-48gb", "weight_dtype": wd})
    # Contexts, as numbers and with vLLM's suffixes in a query string.
    for ctx in (
        "1",
        "512",
        "8k",
        "8K",
        "32k",
        "32K",
        "128K",
        "25.6k",
        "1M",
        "1m",
        "10M",
        "1T",
        "8.5K",
        "8kb",
        "k",
        "8e3",
        "0",
        "-1",
        "null",
        "1099511627776",
        "1099511627777",
        "9" * 31,
    ):
        r.get(ep_get, path, {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "context_tokens": ctx})
    for ctx in (1, 16, 1000, 4096, 65536, 131072, 1 << 20, 10_000_000):
        for m in ("llama-3.1-70b", "gemma-3-27b", "qwen3-next-80b-a3b", "deepseek-v3.2", "jamba-1.5-mini"):
            r.post(
                ep_post,
                path,
                {"model": m, "gpu": "h200-141gb", "tensor_parallel_size": 8, "context_tokens": ctx},
            )
    # Layouts.
    for m in ("llama-3-70b", "deepseek-v3", "qwen3-235b-a22b", "llama-4-maverick", "gpt-oss-120b", "glm-4.5"):
        for tp in (1, 2, 4, 8, 16, 32):
            for pp in (1, 2, 4):
                r.post(
                    ep_post,
                    path,
                    {
                        "model": m,
                        "gpu": "h100-sxm-80gb",
                        "tensor_parallel_size": tp,
                        "pipeline_parallel_size": pp,
                    },
                )
        for dcp in (2, 4, 8):
            r.get(
                ep_get,
                path,
                {
                    "model": m,
                    "gpu": "b200-180gb",
                    "tensor_parallel_size": 8,
                    "decode_context_parallel_size": dcp,
                },
            )
    # Memory and engine overrides, one at a time and together.
    base = {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "context_tokens": 32768}
    overrides: list[dict[str, Any]] = [
        {"non_kv_bytes": 0},
        {"non_kv_bytes": 3 * GIB},
        {"non_kv_bytes": 70 * GIB},
        {"non_kv_bytes": 200 * GIB},
        {"weights_bytes": 0},
        {"weights_bytes": 16 * GIB},
        {"weights_bytes": 79 * GIB},
        {"weights_bytes": 16 * GIB, "non_kv_bytes": 2 * GIB},
        {"cudagraph_bytes": GIB},
        {"cudagraph_bytes": 0, "non_kv_bytes": GIB},
        {"enforce_eager": True},
        {"enforce_eager": False},
        {"kv_cache_memory_bytes": 20 * GIB},
        {"kv_cache_memory_bytes": 0},
        {"num_gpu_blocks_override": 1000},
        {"num_gpu_blocks_override": 1},
        {"max_num_batched_tokens": 2048},
        {"max_num_batched_tokens": 65536},
        {"max_num_seqs": 1},
        {"max_num_seqs": 256},
        {"max_num_seqs": 65536},
        {"async_scheduling": True},
        {"async_scheduling": False},
        {"max_model_len": 8192},
        {"max_model_len": 131072},
        {"max_model_len": 4096},
        {"target_concurrency": 1},
        {"target_concurrency": 100},
        {"target_concurrency": 100000},
        {"hybrid_kv_cache_manager": False},
        {"extensible_kv_cache": True},
        {"kv_offloading_bytes": 0},
        {"kv_offloading_bytes": 64 * GIB},
        {"block_size": 1},
        {"block_size": 16},
        {"block_size": 32},
        {"block_size": 128},
        {"block_size": 256},
        {"block_size": 65536},
        {"gpu_memory_utilization": 0.5},
        {"gpu_memory_utilization": 0.95},
        {"gpu_memory_utilization": 1},
        {"gpu_memory_utilization": 1e-9},
        {"gpu_memory_bytes": 24 * GIB},
        {"gpu": None, "gpu_memory_bytes": 80 * GIB},
        {"gpu": None},
        {"gpu_memory_bytes": 1},
        {"kv_cache_dtype": "fp8", "kv_cache_dtype_skip_layers": [0, 31]},
        {"quantization": "fp8", "weight_dtype": "bfloat16"},
        {"engine": "0.10", "enforce_eager": True},
        {"engine": "vllm@0.33", "max_num_seqs": 1024, "async_scheduling": True},
    ]
    for o in overrides:
        for m in ("llama-3.1-8b", "gemma-3-27b", "qwen3-next-80b-a3b", "deepseek-v2-lite"):
            body = {k: v for k, v in {**base, "model": m, **o}.items() if v is not None}
            r.post(ep_post, path, body)
        body = {k: v for k, v in {**base, **o}.items() if v is not None}
        r.post(ep_post, path, body, {"format": "text"})
        r.get(
            ep_get,
            path,
            {
                k: (
                    str(v).lower()
                    if isinstance(v, bool)
                    else ",".join(map(str, v))
                    if isinstance(v, list)
                    else str(v)
                )
                for k, v in body.items()
            },
        )
    # Sizes with suffixes, text widths, formats.
    for size in ("80G", "80g", "85520809984", "24G", "1T", "0.5G", "1.5g"):
        r.get(ep_get, path, {"model": "llama-3-8b", "gpu_memory_bytes": size})
    for w in ("40", "60", "100", "200", "400", "39", "401", "", "1e2"):
        r.get(ep_get, path, {**SEED_A, "format": "text", "width": w})
        r.post(ep_post, path, SEED_B, {"format": "text", "width": w})
    for fmt in ("json", "text", "csv", "TEXT", "", "xml"):
        r.get(ep_get, path, {**SEED_A, "format": fmt})
        r.post(ep_post, path, SEED_A, {"format": fmt})
    for ex in ("true", "1", "yes", "false", "0", "no", "TRUE", "maybe", ""):
        r.get(ep_get, path, {**SEED_B, "explain": ex})
        r.post(ep_post, path, SEED_B, {"explain": ex})
    for accept in (
        "text/plain",
        "text/plain, application/json",
        "application/json",
        "*/*",
        "text/*",
        "text/html",
        "text/plain;q=0.9",
    ):
        r.get(ep_get, path, SEED_C, headers=[("accept", accept)])
        r.post(ep_post, path, SEED_C, headers=[JSON_CT, ("accept", accept)])
    # Inline geometry in dotted query parameters.
    geo = {
        "model.geometry.num_layers": "32",
        "model.geometry.num_attention_heads": "32",
        "model.geometry.num_kv_heads": "8",
        "model.geometry.head_dim": "128",
    }
    r.get(ep_get, path, {**geo, "gpu": "h100-sxm-80gb"})
    r.get(ep_get, path, {**geo, "gpu": "h100-sxm-80gb", "format": "text"})
    r.get(ep_get, path, {**geo, "model.geometry.sliding_window": "4096", "gpu": "l4-24gb"})
    r.get(ep_get, path, {**geo, "model.geometry.layer_types": "full_attention,sliding_attention"})
    r.get(ep_get, path, {**geo, "model.name": "mine", "gpu": "a100-40gb", "context_tokens": "8K"})
    r.get(ep_get, path, {**geo, "model.geometry.num_layer": "3"})
    r.get(ep_get, path, {**geo, "model.geometry.num_layers": "0"})
    r.get(
        ep_get,
        path,
        {
            "model.geometry.num_layers": "61",
            "model.geometry.num_attention_heads": "128",
            "model.geometry.kv_lora_rank": "512",
            "model.geometry.qk_rope_head_dim": "64",
            "gpu": "h200-141gb",
            "tensor_parallel_size": "8",
        },
    )
    r.get(ep_get, path, {"model.hf_config.num_hidden_layers": "2"})
    r.get(ep_get, path, {"model.a.b.c.d": "1"})
    r.get("GET /v1/per-token", "/v1/per-token", {**geo, "kv_cache_dtype": "fp8"})


def batch(r: Recorder) -> None:
    ep, path = "POST /v1/budget/batch", "/v1/budget/batch"
    seeds = [SEED_A, SEED_B, SEED_C]
    r.post(ep, path, {"scenarios": seeds})
    r.post(ep, path, {"scenarios": seeds}, {"format": "text"})
    r.post(ep, path, {"scenarios": seeds}, {"explain": "true"})
    r.post(ep, path, {"scenarios": seeds}, headers=[JSON_CT, TEXT_ACCEPT])
    every = [{"model": m, "gpu": g, "context_tokens": 8192} for m in MODELS for g in GPUS[:4]]
    r.post(ep, path, {"scenarios": every})
    r.post(ep, path, {"scenarios": every[::5]}, {"format": "text"})
    mixed = [
        SEED_A,
        {"model": "llama-3-7b"},
        {"model": "llama-3-70b", "gpu": "h101"},
        {"model": "llama-3-70b", "tensor_paralel_size": 2},
        {"model": "llama-3-70b", "context_tokens": "8k"},
        {"model": "llama-3-70b", "context_tokens": True},
        {"model": "llama-3-70b", "context_tokens": 1.5},
        {"model": "llama-3-70b", "tensor_parallel_size": 3},
        {"model": "llama-3-70b", "engine": "vllm@9"},
        {"model": {}},
        {"model": {"hf_config": {"num_attention_heads": 8}}},
        42,
        "x",
        None,
        [],
        {},
        {"model": "llama-3-70b", "gpu": "h100-sxm-80gb", "kv_cache_dtype": "fp9"},
        SEED_B,
        SEED_B,
        {
            "model": "deepseek-v3",
            "gpu": "h200-141gb",
            "tensor_parallel_size": 8,
            "kv_cache_dtype": "fp8_ds_mla",
        },
        {
            "model": {"geometry": {"num_layers": 4, "num_attention_heads": 8, "head_dim": 64}},
            "gpu": "l4-24gb",
        },
        {"model": "llama-3-70b", "gpu": "h100-sxm-80gb", "context_tokens": 0},
    ]
    r.post(ep, path, {"scenarios": mixed})
    r.post(ep, path, {"scenarios": mixed}, {"format": "text"})
    r.post(ep, path, {"scenarios": mixed}, {"explain": "yes"})
    r.post(ep, path, {"scenarios": [SEED_A] * 1000})
    r.post(ep, path, {"scenarios": [SEED_A] * 1001})
    r.post(ep, path, {"scenarios": []})
    r.post(ep, path, {"scenarios": "x"})
    r.post(ep, path, {"scenario": seeds})
    r.post(ep, path, {"scenarios": seeds, "extra": 1})
    r.post(ep, path, seeds)
    r.post(ep, path, b"", headers=[JSON_CT])
    r.post(ep, path, b"   ", headers=[JSON_CT])
    r.post(ep, path, b'{"scenarios": [', headers=[JSON_CT])
    big = {"model": {"geometry": {"num_layers": 4096, "num_attention_heads": 8, "head_dim": 64}}}
    r.post(ep, path, {"scenarios": [big] * 150})
    r.post(ep, path, {"scenarios": [{**big, "gpu": "h100-sxm-80gb"}] * 2})
    for e in PROFILES:
        r.post(ep, path, {"scenarios": [{**s, "engine": e} for s in seeds]})
    r.post(
        ep,
        path,
        {
            "scenarios": [
                {"model": m, "gpu": "h100-sxm-80gb", "tensor_parallel_size": 8, "kv_cache_dtype": "fp8"}
                for m in MODELS
            ]
        },
        {"explain": "true"},
    )
    r.post(ep, path, {"scenarios": seeds}, {"format": "csv"})
    r.post(ep, path, {"scenarios": seeds}, {"explain": "maybe"})


def fleet(r: Recorder) -> None:
    ep_post, ep_get, path = "POST /v1/fleet", "GET /v1/fleet", "/v1/fleet"
    seed_b = {
        "model": "deepseek-v3",
        "workload": {"context_tokens": 32768},
        "weights_bytes": 625 * GIB,
        "fleet": [{"gpu": "pool-141gib", "count": 8}],
        "layouts": [{"tensor_parallel_size": 8}],
        "non_kv_bytes": 0,
    }
    three = FLEET_EXAMPLES["Llama-3-70B, 1,000 concurrent 8K requests, three GPU types with costs"]
    for body in (seed_b, three):
        r.post(ep_post, path, body)
        r.post(ep_post, path, body, {"format": "text"})
        r.post(ep_post, path, body, headers=[JSON_CT, TEXT_ACCEPT])
    for m in MODELS:
        r.post(
            ep_post,
            path,
            {
                "model": m,
                "workload": {"context_tokens": 16384},
                "target_concurrency": 64,
                "fleet": [
                    {"gpu": "h100-sxm-80gb", "count": 16, "cost_per_hour": 2.0},
                    {"gpu": "mi300x-192gb", "count": 8, "cost_per_hour": 3.0},
                ],
            },
        )
    for m in MODELS[::4]:
        r.post(
            ep_post,
            path,
            {
                "model": m,
                "workload": {
                    "mix": [{"context_tokens": 2048, "share": 3}, {"context_tokens": 32768, "share": 1}]
                },
                "fleet": [{"gpu": g, "count": 8} for g in GPUS[:6]],
                "target_concurrency": 200,
            },
            {"format": "text"},
        )
        r.post(
            ep_post,
            path,
            {
                "model": m,
                "workload": {"context_tokens": 8192},
                "fleet": [{"gpu": "h200-141gb", "count": 16, "gpus_per_node": 8}],
                "layouts": [
                    {"tensor_parallel_size": 8, "data_parallel_attention": True},
                    {"tensor_parallel_size": 4, "pipeline_parallel_size": 2},
                    {"tensor_parallel_size": 2},
                ],
                "kv_cache_dtype": "fp8",
                "engine": "vllm@0.33",
            },
        )
    base = {
        "model": "llama-3.1-70b",
        "workload": {"context_tokens": 8192},
        "fleet": [{"gpu": "h100-sxm-80gb", "count": 16, "cost_per_hour": 2.5}],
    }
    variants: list[dict[str, Any]] = [
        {"gpu_memory_utilization": 0.8},
        {"kv_cache_dtype": "fp8"},
        {"block_size": 32},
        {"weights_bytes": 140 * GIB},
        {"weight_dtype": "fp8"},
        {"non_kv_bytes": 0},
        {"cudagraph_bytes": GIB},
        {"enforce_eager": True},
        {"quantization": "awq"},
        {"max_num_batched_tokens": 4096},
        {"max_num_seqs": 64},
        {"async_scheduling": True},
        {"max_model_len": 16384},
        {"hybrid_kv_cache_manager": False},
        {"decode_context_parallel_size": 2},
        {"engine": "0.10"},
        {"engine": "0.19.0"},
        {"target_concurrency": 1},
        {"target_concurrency": 1 << 32},
        {"kv_cache_dtype_skip_layers": [0]},
        {
            "workload": {
                "mix": [{"context_tokens": 1024, "share": 1e9}, {"context_tokens": 131072, "share": 1}]
            }
        },
        {"fleet": [{"gpu": "h100-sxm-80gb", "count": 1000000}]},
        {"fleet": [{"gpu": "l4-24gb", "count": 1}]},
        {"layouts": [{"tensor_parallel_size": 3}]},
        {"layouts": [{"pipeline_parallel_size": 16}]},
        # errors
        {"fleet": []},
        {"fleet": [{"gpu": "h101", "count": 8}]},
        {"fleet": [{"gpu": "h100-sxm-80gb", "count": 0}]},
        {"fleet": [{"gpu": "h100-sxm-80gb", "count": 8, "gpus_per_node": 4}]},
        {"workload": {}},
        {"workload": {"context_tokens": 8192, "mix": [{"context_tokens": 1, "share": 1}]}},
        {"workload": {"mix": []}},
        {"workload": {"mix": [{"context_tokens": 1, "share": 0}]}},
        {"fleet": [{"gpu": "h100-sxm-80gb", "count": 1}] * 65},
        {"layouts": []},
        {"fleet": [{"gpu": "h100-sxm-80gb", "count": 8, "cost_per_hour": -1}]},
        {"fleet": [{"gpu": "h100-sxm-80gb", "count": 8, "cost": 1}]},
        {"target_concurrency": 0},
        {"target_concurrency": True},
        {"model": "nope"},
        {"model": None},
        {"workload": None},
        {"layouts": [{"tensor_parallel_size": 8, "data_parallel_attention": "yes"}]},
    ]
    for v in variants:
        r.post(ep_post, path, {**base, **v})
    r.post(ep_post, path, {k: v for k, v in base.items() if k != "fleet"})
    r.post(
        ep_post,
        path,
        {
            **base,
            "fleet": [{"gpu": g, "count": 64, "cost_per_hour": 1.0 + i / 4} for i, g in enumerate(GPUS)],
            "target_concurrency": 5000,
        },
    )
    for m in ("llama-3-70b", "deepseek-v3", "qwen3-32b", "gemma-3-27b", "gpt-oss-120b", "qwen3-next-80b-a3b"):
        for g in ("h100-sxm-80gb", "h200-141gb", "a100-40gb", "l4-24gb"):
            r.get(ep_get, path, {"model": m, "gpu": g, "count": 8, "context_tokens": 8192})
        r.get(ep_get, path, {"model": m, "gpu": "h100-sxm-80gb", "context_tokens": "32K", "format": "text"})
        r.get(
            ep_get,
            path,
            {
                "model": m,
                "gpu": "b200-180gb",
                "count": 16,
                "context_tokens": 8192,
                "target_concurrency": 500,
                "cost_per_hour": 5.5,
                "kv_cache_dtype": "fp8",
            },
        )
    for extra in (
        {"gpus_per_node": 4},
        {"gpu_memory_utilization": 0.7},
        {"weights_bytes": "140G"},
        {"weight_dtype": "int4"},
        {"block_size": 128},
        {"engine": "vllm@0.10"},
        {"non_kv_bytes": "2G"},
        {"cudagraph_bytes": 0},
        {"enforce_eager": "true"},
        {"enforce_eager": "1"},
        {"count": 0},
        {"count": "8.5"},
        {"context_tokens": None},
        {"gpu": None},
        {"model": None},
        {"layouts": "x"},
        {"explain": "true"},
        {"format": "csv"},
        {"workload.context_tokens": 5},
    ):
        q = {"model": "llama-3-70b", "gpu": "h100-sxm-80gb", "count": 8, "context_tokens": 8192, **extra}
        r.get(ep_get, path, {k: v for k, v in q.items() if v is not None})


def sweep(r: Recorder) -> None:
    ep, path = "GET /v1/sweep", "/v1/sweep"
    axes = ("context_tokens", "gpu_memory_utilization", "kv_cache_dtype", "tensor_parallel_size")
    for m in MODELS:
        for vary in axes:
            r.get(ep, path, {"model": m, "gpu": "h100-sxm-80gb", "tensor_parallel_size": 4, "vary": vary})
        r.get(ep, path, {"model": m, "gpu": "h200-141gb", "vary": "context_tokens", "format": "csv"})
    for m in MODELS[::5]:
        for vary in axes:
            for fmt in ("text", "csv", "json"):
                r.get(
                    ep,
                    path,
                    {"model": m, "gpu": "b200-180gb", "tensor_parallel_size": 2, "vary": vary, "format": fmt},
                )
            r.get(ep, path, {"model": m, "gpu": "b200-180gb", "vary": vary}, headers=[TEXT_ACCEPT])
    values = [
        ("context_tokens", "1024,4096,8192"),
        ("context_tokens", "8k,32K,1M"),
        ("context_tokens", "1"),
        ("context_tokens", " 1024 , ,2048,"),
        ("context_tokens", "abc"),
        ("context_tokens", "0"),
        ("context_tokens", ",".join(str(1024 * i) for i in range(1, 201))),
        ("context_tokens", ",".join(str(1024 * i) for i in range(1, 202))),
        ("tensor_parallel_size", "1,2,4,8"),
        ("tensor_parallel_size", "1,3"),
        ("tensor_parallel_size", "2K"),
        ("gpu_memory_utilization", "0.5,0.9,1.0"),
        ("gpu_memory_utilization", "0.5,nan"),
        ("gpu_memory_utilization", "0,1.5"),
        ("gpu_memory_utilization", "inf"),
        ("kv_cache_dtype", "auto,fp8,fp8_e5m2,nvfp4"),
        ("kv_cache_dtype", "fp9"),
        ("kv_cache_dtype", ""),
        ("colour", "red"),
        ("", ""),
    ]
    for vary, vals in values:
        q = {
            "model": "llama-3-70b",
            "gpu": "h100-sxm-80gb",
            "tensor_parallel_size": 4,
            "vary": vary,
            "values": vals,
        }
        r.get(ep, path, q)
        r.get(ep, path, {**q, "format": "csv"})
    r.get(
        ep,
        path,
        {"model": "llama-3-70b", "gpu": "h100-sxm-80gb", "vary": "context_tokens", "values": "1," * 2000},
    )
    for extra in (
        {"vary": None},
        {"model": None},
        {"gpu": None},
        {"format": "xml"},
        {"contxt_tokens": 5},
        {"engine": "0.10"},
        {"kv_cache_dtype": "fp8"},
        {"explain": "true"},
        {"weights_bytes": "130G", "non_kv_bytes": "0"},
        {"model": "nope"},
    ):
        q = {"model": "llama-3-70b", "gpu": "h100-sxm-80gb", "vary": "context_tokens", **extra}
        r.get(ep, path, {k: v for k, v in q.items() if v is not None})
    r.post("POST /v1/sweep", path, {"model": "llama-3-70b", "vary": "context_tokens"})


def simulate(r: Recorder) -> None:
    ep, path = "POST /v1/simulate", "/v1/simulate"
    story = SIMULATE_EXAMPLES["the seed's block-table story: two requests sharing two prefix blocks"]
    r.post(ep, path, story)
    r.post(ep, path, story, {"format": "text"})
    r.post(ep, path, story, headers=[JSON_CT, TEXT_ACCEPT])
    r.post(ep, path, {**story, "snapshot_steps": [0, 1, 5, 100]})
    r.post(ep, path, {**story, "enable_prefix_caching": False})
    r.post(ep, path, {**story, "scheduling_policy": "priority"})
    r.post(ep, path, {**story, "max_num_seqs": 1, "max_num_batched_tokens": 64}, {"format": "text"})
    prio = {
        "num_blocks": 24,
        "block_size": 16,
        "scheduling_policy": "priority",
        "workload": {
            "requests": [
                {
                    "arrival_step": i % 3,
                    "prompt_tokens": 40 + 7 * i,
                    "output_tokens": 8 + i,
                    "priority": (i * 5) % 7 - 3,
                }
                for i in range(12)
            ]
        },
    }
    r.post(ep, path, prio)
    r.post(ep, path, {**prio, "snapshot_steps": [2, 4]}, {"format": "text"})
    gen = generator(60, 0.5, lognormal(300, 0.5), lognormal(60, 0.5), seed=1, system_prompt_share=0.5,
                    system_prompt_tokens=256)  # fmt: skip
    models = [
        ("llama-3-70b", "h100-sxm-80gb", 2),
        ("llama-3.1-8b", "l4-24gb", 1),
        ("qwen3-8b", "a100-40gb", 1),
        ("deepseek-v2-lite", "h100-sxm-80gb", 1),
        ("mixtral-8x7b", "h200-141gb", 2),
        ("gpt-oss-20b", "l40s-48gb", 1),
        ("llama-3.1-405b", "h100-sxm-80gb", 8),
    ]
    for m, g, tp in models:
        body = {"model": m, "gpu": g, "tensor_parallel_size": tp, "workload": {"generator": gen}}
        r.post(ep, path, body)
        r.post(ep, path, body, {"format": "text"})
        r.post(ep, path, {**body, "kv_cache_memory_bytes": 64 << 20, "max_num_seqs": 8})
    pool = {"num_blocks": 200, "block_size": 16}
    gens: list[dict[str, Any]] = [
        {"count": 50, "arrival_rate": 1, "prompt": {"value": 100}, "output": {"value": 20}},
        {"count": 50, "arrival_rate": 1, "prompt": {"kind": "fixed", "value": 100}, "output": {"value": 20}},
        generator(80, 2, uniform(10, 300), uniform(1, 50), seed=7),
        generator(80, 0.1, lognormal(200, 1), lognormal(30, 0), seed=3),
        generator(
            30,
            0.5,
            {"value": 64},
            {"value": 16},
            seed=2,
            conversations={"share": 0.5, "turns": 3, "user_tokens": 32, "think_steps": 2},
        ),
        {"count": 30, "arrival_rate": 1e6, "prompt": {"value": 64}, "output": {"value": 16}},
        generator(
            40,
            1,
            {"value": 50},
            {"value": 5},
            seed=4611686018427387904,
            system_prompt_share=1,
            system_prompt_tokens=48,
        ),
        # errors
        {"count": 0, "arrival_rate": 1, "prompt": {"value": 1}, "output": {"value": 1}},
        {"count": 10, "arrival_rate": 0, "prompt": {"value": 1}, "output": {"value": 1}},
        {
            "count": 10,
            "arrival_rate": 1,
            "prompt": {"kind": "uniform", "low": 10, "high": 5},
            "output": {"value": 1},
        },
        {"count": 10, "arrival_rate": 1, "prompt": {"kind": "gamma", "value": 1}, "output": {"value": 1}},
        {
            "count": 10,
            "arrival_rate": 1,
            "prompt": {"kind": "lognormal", "mean": 10, "sigma": 6},
            "output": {"value": 1},
        },
        {"count": 10, "arrival_rate": 1, "prompt": {"value": 1}},
        {"count": 10, "arrival_rate": 1, "prompt": {"value": 1}, "output": {"value": 1}, "seed": -1},
        {"count": 10, "arrival_rate": 1, "prompt": {"value": 1}, "output": {"value": 1}, "sead": 1},
        {
            "count": 10,
            "arrival_rate": 1,
            "prompt": {"value": 1},
            "output": {"value": 1},
            "conversations": {"share": 2, "turns": 3, "user_tokens": 1},
        },
        {
            "count": 10,
            "arrival_rate": 1,
            "prompt": {"value": 1},
            "output": {"value": 1},
            "conversations": {"share": 0.5, "turns": 65, "user_tokens": 1},
        },
        {"count": 100000, "arrival_rate": 1, "prompt": {"value": 16000000}, "output": {"value": 10}},
        {"count": 10, "arrival_rate": 1, "prompt": {"value": 5000}, "output": {"value": 1}},
        {"count": 10, "arrival_rate": True, "prompt": {"value": 1}, "output": {"value": 1}},
        {"count": 10.5, "arrival_rate": 1, "prompt": {"value": 1}, "output": {"value": 1}},
    ]
    for g in gens:
        r.post(ep, path, {**pool, "workload": {"generator": g}})
    r.post(ep, path, {**pool, "workload": {"generator": gens[2]}}, {"format": "text"})
    bad: list[dict[str, Any]] = [
        {**pool, "workload": {}},
        {**pool, "workload": {"requests": [], "generator": gens[0]}},
        {**pool, "workload": {"requests": [{"prompt_tokens": 5, "output_tokens": 2}], "generator": gens[0]}},
        {**pool, "workload": {"requests": [{"prompt_tokens": -3, "output_tokens": 2}]}},
        {**pool, "workload": {"requests": [{"prompt_tokens": 50000, "output_tokens": 2}]}},
        {**pool, "workload": {"requests": [{"prompt_tokens": 5, "output_token": 2}]}},
        {**pool, "workload": {"requests": [{"prompt_tokens": 5, "output_tokens": 2, "priority": 1 << 21}]}},
        {**pool, "workload": {"requests": [{"prompt_tokens": 5, "output_tokens": 2, "prefix_tokens": 9}]}},
        {"workload": {"requests": [{"prompt_tokens": 5, "output_tokens": 2}]}},
        {
            "num_blocks": 1,
            "block_size": 16,
            "workload": {"requests": [{"prompt_tokens": 5, "output_tokens": 2}]},
        },
        {"num_blocks": 20, "workload": {"requests": [{"prompt_tokens": 5, "output_tokens": 2}]}},
        {
            "model": "gemma-3-27b",
            "gpu": "h100-sxm-80gb",
            "workload": {"requests": [{"prompt_tokens": 5, "output_tokens": 2}]},
        },
        {
            "model": "qwen3-next-80b-a3b",
            "gpu": "h200-141gb",
            "tensor_parallel_size": 4,
            "workload": {"requests": [{"prompt_tokens": 5, "output_tokens": 2}]},
        },
        {
            "model": "nope",
            "gpu": "h100-sxm-80gb",
            "workload": {"requests": [{"prompt_tokens": 5, "output_tokens": 2}]},
        },
        {"model": "llama-3-8b", "workload": {"requests": [{"prompt_tokens": 5, "output_tokens": 2}]}},
        {
            **pool,
            "scheduling_policy": "lifo",
            "workload": {"requests": [{"prompt_tokens": 5, "output_tokens": 2}]},
        },
        {
            **pool,
            "snapshot_steps": [-1],
            "workload": {"requests": [{"prompt_tokens": 5, "output_tokens": 2}]},
        },
        {**pool, "workload": {"requests": [{"prompt_tokens": 5, "output_tokens": 2}]}, "extra": 1},
        {**pool, "workload": {"requests": [{"prompt_tokens": 5, "output_tokens": 2}] * 20001}},
        {**pool, "num_blocks": 1 << 40, "workload": {"requests": [{"prompt_tokens": 5, "output_tokens": 2}]}},
        {
            **pool,
            "workload": {"requests": [{"prompt_tokens": 5, "output_tokens": 2}]},
            "kv_cache_dtype": "fp8",
            "engine": "0.10",
        },
    ]
    for b in bad:
        r.post(ep, path, b)
    r.post(ep, path, b"", headers=[JSON_CT])
    r.post(ep, path, b"{", headers=[JSON_CT])
    r.post(ep, path, b"[]", headers=[JSON_CT])
    r.post(ep, path, b'{"workload": {"generator": {"prompt": 5}}}', headers=[JSON_CT])
    r.post(ep, path, story, {"format": "csv"})


def reconcile(r: Recorder) -> None:
    ep, path = "POST /v1/reconcile", "/v1/reconcile"
    configs = config_index()
    from tests.calibration.memory import QUANT_CONFIGS  # the quantization configs the report uses

    for i, entry in enumerate(memlogs()):
        text = "\n".join(entry["source"]["quote"].split(" | "))
        r.post(ep, path, text.encode(), headers=[("content-type", "text/plain")])
        if i % 4 == 0:
            r.post(ep, path, text.encode(), {"format": "text"}, headers=[])
        cfg = configs.get(entry["model"])
        version = entry["vllm_version"].split()[0].lstrip("~")
        if cfg is not None:
            quant = next(
                (q for k, q in QUANT_CONFIGS.items() if (entry["quantization"] or "").startswith(k)), None
            )
            if quant is not None and "quantization_config" not in cfg:
                cfg = {**cfg, "quantization_config": quant}
            overrides: dict[str, Any] = {"model": {"hf_config": cfg, "name": entry["model"][:200]}}
            v = re.match(r"(\d+)\.(\d+)(\.\d+)?", version)
            if v and (int(v[1]), int(v[2])) >= (0, 9):  # the profiles start at vLLM 0.9
                overrides["engine"] = v[0]
            r.post(ep, path, {"log": text, "overrides": overrides})
            if i % 3 == 0:
                r.post(
                    ep,
                    path,
                    {
                        "log": text,
                        "overrides": {**overrides, "target_concurrency": 16, "context_tokens": 4096},
                    },
                    {"format": "text"},
                )
        else:
            r.post(ep, path, {"log": text, "overrides": {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb"}})
    log = (RECONCILE_DATA / "engine-0.33-tp2.log").read_text()
    metrics = (RECONCILE_DATA / "metrics-0.33.txt").read_text()
    offline = {"model": "llama-3.1-70b"}
    for q in ("", "format=text", "format=json"):
        r.post(ep, path, {"log": log, "overrides": offline}, q)
        r.post(ep, path, {"log": log, "metrics": metrics, "overrides": offline}, q)
    for o in (
        {**offline, "target_concurrency": 4},
        {**offline, "context_tokens": 1024},
        {**offline, "gpu": "h200-141gb"},
        {**offline, "engine": "0.10"},
        {**offline, "engine": "vllm@0.19"},
        {"model": "llama-3-70b"},
        {"model": "deepseek-v3"},
        {"model": "nope"},
        {"model": ""},
        {"gpu": "h101"},
        {"engine": "vllm@9"},
        {"target_concurrency": 0},
        {"mdoel": "x"},
        {"model": {"hf_config": json.loads((PRESET_DIR / "llama-3.1-70b.json").read_text())["config"]}},
    ):
        r.post(ep, path, {"log": log, "overrides": o})
    r.post(ep, path, log.encode(), headers=[("content-type", "text/plain")])
    r.post(ep, path, log.encode(), headers=[("content-type", "application/octet-stream")])
    r.post(ep, path, log.encode(), headers=[("content-type", "application/x-www-form-urlencoded")])
    r.post(ep, path, log.encode(), headers=[("content-type", "text/plain; charset=utf-8")])
    r.post(ep, path, log.encode(), headers=[("content-type", "application/json")])
    r.post(ep, path, log.encode(), headers=[("content-type", "text/html")])
    r.post(ep, path, log.encode(), headers=[("content-type", "text/plain"), ("content-encoding", "gzip")])
    local = b"vllm serve /models/llama --tensor-parallel-size 2\nAvailable KV cache memory: 2.0 GiB\n"
    r.post(ep, path, local, headers=[("content-type", "text/plain")])
    r.post(ep, path, {"log": local.decode(), "overrides": {"model": "llama-3-70b"}})
    for body, ctype in (
        (b"\x00\x01\x02GiB" * 100, "text/plain"),
        (b"Available KV cache memory: \xff\xfe GiB", "text/plain"),
        (b"hello\nworld\n", "text/plain"),
        (b"   ", "text/plain"),
        (b"", "text/plain"),
        (b'{"log": ""}', "application/json"),
        (b'{"log": 5}', "application/json"),
        (b'{"lgo": "x"}', "application/json"),
        (b'{"log": "x"', "application/json"),
        (b'{"log": "x"', "text/plain"),
        (b"{not json", "text/plain"),
        (b'{"log": "x", "metrics": 5}', "application/json"),
        (b'{"log": "INFO Available KV cache memory: 2.0 GiB", "overrides": []}', "application/json"),
        (b"Available KV cache memory: 2.0 GiB\n", "text/plain"),
        (b"x" * ((8 << 20) + 1), "text/plain"),
    ):
        r.post(ep, path, body, headers=[("content-type", ctype)])
    r.post(ep, path, b"x" * ((8 << 20) + 1), {"format": "text"}, headers=[("content-type", "text/plain")])
    r.post(ep, path, {"log": "x", "metrics": "y" * ((1 << 20) + 1)})
    r.post(ep, path, b"x" * ((12 << 20) + 1024), headers=[("content-type", "text/plain")])


def hub(r: Recorder) -> None:
    """Hub ids read from the loopback fake Hub, before the token (gated repos: 403)."""
    post, pt = "POST /v1/budget", "POST /v1/per-token"
    h100 = {"gpu": "h100-sxm-80gb"}
    for repo in (
        repos.QWEN3_8B_BASE,
        repos.QWEN3_SINGLE,
        repos.FP8_DYNAMIC,
        repos.W4A16,
        repos.AWQ,
        repos.GPT_OSS,
        repos.QWEN25_VL,
    ):
        rid = repo.repo_id
        r.post(post, "/v1/budget", {"model": rid, **h100})
        r.post(post, "/v1/budget", {"model": rid, **h100, "kv_cache_memory_bytes": 20 * GIB})
        r.post(post, "/v1/budget", {"model": f"{rid}@{repo.sha}", **h100}, {"explain": "true"})
        r.post(post, "/v1/budget", {"model": f"{rid}@{repo.sha}", **h100}, {"format": "text"})
        r.post(post, "/v1/budget", {"model": rid, **h100, "weight_dtype": "bfloat16"})
        r.post(pt, "/v1/per-token", {"model": rid, "kv_cache_dtype": "fp8"})
        r.get("GET /v1/per-token", "/v1/per-token", f"model={rid}&tensor_parallel_size=2")
        r.get("GET /v1/budget", "/v1/budget", f"model={quote(rid, safe='')}&gpu=h200-141gb&format=text")
        r.get("GET /v1/budget", "/v1/budget", f"model={rid}@{repo.sha}&gpu=h200-141gb")
        r.get("GET /v1/models/{model_id}", f"/v1/models/{rid}")
        r.get("GET /v1/models/{model_id}", f"/v1/models/{rid}@{repo.sha}", {"format": "text"})
        r.post("POST /v1/models/resolve", "/v1/models/resolve", rid)
        r.post("POST /v1/models/resolve", "/v1/models/resolve", f"{rid}@main")
    r.get("GET /v1/models/{model_id}", f"/v1/models/{repos.QWEN3_8B_BASE.repo_id}@main")
    for bad in (
        repos.GATED.repo_id,
        repos.PRIVATE.repo_id,
        repos.UNKNOWN_REPO_ID,
        repos.OVERSIZED_CONFIG.repo_id,
        repos.OVERSIZED_HEADER.repo_id,
        f"{repos.QWEN3_8B_BASE.repo_id}@no-such-branch",
        "org/name/extra",
        "Qwen/Qwen3-8B",
        "openai/gpt-oss-20b",
        "Qwen/Qwen3-8B@main",
        "a/b",
        "-bad-/x",
        "org/" + "n" * 200,
    ):
        r.post(post, "/v1/budget", {"model": bad, **h100})
        r.get("GET /v1/models/{model_id}", f"/v1/models/{bad}")
        r.post("POST /v1/models/resolve", "/v1/models/resolve", bad)
    r.post("POST /v1/models/resolve", "/v1/models/resolve", "llama-3-70b")
    r.post("POST /v1/models/resolve", "/v1/models/resolve", "")
    rids = [
        repos.QWEN3_8B_BASE.repo_id,
        repos.FP8_DYNAMIC.repo_id,
        repos.GATED.repo_id,
        repos.UNKNOWN_REPO_ID,
        "llama-3-70b",
        "x/y/z",
    ]
    r.post("POST /v1/budget/batch", "/v1/budget/batch", {"scenarios": [{"model": m, **h100} for m in rids]})
    r.post(
        "POST /v1/budget/batch",
        "/v1/budget/batch",
        {"scenarios": [{"model": m.replace("/", "\\u002f"), **h100} for m in rids[:2]]},
    )
    r.post(
        "POST /v1/fleet",
        "/v1/fleet",
        {
            "model": repos.W4A16.repo_id,
            "workload": {"context_tokens": 8192},
            "fleet": [{"gpu": "l4-24gb", "count": 4}],
        },
    )
    r.get("GET /v1/fleet", "/v1/fleet", f"model={repos.AWQ.repo_id}&gpu=l40s-48gb&context_tokens=8192")
    r.get(
        "GET /v1/sweep",
        "/v1/sweep",
        f"model={repos.FP8_DYNAMIC.repo_id}&gpu=h100-sxm-80gb&vary=kv_cache_dtype",
    )
    r.post(
        "POST /v1/simulate",
        "/v1/simulate",
        {
            "model": repos.QWEN3_SINGLE.repo_id,
            "gpu": "l4-24gb",
            "kv_cache_memory_bytes": 1 << 28,
            "workload": {"requests": [{"prompt_tokens": 500, "output_tokens": 50}] * 4},
        },
    )
    log = (RECONCILE_DATA / "engine-0.33-tp2.log").read_text()
    r.post(
        "POST /v1/reconcile",
        "/v1/reconcile",
        {"log": log, "overrides": {"model": repos.QWEN3_8B_BASE.repo_id}},
    )
    r.post("POST /v1/reconcile", "/v1/reconcile", {"log": log, "overrides": {"model": repos.UNKNOWN_REPO_ID}})


def hub_with_token(r: Recorder) -> None:
    r.phase = "token"
    for m in (
        repos.GATED.repo_id,
        f"{repos.GATED.repo_id}@{repos.GATED.sha}",
        repos.PRIVATE.repo_id,
        repos.QWEN3_8B_BASE.repo_id,
    ):
        r.post("POST /v1/budget", "/v1/budget", {"model": m, "gpu": "h100-sxm-80gb"})
        r.get("GET /v1/models/{model_id}", f"/v1/models/{m}")


def hub_offline(r: Recorder) -> None:
    """The Hub client reset in offline mode: what was fetched answers from the disk cache. (The
    scenarios are ones no other test asks: the process's answer cache keeps a pinned commit's
    answer, `from_cache: false` included, and would answer them from it.)"""
    r.phase = "offline"
    for m in (
        repos.QWEN3_8B_BASE.repo_id,
        f"{repos.FP8_DYNAMIC.repo_id}@{repos.FP8_DYNAMIC.sha}",
        repos.GATED.repo_id,
        "kvplan-test/never-fetched",
        "Qwen/Qwen3-8B",
        repos.UNKNOWN_REPO_ID,
    ):
        r.post("POST /v1/budget", "/v1/budget", {"model": m, "gpu": "h100-sxm-80gb", "context_tokens": 7777})
        r.get("GET /v1/models/{model_id}", f"/v1/models/{m}")
        r.get("GET /v1/budget", "/v1/budget", f"model={m}&gpu=h100-sxm-80gb&context_tokens=7777&format=text")


def hub_down(r: Recorder) -> None:
    """The fake Hub stopped: a fetched model from the disk cache, any other a 503."""
    r.phase = "down"
    for m in (
        repos.W4A16.repo_id,
        "kvplan-test/never-fetched",
        f"{repos.AWQ.repo_id}@{repos.AWQ.sha}",
        "llama-3-70b",
    ):
        body = {"model": m, "gpu": "h100-sxm-80gb", "context_tokens": 7777}
        r.post("POST /v1/budget", "/v1/budget", body)
        r.post("POST /v1/budget", "/v1/budget", body, {"format": "text"})
        r.get("GET /v1/models/{model_id}", f"/v1/models/{m}")


def bad_input(r: Recorder) -> None:
    """Every kind of bad body, on every endpoint that takes one."""
    bodies: dict[str, tuple[str, dict[str, Any]]] = {
        "/v1/budget": ("POST /v1/budget", SEED_A),
        "/v1/per-token": ("POST /v1/per-token", {"model": "llama-3-70b", "context_tokens": 8192}),
        "/v1/fleet": (
            "POST /v1/fleet",
            {
                "model": "llama-3-70b",
                "workload": {"context_tokens": 8192},
                "fleet": [{"gpu": "h100-sxm-80gb", "count": 8}],
            },
        ),
        "/v1/simulate": (
            "POST /v1/simulate",
            {
                "num_blocks": 20,
                "block_size": 16,
                "workload": {"requests": [{"prompt_tokens": 5, "output_tokens": 2}]},
            },
        ),
    }
    wrong: list[tuple[str, Any]] = [
        ("context_tokens", "8192"),
        ("context_tokens", 8192.5),
        ("context_tokens", 8192.0),
        ("context_tokens", True),
        ("context_tokens", False),
        ("context_tokens", None),
        ("context_tokens", -8192),
        ("context_tokens", 0),
        ("context_tokens", 1 << 40),
        ("context_tokens", (1 << 40) + 1),
        ("context_tokens", 1 << 64),
        ("context_tokens", [8192]),
        ("context_tokens", {"v": 1}),
        ("gpu_memory_utilization", "0.9"),
        ("gpu_memory_utilization", 1.5),
        ("gpu_memory_utilization", 0),
        ("gpu_memory_utilization", -0.5),
        ("gpu_memory_utilization", True),
        ("tensor_parallel_size", [8]),
        ("tensor_parallel_size", 0),
        ("tensor_parallel_size", 1025),
        ("tensor_parallel_size", 2.0),
        ("tensor_parallel_size", True),
        ("tensor_parallel_size", "2"),
        ("pipeline_parallel_size", -1),
        ("decode_context_parallel_size", 0),
        ("model", 70),
        ("model", None),
        ("model", ""),
        ("model", "x" * 201),
        ("model", ["llama-3-70b"]),
        ("model", {}),
        ("model", {"hf_config": {}, "geometry": {"num_layers": 1, "num_attention_heads": 1}}),
        ("model", {"hf_config": {"num_attention_heads": 8}}),
        ("model", {"hf_config": "x"}),
        ("model", {"geometry": {"num_layer": 3}}),
        ("model", {"geometry": {"num_layers": 0, "num_attention_heads": 1}}),
        ("model", {"geometry": {"num_layers": 4097, "num_attention_heads": 1}}),
        ("model", {"nam": "x"}),
        (
            "model",
            {
                "geometry": {
                    "num_layers": 2,
                    "num_attention_heads": 4,
                    "head_dim": 64,
                    "layer_types": ["x", "y"],
                }
            },
        ),
        ("model", {"geometry": {"num_layers": 2, "num_attention_heads": 4, "head_dim": 64, "dtype": "int8"}}),
        ("model", "llama-3-7b"),
        ("model", "LLAMA-3-70B"),
        ("model", "meta-llama/Meta-Llama-3-70B"),
        ("kv_cache_dtype", 8),
        ("kv_cache_dtype", "fp9"),
        ("kv_cache_dtype", "FP8"),
        ("kv_cache_dtype", ""),
        ("kv_cache_dtype_skip_layers", [4096]),
        ("kv_cache_dtype_skip_layers", ["sliding"]),
        ("kv_cache_dtype_skip_layers", "0,1"),
        ("block_size", {"x": 1}),
        ("block_size", 0),
        ("block_size", 65537),
        ("weights_bytes", -1),
        ("weights_bytes", 1 << 60),
        ("weights_bytes", (1 << 60) + 1),
        ("weights_bytes", 1e10),
        ("gpu_memory_bytes", -1),
        ("gpu_memory_bytes", 0),
        ("gpu", "h101"),
        ("gpu", "h100"),
        ("gpu", 100),
        ("gpu", ""),
        ("engine", "vllm@9"),
        ("engine", "vllm 0.19"),
        ("engine", "x" * 65),
        ("engine", ""),
        ("engine", 0.19),
        ("non_kv_bytes", -1),
        ("cudagraph_bytes", -5),
        ("enforce_eager", 1),
        ("enforce_eager", "true"),
        ("quantization", "int3"),
        ("quantization", "FP8"),
        ("weight_dtype", "int2"),
        ("max_num_seqs", 0),
        ("max_num_seqs", 65537),
        ("max_num_batched_tokens", 0),
        ("async_scheduling", "no"),
        ("max_model_len", 0),
        ("target_concurrency", 0),
        ("target_concurrency", (1 << 32) + 1),
        ("hybrid_kv_cache_manager", None),
        ("kv_offloading_bytes", -1),
        ("num_gpu_blocks_override", 0),
        ("kv_cache_memory_bytes", -1),
        ("contxt_tokens", 8192),
        ("tensor_paralel_size", 2),
        ("gpu_memory_utilisation", 0.9),
        ("zzzz", 1),
        ("context`_tokens", 1),
        ("Context_Tokens", 1),
        ("workload", 5),
        ("fleet", None),
        ("num_blocks", 1),
        ("vary", "x"),
        ("log", "x"),
    ]
    for path, (ep, body) in bodies.items():
        for field, value in wrong:
            r.post(ep, path, {**body, field: value})
        r.post(ep, path, {**body, "tensor_parallel_size": 3}, {"format": "text"})
        r.post(ep, path, {**body, "contxt_tokens": 1}, headers=[JSON_CT, TEXT_ACCEPT])
    every_body = {
        **bodies,
        "/v1/models/resolve": ("POST /v1/models/resolve", {"num_hidden_layers": 2}),
        "/v1/budget/batch": ("POST /v1/budget/batch", {"scenarios": [SEED_A]}),
        "/v1/reconcile": ("POST /v1/reconcile", {"log": "Available KV cache memory: 2.0 GiB"}),
    }
    for path, (ep, body) in every_body.items():
        text = json.dumps(body)
        raw_bodies = [
            b"",
            b"   ",
            b"\n",
            b"{",
            b'{"model": "llama-3-70b",',
            b"[]",
            b"null",
            b"42",
            b'"llama-3-70b"',
            b"{'model': 'llama-3-70b'}",
            b"\xff\xfe",
            b"\x00",
            text.encode() + b"garbage",
            text.encode() * 2,
            text[:-1].encode() + b', "gpu_memory_bytes": 1' + b"0" * 400 + b"}",
            text[:-1].encode() + b', "gpu_memory_utilization": NaN}',
            text[:-1].encode() + b', "gpu_memory_utilization": Infinity}',
            text[:-1].encode() + b', "gpu_memory_utilization": -Infinity}',
            text[:-1].encode() + b', "gpu_memory_utilization": 1e400}',
            text[:-1].encode() + b', "model": "llama-3-8b"}',
            b'{"model": {"hf_config": {"a": ' + b"[" * 50_000 + b"]" * 50_000 + b"}}}",
            b'{"model": "llama-3-70b", "gpu": "h100-sxm-80gb", "pad": "' + b"x" * (2 << 20) + b'"}',
            b"\xef\xbb\xbf" + text.encode(),
            text.encode().replace(b"llama", b"ll\\u0061ma"),
        ]
        for raw in raw_bodies:
            r.post(ep, path, raw, headers=[JSON_CT])
        r.post(ep, path, b"{", {"format": "text"}, headers=[JSON_CT])
        for ctype in (
            *NOT_JSON,
            "application/json; charset=utf-8",
            "Application/JSON; Charset=UTF-8",
            "application/problem+json",
            "application/json; charset=latin-1",
            None,
        ):
            r.post(ep, path, text.encode(), headers=[] if ctype is None else [("content-type", ctype)])
        r.post(ep, path, text.encode(), headers=[JSON_CT, ("content-encoding", "gzip")])
        r.post(ep, path, text.encode(), headers=[JSON_CT, ("content-encoding", "identity")])
    # Bad query strings on the GET routes.
    gets = {
        "/v1/budget": {"model": "llama-3-70b", "gpu": "h100-sxm-80gb"},
        "/v1/per-token": {"model": "llama-3-70b"},
        "/v1/fleet": {"model": "llama-3-70b", "gpu": "h100-sxm-80gb", "context_tokens": "8192"},
        "/v1/sweep": {"model": "llama-3-70b", "gpu": "h100-sxm-80gb", "vary": "context_tokens"},
    }
    bad_q: list[dict[str, str]] = [
        {"gpu_memory_utilization": v} for v in ("nan", "inf", "-1", "1e400", "abc", "", "0.9.1")
    ] + [
        {"context_tokens": "8192.0"},
        {"context_tokens": "true"},
        {"context_tokens": "-5"},
        {"tensor_parallel_size": "3"},
        {"tensor_parallel_size": "2.0"},
        {"tensor_parallel_size": ""},
        {"context_token": "8192"},
        {"gpu": "h101"},
        {"model": "llama-3-7b"},
        {"model": ""},
        {"kv_cache_dtype": "fp9"},
        {"enforce_eager": "maybe"},
        {"engine": "vllm@9"},
        {"weights_bytes": "1.5G"},
        {"weights_bytes": "1e9"},
        {"block_size": "16k"},
        {"kv_cache_dtype_skip_layers": "0,x"},
        {"kv_cache_dtype_skip_layers": ""},
        {"format": "xml"},
        {"explain": "maybe"},
        {"width": "10"},
        {"model.geometry": "x"},
    ]
    for path, q in gets.items():
        for b in bad_q:
            r.get(f"GET {path}", path, {**q, **b})
        r.get(f"GET {path}", path, "&".join(f"k{i}=1" for i in range(257)))
        r.get(f"GET {path}", path, qs(q) + "&model=llama-3-8b")
        r.get(f"GET {path}", path, qs(q) + "&%ff=1")
        r.get(f"GET {path}", path, qs(q) + "&context_tokens")
        r.get(f"GET {path}", path, "")
        r.get(f"GET {path}", path, {**q, "context_token": "8192", "format": "text"})


def http(r: Recorder) -> None:
    """Routes, methods and HTTP itself."""
    for path in (
        "/v1/nope",
        "/v2/budget",
        "/v1/budget/",
        "/v1/budget/batch/x",
        "/v1",
        "/V1/BUDGET",
        "/favicon.ico",
        "/v1/models/resolve/x",
        "/v1/gpus/h100-sxm-80gb/x",
        "/" + "a" * 2100,
        "/v1/" + "%41" * 700,
    ):
        r.get("GET <unmatched>", path)
        r.post("POST <unmatched>", path, SEED_A)
    r.get("GET <unmatched>", "/v1/nope", {"format": "text"})
    r.get("GET <unmatched>", "/v1/nope", headers=[TEXT_ACCEPT])
    posts = ["/v1/budget/batch", "/v1/simulate", "/v1/reconcile", "/v1/models/resolve"]
    gets = [
        "/v1/models",
        "/v1/gpus",
        "/v1/engines",
        "/v1/sweep",
        "/healthz",
        "/readyz",
        "/metrics",
        "/v1/models/llama-3-70b",
        "/v1/gpus/h100-sxm-80gb",
        "/schema/openapi.json",
    ]
    both = ["/v1/budget", "/v1/per-token", "/v1/fleet"]
    for path in posts + gets + both:
        for method in ("PUT", "DELETE", "PATCH", "OPTIONS", "TRACE"):
            template = path.replace("llama-3-70b", "{model_id}").replace("h100-sxm-80gb", "{gpu_id}")
            r.send(
                Req(
                    method,
                    path,
                    "",
                    [JSON_CT],
                    dumps(SEED_A) if method in ("PUT", "PATCH") else None,
                    f"{method} {template}",
                    unchecked=("body",) if path == "/metrics" else (),
                )
            )
    for path in posts:
        r.get(f"GET {path}", path)
        r.get(f"GET {path}", path, method="HEAD")
        r.get(f"GET {path}", path, headers=[TEXT_ACCEPT])
    for path in both:
        q = {"model": "llama-3-70b"}
        if path != "/v1/per-token":
            q = {**q, "gpu": "h100-sxm-80gb", "context_tokens": "8192"}
        if path == "/v1/fleet":
            q = {**q, "count": "8"}
        r.get(f"GET {path}", path, q, method="HEAD")
        r.get(f"GET {path}", path, q, headers=[("if-none-match", "*")])
    # ETags: the GET answers carry one; a conditional GET with it is a 304.
    for q in ({"model": "llama-3-70b", "gpu": "h100-sxm-80gb"}, {"model": "llama-3-70b", "format": "text"}):
        path = "/v1/budget" if "gpu" in q else "/v1/per-token"
        a = r.get(f"GET {path}", path, q)
        etag = dict(a.headers).get("etag", '"none"')
        r.get(f"GET {path}", path, q, headers=[("if-none-match", etag)])
        r.get(f"GET {path}", path, q, headers=[("if-none-match", f'W/{etag}, "other"')])
        r.get(f"GET {path}", path, q, headers=[("if-none-match", '"other"')])
    r.send(
        Req("POST", "/v1/budget", "", [JSON_CT, ("expect", "100-continue")], dumps(SEED_A), "POST /v1/budget")
    )
    r.send(
        Req(
            "POST",
            "/v1/budget",
            "",
            [("content-type", "text/plain"), ("expect", "100-continue")],
            dumps(SEED_A),
            "POST /v1/budget",
        )
    )
    r.send(Req("POST", "/v1/budget", "", [JSON_CT], b"x" * ((1 << 20) + 1), "POST /v1/budget"))
    r.send(Req("POST", "/v1/budget/batch", "", [JSON_CT], b" " * ((1 << 20) + 1), "POST /v1/budget/batch"))
    r.send(Req("POST", "/v1/simulate", "", [JSON_CT], b" " * (1 << 20), "POST /v1/simulate"))
    r.send(Req("POST", "/v1/nope", "", [JSON_CT], b"x" * ((1 << 20) + 1), "POST <unmatched>"))
    for rid_header in ("my-own-id", "x" * 128):  # a caller's request id, echoed (an invalid one is random)
        r.send(Req("GET", "/v1/gpus/h101", "", [("x-request-id", rid_header)], None, "GET /v1/gpus/{gpu_id}"))


def repeats(r: Recorder) -> None:
    """Requests sent before, again: the answer caches' second path (raw index, GET index, batch)."""
    for _ in range(2):
        r.post("POST /v1/budget", "/v1/budget", SEED_A)
        r.post("POST /v1/budget", "/v1/budget", SEED_B, {"explain": "true"})
        r.get("GET /v1/budget", "/v1/budget", SEED_C)
        r.get("GET /v1/budget", "/v1/budget", {**SEED_C, "format": "text"})
        r.get("GET /v1/budget", "/v1/budget", SEED_C, headers=[TEXT_ACCEPT])
        r.get("GET /v1/per-token", "/v1/per-token", {"model": "deepseek-v3", "context_tokens": "128K"})
        r.post("POST /v1/per-token", "/v1/per-token", {"model": "deepseek-v3", "context_tokens": 131072})
        r.post("POST /v1/budget/batch", "/v1/budget/batch", {"scenarios": [SEED_A, SEED_B, SEED_C, SEED_A]})
        r.post(
            "POST /v1/budget/batch",
            "/v1/budget/batch",
            {"scenarios": [SEED_C, {"model": "x"}]},
            {"explain": "1"},
        )
        for m in MODELS[::6]:
            r.post(
                "POST /v1/budget", "/v1/budget", {"model": m, "gpu": "h100-sxm-80gb", "context_tokens": 8192}
            )
            r.get(
                "GET /v1/budget", "/v1/budget", {"model": m, "gpu": "h100-sxm-80gb", "context_tokens": "8K"}
            )
        r.get(
            "GET /v1/budget",
            "/v1/budget",
            f"model={repos.QWEN3_8B_BASE.repo_id}@{repos.QWEN3_8B_BASE.sha}&gpu=h100-sxm-80gb",
        )
        r.post(
            "POST /v1/budget",
            "/v1/budget",
            {"model": f"{repos.QWEN3_8B_BASE.repo_id}@{repos.QWEN3_8B_BASE.sha}", "gpu": "h100-sxm-80gb"},
        )


SECTIONS: list[Callable[[Recorder], None]] = [
    operations,
    catalog,
    per_token,
    budget,
    batch,
    fleet,
    sweep,
    simulate,
    resolve_and_inline,
    reconcile,
    bad_input,
    http,
    hub,
    repeats,
    hub_with_token,
    hub_offline,
    hub_down,
]


def record(full_bodies: bool = True) -> tuple[list[dict[str, Any]], dict[str, float]]:
    timings: dict[str, float] = {}
    with service() as svc:
        rec = Recorder(svc, full_bodies)
        for section in SECTIONS:
            t0 = time.perf_counter()
            section(rec)
            timings[section.__name__] = time.perf_counter() - t0
    return rec.records, timings


def summary(records: list[dict[str, Any]]) -> Iterator[str]:
    by_endpoint = Counter(r["endpoint"] for r in records)
    by_status = Counter(r["status"] for r in records)
    yield f"{len(records)} requests"
    for k, n in sorted(by_endpoint.items()):
        yield f"  {n:5d}  {k}"
    yield "by status: " + ", ".join(f"{s}: {n}" for s, n in sorted(by_status.items()))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=RECORDING)
    p.add_argument("--sha-only", action="store_true", help="store each body's sha256, not the body")
    args = p.parse_args(argv)
    import kvplan

    logging.getLogger("httpx").setLevel(logging.WARNING)
    print(f"recording against {Path(kvplan.__file__).parent}", file=sys.stderr)
    t0 = time.perf_counter()
    records, timings = record(full_bodies=not args.sha_only)
    write_recording(args.out, records)
    for line in summary(records):
        print(line, file=sys.stderr)
    print("seconds by section: " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()), file=sys.stderr)
    print(
        f"wrote {args.out} ({args.out.stat().st_size:,} bytes) in {time.perf_counter() - t0:.1f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
