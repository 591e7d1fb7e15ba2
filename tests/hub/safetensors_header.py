"""The exact on-disk prefix of a safetensors file, built without tensor data.

A safetensors file is ``u64 little-endian N`` + ``N bytes of JSON header`` + the tensor bytes. This module
reproduces what the Rust serializer of the ``safetensors`` package (0.8.0) writes, byte for byte
(``test_safetensors_header.py`` proves it against ``safetensors.serialize``):

- tensors are laid out sorted by dtype, *descending* in the serializer's dtype order (widest first:
  U64, I64, F64, C64, F32, U32, I32, BF16, F16, ...), then by name ascending; ``data_offsets`` are
  ``[begin, end)`` into the data section, contiguous, starting at 0;
- the JSON is compact (``,`` and ``:`` without spaces), ``__metadata__`` first when given, then each tensor
  as ``{"dtype":..,"shape":[..],"data_offsets":[b,e]}`` in layout order;
- the header is padded with ASCII spaces to a multiple of 8 bytes, and N counts the padding.

Real checkpoints are gigabytes: the fake Hub serves files whose bytes past this prefix are zeros, so only the
header is ever read.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping, Sequence

# dtype -> size in bits (F4/F6 are sub-byte: safetensors rejects shapes that are not whole bytes)
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8,
    "F8_E5M2FNUZ": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
}

# The Rust `Dtype` enum order (ascending) as observed through `safetensors.serialize` 0.8.0; the serializer
# sorts by it descending. F6_* cannot be produced from Python (no TensorSpec name), their rank is the enum's.
DTYPE_ORDER: tuple[str, ...] = tuple(DTYPE_BITS)
_RANK = {d: i for i, d in enumerate(DTYPE_ORDER)}

# Python constructor-style names that `safetensors.TensorSpec` accepts, for the format codes it can write.
TENSORSPEC_NAME: dict[str, str] = {
    "BOOL": "bool",
    "F4": "float4_e2m1fn_x2",
    "U8": "uint8",
    "I8": "int8",
    "F8_E5M2": "float8_e5m2",
    "F8_E4M3": "float8_e4m3fn",
    "F8_E8M0": "float8_e8m0fnu",
    "F8_E4M3FNUZ": "float8_e4m3fnuz",
    "F8_E5M2FNUZ": "float8_e5m2fnuz",
    "I16": "int16",
    "U16": "uint16",
    "F16": "float16",
    "BF16": "bfloat16",
    "I32": "int32",
    "U32": "uint32",
    "F32": "float32",
    "C64": "complex64",
    "F64": "float64",
    "I64": "int64",
    "U64": "uint64",
}

Tensors = Mapping[str, tuple[str, Sequence[int]]]
DEFAULT_METADATA: Mapping[str, str] = {"format": "pt"}


def numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


def nbytes(dtype: str, shape: Sequence[int]) -> int:
    """Bytes the tensor's data occupies on disk (packed dtypes such as I32/U8 count as stored)."""
    bits = numel(shape) * DTYPE_BITS[dtype]
    if bits % 8:
        raise ValueError(f"{dtype}{list(shape)} is not a whole number of bytes")
    return bits // 8


def layout(tensors: Tensors) -> list[tuple[str, str, list[int], int, int]]:
    """(name, dtype, shape, begin, end) in the serializer's order."""
    for name, (dtype, _) in tensors.items():
        if dtype not in _RANK:
            raise ValueError(f"unknown safetensors dtype {dtype!r} for {name}")
    order = sorted(tensors.items(), key=lambda kv: (-_RANK[kv[1][0]], kv[0]))
    out: list[tuple[str, str, list[int], int, int]] = []
    offset = 0
    for name, (dtype, shape) in order:
        size = nbytes(dtype, shape)
        out.append((name, dtype, [int(d) for d in shape], offset, offset + size))
        offset += size
    return out


def data_size(tensors: Tensors) -> int:
    """Size of the data section (Σ tensor bytes)."""
    return sum(nbytes(dtype, shape) for dtype, shape in tensors.values())


def header_json(tensors: Tensors, metadata: Mapping[str, str] | None = DEFAULT_METADATA) -> bytes:
    """The JSON header exactly as written, including its space padding to a multiple of 8."""
    doc: dict[str, object] = {}
    if metadata is not None:
        doc["__metadata__"] = dict(metadata)
    for name, dtype, shape, begin, end in layout(tensors):
        doc[name] = {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}
    raw = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
    return raw + b" " * (-len(raw) % 8)


def header_bytes(tensors: Tensors, metadata: Mapping[str, str] | None = DEFAULT_METADATA) -> bytes:
    """The file's prefix: 8-byte little-endian header length + the padded JSON header."""
    header = header_json(tensors, metadata)
    return struct.pack("<Q", len(header)) + header


def file_size(tensors: Tensors, metadata: Mapping[str, str] | None = DEFAULT_METADATA) -> int:
    """Size of the complete safetensors file (prefix + data)."""
    return len(header_bytes(tensors, metadata)) + data_size(tensors)
