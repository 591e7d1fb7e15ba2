"""docs/autoscaling.md shows what kvplan generates and answers, not what it once did."""

from __future__ import annotations

from tests.autoscale.document import BLOCK, DOC, rendered


def test_the_generated_yaml_in_the_autoscaling_guide_is_current():
    text = DOC.read_text()
    assert len(BLOCK.findall(text)) == 4
    assert rendered(text) == text, "run: python -m tests.autoscale.document"


def test_the_guides_worked_example_is_what_the_endpoint_answers(fleet_client):
    body = {
        "replicas": [
            {"kv_cache_usage_perc": 0.90, "num_requests_running": 40, "num_requests_waiting": 5},
            {"kv_cache_usage_perc": 0.70, "num_requests_running": 30, "num_requests_waiting": 0},
            {"kv_cache_usage_perc": 0.35, "num_requests_running": 12, "num_requests_waiting": 0},
        ],
        "mean_prompt_tokens": 2000,
    }
    text = fleet_client.post(
        "/v1/deployments/serving/llama-8b-h100/replicas?format=text&width=200", json=body
    ).text
    shown = DOC.read_text().split("```\nkvplan replicas", 1)[1].split("```", 1)[0]
    assert text == "kvplan replicas" + shown
