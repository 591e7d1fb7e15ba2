"""A checkpoint's tensors from its safetensors headers, read by HTTP range requests through
huggingface_hub's client: never the weights. Every figure a repo declares is checked before it is
used (the header is the repo author's JSON): sizes are bounded before anything is downloaded, and a
header, index or shard that is not what the format says is a ModelUnreadable naming the file."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Annotated

import msgspec
from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url
from huggingface_hub.errors import RemoteEntryNotFoundError
from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

from kvplan.core.limits import MAX_DIMENSION, MAX_ELEMENTS

from .errors import ModelTooLarge, ModelUnreadable

SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
_FIRST_READ = 64 * 1024  # most headers fit: one request for the length and the header
_SHARD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._\-/]{0,199}\.safetensors")


class _Index(msgspec.Struct):
    weight_map: dict[str, str]


class _Tensor(msgspec.Struct):
    dtype: Annotated[str, msgspec.Meta(max_length=16)]
    shape: Annotated[list[Annotated[int, msgspec.Meta(ge=0, le=MAX_DIMENSION)]], msgspec.Meta(max_length=16)]


_index_decoder = msgspec.json.Decoder(_Index)
_header_decoder = msgspec.json.Decoder(dict[str, msgspec.Raw])
_tensor_decoder = msgspec.json.Decoder(_Tensor)


class Limits(msgspec.Struct, frozen=True):
    timeout_seconds: float
    max_index_bytes: int
    max_header_bytes: int
    max_tensors: int
    max_shards: int


def files_of(repo_id: str, sha: str, repo_files: set[str], endpoint: str, token: str | None,
             cache_dir: str, limits: Limits) -> list[str]:  # fmt: skip
    """The safetensors files holding the model (one, or the shards its index names); [] without."""
    if SINGLE_FILE in repo_files:
        return [SINGLE_FILE]
    if INDEX_FILE not in repo_files:
        return []
    url = hf_hub_url(repo_id, INDEX_FILE, revision=sha, endpoint=endpoint)
    meta = get_hf_file_metadata(url, token=token or False, timeout=limits.timeout_seconds)
    if meta.size is not None and meta.size > limits.max_index_bytes:
        raise ModelTooLarge(f"{repo_id}'s {INDEX_FILE} is {meta.size:,} bytes; kvplan reads at most "
                            f"{limits.max_index_bytes:,}")  # fmt: skip
    path = hf_hub_download(repo_id, INDEX_FILE, revision=sha, cache_dir=cache_dir, endpoint=endpoint,
                           token=token or False, etag_timeout=limits.timeout_seconds)  # fmt: skip
    with open(path, "rb") as f:
        raw = f.read(limits.max_index_bytes + 1)
    if len(raw) > limits.max_index_bytes:
        raise ModelTooLarge(f"{repo_id}'s {INDEX_FILE} is larger than {limits.max_index_bytes:,} bytes")
    try:
        index = _index_decoder.decode(raw)
    except (msgspec.MsgspecError, RecursionError) as e:
        raise ModelUnreadable(f"{repo_id}'s {INDEX_FILE} is not a safetensors index: {e}") from None
    if len(index.weight_map) > limits.max_tensors:
        raise ModelTooLarge(f"{repo_id} has {len(index.weight_map):,} tensors; kvplan reads at most "
                            f"{limits.max_tensors:,}")  # fmt: skip
    shards = sorted(set(index.weight_map.values()))
    if len(shards) > limits.max_shards:
        cap = limits.max_shards
        raise ModelTooLarge(f"{repo_id} has {len(shards):,} shards; kvplan reads at most {cap:,}")
    for name in shards:
        if not _SHARD_NAME.fullmatch(name) or ".." in name:
            raise ModelUnreadable(f"{repo_id}'s {INDEX_FILE} names a shard {name[:80]!r}: not a file name")
    return shards


def _read(url: str, start: int, end: int, headers: dict[str, str], timeout: float) -> bytes:
    """Bytes [start, end) of a file (fewer if it ends first), however the server answers the
    range: a 206 starts at `start`, a 200 (range ignored) at 0; a 416 is an empty answer."""
    with get_session().stream(
        "GET", url, headers={**headers, "Range": f"bytes={start}-{end - 1}"}, timeout=timeout
    ) as r:
        if r.status_code == 416:  # the file ends before `start`
            return b""
        hf_raise_for_status(r)
        skip = start if r.status_code == 200 else 0
        chunks, got = [], 0
        for chunk in r.iter_bytes():
            chunks.append(chunk)
            got += len(chunk)
            if got >= skip + end - start:
                break
    return b"".join(chunks)[skip : skip + end - start]


def tensors_of(repo_id: str, sha: str, filename: str, endpoint: str, token: str | None,
               limits: Limits) -> Iterator[tuple[str, str, int]]:  # fmt: skip
    """(name, dtype, elements) of each tensor in one safetensors file, from its header."""
    url = hf_hub_url(repo_id, filename, revision=sha, endpoint=endpoint)
    headers = build_hf_headers(token=token or False)
    try:
        first = _read(url, 0, 8 + _FIRST_READ, headers, limits.timeout_seconds)
        if len(first) < 8:
            raise ModelUnreadable(f"{repo_id}'s {filename} is shorter than a safetensors header")
        length = int.from_bytes(first[:8], "little")
        if length > limits.max_header_bytes:
            raise ModelTooLarge(f"{repo_id}'s {filename} declares a {length:,}-byte header; kvplan reads "
                                f"at most {limits.max_header_bytes:,}")  # fmt: skip
        body = first[8 : 8 + length]
        if len(body) < length:
            body += _read(url, len(first), 8 + length, headers, limits.timeout_seconds)
    except RemoteEntryNotFoundError:
        raise ModelUnreadable(f"{repo_id} has no {filename}, which its index names") from None
    if len(body) < length:
        raise ModelUnreadable(f"{repo_id}'s {filename} ends inside its header")
    try:
        entries = _header_decoder.decode(body)
        for name, raw in entries.items():
            if name == "__metadata__":
                continue
            t = _tensor_decoder.decode(raw)
            elements = math.prod(t.shape)
            if elements > MAX_ELEMENTS:
                what = f"a tensor {name[:80]!r} of {elements:.3g} elements"
                raise ModelUnreadable(f"{repo_id}'s {filename} declares {what}")
            yield name, t.dtype, elements
    except (msgspec.MsgspecError, RecursionError) as e:
        raise ModelUnreadable(f"{repo_id}'s {filename} has a header that is not safetensors: {e}") from None
