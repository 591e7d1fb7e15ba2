"""What a family of architectures tells the standard reader (core/hf/reader.py): the
architectures and model types it reads, and the hooks through which its rules replace the
standard ones. One Family a module under core/hf/families/, all of them in that package's table,
as vLLM's vllm/model_executor/models/registry.py maps an architecture to the module that builds it.

A family either reads the whole layout itself (`claim` returning a Geometry, or `read`), or
adjusts the config before the standard reader reads it (`claim`, `config_class`,
`decoder_config`, `attention_config`), or answers the pieces the standard reader asks it for
(`kv_slots`, `layer_types`, `kv_shared_layers`, `state`, `window`, `mla`, `attention_dims`,
`attention_extras`). A hook left None means the standard rule."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..model.geometry import Geometry, QsaCaches
from ..model.mamba import MambaState


class Reading(NamedTuple):
    """A config.json on its way through the reader: as sent (`top`), the fields read from it
    (a text config over its top level, completed so far), the model type it is read as, its
    architectures, and the name the geometry takes."""

    top: Mapping[str, Any]
    cfg: dict[str, Any]
    model_type: str
    archs: tuple[str, ...]
    name: str


class MlaReading(NamedTuple):
    """What an MLA layout reads beside kv_lora_rank: the RoPE dim, the indexer head dim of sparse
    layers (as the config gives it, None without an indexer), GLM-5-next's kpool indexer, and
    the sparse layers and those keeping an indexer when not every layer does."""

    qk_rope_head_dim: int
    index_head_dim: Any = None
    kpool_indexer: tuple[int, int] | None = None
    sparse_mla_layers: tuple[int, ...] | None = None
    mla_indexer_layers: tuple[int, ...] | None = None


class AttentionExtras(NamedTuple):
    """A family's own caches and sizes beside plain attention: the full layers' head dim and KV
    heads where they differ from the sliding ones (Gemma-4), QSA's side caches (Qwen4-exp), the
    layers with an indexer cache and its key width (MiniMax-M3)."""

    full_head_dim: int | None = None
    full_kv_heads: int | None = None
    qsa: QsaCaches | None = None
    indexer_layers: tuple[int, ...] | None = None
    indexer_dim: int | None = None


NO_EXTRAS = AttentionExtras()


class AttentionReading(NamedTuple):
    """Plain attention as the standard reader has read it, which a family's `attention_extras`
    reads its own caches and sizes from: the config, the model type, the KV layer count, the
    decoder layers' kinds as the family gave them, the head dim and KV heads, the model dtype and
    the architectures."""

    cfg: Mapping[str, Any]
    model_type: str
    n: int
    layer_types: tuple[str, ...] | None
    head_dim: int
    kv_heads: int
    dtype: str
    archs: tuple[str, ...]


Config = dict[str, Any]
# (kind, decoder layer) of each KV layer in order, or None for one a decoder layer; the decoder's
# layer count.
KvSlots = tuple[tuple[tuple[str, int], ...] | None, int]
LayerTypes = Callable[[Mapping[str, Any], str, int, int | None, tuple[str, ...]], tuple[str, ...] | None]
AttentionExtrasHook = Callable[[AttentionReading], AttentionExtras]


def _no_aliases() -> Mapping[str, str]:
    return {}


@dataclass(frozen=True, kw_only=True)
class Family:
    """One row of the family table. The reader asks a family's hooks when the config's model type
    (after aliases and the claims below) is one of `model_types` or starts with one of
    `model_type_prefixes`; `architectures` are the class names that claim a config for the family
    before its model type is read (`claim`, `check`, `shape_config` run for a config naming one).

    Hooks, in the order the reader calls them:
      claim(reading) -> Reading | Geometry: before the config class's defaults, for a config
        naming one of `architectures` (or, with claim_by_name, going by one of `model_types`):
        rename its model type, rewrite its fields, or read the whole layout.
      check(reading): after the defaults, for a config naming one of `architectures`: refuse a
        model type the family's architecture is not read from.
      read(reading) -> Geometry: the whole layout, after the defaults.
      config_class(cfg, n) -> cfg: what the config class fills in or refuses once the decoder's
        layer count is read (before the heads).
      decoder_config(cfg, n) -> cfg: the layers the decoder builds, once the dtype and the
        context are read (before the window).
      attention_config(cfg, n, q_heads) -> cfg: what the attention layers read (KV heads), once
        the window is read and the recurrent-state keys checked.
      kv_slots(cfg, model_type, n) -> KvSlots: KV layers that are not one a decoder layer.
      layer_types(cfg, model_type, n, window, archs): each layer's kind, None for uniform.
      kv_shared_layers(cfg, model_type, n) -> int: the last layers that keep no KV of their own.
      state(cfg, model_type, dtype, archs) -> MambaState: the recurrent layers' state; a family
        without it keeps none (state-looking keys are refused), and `refuses_state` marks one
        that keeps a state kvplan does not read yet.
      window(window) -> int: the window vLLM's attention applies, given the config's.
      mla(cfg, n, q_heads) -> MlaReading: an MLA layout's reading beside kv_lora_rank.
      attention_dims(cfg, q_heads) -> (KV heads, head dim) of plain attention.
      attention_extras(AttentionReading) -> AttentionExtras: the caches and sizes beside plain
        attention, given its layers as read.
      shape_config(config) -> config: the config the model shape and parameter estimate read.
    """

    module: str
    architectures: frozenset[str] = frozenset()
    model_types: frozenset[str] = frozenset()
    model_type_prefixes: tuple[str, ...] = ()
    # Old model type names transformers maps to this family's current ones.
    aliases: Mapping[str, str] = field(default_factory=_no_aliases)
    claim_by_name: bool = False
    claim: Callable[[Reading], Reading | Geometry] | None = None
    check: Callable[[Reading], None] | None = None
    read: Callable[[Reading], Geometry] | None = None
    config_class: Callable[[Config, int], Config] | None = None
    decoder_config: Callable[[Config, int], Config] | None = None
    attention_config: Callable[[Config, int, int], Config] | None = None
    kv_slots: Callable[[Mapping[str, Any], str, int], KvSlots] | None = None
    layer_types: LayerTypes | None = None
    kv_shared_layers: Callable[[Mapping[str, Any], str, int], int] | None = None
    state: Callable[[Mapping[str, Any], str, str, tuple[str, ...]], MambaState] | None = None
    refuses_state: bool = False
    window: Callable[[int], int] | None = None
    mla: Callable[[Mapping[str, Any], int, int], MlaReading] | None = None
    attention_dims: Callable[[Mapping[str, Any], int], tuple[int, int]] | None = None
    attention_extras: AttentionExtrasHook | None = None
    shape_config: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None


# A config no family claims: the standard reader's own rules throughout.
STANDARD = Family(module="")
