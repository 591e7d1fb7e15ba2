"""/v1/deployments and /metrics for the test fleet: every published figure is /v1/budget's for the
same inputs; the replica count for an observed load, from scrapes and from numbers alike; bad
observations refused by name."""

from __future__ import annotations

import math
import tomllib
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.autoscale.conftest import FLEET, SCRAPE

GAUGES = {
    "num_gpu_blocks": lambda b: b["num_blocks"],
    # The block vLLM runs with: a Mamba hybrid's attention groups raise theirs until a page holds a state.
    "block_size_tokens": lambda b: max(g["block_size"] for g in b["groups"] if g["kind"] != "mamba"),
    "kv_cache_capacity_tokens": lambda b: b["kv_cache_size_tokens"],
    "max_concurrency": lambda b: b["concurrency"]["vllm_reported"],
    "guaranteed_concurrency": lambda b: b["concurrency"]["guaranteed"],
    "max_num_seqs": lambda b: b["max_num_seqs"],
    "available_kv_bytes": lambda b: b["available_kv_bytes"],
    "context_tokens": lambda b: b["context_tokens"],
}
SCALING = ("target_utilization", "min_replicas", "max_replicas")
NOT_BUDGET = {"namespace", "name", "served_model_name", *SCALING}


def the_file() -> list[dict[str, Any]]:
    deployments: list[dict[str, Any]] = tomllib.loads(FLEET.read_text())["deployment"]
    return deployments


def series(text: str) -> dict[tuple[str, str, str], float]:
    """(metric, namespace, deployment) → value, of the kvplan_deployment_* gauges."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name.startswith("kvplan_deployment_") and "deployment" in s.labels:
                out[
                    s.name.removeprefix("kvplan_deployment_"), s.labels["namespace"], s.labels["deployment"]
                ] = s.value
    return out


def vllm_scrape(usage: float, running: int, waiting: int, prompt: tuple[float, float] | None = None) -> str:
    """One replica's /metrics as vLLM 0.33 writes it (one engine), with these figures."""
    m = 'engine="0",model_name="meta-llama/Llama-3.1-8B"'
    lines = [
        "# HELP vllm:num_requests_running Number of requests in model execution batches.",
        "# TYPE vllm:num_requests_running gauge",
        f"vllm:num_requests_running{{{m}}} {running}.0",
        "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.",
        "# TYPE vllm:num_requests_waiting gauge",
        f"vllm:num_requests_waiting{{{m}}} {waiting}.0",
        "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.",
        "# TYPE vllm:kv_cache_usage_perc gauge",
        f"vllm:kv_cache_usage_perc{{{m}}} {usage!r}",
    ]
    if prompt is not None:
        total, count = prompt
        lines += [
            "# HELP vllm:request_prompt_tokens Number of prefill tokens processed.",
            "# TYPE vllm:request_prompt_tokens histogram",
            f'vllm:request_prompt_tokens_bucket{{{m},le="+Inf"}} {count}',
            f"vllm:request_prompt_tokens_count{{{m}}} {count}",
            f"vllm:request_prompt_tokens_sum{{{m}}} {total}",
        ]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "name", ["llama-8b-h100", "deepseek-v3-h200", "granite-4-h-small", "gpt-oss-120b-h100"]
)  # dense; MLA under TP 8 with an fp8 cache; a Mamba hybrid; sliding-window and full attention
def test_every_gauge_equals_the_budget_answer_for_the_same_inputs(fleet_client, name):
    spec = next(d for d in the_file() if d["name"] == name)
    budget = fleet_client.post("/v1/budget", json={k: v for k, v in spec.items() if k not in NOT_BUDGET})
    assert budget.status_code == 200, budget.text
    b = budget.json()
    published = series(fleet_client.get("/metrics").text)
    ns = spec["namespace"]
    for gauge, figure in GAUGES.items():
        assert published[gauge, ns, name] == figure(b), gauge
    for key in SCALING:
        default = {"target_utilization": 0.8, "min_replicas": 1}.get(key)
        assert published[key, ns, name] == spec.get(key, default), key
    one = fleet_client.get(f"/v1/deployments/{ns}/{name}").json()
    assert one["budget"]["num_blocks"] == b["num_blocks"] and one["plan_current"] is True
    assert {k: one["series"][k] for k in GAUGES} == {k: f(b) for k, f in GAUGES.items()}


