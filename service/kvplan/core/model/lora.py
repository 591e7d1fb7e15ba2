"""The LoRA adapter slots vLLM preallocates on each GPU (`--enable-lora`): for every module it
wraps, `max_loras` zeroed A and B matrices of `max_lora_rank`, made by each wrapper's
create_lora_weights (vllm/lora/layers/) when the LoRA manager wraps the model
(vllm/lora/model_manager.py _create_lora_modules). They are made inside load_model, so vLLM counts
them in "Model loading took …" with the weights (vllm/v1/worker/gpu_model_runner.py load_model →
lora_model_runner_mixin.py load_lora_model); the KV budget loses exactly their bytes.

One slot shape per module kind, per TP rank (TP = t, rank r, slots n; A is [n, 1, rows, in],
B is [n, 1, out, r]):
- merged QKV (3 slices) and merged gate_up (2 slices), column parallel: each slice's A has r
  rows (r / t fully sharded) over the full input; its B the slice's output / t.
- row parallel (o_proj, down_proj): A has r rows over the input / t; B the full output
  (output / t fully sharded).
- replicated (an MoE router, a shared-expert gate): A r × input, B output × r, unsharded.
- the input embedding: A [n, vocab, r], B [n, 1, hidden, r]; the LM head's logits processor:
  A [n, 1, r, hidden], B [n, 1, vocab, r]; neither sharded.
- fused MoE (2D, FusedMoEWithLoRA): gate and up A [n, E, r (/ t), hidden] each, their B
  [n, E, I / t, r] each; down A [n, E, r, I / t], B [n, E, hidden (/ t), r]. The shared-outer layout
  (enable_moe_shared_loras) keeps one gate/up A and one down B for all experts (E → 1); a 3D-weight
  model (FusedMoE3DWithLoRA) one gate_up A and one B of 2I / t rows."""

from __future__ import annotations

import msgspec

from ..errors import InvalidInput
from ..ledger import LedgerBuilder

# vllm/config/lora.py MaxLoRARanks and LoRADType.
LORA_RANKS: tuple[int, ...] = (1, 8, 16, 32, 64, 128, 256, 320, 512)
LORA_DTYPES: tuple[str, ...] = ("auto", "bfloat16", "float16")
# vllm/lora/layers/logits_processor.py create_lora_weights: a larger vocabulary is refused.
VLLM_LORA_VOCAB_LIMIT = 258048

SRC_LAYERS = "vllm/lora/layers/"
SRC_MANAGER = "vllm/lora/model_manager.py (_create_lora_modules)"


