"""What the Hub, the disk and callers can do to a Hub-backed answer, each a clear status: the
answer's own work never waits on the network, failures are remembered briefly, the disk copy is
written whole and read defensively, and a moving branch never earns a stale 304."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
import threading
import time

import pytest
from huggingface_hub import close_session

from kvplan.api import hubfetch
from kvplan.api.errors import problem_for
from kvplan.hub import cache_only, default_hub, parse_hub_ref, reset_default_hub
from tests.hub.fakehub import FakeHub, isolate_hf_client
from tests.hub.proxy import LoopbackProxy, loopback_tls, serve_proxy
from tests.hub.repos import QWEN3_8B_BASE, SLOW, UNKNOWN_REPO_ID, fake_sha

H100 = {"gpu": "h100-sxm-80gb"}
QWEN = QWEN3_8B_BASE.repo_id


def budget(client, model: str, **kw):  # type: ignore[no-untyped-def]
    return client.post("/v1/budget", json={"model": model, **H100, **kw})


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def add_repo(hub: FakeHub, name: str, **changes) -> str:  # type: ignore[no-untyped-def]
    repo_id = f"kvplan-tests/{name}"
    hub.add(dataclasses.replace(QWEN3_8B_BASE, repo_id=repo_id, sha=fake_sha(repo_id), **changes))
    return repo_id


# -- the answer's own work never fetches ------------------------------------------------------------


def test_a_cache_only_lookup_of_a_model_never_fetched_is_a_503_without_asking_the_hub(hub):
    failure: list[BaseException] = []

    def answer_work() -> None:
        cache_only()
        try:
            default_hub().resolve(parse_hub_ref(QWEN))
        except BaseException as e:
            failure.append(e)

    t = threading.Thread(target=answer_work)
    t.start()
    t.join()
    assert problem_for(failure[0]).status == 503  # what the API answers it
    assert hub.count() == 0


@pytest.mark.parametrize("spelling", ["Qwen/Qwen3-8B-Base", "Qwen%2FQwen3-8B-Base", "Qwen%2fQwen3-8B-Base"])
def test_a_get_fetches_the_hub_id_however_its_slash_is_spelled(client, hub, spelling):
    r = client.get(f"/v1/budget?model={spelling}&gpu=h100-sxm-80gb")
    assert r.status_code == 200, r.text
    assert r.json()["hub"]["sha"] == QWEN3_8B_BASE.sha


def test_a_batch_fetches_its_hub_models_first_and_each_scenario_fails_alone(client, hub):
    body = (
        b'{"scenarios":[{"model":"Qwen\\/Qwen3-8B-Base","gpu":"h100-sxm-80gb"},'
        b'{"model":"' + UNKNOWN_REPO_ID.encode() + b'","gpu":"h100-sxm-80gb"},'
        b'{"model":"not/a/repo","gpu":"h100-sxm-80gb"},'
        b'{"model":"qwen3-8b","gpu":"h100-sxm-80gb"}]}'
    )
    results = client.post("/v1/budget/batch", content=body).json()["results"]
    assert results[0]["result"]["hub"]["sha"] == QWEN3_8B_BASE.sha
    assert (results[1]["error"]["status"], results[1]["error"]["field"]) == (404, "scenarios[1].model")
    assert (results[2]["error"]["status"], results[2]["error"]["field"]) == (400, "scenarios[2].model")
    assert "result" in results[3]
    assert hub.count(QWEN, "model_info") == 1


def test_a_simulation_fetches_its_hub_model_first(client, hub):
    one = {"requests": [{"prompt_tokens": 100, "output_tokens": 10}]}
    r = client.post("/v1/simulate", json={"model": QWEN, **H100, "workload": one})
    assert r.status_code == 200, r.text


# -- failures are remembered, so an outage costs one attempt, not one per request ---------------------


def test_an_unknown_repo_is_asked_once_while_its_404_is_remembered(client, hub):
    assert [budget(client, UNKNOWN_REPO_ID).status_code for _ in range(3)] == [404] * 3
    assert hub.count(UNKNOWN_REPO_ID, "model_info") == 1


def test_in_an_outage_the_disk_copy_answers_and_the_hub_is_not_asked_again_at_once(client, hub, monkeypatch):
    assert budget(client, QWEN).status_code == 200
    monkeypatch.setenv("HF_ENDPOINT", closed_port_url())
    reset_default_hub()
    first = budget(client, QWEN)
    attempts = default_hub().fetches
    second = budget(client, QWEN)
    assert first.json()["hub"]["from_cache"] is True and second.json()["hub"]["from_cache"] is True
    assert (attempts, default_hub().fetches) == (1, 1)


def test_past_its_limit_of_models_in_flight_a_worker_answers_503_at_once(hub, registry, monkeypatch):
    hub.update(SLOW.repo_id, slow=0.5)
    monkeypatch.setenv("KVPLAN_HUB_QUEUE", "1")
    monkeypatch.setenv("KVPLAN_HUB_TIMEOUT_SECONDS", "5")
    reset_default_hub()

    async def two_models() -> None:
        slow = asyncio.ensure_future(hubfetch.prefetch(registry, [SLOW.repo_id]))
        await asyncio.sleep(0.05)
        with pytest.raises(Exception, match="being fetched") as refused:
            await hubfetch.prefetch(registry, [QWEN])
        assert problem_for(refused.value).status == 503
        same = hubfetch.prefetch(registry, [SLOW.repo_id])  # waits for the flight already going
        await asyncio.gather(slow, same)

    asyncio.run(two_models())
    assert hub.count(SLOW.repo_id, "model_info") == 1
    assert hub.count(QWEN) == 0


# -- what a repo may hold ----------------------------------------------------------------------------


def test_a_repo_without_config_json_is_a_422_saying_so(client, hub):
    repo = add_repo(hub, "gguf-only", config=None, shards=(), extra_files={"model.gguf": b"GGUF"})
    r = budget(client, repo)
    assert r.status_code == 422, r.text
    assert "no config.json" in r.json()["detail"] and r.json()["field"] == "model"


@pytest.mark.parametrize("config", [b"\xff\xfe\x00not utf-8", b"{not json", b"[1, 2]"])
def test_a_config_json_that_is_not_a_json_object_is_a_422(client, hub, config):
    repo = add_repo(hub, "bad-config", config=None, extra_files={"config.json": config})
    r = budget(client, repo)
    assert r.status_code == 422, r.text
    assert "config.json" in r.json()["detail"]


# -- the disk copy ---------------------------------------------------------------------------------


def test_branches_with_slashes_and_long_names_keep_their_own_disk_copies(client, hub, monkeypatch):
    long = "release/" + "v" * 150  # the model field holds 200 characters
    names = {"feature/x": fake_sha("a"), "feature--x": fake_sha("b"), long: fake_sha("c")}
    repo = add_repo(hub, "branchy", branches=names)
    for name, sha in names.items():
        assert budget(client, f"{repo}@{name}").json()["hub"]["sha"] == sha
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    reset_default_hub()
    for name, sha in names.items():
        offline = budget(client, f"{repo}@{name}").json()["hub"]
        assert (offline["sha"], offline["from_cache"]) == (sha, True)


def test_a_corrupt_disk_copy_is_a_miss_not_an_answer(client, hub, monkeypatch, tmp_path):
    assert budget(client, QWEN).status_code == 200
    for entry in (tmp_path / "hub" / "kvplan").rglob(f"{QWEN3_8B_BASE.sha}.json"):
        entry.write_bytes(b'{"repo_id": "Qwen/Qwen3-8B-Base", "sha": ')
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    reset_default_hub()
    r = budget(client, QWEN)
    assert r.status_code == 503 and "HF_HUB_OFFLINE" in r.json()["detail"]


def test_an_unwritable_disk_cache_costs_the_offline_copy_not_the_answer(client, hub, tmp_path):
    (tmp_path / "hub").mkdir(exist_ok=True)
    (tmp_path / "hub" / "kvplan").write_text("a file where the cache directory would be")
    r = budget(client, QWEN)
    assert r.status_code == 200, r.text


# -- conditional GETs ------------------------------------------------------------------------------


def test_a_branch_that_moves_changes_the_etag(client, hub, monkeypatch):
    monkeypatch.setenv("KVPLAN_HUB_TTL_SECONDS", "0")  # ask the Hub every time
    reset_default_hub()
    repo = add_repo(hub, "moving")
    url = f"/v1/budget?model={repo}&gpu=h100-sxm-80gb"
    first = client.get(url)
    assert client.get(url, headers={"If-None-Match": first.headers["etag"]}).status_code == 304
    hub.update(repo, sha=fake_sha("moved"))
    moved = client.get(url, headers={"If-None-Match": first.headers["etag"]})
    assert moved.status_code == 200
    assert moved.json()["hub"]["sha"] == fake_sha("moved") and moved.headers["etag"] != first.headers["etag"]


def test_an_answer_from_the_disk_copy_is_not_kept_once_the_hub_is_back(client, hub, monkeypatch):
    pinned = f"{QWEN}@{QWEN3_8B_BASE.sha}"
    assert budget(client, pinned, context_tokens=1234).status_code == 200
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    reset_default_hub()
    assert budget(client, pinned, context_tokens=4321).json()["hub"]["from_cache"] is True
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    reset_default_hub()
    assert budget(client, pinned, context_tokens=4321).json()["hub"]["from_cache"] is False


# -- what a repo's own files may declare -----------------------------------------------------------


def safetensors_file(header: bytes) -> bytes:
    return len(header).to_bytes(8, "little") + header


def tensor(shape: bytes, dtype: bytes = b"BF16") -> bytes:
    return b'{"w": {"dtype": "' + dtype + b'", "shape": ' + shape + b', "data_offsets": [0, 2]}}'


BAD_HEADERS = {
    "a list": b"[]",
    "a tensor that is a string": b'{"w": "x"}',
    "a 5000-digit dimension": tensor(b"[" + b"9" * 5000 + b"]"),
    "a dimension that is a string": tensor(b'["xxxx", 3000000]'),
    "a float dimension": tensor(b"[1e308, 1e308]"),
    "a negative dimension": tensor(b"[-1000000000, 1000]"),
    "an unknown dtype": tensor(b"[2, 2]", b"F4"),
    "a header past its end": b'{"w": {"dtype": "BF16", "shape": [2, 2]',
}


@pytest.mark.parametrize("header", BAD_HEADERS.values(), ids=BAD_HEADERS.keys())
def test_a_safetensors_header_that_is_not_one_is_a_422_remembered(client, hub, header):
    repo = add_repo(hub, "bad-header", shards=(), extra_files={"model.safetensors": safetensors_file(header)})
    answers = [budget(client, repo) for _ in range(2)]
    assert [a.status_code for a in answers] == [422, 422], answers[0].text
    assert "safetensors" in answers[0].json()["detail"]
    assert hub.count(repo, "model_info") == 1


BAD_INDEXES = {"not JSON": b"{not json", "a list of names": b'{"weight_map": ["a"]}', "a list": b"[1, 2]"}


@pytest.mark.parametrize("index", BAD_INDEXES.values(), ids=BAD_INDEXES.keys())
def test_a_safetensors_index_that_is_not_one_is_a_422(client, hub, index):
    repo = add_repo(hub, "bad-index", shards=(), extra_files={"model.safetensors.index.json": index})
    r = budget(client, repo)
    assert r.status_code == 422, r.text
    assert "model.safetensors.index.json" in r.json()["detail"]


def test_an_index_naming_a_missing_shard_says_which(client, hub):
    index = b'{"weight_map": {"w": "model-00001-of-00002.safetensors"}}'
    repo = add_repo(hub, "lost-shard", shards=(), extra_files={"model.safetensors.index.json": index})
    r = budget(client, repo)
    assert r.status_code == 422, r.text
    assert "model-00001-of-00002.safetensors" in r.json()["detail"]


def test_an_index_past_the_tensor_cap_is_refused_before_any_shard_is_read(client, hub, monkeypatch):
    monkeypatch.setenv("KVPLAN_HUB_MAX_TENSORS", "10")
    reset_default_hub()
    r = budget(client, QWEN)
    assert r.status_code == 422 and "tensors" in r.json()["detail"]
    assert hub.count(QWEN, "model-00001-of-00005.safetensors") == 0


def fetch_in_a_thread(repo: str) -> BaseException | None:
    """What resolving `repo` in a fetch thread raised, once the thread is back (the deadline is
    4 × the 1 s timeout; 30 s is the bound past which it never came back)."""
    failure: list[BaseException] = []

    def fetch() -> None:
        try:
            default_hub().resolve(parse_hub_ref(repo))
        except BaseException as e:
            failure.append(e)

    t = threading.Thread(target=fetch, daemon=True)
    t.start()
    t.join(timeout=30)
    assert not t.is_alive()
    return failure[0] if failure else None


@pytest.mark.parametrize("head", [False, True], ids=["body", "headers too"])
def test_a_hub_that_trickles_its_answer_is_abandoned_at_the_deadline(hub, head):
    """Every read succeeds (a byte at a time), so only the whole fetch's deadline ends it: the
    fetch thread comes back instead of waiting for ever."""
    repo = add_repo(hub, "trickle-head" if head else "trickle", trickle=0.2, trickle_head=head)
    failure = fetch_in_a_thread(repo)
    assert failure is not None and problem_for(failure).status == 503


def test_a_batch_naming_more_models_than_the_cache_holds_answers_every_one(client, hub, monkeypatch):
    monkeypatch.setenv("KVPLAN_HUB_CACHE_BYTES", "1")  # nothing is kept between requests
    reset_default_hub()
    repos = [add_repo(hub, f"many-{i}") for i in range(3)]
    body = {"scenarios": [{"model": r, **H100} for r in repos]}
    results = client.post("/v1/budget/batch", json=body).json()["results"]
    assert ["result" in r for r in results] == [True] * 3, results


def test_an_answer_from_the_disk_copy_has_its_own_etag(client, hub, monkeypatch):
    url = f"/v1/budget?model={QWEN}&gpu=h100-sxm-80gb"
    online = client.get(url)
    monkeypatch.setenv("HF_ENDPOINT", closed_port_url())
    reset_default_hub()
    outage = client.get(url)
    assert outage.json()["hub"]["from_cache"] is True
    assert outage.headers["etag"] != online.headers["etag"]


def test_the_hub_client_draws_no_progress_bars(hub):
    from huggingface_hub.utils import are_progress_bars_disabled

    default_hub()
    assert are_progress_bars_disabled()


def test_a_fetch_that_runs_out_of_time_answers_from_the_disk_copy_at_once(client, hub, monkeypatch):
    monkeypatch.setenv("KVPLAN_HUB_TTL_SECONDS", "0")
    reset_default_hub()
    repo = add_repo(hub, "slowing")
    assert budget(client, repo).json()["hub"]["from_cache"] is False
    hub.update(repo, trickle=0.2)
    r = budget(client, repo)
    assert r.status_code == 200, r.text
    assert r.json()["hub"]["from_cache"] is True


def test_a_server_that_ignores_ranges_still_gives_a_long_header(client, hub):
    names = {f"extra.w{i}{'x' * 200}": ("BF16", [4, 4]) for i in range(400)}  # > 64 KiB
    offsets, header = 0, {}
    for name, (dtype, shape) in names.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offsets, offsets + 32]}
        offsets += 32
    raw = json.dumps(header).encode()
    assert len(raw) > 64 * 1024
    repo = add_repo(hub, "no-ranges", shards=(), ignore_range=True,
                    extra_files={"model.safetensors": safetensors_file(raw) + b"\0" * offsets})  # fmt: skip
    r = budget(client, repo)
    assert r.status_code == 200, r.text
    assert r.json()["weights_bytes"] == offsets


@pytest.mark.parametrize(("name", "data"), [("an empty file", b""), ("no tensors", safetensors_file(b"{}"))])
def test_a_safetensors_file_without_tensors_is_a_422(client, hub, name, data):
    repo = add_repo(hub, "hollow", shards=(), extra_files={"model.safetensors": data})
    r = budget(client, repo)
    assert r.status_code == 422, r.text


def test_shards_past_the_tensor_cap_are_not_read(client, hub, monkeypatch):
    monkeypatch.setenv("KVPLAN_HUB_MAX_TENSORS", "4")
    reset_default_hub()
    shards = {f"model-0000{i}-of-00003.safetensors": i for i in (1, 2, 3)}
    index = {"weight_map": {f"t{i}": name for name, i in shards.items()}}  # the index admits 3
    header = json.dumps({f"w{j}": {"dtype": "BF16", "shape": [1], "data_offsets": [2 * j, 2 * j + 2]}
                         for j in range(5)}).encode()  # fmt: skip
    files = {name: safetensors_file(header) for name in shards}
    files["model.safetensors.index.json"] = json.dumps(index).encode()
    repo = add_repo(hub, "many-tensors", shards=(), extra_files=files)
    r = budget(client, repo)
    assert r.status_code == 422 and "tensors" in r.json()["detail"]
    assert hub.count(repo, "model-00002-of-00003.safetensors") == 0


def test_a_hub_config_with_a_field_of_the_wrong_type_is_the_repos_fault_a_422(client, hub):
    config = {**QWEN3_8B_BASE.config, "num_hidden_layers": "36"}
    repo = add_repo(hub, "typo-config", config=config)
    r = budget(client, repo)
    assert r.status_code == 422, r.text
    assert "num_hidden_layers" in r.json()["detail"]


# -- proxies from the environment ------------------------------------------------------------------


@pytest.fixture
def through(hub, monkeypatch):  # type: ignore[no-untyped-def]
    """through(proxy, no_proxy=...) names the proxy in the environment, as an operator does. The
    Hub's HTTP client reads it when it is made: the test's client is made anew, and once more
    after it (the `hub` fixture has cleared the machine's own proxy settings)."""

    def use(proxy: LoopbackProxy, no_proxy: str = "") -> None:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", no_proxy)
        close_session()

    yield use
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(var, raising=False)
    close_session()


def https_endpoint(monkeypatch, tmp_path, port: int) -> None:  # type: ignore[no-untyped-def]
    isolate_hf_client(monkeypatch, tmp_path / "hub", endpoint=f"https://127.0.0.1:{port}")
    reset_default_hub()


def test_through_a_proxy_from_the_environment_the_hub_answers_as_without_one(client, hub, through):
    with serve_proxy() as proxy:
        through(proxy)
        r = budget(client, QWEN)
    assert r.status_code == 200, r.text
    assert r.json()["hub"]["sha"] == QWEN3_8B_BASE.sha
    assert f"GET {hub.url}/api/models/{QWEN}" in "\n".join(proxy.seen)  # the proxy carried it
    assert hub.count(QWEN, "model_info") == 1


def test_an_https_hub_is_reached_through_the_proxys_connect_tunnel(
    client, hub, through, monkeypatch, tmp_path
):
    tls = loopback_tls(tmp_path)
    if tls is None:
        pytest.skip("no openssl command to make a loopback certificate")
    context, cafile = tls
    port = int(hub.url.rsplit(":", 1)[1])
    https_endpoint(monkeypatch, tmp_path, port)
    monkeypatch.setenv("SSL_CERT_FILE", str(cafile))
    with serve_proxy(tls=context) as proxy:
        through(proxy)
        r = budget(client, QWEN)
    assert r.status_code == 200, r.text
    assert r.json()["hub"]["sha"] == QWEN3_8B_BASE.sha
    assert f"CONNECT 127.0.0.1:{port} HTTP/1.1" in proxy.seen


@pytest.mark.parametrize("scheme", ["http", "https"], ids=["forwarded", "tunnelled"])
@pytest.mark.parametrize("mode", ["trickle", "silent"])
def test_a_proxy_that_stalls_is_abandoned_at_the_hub_deadline(
    client, hub, through, monkeypatch, tmp_path, scheme, mode
):
    """A proxy that takes the connection, then trickles (each read succeeds) or says nothing: the
    fetch ends at its deadline, the answer is a 503 to retry, and its thread is back (no flight
    left waiting), whether the Hub is http (forwarded) or https (a CONNECT tunnel)."""
    # A deadline of 1 s (4 calls' timeouts); the proxy trickles a byte every 0.05 s, inside a read timeout.
    monkeypatch.setenv("KVPLAN_HUB_TIMEOUT_SECONDS", "0.25")
    reset_default_hub()
    if scheme == "https":
        https_endpoint(monkeypatch, tmp_path, 9)  # never reached: the proxy holds the CONNECT
    with serve_proxy(mode) as proxy:
        through(proxy)
        deadline = default_hub().settings.deadline_seconds
        t0 = time.monotonic()
        r = budget(client, QWEN)
        took = time.monotonic() - t0
        assert r.status_code == 503, r.text
        assert r.headers["retry-after"]
        assert not any(hubfetch._flights.values()), "the fetch is still waiting on the proxy"
        assert took < deadline + 0.75, took
        assert proxy.seen and proxy.seen[0].startswith("CONNECT" if scheme == "https" else "GET http://")


@pytest.mark.parametrize(("no_proxy", "proxied"), [("127.0.0.1", False), ("example.com", True)])
def test_no_proxy_naming_the_hubs_host_reaches_it_directly(client, hub, through, no_proxy, proxied):
    with serve_proxy() as proxy:
        through(proxy, no_proxy=no_proxy)
        r = budget(client, QWEN)
    assert r.status_code == 200, r.text
    assert bool(proxy.seen) is proxied, proxy.seen


@pytest.mark.parametrize("proxy", ["socks5://127.0.0.1:9", "ftp://127.0.0.1:9"], ids=["socks", "odd scheme"])
def test_a_proxy_kvplan_cannot_use_is_a_503_naming_it_not_a_direct_call(
    client, hub, through, monkeypatch, proxy
):
    monkeypatch.setenv("ALL_PROXY", proxy)
    close_session()
    r = budget(client, QWEN)
    assert r.status_code == 503, r.text
    assert "proxy" in r.json()["detail"] and r.headers["retry-after"]
    assert hub.count() == 0