def test_the_plans_carry_vllms_model_name_and_the_accelerator(fleet_client):
    text = fleet_client.get("/metrics").text
    info = [
        s
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "kvplan_deployment_info"
    ]
    labels = {s.labels["deployment"]: s.labels for s in info}
    assert labels["deepseek-v3-h200"]["model_name"] == "deepseek-ai/DeepSeek-V3"
    assert labels["deepseek-v3-h200"]["accelerator_type"] == "h200-141gb"
    assert all(s.value == 1 and s.labels["registry_version"].startswith("reg-") for s in info)
    assert "kvplan_deployments_last_reload_successful 1.0" in text


def test_the_listing_names_every_deployment_and_the_text_shows_them(fleet_client):
    listing = fleet_client.get("/v1/deployments").json()
    assert [f"{d['namespace']}/{d['deployment']}" for d in listing["deployments"]] == [
        "chat/assistant", "research/gpt-oss-120b-h100", "research/granite-4-h-small",
        "serving/deepseek-v3-h200", "serving/llama-8b-h100",
    ]  # fmt: skip
    assert listing["failures"] == [] and listing["last_reload"]["successful"] is True
    text = fleet_client.get("/v1/deployments?format=text").text
    assert "serving/deepseek-v3-h200" in text and "deepseek-ai/DeepSeek-V3 on h200-141gb" in text


def test_an_unknown_deployment_is_a_404_naming_the_known_ones(fleet_client):
    r = fleet_client.get("/v1/deployments/serving/llama-8b-h10")
    assert r.status_code == 404
    assert r.json()["suggestions"] == ["serving/llama-8b-h100"]
    assert "serving/deepseek-v3-h200" in r.json()["valid"]
    r = fleet_client.post("/v1/deployments/nowhere/x/replicas", json={"replicas": []})
    assert r.status_code == 404 and r.json()["field"] == "deployment"


REPLICAS = "/v1/deployments/serving/llama-8b-h100/replicas"


def test_scrapes_and_numbers_give_the_same_count_with_every_term(fleet_client):
    observed = [(0.9, 40, 5), (0.7, 30, 0), (0.35, 12, 0)]
    by_scrape = fleet_client.post(
        REPLICAS,
        json={"metrics": [vllm_scrape(*o, prompt=(3_000_000, 1500)) for o in observed]},
    ).json()
    by_number = fleet_client.post(
        REPLICAS,
        json={
            "replicas": [
                {"kv_cache_usage_perc": u, "num_requests_running": r, "num_requests_waiting": w}
                for u, r, w in observed
            ],
            "mean_prompt_tokens": 2000,
        },
    ).json()
    assert by_scrape["mean_prompt_tokens"] == 2000 and by_scrape["mean_prompt_tokens_source"] == "scrapes"
    for key in ("desired_replicas", "demand_tokens", "demand_requests", "replicas_for_tokens", "binding"):
        assert by_scrape[key] == by_number[key], key
    capacity = 448_384
    assert by_number["demand_tokens"] == pytest.approx((0.9 + 0.7 + 0.35) * capacity + 5 * 2000)
    assert by_number["desired_replicas"] == math.ceil(by_number["demand_tokens"] / (0.8 * capacity))
    assert by_number["namespace"] == "serving" and by_number["deployment"] == "llama-8b-h100"
    assert by_number["ledger"][0]["name"] == "demand_tokens"


def test_a_real_vllm_scrape_is_read(fleet_client):
    r = fleet_client.post(REPLICAS, json={"metrics": [SCRAPE.read_text()]})
    assert r.status_code == 200, r.text
    assert r.json()["requests_running"] == 2 and r.json()["requests_waiting"] == 7


