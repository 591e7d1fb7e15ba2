"""format=text (or Accept: text/plain) is honoured by every endpoint that answers JSON, errors
included (same status, a text body)."""

from __future__ import annotations

import pytest

TEXT_ROUTES = ["/v1/engines", "/v1/models/llama-3.1-8b", "/v1/gpus/h100-sxm-80gb", "/healthz"]


@pytest.mark.parametrize("path", TEXT_ROUTES)
def test_format_text_answers_text_where_json_was_the_only_answer(client, path):
    r = client.get(path, params={"format": "text"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    assert r.text.startswith("kvplan ")


def test_accept_text_plain_is_honoured_by_a_model(client):
    r = client.get("/v1/models/llama-3.1-8b", headers={"accept": "text/plain"})
    assert r.headers["content-type"].startswith("text/plain")
    assert "bytes_per_token" in r.text and "131,072" in r.text


def test_a_model_keeps_its_own_name_in_its_geometry(client):
    assert client.get("/v1/models/llama-3.1-8b").json()["geometry"]["name"] == "llama-3.1-8b"


def test_a_batch_answers_one_text_line_a_scenario(client):
    body = {
        "scenarios": [
            {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb"},
            {"model": "nope", "gpu": "h100-sxm-80gb"},
        ]
    }
    r = client.post("/v1/budget/batch?format=text", json=body)
    lines = [line for line in r.text.splitlines() if line.startswith("[")]
    assert r.headers["content-type"].startswith("text/plain") and len(lines) == 2
    assert "requests" in lines[0] and lines[1].startswith("[1] error 404")


@pytest.mark.parametrize(
    ("path", "status"),
    [("/v1/budget?model=nope&gpu=h100-sxm-80gb&format=text", 404),
     ("/v1/budget?model=llama-3.1-8b&gpu=h100-sxm-80gb&context_tokens=-1&format=text", 400)],
)  # fmt: skip
def test_an_error_asked_for_as_text_is_text_with_the_same_status(client, path, status):
    r = client.get(path)
    assert r.status_code == status and r.headers["content-type"].startswith("text/plain")
    assert r.text.startswith(f"error {status}")
    assert client.get(path.replace("&format=text", "")).headers["content-type"] == "application/problem+json"


def test_a_simulation_names_its_model_gpu_and_the_length_its_formula_is_for(client):
    one = {"requests": [{"prompt_tokens": 1000, "output_tokens": 24}]}
    body = {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "workload": one}
    r = client.post("/v1/simulate", json=body).json()
    assert (r["model"], r["gpu"], r["formula_context_tokens"]) == ("llama-3.1-8b", "h100-sxm-80gb", 1024)
    text = " ".join(client.post("/v1/simulate?format=text", json=body).text.split())
    assert "llama-3.1-8b on h100-sxm-80gb" in text and "requests of 1,024 tokens, the longest here" in text


def test_a_simulated_prompt_longer_than_max_model_len_is_refused_as_vllm_refuses_it(client):
    long = {"requests": [{"prompt_tokens": 200_000, "output_tokens": 10}]}
    r = client.post("/v1/simulate", json={"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "workload": long})
    assert r.status_code == 400 and r.json()["field"] == "workload.requests[0].prompt_tokens"


def test_the_budget_title_names_the_parallel_layout(client):
    text = client.get("/v1/budget", params={"model": "llama-3.1-70b", "gpu": "h100-sxm-80gb",
                                            "tensor_parallel_size": 4, "format": "text"}).text  # fmt: skip
    assert text.splitlines()[0].startswith("kvplan budget · llama-3.1-70b on h100-sxm-80gb · TP 4 · engine")


@pytest.mark.parametrize(("width", "limit"), [(None, 100), (160, 160)])
def test_text_answers_wrap_to_the_width_asked_keeping_every_word(client, width, limit):
    params = {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "format": "text", "explain": "true"}
    if width:
        params["width"] = width
    text = client.get("/v1/budget", params=params).text
    assert max(len(line) for line in text.splitlines()) <= limit
    assert "(check_enough_kv_cache_memory, estimate_max_model_len)" in " ".join(text.split())


def test_a_narrow_width_wraps_the_warnings_to_it(client):
    params = {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "format": "text", "width": 60}
    text = client.get("/v1/budget", params=params).text
    notes = text.split("\nnotes\n", 1)[1].split("ledger", 1)[0]
    assert notes.startswith("  · Besides the weights")
    assert max(len(line) for line in notes.splitlines()) <= 60


@pytest.mark.parametrize("width", [5, "²", "9" * 5000, "１２０"])  # '²' and fullwidth digits pass isdigit()
def test_a_width_outside_reason_is_a_400_naming_it(client, width):
    r = client.get("/v1/budget", params={"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "format": "text",
                                         "width": width})  # fmt: skip
    assert r.status_code == 400 and "width" in r.text
