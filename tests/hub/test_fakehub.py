"""The real huggingface_hub client against the fake Hub (no mocks of huggingface_hub)."""

from __future__ import annotations

import dataclasses
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from huggingface_hub import HfApi, hf_hub_download
from huggingface_hub.errors import (
    GatedRepoError,
    NotASafetensorsRepoError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
    SafetensorsParsingError,
)

from tests.hub.fakehub import TOKEN, FakeHub, FakeRepo, isolate_hf_client, serve_hub
from tests.hub.repos import (
    ALL_REPOS,
    AWQ,
    FP8_DYNAMIC,
    GATED,
    GPT_OSS,
    OVERSIZED_CONFIG,
    OVERSIZED_HEADER,
    PRIVATE,
    QWEN3_8B_BASE,
    QWEN3_SINGLE,
    QWEN25_VL,
    SLOW,
    UNKNOWN_REPO_ID,
    W4A16,
    expected_bytes_by_dtype,
)
from tests.hub.safetensors_header import nbytes

MODEL_REPOS = [QWEN3_8B_BASE, QWEN3_SINGLE, FP8_DYNAMIC, W4A16, AWQ, GPT_OSS, QWEN25_VL]


@pytest.fixture(scope="module")
def hub() -> Iterator[FakeHub]:
    with serve_hub(ALL_REPOS) as h:
        yield h