def test_the_text_answer_shows_the_count_and_its_terms(fleet_client):
    one = {"kv_cache_usage_perc": 0.95, "num_requests_running": 50, "num_requests_waiting": 9}
    r = fleet_client.post(f"{REPLICAS}?format=text", json={"replicas": [one]})
    assert r.headers["content-type"].startswith("text/plain")
    assert "desired replicas       2" in r.text and "← binds" in r.text and "context tokens" in r.text


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"metrics": ["this is not a scrape {"]}, "metrics[0]", "exposition format"),
        ({"metrics": ["#\n# a comment\n" * 1000 + "x{\n"]}, "metrics[0]", "line 2001 `x{`"),
        ({"metrics": ["# TYPE up gauge\nup 1\n"]}, "metrics[0]", "no vLLM series"),
        ({"metrics": [vllm_scrape(0.5, 1, 0).replace("0.5", "NaN")]}, "metrics[0]", "is nan"),
        ({"metrics": [vllm_scrape(0.5, 1, 0), vllm_scrape(0.5, 1, 0).replace(" 1.0", " -3.0")]}, "metrics[1]",
         "num_requests_running"),
        ({"metrics": [vllm_scrape(0.5, 1, 0).replace("0.5", "1.5")]}, "metrics[0]", "a fraction from 0 to 1"),
        ({"metrics": [vllm_scrape(0.5, 1, 0).replace("vllm:num_requests_waiting", "x")]}, "metrics[0]",
         "vllm:num_requests_waiting missing"),
        ({}, "metrics", "give one of metrics"),
        ({"metrics": [], "replicas": []}, "metrics", "give one of metrics"),
        ({"replicas": [{"kv_cache_usage_perc": -0.1, "num_requests_running": 0, "num_requests_waiting": 0}]},
         "replicas[0].kv_cache_usage_perc", ">= 0"),
        ({"replicas": [], "mean_prompt_tokens": 0}, "mean_prompt_tokens", "> 0"),
    ],
)  # fmt: skip
def test_a_bad_observation_is_a_400_naming_where(fleet_client, body, field, words):
    r = fleet_client.post(REPLICAS, json=body)
    assert r.status_code == 400, r.text
    problem = r.json()
    assert problem.get("field") == field or field in problem["detail"], problem
    assert words in problem["detail"], problem


def test_zero_ready_replicas_ask_for_min_replicas(fleet_client):
    r = fleet_client.post("/v1/deployments/serving/deepseek-v3-h200/replicas", json={"metrics": []}).json()
    assert r["desired_replicas"] == 2 and r["clamped_by"] == "min_replicas"
    assert [w["code"] for w in r["warnings"]] == ["no_ready_replicas"]


@pytest.mark.parametrize(
    "scrape",
    [
        vllm_scrape(0.5, 1, 0).replace('Llama-3.1-8B"} 0.0', 'Llama-3.1-8B"} 1e308'),
        vllm_scrape(0.5, 1, 0, prompt=(1e308, 1e-300)),
    ],
    ids=["waiting-1e308", "prompt-sum-1e308"],
)  # fmt: skip
def test_a_value_no_vllm_reports_is_a_400_not_an_overflow(fleet_client, scrape):
    r = fleet_client.post(REPLICAS, json={"metrics": [scrape]})
    assert r.status_code == 400 and "is 1e+308, not a number from 0 to" in r.json()["detail"]


def test_a_demand_past_any_fleet_is_capped_not_an_overflow(fleet_client):
    big = {"kv_cache_usage_perc": 1, "num_requests_running": 1e9, "num_requests_waiting": 1e9}
    r = fleet_client.post(REPLICAS, json={"replicas": [big] * 1000, "mean_prompt_tokens": 1e9})
    assert (
        r.status_code == 200
        and r.json()["desired_replicas"] == 16
        and r.json()["clamped_by"] == "max_replicas"
    )


def test_an_inline_models_vllm_arguments_are_refused_saying_why(fleet_client, tmp_path, registry):
    from litestar.testing import TestClient

    from kvplan.api.app import create_app
    from kvplan.api.settings import Settings

    path = tmp_path / "d.toml"
    path.write_text(
        '[[deployment]]\nnamespace = "s"\nname = "inline"\ngpu = "h100-sxm-80gb"\nmax_replicas = 2\n'
        "[deployment.model.geometry]\nnum_layers = 32\nnum_attention_heads = 32\nnum_kv_heads = 8\n"
        "head_dim = 128\nparams_total = 8000000000\n"
    )
    with TestClient(create_app(Settings(deployments=str(path)), registry=registry)) as client:
        assert client.get("/v1/deployments/s/inline").status_code == 200, client.get("/v1/deployments").text
        r = client.get("/v1/deployments/s/inline/manifests?kind=vllm-args")
        assert r.status_code == 400 and "inline config" in r.json()["detail"]
        assert client.get("/v1/deployments/s/inline/manifests?kind=keda").status_code == 200


def test_manifests_in_json_are_refused_naming_the_one_format_they_come_in(fleet_client):
    r = fleet_client.get("/v1/deployments/serving/llama-8b-h100/manifests?kind=keda&format=json")
    assert r.status_code == 400 and r.json()["detail"].endswith("format: must be yaml"), r.text
