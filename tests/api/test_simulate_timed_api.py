"""Timed simulations through the API: arrivals in seconds, closed loops, the two public traces as
bodies, and the answer in vllm bench serve's --save-result names."""

from __future__ import annotations

import pytest
from litestar.testing import TestClient

from tests.sim.traces import azure_csv, mooncake_jsonl, unbounded_hit_rate

POOL = "model=llama-3.1-8b&gpu=h100-sxm-80gb"
GENERATOR = {
    "count": 300,
    "prompt": {"kind": "uniform", "low": 200, "high": 2000},
    "output": {"kind": "uniform", "low": 20, "high": 400},
}


def timed(client: TestClient, generator: dict[str, object], **extra: object) -> dict[str, object]:
    body = {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "workload": {"generator": generator}, **extra}
    r = client.post("/v1/simulate", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def test_a_poisson_rate_per_second_answers_latency_and_throughput(client: TestClient) -> None:
    a = timed(client, {**GENERATOR, "arrival_rate_per_s": 5.0})
    lat = a["latency"]
    assert set(lat) == {"queue_ms", "ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"}
    for d in lat.values():
        assert set(d) >= {"mean", "p50", "p90", "p99"}
        assert 0 <= d["p50"] <= d["p90"] <= d["p99"]
    t = a["throughput"]
    assert t["requests_per_s"] == pytest.approx(300 / t["duration_s"])
    assert a["completed"] == 300 and "time_s" in a["series"][0]
    assert "exact" in a["timing"]["exact"] and "modelled" in a["timing"]["modelled"]


def test_a_higher_rate_never_lowers_the_latency_of_the_same_requests(client: TestClient) -> None:
    slow = timed(client, {**GENERATOR, "arrival_rate_per_s": 1.0})
    fast = timed(client, {**GENERATOR, "arrival_rate_per_s": 50.0})
    assert fast["latency"]["e2e_ms"]["mean"] > slow["latency"]["e2e_ms"]["mean"]
    assert fast["throughput"]["requests_per_s"] > slow["throughput"]["requests_per_s"]


def test_a_closed_loop_keeps_at_most_its_concurrency_in_flight(client: TestClient) -> None:
    a = timed(client, {**GENERATOR, "concurrency": 8})
    assert a["peak_in_flight"] == 8
    assert a["peak_running"] <= 8


def test_listed_requests_with_arrival_times_run_timed_with_goodput(client: TestClient) -> None:
    requests = [{"arrival_time": 0.1 * i, "prompt_tokens": 500, "output_tokens": 50} for i in range(20)]
    body = {
        "model": "llama-3.1-8b",
        "gpu": "h100-sxm-80gb",
        "workload": {"requests": requests},
        "goodput": {"ttft_ms": 1e6, "tpot_ms": 1e6},
    }
    r = client.post("/v1/simulate", json=body)
    assert r.status_code == 200, r.text
    g = r.json()["goodput"]
    assert g["requests_met"] == 20 and g["share_met"] == 1.0
    # A TTFT target nobody meets, then the run's own median: none, then at least half.
    p50 = r.json()["latency"]["ttft_ms"]["p50"]
    for target, low, high in ((1e-3, 0, 0), (p50, 10, 20)):
        g = client.post("/v1/simulate", json={**body, "goodput": {"ttft_ms": target}}).json()["goodput"]
        assert low <= g["requests_met"] <= high and g["share_met"] == g["requests_met"] / 20


def test_the_answer_in_vllm_bench_names(client: TestClient) -> None:
    body = {
        "model": "llama-3.1-8b",
        "gpu": "h100-sxm-80gb",
        "workload": {"generator": {**GENERATOR, "concurrency": 4}},
    }
    b = client.post("/v1/simulate?format=vllm-bench", json=body).json()
    for name in (
        "mean_ttft_ms",
        "median_ttft_ms",
        "p99_ttft_ms",
        "mean_tpot_ms",
        "p99_itl_ms",
        "mean_e2el_ms",
    ):
        assert isinstance(b[name], float), name
    assert b["completed"] == b["num_prompts"] == 300 and b["max_concurrency"] == 4
    assert b["request_throughput"] == pytest.approx(300 / b["duration"])


def test_vllm_bench_names_need_a_timed_simulation(client: TestClient) -> None:
    body = {
        "num_blocks": 100,
        "block_size": 16,
        "workload": {"requests": [{"prompt_tokens": 5, "output_tokens": 5}]},
    }
    r = client.post("/v1/simulate?format=vllm-bench", json=body)
    assert r.status_code == 400 and r.json()["field"] == "format"


def test_the_text_answer_says_what_is_exact_and_what_is_modelled(client: TestClient) -> None:
    body = {
        "model": "llama-3.1-8b",
        "gpu": "h100-sxm-80gb",
        "workload": {"generator": {**GENERATOR, "concurrency": 4}},
    }
    text = client.post("/v1/simulate?format=text", json=body).text
    for words in (
        "time to first token",
        "time per output token",
        "throughput",
        "exact:",
        "modelled:",
        "model's error",
    ):
        assert words in text


def test_a_gpu_without_specs_is_refused_naming_the_gpu(client: TestClient) -> None:
    body = {
        "model": "llama-3.1-8b",
        "gpu": "mi300x-192gb",
        "workload": {"generator": {**GENERATOR, "concurrency": 4}},
    }
    r = client.post("/v1/simulate", json=body)
    assert r.status_code == 400 and r.json()["field"] == "gpu"
    assert "h100-sxm-80gb" in r.json()["detail"]  # it says which GPUs have specs


def test_mxfp8_activations_time_gpt_oss_on_b200_and_fall_back_on_hopper(client: TestClient) -> None:
    body = {
        "model": "gpt-oss-120b",
        "gpu": "b200-180gb",
        "flashinfer_moe_mxfp4_mxfp8": True,
        "num_blocks": 20_000,  # a hybrid model's pool is given (its groups are budgeted apart)
        "block_size": 16,
        "workload": {"generator": {**GENERATOR, "count": 40, "concurrency": 8}},
    }
    r = client.post("/v1/simulate", json=body)
    assert r.status_code == 200, r.text
    moe = [s for s in r.json()["timing"]["steps"] if s["name"] == "step-time dtypes and layout"]
    assert "w4a8_mxfp4_mxfp8" in moe[0]["inputs"]["moe"]
    r = client.post("/v1/simulate", json={**body, "gpu": "h100-sxm-80gb"})
    assert r.status_code == 200, r.text
    moe = [s for s in r.json()["timing"]["steps"] if s["name"] == "step-time dtypes and layout"]
    assert "falls back to BF16 activations" in moe[0]["inputs"]["moe"]
    text = client.post("/v1/simulate?format=text", json={**body, "gpu": "h100-sxm-80gb"}).text
    assert "experts" in text and "falls back to BF16" in " ".join(text.split())  # the on-call reads it too


def test_an_engine_without_async_scheduling_by_default_times_its_steps_without_it(client: TestClient) -> None:
    """vLLM 0.10 had async scheduling off unless asked (on by default from 0.14): its host work
    runs between the GPU's steps, so the same requests decode slower than with it on."""
    closed = {**GENERATOR, "concurrency": 8}
    off = timed(client, closed, engine="vllm@0.10")
    on = timed(client, closed, engine="vllm@0.10", async_scheduling=True)
    assert off["latency"]["tpot_ms"]["mean"] > on["latency"]["tpot_ms"]["mean"]
    assert timed(client, closed, engine="vllm@0.19") == timed(
        client, closed, engine="vllm@0.19", async_scheduling=True
    )


def test_enforce_eager_decodes_at_the_hosts_pace_and_says_so(client: TestClient) -> None:
    """--enforce-eager runs the forward as eager PyTorch: one request decodes at about 0.65 ms a
    layer of Python (public eager runs: 0.5–0.8), not at the GPU's pace, and the ledger says it."""
    one = {"count": 4, "concurrency": 1, "prompt": {"kind": "fixed", "value": 512},
           "output": {"kind": "fixed", "value": 64}}  # fmt: skip
    eager = timed(client, one, enforce_eager=True)
    graphs = timed(client, one)
    assert eager["latency"]["tpot_ms"]["mean"] > 1.5 * graphs["latency"]["tpot_ms"]["mean"]
    assert eager["latency"]["tpot_ms"]["mean"] == pytest.approx(32 * 0.65 + 0.1, rel=0.02)
    (host,) = [s for s in eager["timing"]["steps"] if s["name"] == "host overhead (prior)"]
    assert host["inputs"]["eager_forward"] is True and host["inputs"]["eager_layer_s"] == 0.65e-3
    body = {
        "model": "llama-3.1-8b",
        "gpu": "h100-sxm-80gb",
        "enforce_eager": True,
        "workload": {"generator": one},
    }
    text = client.post("/v1/simulate?format=text", json=body).text
    assert "forward" in text and "0.65 ms a layer" in text


def test_the_text_says_what_the_latencies_hold_besides_the_engines_steps(client: TestClient) -> None:
    """The request path (5 ms) and the tokenizer are in queue time, TTFT and end-to-end, and the
    text says so; TPOT is the steps alone."""
    one = {"count": 2, "concurrency": 1, "prompt": {"kind": "fixed", "value": 128},
           "output": {"kind": "fixed", "value": 8}}  # fmt: skip
    body = {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "workload": {"generator": one}}
    text = " ".join(client.post("/v1/simulate?format=text", json=body).text.split())
    assert "sum of step times (kvplan's step-time model) and the server's path" in text
    assert (
        "the request's path outside the engine (5 ms" in text
        and "1.3 µs a prompt token, prior, for prose" in text
    )
    assert "TPOT and ITL are the engine's steps alone" in text


def test_the_text_says_when_steps_with_a_prefill_run_without_a_graph(client: TestClient) -> None:
    """full_decode_only graphs decode-only steps alone: a step with a prefill is the host's for at
    least layers × 0.65 ms (compiled or eager alike, vLLM issue #45709), and the text says so; the
    default mode graphs every step up to its largest capture size, and says that."""
    one = {"count": 4, "concurrency": 2, "prompt": {"kind": "fixed", "value": 256},
           "output": {"kind": "fixed", "value": 16}}  # fmt: skip
    body = {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "workload": {"generator": one}}
    text = " ".join(
        client.post(
            "/v1/simulate?format=text", json={**body, "cudagraph_mode": "full_decode_only"}
        ).text.split()
    )
    assert "a step with a prefill runs without a CUDA graph (full_decode_only)" in text
    assert "at least 21 ms" in text and "32 layers × 0.65 ms a layer" in text
    default = " ".join(client.post("/v1/simulate?format=text", json=body).text.split())  # unwrapped
    assert "a step with a prefill" not in default
    assert "a step of more than 512 tokens (the largest CUDA graph) runs without one" in default


def test_the_whole_azure_conversation_trace_replays(client: TestClient) -> None:
    r = client.post(f"/v1/simulate?{POOL}", content=azure_csv(), headers={"content-type": "text/csv"})
    assert r.status_code == 200, r.text
    a = r.json()
    assert a["requests"] == a["completed"] == 19_366
    assert a["throughput"]["duration_s"] > 3_500  # 58 minutes of arrivals


def test_the_whole_mooncake_trace_replays_with_its_hash_chains(client: TestClient) -> None:
    r = client.post(
        f"/v1/simulate?{POOL}&tensor_parallel_size=4",
        content=mooncake_jsonl(),
        headers={"content-type": "application/x-ndjson"},
    )
    assert r.status_code == 200, r.text
    a = r.json()
    assert a["requests"] == a["completed"] == 12_031
    # Shared chains hit; the GPU's pool (2.1M tokens here) turns over long before a conversation's
    # next turn in most cases, so it keeps far less than an unbounded cache's 36.6 % of blocks.
    assert 0.05 < a["cache_hit_rate_blocks"] < unbounded_hit_rate()


def test_a_trace_sent_as_curl_sends_files_is_sniffed(client: TestClient) -> None:
    head = b"\r\n".join(azure_csv().split(b"\r\n")[:200])
    r = client.post(
        f"/v1/simulate?{POOL}", content=head, headers={"content-type": "application/x-www-form-urlencoded"}
    )
    assert r.status_code == 200, r.text
    assert r.json()["requests"] == 199


def test_a_requests_jsonl_trace_keeps_its_prefixes(client: TestClient) -> None:
    lines = [
        f'{{"arrival_time": {0.05 * i}, "prompt_tokens": 1200, "output_tokens": 20, "prefix_id": "sys", '
        f'"prefix_tokens": 1024}}'
        for i in range(40)
    ]
    r = client.post(
        f"/v1/simulate?{POOL}", content="\n".join(lines), headers={"content-type": "application/x-ndjson"}
    )
    assert r.status_code == 200, r.text
    assert r.json()["cache_hit_tokens"] > 0


def test_time_scale_stretches_a_trace(client: TestClient) -> None:
    head = b"\r\n".join(azure_csv().split(b"\r\n")[:300])
    one = client.post(f"/v1/simulate?{POOL}", content=head, headers={"content-type": "text/csv"}).json()
    two = client.post(
        f"/v1/simulate?{POOL}&time_scale=2", content=head, headers={"content-type": "text/csv"}
    ).json()
    assert two["throughput"]["requests_per_s"] < one["throughput"]["requests_per_s"]


def test_a_request_gives_its_tokenizer_rate_and_a_lone_request_waits_exactly_that_much_longer(
    client: TestClient,
) -> None:
    """A lone 1,000-token prompt at 11.3 µs a token is tokenized 10 ms later than at the prior's
    1.3: its TTFT and end-to-end latency say so to the microsecond, its TPOT not at all, and the
    ledger and the text name the rate as the request's."""
    lone = {"count": 1, "concurrency": 1, "prompt": {"kind": "fixed", "value": 1000},
            "output": {"kind": "fixed", "value": 16}}  # fmt: skip
    prior, slow = timed(client, lone), timed(client, lone, tokenize_us_per_token=11.3)
    for metric in ("ttft_ms", "e2e_ms"):
        assert slow["latency"][metric]["mean"] - prior["latency"][metric]["mean"] == pytest.approx(10.0)
    assert slow["latency"]["tpot_ms"]["mean"] == pytest.approx(prior["latency"]["tpot_ms"]["mean"])
    steps = {s["name"]: s for s in slow["timing"]["steps"]}
    assert "server tokenization (prior)" in {s["name"] for s in prior["timing"]["steps"]}
    given = steps["server tokenization (the request's rate)"]
    assert given["value"] == "the request's rate" and given["inputs"]["per_token_s"] == pytest.approx(11.3e-6)
    body = {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "workload": {"generator": lone}}
    text = client.post("/v1/simulate?format=text", json={**body, "tokenize_us_per_token": 11.3}).text
    assert "11.3 µs a prompt token, the request's" in " ".join(text.split())


def test_vllm_0_22s_micro_batching_tokenizer_holds_a_lone_request_2_ms_and_0_23s_does_not(
    client: TestClient,
) -> None:
    """The same rules (vllm@0.19, vllm@0.23) but for AsyncMicrobatchTokenizer, gone with PR #45759:
    a lone request waits its 2 ms for company under 0.22.1, TTFT and end-to-end alike; a wave of
    eight sent at once reaches the engine together; and the ledger and the text say which ran."""
    lone = {"count": 1, "concurrency": 1, "prompt": {"kind": "fixed", "value": 1000},
            "output": {"kind": "fixed", "value": 16}}  # fmt: skip
    old, new = (timed(client, lone, engine=v) for v in ("0.22.1", "0.23.0"))
    for metric in ("ttft_ms", "e2e_ms", "queue_ms"):
        assert old["latency"][metric]["mean"] - new["latency"][metric]["mean"] == pytest.approx(2.0)
    assert old["latency"]["tpot_ms"]["mean"] == pytest.approx(new["latency"]["tpot_ms"]["mean"])
    steps = {s["name"]: s for s in old["timing"]["steps"]}
    assert steps["tokenizer micro-batches"]["inputs"] == {"wait_s": 0.002, "max_prompts": 32}
    assert {s["name"]: s for s in new["timing"]["steps"]}["tokenizer micro-batches"]["value"] is False
    body = {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "workload": {"generator": lone}}
    text = " ".join(client.post("/v1/simulate?format=text", json={**body, "engine": "0.22.1"}).text.split())
    assert "in micro-batches (a lone request waits 2 ms for more)" in text
    # Eight sent at once: one batch, one call on 8,000 tokens at 0.246 of eight calls' time (PR
    # #45759's measurement), all eight in the engine's first step: 5 + 2 + 8 × 1.3 × 0.246 ms.
    wave = {**lone, "count": 8, "concurrency": 8}
    queue = timed(client, wave, engine="0.22.1")["latency"]["queue_ms"]
    assert queue["p50"] == queue["p99"] == pytest.approx(5 + 2 + 8 * 1.3 * 0.2460, abs=1e-3)


@pytest.mark.parametrize(("rate", "reason"), [(-1, ">= 0.0"), (1001, "<= 1000.0"), ("fast", "got `str`")])
def test_a_tokenizer_rate_below_0_above_1000_or_not_a_number_is_a_400_saying_so(
    client: TestClient, rate: object, reason: str
) -> None:
    lone = {"count": 1, "concurrency": 1, "prompt": {"kind": "fixed", "value": 100},
            "output": {"kind": "fixed", "value": 4}}  # fmt: skip
    body = {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "workload": {"generator": lone}}
    r = client.post("/v1/simulate", json={**body, "tokenize_us_per_token": rate})
    assert r.status_code == 400 and r.json()["field"] == "tokenize_us_per_token"
    assert reason in r.json()["detail"]
    head = b"\r\n".join(azure_csv().split(b"\r\n")[:20])
    r = client.post(
        f"/v1/simulate?{POOL}&tokenize_us_per_token={rate}",
        content=head,
        headers={"content-type": "text/csv"},
    )
    assert r.status_code == 400 and "tokenize_us_per_token" in r.json()["field"]


def test_a_trace_body_takes_the_tokenizer_rate_as_a_query_parameter(client: TestClient) -> None:
    head = b"\r\n".join(azure_csv().split(b"\r\n")[:50])
    fast, slow = (
        client.post(f"/v1/simulate?{POOL}&tokenize_us_per_token={rate}", content=head,
                    headers={"content-type": "text/csv"}).json()
        for rate in (0, 50)
    )  # fmt: skip
    assert slow["latency"]["ttft_ms"]["mean"] > fast["latency"]["ttft_ms"]["mean"]


def test_a_tokenizer_rate_on_a_simulation_counted_in_steps_is_a_400(client: TestClient) -> None:
    """Arrivals in steps have no clock: a rate in µs would be silently ignored, so it is refused."""
    steps = {"count": 2, "arrival_rate": 1, "prompt": {"kind": "fixed", "value": 100},
             "output": {"kind": "fixed", "value": 4}}  # fmt: skip
    body = {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "workload": {"generator": steps}}
    r = client.post("/v1/simulate", json={**body, "tokenize_us_per_token": 2})
    assert r.status_code == 400 and r.json()["field"] == "tokenize_us_per_token"
    assert "timed simulation" in r.json()["detail"]


def test_a_timed_simulation_of_a_mamba_hybrid_is_refused_for_its_mamba_layers_first(
    client: TestClient,
) -> None:
    """Not first sent to give the hybrid pool's num_blocks, only to be refused for the layers next
    (a real paste, Qwen3.5, went so): the step-time model does not price mamba layers, say that."""
    one = {"count": 4, "concurrency": 1, "prompt": {"kind": "fixed", "value": 512},
           "output": {"kind": "fixed", "value": 16}}  # fmt: skip
    body = {"model": "jamba-1.5-mini", "gpu": "h100-sxm-80gb", "workload": {"generator": one}}
    r = client.post("/v1/simulate", json=body)
    assert r.status_code == 400 and r.json()["field"] == "model"
    assert "does not price mamba layers" in r.json()["detail"]
    untimed = {**body, "workload": {"generator": {**one, "concurrency": None, "arrival_rate": 0.5}}}
    r = client.post("/v1/simulate", json=untimed)
    assert r.status_code == 400 and "give num_blocks and block_size" in r.json()["detail"]
