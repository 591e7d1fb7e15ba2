"""Real vLLM /metrics pastes, as people posted them in public issues, docs and blogs
(data/pastes/NN-*.txt, each with its source in NN-*.url), posted to …/replicas as an on-call
engineer would: read when the exposition is there (around fences, quotes, shell lines), else a
400 saying what is wrong with that paste; never a 500, never a number read from a cut-off line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.autoscale.conftest import DATA
from tests.autoscale.test_deployments_api import REPLICAS, vllm_scrape

PASTES = DATA / "pastes"
# paste number → (status, words its answer says)
EXPECTED = {
    "01": (400, "is cut off"),
    "02": (400, "is cut off"),
    "03": (400, "has vLLM series but none of"),
    "04": (400, "vllm:kv_cache_usage_perc, vllm:num_requests_running missing"),
    "05": (400, "has vLLM series but none of"),
    "06": (400, "has no vLLM series (found python_gc_objects_collected_total)"),
    "07": (400, "has no samples"),
    "08": (200, "dropped 2 markdown fence lines"),
    "09": (200, "dropped 1 markdown fence line, 1 cut-off comment line"),
    "10": (400, "line 24 `vllm:gpu_prefix` is cut off"),
    "11": (400, "is cut off"),
    "12": (400, "is cut off"),
    "13": (400, 'line 4 `vllm:cache_config_info{block_size="16"'),
    "14": (400, "line 3 `vllm:vllm_config_info{"),
    "15": (400, "vllm:num_requests_running, vllm:num_requests_waiting missing"),
    "16": (400, "is cut off"),
    "17": (400, "is cut off"),
    "18": (400, "is cut off"),
    "19": (400, "has vLLM series but none of"),
    "20": (400, "has vLLM series but none of"),
    "21": (400, "has vLLM series but none of"),
    "22": (400, "has vLLM series but none of"),
    "23": (400, "has vLLM series but none of"),
    "24": (400, "has no vLLM series"),
    "25": (400, "vllm:num_requests_running, vllm:num_requests_waiting missing"),
    "26": (400, "is empty"),
    "27": (400, "`pytrtllm:request_success_total{` is cut off"),
    "28": (400, "has no vLLM series (found generation_tokens_total"),
    "29": (400, "has vLLM series but none of"),
    "30": (400, "is a Prometheus query answer"),
    "31": (400, "has no vLLM series"),
}


def test_every_paste_has_its_source_and_an_expectation():
    texts = sorted(p.name[:2] for p in PASTES.glob("*.txt"))
    assert texts == sorted(EXPECTED)
    assert all((PASTES / p.name.replace(".txt", ".url")).read_text().strip() for p in PASTES.glob("*.txt"))


@pytest.mark.parametrize("number", sorted(EXPECTED))
def test_a_real_paste_is_read_or_refused_saying_why(fleet_client, number):
    (path,) = PASTES.glob(f"{number}-*.txt")
    r = fleet_client.post(REPLICAS, json={"metrics": [path.read_text()]})
    status, words = EXPECTED[number]
    assert r.status_code == status, r.text
    if status == 200:
        answer = r.json()
        assert answer["ready_replicas"] == 1 and answer["kv_cache_usage_sum"] == 0
        notes = " ".join(w["message"] for w in answer["warnings"])
        assert words in notes
    else:
        assert r.json()["field"] == "metrics[0]" and words in r.json()["detail"], r.json()["detail"]
        assert len(r.json()["detail"]) < 400


BUSY = vllm_scrape(0.62, 30, 4, prompt=(900_000, 450))


def read(fleet_client, text: str) -> dict:
    r = fleet_client.post(REPLICAS, json={"metrics": [text]})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.parametrize(
    "pasted",
    [
        "```\n" + BUSY + "```\n",
        "```text\n" + BUSY.rstrip("\n") + "```",
        BUSY.replace("\n", "\r\n"),
        "".join(f"> {line}\n" for line in BUSY.splitlines()),
        "$ curl -s localhost:8000/metrics\n" + BUSY,
        "HTTP/1.1 200 OK\ncontent-type: text/plain; version=0.0.4\n\n" + BUSY,
        "<details>\n<summary>metrics</summary>\n\n" + BUSY + "...\n</details>\n",
    ],
    ids=["fenced", "fence-on-the-last-line", "crlf", "quoted", "after-curl", "with-http-head", "in-details"],
)
def test_a_busy_scrape_reads_the_same_however_it_was_pasted(fleet_client, pasted):
    plain, seen = read(fleet_client, BUSY), read(fleet_client, pasted)
    expected = {
        "kv_cache_usage_sum": 0.62,
        "requests_running": 30,
        "requests_waiting": 4,
        "mean_prompt_tokens": 2000,
    }
    for key, value in expected.items():
        assert seen[key] == plain[key] == value, key
    assert "scrape_cleaned" in [w["code"] for w in seen["warnings"]] or pasted == BUSY.replace("\n", "\r\n")


def test_two_scrapes_pasted_into_one_string_are_refused_not_summed(fleet_client):
    r = fleet_client.post(REPLICAS, json={"metrics": [BUSY + BUSY]})
    assert r.status_code == 400 and "twice: two scrapes in one?" in r.json()["detail"]


def test_a_sample_cut_before_its_value_is_refused_not_read_short(fleet_client):
    cut = BUSY.split("vllm:kv_cache_usage_perc{")[0] + 'vllm:kv_cache_usage_perc{engine="0"'
    r = fleet_client.post(REPLICAS, json={"metrics": [cut]})
    assert r.status_code == 400 and "is cut off" in r.json()["detail"]


def test_every_bad_scrape_is_named_in_one_answer(fleet_client):
    r = fleet_client.post(REPLICAS, json={"metrics": [BUSY, "", "# TYPE up gauge\nup 1\n", BUSY]})
    problem = r.json()
    assert r.status_code == 400 and problem["field"] == "metrics[1]"
    assert (
        "metrics[1]: is empty" in problem["detail"]
        and "also metrics[2]: has no vLLM series" in problem["detail"]
    )


def test_a_scrape_of_another_model_is_read_and_flagged(fleet_client):
    other = BUSY.replace("meta-llama/Llama-3.1-8B", "Qwen/Qwen3-32B")
    codes = [w["code"] for w in read(fleet_client, other)["warnings"]]
    assert "scrape_model_differs" in codes
    assert "scrape_model_differs" not in [w["code"] for w in read(fleet_client, BUSY)["warnings"]]


def test_the_pastes_are_kept_verbatim():
    assert Path(PASTES / "08-korean-vllm-tutorial-full.txt").read_text().startswith("```")
