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
