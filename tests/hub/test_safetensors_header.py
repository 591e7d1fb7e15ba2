"""`header_bytes` writes exactly what the `safetensors` package writes."""

from __future__ import annotations

import ctypes
import itertools
import json
import random
import struct

import pytest
from safetensors import TensorSpec, deserialize, serialize

from tests.hub.fakehub import FakeRepo
from tests.hub.repos import GPT_OSS, QWEN3_8B_BASE, W4A16
from tests.hub.safetensors_header import TENSORSPEC_NAME, Tensors, file_size, header_bytes, nbytes


def _package_file(tensors: Tensors, metadata: dict[str, str] | None = None) -> bytes:
    """The complete file as `safetensors.serialize` writes it (zero-filled data)."""
    buffers = []
    specs = {}
    for name, (dtype, shape) in tensors.items():
        size = nbytes(dtype, shape)
        buf = ctypes.create_string_buffer(max(size, 1))
        buffers.append(buf)
        storage_shape = list(shape)
        if dtype == "F4":  # TensorSpec takes the storage shape (x2 packed) and doubles the last dim
            storage_shape[-1] //= 2
        specs[name] = TensorSpec(
            dtype=TENSORSPEC_NAME[dtype], shape=storage_shape, data_ptr=ctypes.addressof(buf), data_len=size
        )
    out = serialize(specs, metadata=metadata)
    del buffers
    return out


def _prefix(blob: bytes) -> bytes:
    n = struct.unpack("<Q", blob[:8])[0]
    return blob[: 8 + n]


def _scaled_down(tensors: Tensors, limit: int = 64) -> Tensors:
    """Same names and dtypes, every dim capped (keeps the byte count whole for packed dtypes)."""
    out: dict[str, tuple[str, tuple[int, ...]]] = {}
    for name, (dtype, shape) in tensors.items():
        small = tuple(min(d, limit) if d % 2 == 0 else min(d, limit - 1) for d in shape)
        out[name] = (dtype, small)
    return out


MIXED: Tensors = {
    "model.layers.0.self_attn.q_proj.weight": ("F8_E4M3", (16, 8)),
    "model.layers.0.self_attn.q_proj.weight_scale": ("BF16", (16, 1)),
    "model.layers.0.mlp.down_proj.weight_packed": ("I32", (8, 2)),
    "model.layers.0.mlp.down_proj.weight_shape": ("I64", (2,)),
    "model.layers.0.mlp.experts.gate_up_proj_blocks": ("U8", (2, 4, 3, 16)),
    "model.layers.0.mlp.experts.gate_up_proj_scales": ("U8", (2, 4, 3)),
    "model.layers.0.self_attn.sinks": ("F32", (8,)),
    "model.layers.0.scales": ("F16", (3, 5)),
    "model.norm.weight": ("BF16", (8,)),
    "a.scalar": ("F32", ()),
    "b.empty": ("BF16", (0, 4)),
    "c.bool": ("BOOL", (3,)),
    "d.f64": ("F64", (1,)),
    "e.u16": ("U16", (7,)),
    "f.i8": ("I8", (5,)),
    "g.e5m2": ("F8_E5M2", (3,)),
    "h.e8m0": ("F8_E8M0", (3,)),
    "i.fp4": ("F4", (2, 6)),
    "j.u64": ("U64", (1,)),
    "k.c64": ("C64", (2,)),
    "l.u32": ("U32", (2,)),
    "m.i16": ("I16", (2,)),
}


@pytest.mark.parametrize("metadata", [{"format": "pt"}, None])
def test_mixed_dtypes_match_package(metadata: dict[str, str] | None) -> None:
    blob = _package_file(MIXED, metadata)
    assert header_bytes(MIXED, metadata) == _prefix(blob)
    assert file_size(MIXED, metadata) == len(blob)


@pytest.mark.parametrize("name_len", range(1, 17))
def test_padding_matches_package(name_len: int) -> None:
    tensors: Tensors = {"x" * name_len: ("BF16", (3,)), "y": ("F32", (1,))}
    got = header_bytes(tensors)
    assert got == _prefix(_package_file(tensors, {"format": "pt"}))
    assert (len(got) - 8) % 8 == 0


def test_random_sets_match_package() -> None:
    rng = random.Random(7)
    dtypes = sorted(TENSORSPEC_NAME)
    for _ in range(25):
        tensors: dict[str, tuple[str, tuple[int, ...]]] = {}
        for _ in range(rng.randint(1, 12)):
            name = "".join(rng.choice("abcxyz._0123456789") for _ in range(rng.randint(1, 20)))
            shape = tuple(rng.randint(0, 5) * 2 for _ in range(rng.randint(0, 3)))
            dtype = rng.choice(dtypes)
            if dtype == "F4" and not shape:
                shape = (2,)  # a scalar F4 is half a byte: not storable
            tensors[name] = (dtype, shape)
        assert header_bytes(tensors) == _prefix(_package_file(tensors, {"format": "pt"}))


@pytest.mark.parametrize("repo", [QWEN3_8B_BASE, W4A16, GPT_OSS], ids=lambda r: r.repo_id)
def test_real_tensor_names_match_package(repo: FakeRepo) -> None:
    # the fixture shards' own name/dtype sets, dims capped so the package can write them with data
    tensors = _scaled_down(dict(repo.shards[0].tensors))
    blob = _package_file(tensors, {"format": "pt"})
    assert header_bytes(tensors) == _prefix(blob)
    # and the package reads our prefix + zero data back
    parsed = deserialize(  # type: ignore[no-untyped-call]
        header_bytes(tensors) + b"\0" * (len(blob) - len(_prefix(blob)))
    )
    assert {name: tuple(info["shape"]) for name, info in parsed} == {n: s for n, (_, s) in tensors.items()}


def test_full_size_shard_header_is_json() -> None:
    shard = QWEN3_8B_BASE.shards[0]
    prefix = shard.header()
    n = struct.unpack("<Q", prefix[:8])[0]
    doc = json.loads(prefix[8 : 8 + n])
    assert doc["__metadata__"] == {"format": "pt"}
    assert len(doc) - 1 == len(shard.tensors)
    ends = sorted(v["data_offsets"] for k, v in doc.items() if k != "__metadata__")
    assert ends[0][0] == 0 and ends[-1][1] == shard.data_size
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ends))