class LoraModules(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """The modules vLLM's LoRA manager wraps in a model of the Llama layout (attention of merged
    QKV and o_proj; a gate_up/down MLP, or routed experts with a router and optional shared
    expert), with their sizes from config.json. `embeddings`: the model class lists embed_tokens
    and lm_head in its embedding_modules (vllm/model_executor/models/llama.py)."""

    hidden_size: int
    vocab_size: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    layers: int
    intermediate_size: int = 0  # dense MLP layers'
    dense_layers: int = 0  # layers with a dense gate_up/down MLP
    moe_layers: int = 0
    num_experts: int = 0
    moe_intermediate_size: int = 0
    shared_expert_intermediate_size: int = 0
    embeddings: bool = False
    moe_3d_weights: bool = False  # the model's is_3d_moe_weight (vllm/model_executor/models/interfaces.py)


class LoraSettings(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    max_loras: int
    max_lora_rank: int
    dtype_bytes: int
    fully_sharded: bool = False
    target_modules: tuple[str, ...] | None = None
    moe_shared: bool = False
    mixed_moe_format: bool = False


class LoraSlot(msgspec.Struct, frozen=True, gc=False):
    """One kind of wrapped module on one GPU: how many, and one module's A and B slot bytes."""

    kind: str
    modules: int
    a_bytes: int
    b_bytes: int

    @property
    def bytes(self) -> int:
        return self.modules * (self.a_bytes + self.b_bytes)


# A module's name and the adapter names packed into it (the models' packed_modules_mapping): a
# --lora-target-modules entry names either (vllm/lora/utils.py is_in_target_modules).
_NAMES: dict[str, tuple[str, ...]] = {
    "qkv": ("qkv_proj", "q_proj", "k_proj", "v_proj"),
    "o_proj": ("o_proj",),
    "gate_up": ("gate_up_proj", "gate_proj", "up_proj"),
    "down_proj": ("down_proj",),
    "router": ("gate",),
    "shared_gate": ("shared_expert_gate",),
    "experts": ("experts",),
    "embed": ("embed_tokens",),
    "lm_head": ("lm_head",),
}


def _targeted(kind: str, targets: tuple[str, ...] | None) -> bool:
    names = _NAMES[kind.rpartition(".")[2]]
    return targets is None or any(name in targets for name in names)


def _divide(n: int, t: int, what: str) -> int:
    """vllm/distributed/utils.py divide: vLLM asserts the split is exact."""
    if n % t:
        raise InvalidInput(
            "fully_sharded_loras",
            f"{what} ({n:,}) is not divisible by tensor_parallel_size {t}: vLLM refuses",
        )
    return n // t


def lora_slots(m: LoraModules, s: LoraSettings, tensor: int) -> tuple[LoraSlot, ...]:
    """Each wrapped module kind's slots on one TP rank (vllm/lora/layers/*.py create_lora_weights),
    the kinds --lora-target-modules leaves out dropped."""
    n, r, b, t, fs = s.max_loras, s.max_lora_rank, s.dtype_bytes, tensor, s.fully_sharded
    if m.vocab_size > VLLM_LORA_VOCAB_LIMIT:
        raise InvalidInput(
            "enable_lora",
            f"with LoRA the vocabulary must be at most {VLLM_LORA_VOCAB_LIMIT:,} (vLLM refuses)",
        )
    col_rank = _divide(r, t, "max_lora_rank") if fs else r  # column-parallel A (S-LoRA)
    row_out = _divide(m.hidden_size, t, "hidden_size") if fs else m.hidden_size  # row-parallel B
    H, V, hd = m.hidden_size, m.vocab_size, m.head_dim
    q_shard = m.num_attention_heads // t * hd
    kv_shard = max(1, m.num_kv_heads // t) * hd  # KV heads replicated when TP exceeds them
    out: list[tuple[str, int, int, int]] = [
        ("qkv", m.layers, 3 * n * col_rank * H, n * (q_shard + 2 * kv_shard) * r),
        ("o_proj", m.layers, n * r * q_shard, n * row_out * r),
    ]

    def mlp(count: int, inter: int, prefix: str = "") -> None:
        i_shard = inter // t
        out.append((prefix + "gate_up", count, 2 * n * col_rank * H, 2 * n * i_shard * r))
        out.append((prefix + "down_proj", count, n * r * i_shard, n * row_out * r))

    shared = m.shared_expert_intermediate_size
    if m.dense_layers:
        mlp(m.dense_layers, m.intermediate_size)
    if m.moe_layers:
        E, im = m.num_experts, m.moe_intermediate_size // t
        out.append(("router", m.moe_layers, n * r * H, n * E * r))
        if m.moe_3d_weights and not (s.moe_shared or s.mixed_moe_format):  # FusedMoE3DWithLoRA
            w13_a, w13_b, w2_b_experts = n * E * col_rank * H, n * E * 2 * im * r, E
        else:  # FusedMoEWithLoRA; shared-outer: one gate/up A and one down B for all experts
            outer = 1 if s.moe_shared else E
            w13_a, w13_b, w2_b_experts = 2 * n * outer * col_rank * H, 2 * n * E * im * r, outer
        out.append(("experts", m.moe_layers, w13_a + n * E * r * im, w13_b + n * w2_b_experts * row_out * r))
        if shared:
            mlp(m.moe_layers, shared, "shared_expert.")
            out.append(("shared_gate", m.moe_layers, n * r * H, n * 1 * r))
    if m.embeddings:
        out.append(("embed", 1, n * V * r, n * H * r))
        out.append(("lm_head", 1, n * r * H, n * V * r))
    return tuple(
        LoraSlot(kind, count, a * b, bb * b)
        for kind, count, a, bb in out
        if _targeted(kind, s.target_modules)
    )


def lora_bytes(slots: tuple[LoraSlot, ...]) -> int:
    return sum(s.bytes for s in slots)


# Each kind's slot shapes, as its ledger step states them (n slots, rank r, TP t; "/ t fs": split
# only with fully_sharded_loras).
_SHAPES: dict[str, tuple[str, str]] = {
    "qkv": ("3 × n × r (/ t fs) × hidden", "n × (q + 2 kv heads) / t × head_dim × r"),
    "o_proj": ("n × r × q_heads × head_dim / t", "n × hidden (/ t fs) × r"),
    "gate_up": ("2 × n × r (/ t fs) × hidden", "2 × n × intermediate / t × r"),
    "down_proj": ("n × r × intermediate / t", "n × hidden (/ t fs) × r"),
    "router": ("n × r × hidden", "n × experts × r"),
    "shared_gate": ("n × r × hidden", "n × 1 × r"),
    "experts": (
        "gate, up: n × E × r (/ t fs) × hidden; down: n × E × r × moe_intermediate / t",
        "gate, up: n × E × moe_intermediate / t × r; down: n × E × hidden (/ t fs) × r",
    ),
    "embed": ("n × vocab × r", "n × hidden × r"),
    "lm_head": ("n × r × hidden", "n × vocab × r"),
}
_FILES = {
    "qkv": "column_parallel_linear.py (MergedQKVParallelLinearWithLoRA)",
    "o_proj": "row_parallel_linear.py, base_linear.py (create_lora_weights)",
    "gate_up": "column_parallel_linear.py (MergedColumnParallelLinearWithLoRA)",
    "down_proj": "row_parallel_linear.py, base_linear.py (create_lora_weights)",
    "router": "replicated_linear.py, base_linear.py (create_lora_weights)",
    "shared_gate": "replicated_linear.py, base_linear.py (create_lora_weights)",
    "experts": "fused_moe.py (FusedMoEWithLoRA, FusedMoE3DWithLoRA)",
    "embed": "vocab_parallel_embedding.py (VocabParallelEmbeddingWithLoRA)",
    "lm_head": "logits_processor.py (LogitsProcessorWithLoRA)",
}


def lora_steps(
    led: LedgerBuilder, slots: tuple[LoraSlot, ...], max_loras: int, rank: int, tensor: int
) -> None:
    """One ledger step a wrapped module kind (its A and B slot shapes, bytes a module, modules a
    GPU), then their sum."""
    for slot in slots:
        base = slot.kind.rpartition(".")[2]
        a, b = _SHAPES[base]
        led.add(
            f"lora_slots[{slot.kind}]",
            f"modules × (A + B) × dtype bytes; A = {a}, B = {b}",
            slot.bytes,
            "B",
            SRC_LAYERS + _FILES[base],
            modules=slot.modules,
            a_bytes=slot.a_bytes,
            b_bytes=slot.b_bytes,
            n=max_loras,
            r=rank,
            t=tensor,
        )
    led.add(
        "lora_bytes",
        "Σ kinds' slots (made in load_model, so counted with the weights)",
        lora_bytes(slots),
        "B",
        SRC_MANAGER,
        kinds=len(slots),
    )


__all__ = [
    "LORA_DTYPES",
    "LORA_RANKS",
    "LoraModules",
    "LoraSettings",
    "LoraSlot",
    "lora_bytes",
    "lora_slots",
    "lora_steps",
]