@pytest.fixture
def cache(hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate_hf_client(monkeypatch, tmp_path)
    hub.reset()
    return tmp_path


@pytest.fixture
def api(hub: FakeHub, cache: Path) -> HfApi:
    return HfApi(endpoint=hub.url, token=False)


def _get(
    url: str, headers: dict[str, str] | None = None, method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        with e:
            return e.code, dict(e.headers), e.read()


# ------------------------------------------------------------------------------------------ model_info


def test_model_info_returns_sha_for_main_and_for_the_sha(api: HfApi) -> None:
    repo = QWEN3_8B_BASE
    info = api.model_info(repo.repo_id)
    assert info.id == repo.repo_id
    assert info.sha == repo.sha
    assert info.gated is False and info.private is False
    assert {s.rfilename for s in info.siblings or []} == set(repo.files())
    assert info.safetensors is not None
    assert info.safetensors.parameters == repo.parameters_by_dtype()
    assert api.model_info(repo.repo_id, revision=repo.sha).sha == repo.sha
    assert api.model_info(repo.repo_id, revision="main").sha == repo.sha


def test_model_info_files_metadata_gives_sizes(api: HfApi) -> None:
    info = api.model_info(GPT_OSS.repo_id, files_metadata=True)
    sizes = {s.rfilename: s.size for s in info.siblings or []}
    for shard in GPT_OSS.shards:
        assert sizes[shard.filename] == len(shard.header()) + shard.data_size
    lfs = {s.rfilename: s.lfs for s in info.siblings or []}
    assert lfs["config.json"] is None and lfs[GPT_OSS.shards[0].filename] is not None


def test_unknown_revision(api: HfApi) -> None:
    with pytest.raises(RevisionNotFoundError):
        api.model_info(QWEN3_8B_BASE.repo_id, revision="0" * 40)
    with pytest.raises(RevisionNotFoundError):
        hf_hub_download(QWEN3_8B_BASE.repo_id, "config.json", revision="nope", endpoint=api.endpoint)


def test_unknown_repo(api: HfApi, cache: Path) -> None:
    with pytest.raises(RepositoryNotFoundError):
        api.model_info(UNKNOWN_REPO_ID)
    with pytest.raises(RepositoryNotFoundError):
        hf_hub_download(UNKNOWN_REPO_ID, "config.json", endpoint=api.endpoint, cache_dir=cache, token=False)
    with pytest.raises(NotASafetensorsRepoError):  # file_exists() swallows RepositoryNotFound
        api.get_safetensors_metadata(UNKNOWN_REPO_ID)


# ------------------------------------------------------------------------------------------- downloads


def test_config_download_and_cache(hub: FakeHub, cache: Path) -> None:
    repo = FP8_DYNAMIC
    path = hf_hub_download(repo.repo_id, "config.json", endpoint=hub.url, cache_dir=cache, token=False)
    assert json.loads(Path(path).read_text()) == repo.config
    assert f"snapshots/{repo.sha}/config.json" in str(path)
    assert hub.count(repo.repo_id, "config.json", "HEAD") == 1
    assert hub.count(repo.repo_id, "config.json", "GET") == 1
    # pinned to the sha: served from the cache without a request
    again = hf_hub_download(
        repo.repo_id, "config.json", revision=repo.sha, endpoint=hub.url, cache_dir=cache, token=False
    )
    assert again == path
    assert hub.count(repo.repo_id, "config.json") == 2


def test_missing_file_is_entry_not_found(hub: FakeHub, cache: Path) -> None:
    from huggingface_hub.errors import RemoteEntryNotFoundError

    with pytest.raises(RemoteEntryNotFoundError):
        hf_hub_download(QWEN3_SINGLE.repo_id, "nope.json", endpoint=hub.url, cache_dir=cache, token=False)


# -------------------------------------------------------------------------------- safetensors metadata


@pytest.mark.parametrize("repo", MODEL_REPOS, ids=lambda r: r.repo_id)
def test_safetensors_metadata_lists_every_tensor(api: HfApi, hub: FakeHub, repo: FakeRepo) -> None:
    meta = api.get_safetensors_metadata(repo.repo_id, revision=repo.sha)
    assert meta.sharded == repo.sharded
    assert set(meta.files_metadata) == {s.filename for s in repo.shards}
    got = {
        name: (info.dtype, tuple(info.shape))
        for fm in meta.files_metadata.values()
        for name, info in fm.tensors.items()
    }
    assert got == {name: (d, tuple(s)) for name, (d, s) in repo.tensors.items()}
    assert meta.weight_map == repo.weight_map()
    by_dtype: dict[str, int] = {}
    for fm in meta.files_metadata.values():
        for info in fm.tensors.values():
            by_dtype[info.dtype] = by_dtype.get(info.dtype, 0) + nbytes(info.dtype, info.shape)
    assert by_dtype == expected_bytes_by_dtype(repo)
    if repo.sharded:
        assert meta.metadata == {"total_size": sum(expected_bytes_by_dtype(repo).values())}
    # each shard header was read with Range requests only
    for shard in repo.shards:
        recs = [
            r for r in hub.log if r.repo_id == repo.repo_id and r.key == shard.filename and r.method == "GET"
        ]
        assert recs and all(r.range and r.status == 206 for r in recs)


def test_quantized_layouts(api: HfApi) -> None:
    fp8 = api.get_safetensors_metadata(FP8_DYNAMIC.repo_id)
    t = fp8.files_metadata[fp8.weight_map["model.layers.0.self_attn.q_proj.weight"]].tensors
    assert (
        str(t["model.layers.0.self_attn.q_proj.weight"].dtype) == "F8_E4M3"
    )  # TensorInfo's Literal lacks F8
    assert t["model.layers.0.self_attn.q_proj.weight_scale"].shape == [4096, 1]
    w4 = api.get_safetensors_metadata(W4A16.repo_id)
    name = "model.layers.0.mlp.down_proj.weight_packed"
    info = w4.files_metadata[w4.weight_map[name]].tensors[name]
    assert (info.dtype, info.shape) == ("I32", [4096, 12288 // 8])
    awq = api.get_safetensors_metadata(AWQ.repo_id)
    name = "model.layers.0.mlp.down_proj.qweight"
    info = awq.files_metadata[awq.weight_map[name]].tensors[name]
    assert (info.dtype, info.shape) == ("I32", [12288, 4096 // 8])
    gpt = api.get_safetensors_metadata(GPT_OSS.repo_id)
    name = "model.layers.0.mlp.experts.gate_up_proj_blocks"
    info = gpt.files_metadata[gpt.weight_map[name]].tensors[name]
    assert (info.dtype, info.shape) == ("U8", [32, 5760, 90, 16])
    vl = api.get_safetensors_metadata(QWEN25_VL.repo_id)
    assert any(n.startswith("visual.blocks.31.") for n in vl.weight_map)
    assert "model.layers.27.self_attn.q_proj.bias" in vl.weight_map


def test_sharded_metadata_endpoint(api: HfApi) -> None:
    meta = api.get_sharded_safetensors_metadata(QWEN3_8B_BASE.repo_id)
    assert meta.weight_map == QWEN3_8B_BASE.weight_map()


def test_list_repo_files(api: HfApi) -> None:
    assert sorted(api.list_repo_files(QWEN3_SINGLE.repo_id)) == sorted(QWEN3_SINGLE.files())


# ------------------------------------------------------------------------------------------ behaviours


def test_gated_without_and_with_token(hub: FakeHub, api: HfApi, cache: Path) -> None:
    repo = GATED
    info = api.model_info(repo.repo_id)  # metadata is public on the Hub, files are not
    assert info.gated == "manual" and info.sha == repo.sha
    with pytest.raises(GatedRepoError):
        hf_hub_download(repo.repo_id, "config.json", endpoint=hub.url, cache_dir=cache, token=False)
    with pytest.raises(GatedRepoError):
        hf_hub_download(repo.repo_id, "config.json", endpoint=hub.url, cache_dir=cache, token="hf_wrong")
    with pytest.raises(GatedRepoError):
        api.get_safetensors_metadata(repo.repo_id)
    path = hf_hub_download(repo.repo_id, "config.json", endpoint=hub.url, cache_dir=cache, token=TOKEN)
    assert json.loads(Path(path).read_text()) == repo.config
    meta = HfApi(endpoint=hub.url, token=TOKEN).get_safetensors_metadata(repo.repo_id)
    assert len(meta.weight_map) == len(repo.tensors)
    status, headers, _ = _get(f"{hub.url}/{repo.repo_id}/resolve/main/config.json", method="HEAD")
    assert (status, headers["X-Error-Code"], headers["X-Repo-Commit"]) == (401, "GatedRepo", repo.sha)


def test_private_repo_is_not_found_without_token(hub: FakeHub, api: HfApi) -> None:
    with pytest.raises(RepositoryNotFoundError):
        api.model_info(PRIVATE.repo_id)
    assert HfApi(endpoint=hub.url, token=TOKEN).model_info(PRIVATE.repo_id).sha == PRIVATE.sha


def test_slow_repo_exceeds_a_short_timeout(api: HfApi) -> None:
    with pytest.raises(httpx2.TimeoutException):
        api.model_info(SLOW.repo_id, timeout=0.2)


def test_oversized_header_is_refused_by_the_client(hub: FakeHub, api: HfApi) -> None:
    with pytest.raises(SafetensorsParsingError, match="too big"):
        api.get_safetensors_metadata(OVERSIZED_HEADER.repo_id)
    status, headers, body = _get(
        f"{hub.url}/{OVERSIZED_HEADER.repo_id}/resolve/main/model.safetensors", {"Range": "bytes=0-7"}
    )
    assert status == 206 and int.from_bytes(body, "little") == 100 * 1024 * 1024
    assert headers["Content-Range"] == f"bytes 0-7/{8 + 100 * 1024 * 1024}"


def test_oversized_config_declares_its_size(hub: FakeHub, cache: Path) -> None:
    info = hf_hub_download(
        OVERSIZED_CONFIG.repo_id, "config.json", endpoint=hub.url, cache_dir=cache, token=False, dry_run=True
    )
    assert info.file_size == 100 * 1024 * 1024
    assert hub.count(OVERSIZED_CONFIG.repo_id, "config.json", "GET") == 0


# -------------------------------------------------------------------------------------------- raw HTTP


def test_ranges(hub: FakeHub, cache: Path) -> None:
    shard = QWEN3_SINGLE.shards[0]
    url = f"{hub.url}/{QWEN3_SINGLE.repo_id}/resolve/{QWEN3_SINGLE.sha}/model.safetensors"
    size = len(shard.header()) + shard.data_size
    status, headers, body = _get(url, {"Range": "bytes=0-99"})
    assert (status, body, headers["Content-Range"]) == (206, shard.header()[:100], f"bytes 0-99/{size}")
    status, headers, body = _get(url, {"Range": "bytes=-4"})
    assert (status, body, headers["Content-Range"]) == (206, b"\0" * 4, f"bytes {size - 4}-{size - 1}/{size}")
    status, headers, _ = _get(url, {"Range": f"bytes={size}-"})
    assert (status, headers["Content-Range"]) == (416, f"bytes */{size}")
    status, headers, _ = _get(url, method="HEAD")
    assert status == 200 and int(headers["Content-Length"]) == size
    assert headers["X-Repo-Commit"] == QWEN3_SINGLE.sha and headers["X-Linked-Etag"] == headers["ETag"]


def test_counters_under_concurrency_and_reset(hub: FakeHub, cache: Path) -> None:
    url = f"{hub.url}/api/models/{QWEN3_SINGLE.repo_id}"
    barrier = threading.Barrier(50)
    statuses: list[int] = []

    def one() -> None:
        barrier.wait()
        statuses.append(_get(url)[0])

    threads = [threading.Thread(target=one) for _ in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses == [200] * 50
    assert hub.requests[(QWEN3_SINGLE.repo_id, "model_info")] == 50
    assert hub.count(QWEN3_SINGLE.repo_id, "model_info", "GET") == 50
    hub.reset()
    assert hub.count() == 0 and not hub.requests


def test_update_moves_main(hub: FakeHub, api: HfApi) -> None:
    new_sha = "f" * 40
    hub.update(QWEN3_SINGLE.repo_id, sha=new_sha)
    try:
        assert api.model_info(QWEN3_SINGLE.repo_id).sha == new_sha
        with pytest.raises(RevisionNotFoundError):
            api.model_info(QWEN3_SINGLE.repo_id, revision=QWEN3_SINGLE.sha)
    finally:
        hub.add(QWEN3_SINGLE)


def test_env_endpoint_without_endpoint_arguments(
    hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # HF_ENDPOINT is read once at import: isolate_hf_client patches the constants it feeds
    isolate_hf_client(monkeypatch, tmp_path, endpoint=hub.url)
    assert HfApi(token=False).model_info(QWEN3_SINGLE.repo_id).sha == QWEN3_SINGLE.sha
    path = hf_hub_download(QWEN3_SINGLE.repo_id, "config.json", token=False)
    assert Path(path).is_relative_to(tmp_path)
    assert HfApi(token=False).get_safetensors_metadata(QWEN3_SINGLE.repo_id).sharded is False


def test_hf_hub_download_retries_a_timed_out_head(cache: Path) -> None:
    # huggingface_hub quirk: etag_timeout only bounds the first HEAD; with nothing cached it retries the HEAD
    # with a 60 s timeout, so a slow Hub makes hf_hub_download slow, not failing: callers need a deadline.
    slow = dataclasses.replace(SLOW, slow=0.6)
    with serve_hub([slow]) as h:
        path = hf_hub_download(
            slow.repo_id, "config.json", endpoint=h.url, cache_dir=cache, token=False, etag_timeout=0.2
        )
        assert Path(path).exists()
        assert h.count(slow.repo_id, "config.json", "HEAD") == 2
