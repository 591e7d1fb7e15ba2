"""The oracle (../shared/tools/vllm-oracle/oracle_ext.py, imported unmodified) taught more
layouts of per-layer specs, as vLLM 0.33.0's model code builds them; the planning is still vLLM's:

  Falcon-H1 (vllm/model_executor/models/falcon_h1.py): every decoder layer has an attention
      layer and a MambaMixer2 side by side, so each layer index carries a FullAttentionSpec and a
      MambaSpec. MambaMixer2 exports a prefill checkpoint (num_prefill_checkpoint_blocks = 1,
      vllm/model_executor/layers/mamba/mamba_mixer2.py), which oracle_ext grants Granite and
      Nemotron-H only.
  Nemotron-H (vllm/model_executor/models/nemotron_h.py): hybrid_override_pattern's MLP (-) and
      MoE (E) layers have no attention and no KV cache; oracle_ext leaves them as attention specs.
  LFM2 (vllm/model_executor/models/lfm2.py): layer_types "conv" are short-convolution layers with
      a MambaSpec; oracle_ext looks only for "mamba" / "linear_attention".
  Kimi-Linear (vllm/models/kimi_k3/nvidia/model.py): layer i is a KDA layer (a MambaSpec, no
      prefill checkpoint) iff config.is_kda_layer(i), the rest MLA; it has no layer_types.
  Bailing linear (vllm/model_executor/models/bailing_moe_linear.py, BailingMoeV2_5ForCausalLM):
      is_linear_layer(i, layer_group_size) picks the linear-attention layers (a MambaSpec, no
      checkpoint), the rest MLA; the model does not read layer_types. Bailing V3
      (bailing_moe_v3.py, BailingMoeV3ForCausalLM, the same model_type): _is_kda_layer picks
      KDA layers (no checkpoint), the rest MLA, the layers past the last whole group too.
  Zamba2 (vllm/model_executor/models/zamba2.py): every layer of layers_block_type has a
      MambaMixer2 (checkpoint 1); a "hybrid" layer also runs the shared attention block, with an
      Attention of its own (`.attn.{j}`, one KV cache per hybrid layer though weights are shared).
  Gemma-3n / Gemma-4 (gemma3n.py, gemma4.py): the last num_kv_shared_layers read an earlier
      layer's KV cache (kv_sharing_target_layer_name) and keep none of their own.
  AliceAI (vllm/model_executor/models/alice_ai.py): layer_types' "linear_attention" layers are
      KDA (KimiGatedDeltaNetAttention: a MambaSpec, no checkpoint), oracle_ext finds them itself;
      its config loads as a plain PretrainedConfig (below).
  HY-V4 (vllm/models/hy_v4/nvidia/attention.py HYV4MLAAttention): a layer is sparse MLA only
      when layer_types names it sparse (_SPARSE_LAYER_TYPES), else dense MLA, whatever
      index_topk says (oracle_ext would give every layer the V3.2 indexer); a sparse layer keeps
      an indexer cache unless compute_skip_topk_layers says it reuses another's top-k. Built
      layer by layer in the model's order: the learnable sink binds HY-V4's FLASHMLA_SPARSE
      subclass on sparse layers, else the backend vLLM's selector picks on Hopper (priority order
      of vllm/platforms/cuda.py, first matching sparsity and KV cache dtype: the device checks
      cannot run on CPU); each sparse layer's MLAAttention canonicalises the shared cache dtype
      (fp8 served as fp8_ds_mla), which the later layers then read.
  Muse Spark (vllm/models/muse_spark/nvidia/model.py MuseSpark1xAttention): no spec class of
      its own; each layer is a plain Attention, windowed by config.sliding_window where
      layer_types[i] is "sliding_attention" (per_layer_sliding_window), else full; the vision and
      audio towers' MMEncoderAttention keep no KV cache. Set here from that rule.
  Dots3 (vllm/models/dots3_note/nvidia/model.py Dots3NoteDecoderLayer): layer_types'
      "sliding_attention" layers are Dots3NoteSlidingAttention, an MLAAttention over the swa_*
      latent (swa_kv_lora_rank + swa_qk_rope_head_dim) with sliding_window_size on
      Dots3NoteTritonMLABackend (a SlidingWindowMLASpec; fp8_ds_mla served as fp8); the others
      are Dots3NoteFullAttention, DeepSeek-V3.2 sparse MLA whose Dots3NotePaddedMLAAttention pads
      its latent rows to the sliding layers' width (physical_head_size) on
      Dots3NotePaddedSparseBackend, with the V3.2 indexer cache beside it (the index_topk_freq /
      index_topk_pattern of DeepseekV2MLAAttention decides which layers keep one). The specs
      come from the layers' own get_kv_cache_spec on bare instances, through
      customize_attention_spec with each layer's backend, as the runner does. The sparse backend
      takes only a 16-bit KV cache (FlashAttnMLASparseImpl raises on any other).
  Attention-free Mamba (mamba.py, mamba2.py): every layer a MambaSpec, with the cache mode and
      Mamba block size VllmConfig settles for a model without prefix caching (MambaModelConfig).
  MiniMax-M3 (vllm/models/minimax_m3/nvidia/model.py): layer i runs MiniMaxM3SparseAttention when
      sparse_attention_config.sparse_attention_freq[i] != 0 (_sparse_attention_layer_ids), else a
      plain Attention. A sparse layer keeps its K/V as a FullAttentionSpec bound to
      MiniMaxM3SparseBackend (Triton on Hopper: select_main_backend_and_impl_cls), and its
      indexer a key-only MLAAttentionSpec (MiniMaxM3IndexerCache.get_kv_cache_spec: one head of
      sparse_index_dim, bf16 unless attention_config.indexer_kv_dtype says otherwise,
      cache_role INDEXER) bound to MiniMaxM3IndexerBackend; both pass through
      customize_attention_spec, whose kernel block of exactly 128 sets the block stride
      alignment. The index cache registers before its layer's main cache.
  Inkling (vllm/models/inkling/nvidia/model.py): every decoder layer keeps a short-convolution
      state as a SlidingWindowSpec of its own (InklingConvState, built here by vLLM's class:
      block and window sconv_kernel_size, KV heads per rank, the four streams packed into a
      power-of-two head, bf16), registered before the layer's attention; the attention
      (InklingAttention.get_kv_cache_spec, mirrored) is sliding with sliding_window_size on
      local_layer_ids and full elsewhere, with the swa_ heads and head dim on local layers. vLLM
      reads neither layer_types nor sliding_window for it, so oracle_ext's model-level window is
      dropped.
  Step5 (vllm/models/step5/nvidia/model.py): a layer slides where layer_types says
      sliding_attention (no layer_types: even layers) and the config has a window; its heads, KV
      groups and head dim come from attention_other_setting when that names its type. With a
      sparse_config enabled, every other layer is DSA: a FullAttentionSpec customised by
      Step5DSAAttentionBackend, beside it a summary cache (sparse_summary_cache.py: FullAttentionSpec,
      1 × 256 B per 8 tokens, uint8) and a ring (csa_tail_ring.py: a CircularBufferSpec of one
      main page). Built with vLLM's own layer classes; the triton placeholder gets the
      `tl.extra.cuda.libdevice` the kernel modules read at import.
  Qwen4-exp with QSA (vllm/models/qwen4_exp/nvidia/qsa.py, indexer_qsa.py, common/qsa_cache.py):
      with indexer_n_heads set, each indexed_attention layer keeps a raw-key ring
      (QSAKeyStateCache: a CircularBufferSpec of compress_ratio rows), a compressed key cache
      (QSACompressedKeyCache: an MLAAttentionSpec, one row per compress_ratio tokens) and its KV
      (a FullAttentionSpec on the QSA backend); QSAStateBackend takes BLNHC/BLHNC only, so the
      layout is resolved from the backends as for Step5. Built with vLLM's own cache classes.
  Kimi-K3 (vllm/models/kimi_k3/nvidia/model.py, kda.py): KimiK3Config wraps a KimiLinearConfig
      text_config, read as Kimi-Linear's; with linear_attn_config.use_full_rank_gate the KDA
      layers are KimiK3DeltaAttention, whose MambaSpec keeps a prefill checkpoint block when
      resolve_kda_prefill_backend picks FlashKDA (kda_prefill_checkpoint_alignment). That pick
      reads the GPU, so it is made here as on the CUDA platform of an SM 9.0 GPU (H100; the
      oracle's other backend choices are Hopper's too); the rest of the rule is vLLM's own code.
  GLM-5-next (vllm/models/glm5next/common/model.py, attention.py, kda.py): layer_types'
      linear_attention layers are Glm5NextLinearAttention (a MambaSpec; FlashKDA's checkpoint as
      Kimi-K3's, resolved as on SM 9.0), the others Glm5NextMLAAttention: sparse MLA on
      FLASHINFER_MLA_SPARSE_SM90 (Hopper's first sparse backend for a 512 head), its kpool
      indexer (Glm5NextIndexerCache: tokens_per_state = index_kpool) and the tail ring
      (Glm5NextTailCache: CircularBufferSpec), each through customize_attention_spec; the block
      size settled by Platform.update_block_size_for_backend over those backends, and the layout
      resolved from them (KPOOL_TAIL reads BLHNC only), which makes vLLM pack the groups.
  DeepSeek-V4 (vllm/models/deepseek_v4, FlashMLA on SM 9x/10x) and DeepSeek-V4.1 (deepseek_v41,
      FlashMLA on SM 9.0, the platform answering 9.0 while the specs are built): each layer's
      window cache, compressed MLA and indexer caches and compressor rings from the layers' own
      get_kv_cache_spec and backends, the layout resolved from those backends (the indexer reads
      a block-outermost one); with pipeline_parallel_size > 1 the stages are workers of their own
      layers, planned by get_global_kv_cache_groups and get_kv_cache_configs (blocks below).

Run as oracle_ext.py is: JSON on stdin, JSON on stdout. Usage: python oracle_more.py ORACLE_DIR."""

from __future__ import annotations

import sys
import types
from dataclasses import replace

import torch

sys.path.insert(0, sys.argv[1])
import oracle_ext as E
from transformers import AutoConfig, PretrainedConfig

STOCK = E.O
_ext_fill = STOCK._fill_from_model_config


class _AliceAIConfig(PretrainedConfig):
    """AliceAI's config class is its repository's (trust_remote_code); none is installed here, so
    its config.json loads as a plain config: every key an attribute, nothing derived."""

    model_type = "alice_ai"


AutoConfig.register("alice_ai", _AliceAIConfig)
_ext_build = STOCK.build_specs


def _fill(req, mc, tp):  # type: ignore[no-untyped-def]
    req = _ext_fill(req, mc, tp)
    hf = mc.hf_text_config
    ext = req["_ext"]
    if getattr(hf, "model_type", None) == "falcon_h1":
        ext["mamba_layers"] = list(range(int(hf.num_hidden_layers)))
        ext["arch"] = mc.architecture
        ext["parallel_hybrid"] = True
    if getattr(hf, "model_type", None) == "zamba2":
        blocks = list(hf.layers_block_type)
        ext["mamba_layers"] = list(range(len(blocks)))
        ext["arch"] = mc.architecture
        ext["parallel_hybrid"] = True
        ext["no_kv_layers"] = [i for i, t in enumerate(blocks) if t != "hybrid"]
        req["layers"] = len(blocks)
        # Zamba2Attention builds Attention(num_heads, attention_head_dim): as many KV heads as
        # query heads, whatever num_key_value_heads says.
        req["num_kv_heads"] = int(hf.num_attention_heads)
    if getattr(hf, "model_type", None) in ("gemma3n_text", "gemma4_text") and getattr(
        hf, "num_kv_shared_layers", 0
    ):
        # gemma3n.py / gemma4.py: the last num_kv_shared_layers attend with an earlier layer's KV
        # (kv_sharing_target_layer_name), so the runner gives them no KV cache spec of their own.
        n = int(hf.num_hidden_layers)
        ext["no_kv_layers"] = list(range(n - int(hf.num_kv_shared_layers), n))
    if getattr(hf, "is_heterogeneous", False):
        # Gemma-4 (gemma4.py Gemma4DecoderLayer): each layer's Attention takes its head dim and KV
        # heads from config.per_layer_config[i], which vLLM reads as model_arch_config[i].
        ext["per_layer_heads"] = True
    if getattr(hf, "model_type", None) == "nemotron_h":
        ext["no_kv_layers"] = [i for i, c in enumerate(hf.hybrid_override_pattern) if c in "-E"]
    if getattr(hf, "model_type", None) in ("lfm2", "lfm2_moe"):
        ext["mamba_layers"] = [i for i, t in enumerate(hf.layer_types) if t == "conv"]
        ext["arch"] = mc.architecture
    if getattr(hf, "model_type", None) == "kimi_linear":
        ext["mamba_layers"] = [i for i in range(int(hf.num_hidden_layers)) if hf.is_kda_layer(i)]
        ext["arch"] = mc.architecture
    if getattr(hf, "model_type", None) == "bailing_hybrid" and mc.architecture == "BailingMoeV2_5ForCausalLM":
        from vllm.model_executor.models.bailing_moe_linear import is_linear_layer

        n = int(hf.num_hidden_layers)
        ext["mamba_layers"] = [i for i in range(n) if is_linear_layer(i, hf.layer_group_size)]
        ext["arch"] = mc.architecture
    if getattr(hf, "model_type", None) == "bailing_hybrid" and mc.architecture == "BailingMoeV3ForCausalLM":
        from vllm.model_executor.models.bailing_moe_v3 import _is_kda_layer

        n = int(hf.num_hidden_layers)
        ext["mamba_layers"] = [i for i in range(n) if _is_kda_layer(i, hf.layer_group_size, n)]
        ext["arch"] = mc.architecture
    if getattr(hf, "model_type", None) == "hy_v4":
        ext.pop("indexer_head", None)
        ext["hy_v4"] = True
    if getattr(hf, "model_type", None) == "muse_spark_text":
        windows = [int(hf.sliding_window) if t == "sliding_attention" else None for t in hf.layer_types]
        req["sliding_window_pattern"] = windows
        req["sliding_window"] = next((w for w in windows if w), None)
    if getattr(hf, "model_type", None) == "dots3_note":
        ext.pop("indexer_head", None)
        ext["dots3"] = True
    if getattr(hf, "model_type", None) == "minimax_m3_text":
        from vllm.models.minimax_m3.nvidia.model import _sparse_attention_layer_ids

        ext["minimax_m3_sparse"] = sorted(_sparse_attention_layer_ids(hf))
        ext["minimax_m3_index_dim"] = int(hf.sparse_attention_config["sparse_index_dim"])
        ext["minimax_m3_topk_blocks"] = int(hf.sparse_attention_config["sparse_topk_blocks"])
    if getattr(hf, "model_type", None) == "inkling_model":
        ext.pop("model_level_sliding_window", None)
        req.pop("sliding_window", None)
        req.pop("sliding_window_pattern", None)
        ext["inkling"] = True
    if mc.is_attention_free:
        ext["attention_free"] = True
    kimi = getattr(hf, "model_type", None) == "kimi_linear"
    lac = getattr(hf, "linear_attn_config", None) if kimi else None
    if lac and lac.get("use_full_rank_gate"):
        ext["kda_full_rank_gate"] = True
    E._CTX["ext"] = ext
    return req


def _bare(cls, **attrs):  # type: ignore[no-untyped-def]
    """An instance of a vLLM layer class with only the attributes its get_kv_cache_spec reads."""
    import torch

    obj = cls.__new__(cls)
    torch.nn.Module.__init__(obj)
    for k, v in attrs.items():
        object.__setattr__(obj, k, v)
    return obj


def _dots3_specs(vc):  # type: ignore[no-untyped-def]
    import torch
    from vllm.model_executor.layers.attention.mla_attention import MLAAttention
    from vllm.model_executor.models.deepseek_v2 import DeepseekV32IndexerCache
    from vllm.model_executor.models.utils import extract_layer_index
    from vllm.models.dots3_note.nvidia.attention import (
        Dots3NotePaddedSparseBackend,
        Dots3NoteTritonMLABackend,
    )
    from vllm.models.dots3_note.nvidia.model import Dots3NotePaddedMLAAttention
    from vllm.v1.worker.utils import customize_attention_spec

    hf = vc.model_config.hf_config
    cc = vc.cache_config
    if cc.cache_dtype not in ("auto", "float16", "bfloat16"):
        # Dots3NotePaddedSparseImpl is FlashAttnMLASparseImpl's: a 16-bit KV cache only.
        raise NotImplementedError("FlashAttnMLASparseImpl currently supports only FP16/BF16 KV cache.")
    topk_width = int(hf.index_topk)  # Dots3NoteModel's topk_indices_buffer
    freq = getattr(hf, "index_topk_freq", 1)
    pattern = getattr(hf, "index_topk_pattern", None)
    offset = getattr(hf, "index_skip_topk_offset", 2)
    ihd = int(hf.index_head_dim)
    specs, backends = {}, []
    swa_width = hf.swa_kv_lora_rank + hf.swa_qk_rope_head_dim  # the physical_head_size too
    for i, t in enumerate(hf.layer_types[: int(hf.num_hidden_layers)]):
        prefix = f"model.layers.{i}.self_attn"
        if t == "sliding_attention":
            layer = _bare(
                MLAAttention,
                kv_cache_dtype=cc.cache_dtype,  # a 16-bit one: as given
                sliding_window=hf.sliding_window_size,
                head_size=swa_width,
            )
            spec = layer.get_kv_cache_spec(vc)
            specs[f"{prefix}.attn"] = customize_attention_spec(Dots3NoteTritonMLABackend, spec)
            backends.append(Dots3NoteTritonMLABackend)
            continue
        # DeepseekV2MLAAttention's IndexCache rule: which layers compute (and cache) their top-k.
        layer_id = extract_layer_index(prefix)
        if pattern is None:
            skip = max(layer_id - offset + 1, 0) % freq != 0
        else:
            skip = 0 <= layer_id < len(pattern) and pattern[layer_id] == "S"
        indexer = None
        if not skip:  # registered (static_forward_context) before the attention layer
            indexer = _bare(
                DeepseekV32IndexerCache,
                head_dim=ihd + ihd // 128 * 4,
                dtype=torch.uint8,
                cache_config=cc,
                prefix=f"{prefix}.indexer.k_cache",
            )
            backend = indexer.get_attn_backend()
            specs[indexer.prefix] = customize_attention_spec(backend, indexer.get_kv_cache_spec(vc))
            backends.append(backend)
        layer = _bare(
            Dots3NotePaddedMLAAttention,
            kv_cache_dtype=cc.cache_dtype,
            sliding_window=None,
            head_size=hf.kv_lora_rank + hf.qk_rope_head_dim,
            indexer=indexer,
            topk_buffer_width=topk_width,
            non_causal_multi_token_decode=False,
            physical_head_size=swa_width,
        )
        specs[f"{prefix}.attn"] = customize_attention_spec(
            Dots3NotePaddedSparseBackend, layer.get_kv_cache_spec(vc)
        )
        backends.append(Dots3NotePaddedSparseBackend)
    return specs, backends


def _hopper_mla_backend(sparse, kv_cache_dtype):  # type: ignore[no-untyped-def]
    """The MLA backend vLLM's selector picks on Hopper (vllm/platforms/cuda.py
    _get_backend_priorities for capability 9.0, the first that takes the layer): by priority,
    the first whose sparsity and KV cache dtypes match. The device checks of validate_configuration
    cannot run on this CPU install; on an H100 they pass for these backends."""
    import types

    from vllm.platforms.interface import DeviceCapability

    # vllm/platforms/cuda.py loads a CUDA extension at import: a stand-in for this import alone.
    name = "vllm._C_stable_libtorch"
    had = name in sys.modules
    sys.modules.setdefault(name, types.ModuleType(name))
    try:
        from vllm.platforms.cuda import _get_attn_backend_class, _get_backend_priorities
    finally:
        if not had:
            del sys.modules[name]

    for enum in _get_backend_priorities(
        True, DeviceCapability(9, 0), kv_cache_dtype=kv_cache_dtype, head_size=576
    ):
        try:
            cls = _get_attn_backend_class(enum)
        except (ImportError, OSError):
            continue
        if cls.is_sparse() == sparse and cls.supports_kv_cache_dtype(kv_cache_dtype):
            return cls
    raise ValueError(f"no {'sparse' if sparse else 'dense'} MLA backend takes {kv_cache_dtype} on Hopper")


def _hy_v4_specs(vc):  # type: ignore[no-untyped-def]
    """HYV4MLAAttention per layer, in build order: a sparse layer probes and binds its backend (the
    learnable sink's HYV4FlashMLASparseBackend, else the selector's) and its MLAAttention rewrites
    the shared cache_config's dtype as _canonicalize_sparse_mla_kv_cache_dtype says; a dense layer
    takes the selector's dense backend for the dtype it then reads (the sink has no dense
    backend: it is loaded but disabled). Indexer caches only on sparse layers that compute their
    own top-k (compute_skip_topk_layers)."""
    import torch
    from vllm.model_executor.layers.attention.mla_attention import (
        MLAAttention,
        _canonicalize_sparse_mla_kv_cache_dtype,
    )
    from vllm.model_executor.models.deepseek_v2 import DeepseekV32IndexerCache
    from vllm.models.hy_v4.nvidia.attention import _SPARSE_LAYER_TYPES, compute_skip_topk_layers
    from vllm.models.hy_v4.nvidia.flashmla_sparse import HYV4FlashMLASparseBackend
    from vllm.v1.worker.utils import customize_attention_spec

    hf = vc.model_config.hf_config
    cc = vc.cache_config
    types = hf.layer_types or ()
    skip = compute_skip_topk_layers(hf)
    ihd = int(hf.index_head_dim)
    specs = {}
    for i in range(int(hf.num_hidden_layers)):
        prefix = f"model.layers.{i}.self_attn"
        sparse = hasattr(hf, "index_topk") and i < len(types) and types[i] in _SPARSE_LAYER_TYPES
        if sparse and getattr(hf, "learnable_sink", False):
            backend = HYV4FlashMLASparseBackend
        else:
            backend = _hopper_mla_backend(sparse, cc.cache_dtype)
        indexer = None
        if sparse and i not in skip:
            indexer = _bare(DeepseekV32IndexerCache, head_dim=ihd + ihd // 128 * 4, dtype=torch.uint8,
                            cache_config=cc, prefix=f"{prefix}.indexer.k_cache")  # fmt: skip
            specs[indexer.prefix] = customize_attention_spec(
                indexer.get_attn_backend(), indexer.get_kv_cache_spec(vc)
            )
        kv = _canonicalize_sparse_mla_kv_cache_dtype(backend, cc.cache_dtype)
        cc.cache_dtype = kv  # MLAAttention.__init__ writes it back to the shared cache_config
        layer = _bare(MLAAttention, kv_cache_dtype=kv, sliding_window=None,
                      head_size=hf.kv_lora_rank + hf.qk_rope_head_dim, indexer=indexer,
                      topk_buffer_width=int(hf.index_topk) if sparse else None,
                      non_causal_multi_token_decode=False)  # fmt: skip
        specs[f"{prefix}.attn"] = customize_attention_spec(backend, layer.get_kv_cache_spec(vc))
    return specs


def _build(req, vc, model_dtype):  # type: ignore[no-untyped-def]
    ext = req.get("_ext") or {}
    if ext.get("hy_v4"):
        specs = _hy_v4_specs(vc)
        cache_dtype, torch_dtype = STOCK._resolve_dtype(vc.cache_config.cache_dtype, model_dtype)
        return specs, cache_dtype, torch_dtype
    if ext.get("dots3"):
        from vllm.v1.attention.backends.utils import get_supported_kv_cache_layouts, resolve_kv_cache_layout

        specs, backends = _dots3_specs(vc)
        # EngineCore resolves the layout from the layers' backends (the padded sparse one takes only
        # BLHNC, block-outermost: the planner then packs the mixed pages); recorded on cache_config.
        layouts = [layout.name for layout in get_supported_kv_cache_layouts(backends)]
        resolve_kv_cache_layout(vc, [layouts], specs.values())
        cache_dtype, torch_dtype = STOCK._resolve_dtype(req.get("dtype", "bf16"), model_dtype)
        return specs, cache_dtype, torch_dtype
    if ext.get("attention_free"):
        from vllm.model_executor.models import ModelRegistry
        from vllm.model_executor.models.config import MambaModelConfig
        from vllm.v1.kv_cache_interface import MambaSpec

        cls, _ = ModelRegistry.resolve_model_cls(vc.model_config.architecture, model_config=vc.model_config)
        cc = vc.cache_config
        # As `vllm serve` resolves it (EngineArgs: prefix caching defaults to what the model
        # supports, off for attention-free models), then vLLM's own Mamba config update.
        # A request's own --enable-prefix-caching / --mamba-block-size / Mamba dtypes, as given.
        cc.enable_prefix_caching = req.get(
            "enable_prefix_caching", vc.model_config.is_prefix_caching_supported
        )
        cc.mamba_cache_mode, cc.mamba_block_size = "none", req.get("mamba_block_size")
        cc.mamba_cache_dtype = req.get("mamba_cache_dtype", cc.mamba_cache_dtype)
        cc.mamba_ssm_cache_dtype = req.get("mamba_ssm_cache_dtype", cc.mamba_ssm_cache_dtype)
        MambaModelConfig.verify_and_update_config(vc)
        spec = MambaSpec(
            shapes=tuple(cls.get_mamba_state_shape_from_config(vc)),
            dtypes=tuple(cls.get_mamba_state_dtype_from_config(vc)),
            block_size=cc.mamba_block_size or vc.model_config.max_model_len,
            mamba_cache_mode=cc.mamba_cache_mode,
        )
        if "Mamba2" in vc.model_config.architecture:  # MambaMixer2.get_kv_cache_spec: its checkpoint
            spec = replace(spec, num_prefill_checkpoint_blocks=1, prefill_checkpoint_alignment=1)
        ext["mamba_cache_mode"] = cc.mamba_cache_mode
        ext["mamba_block_size"] = spec.block_size
        specs = {f"model.layers.{i}.mixer": spec for i in range(int(req["layers"]))}
        _, cache_dtype, torch_dtype = _ext_build(req, vc, model_dtype)
        return specs, cache_dtype, torch_dtype
    if ext.get("parallel_hybrid"):
        attention, _, _ = E._orig_build(req, vc, model_dtype)
        specs, cache_dtype, torch_dtype = _ext_build(req, vc, model_dtype)
        for name, spec in specs.items():
            if name.endswith(".mixer"):
                specs[name] = replace(spec, num_prefill_checkpoint_blocks=1, prefill_checkpoint_alignment=1)
        specs.update(attention)
        for i in ext.get("no_kv_layers", ()):
            specs.pop(f"model.layers.{i}.self_attn.attn", None)
        order = sorted(specs, key=lambda n: (int(n.split(".")[2]), n.endswith(".mixer")))
        return {n: specs[n] for n in order}, cache_dtype, torch_dtype
    if ext.get("inkling"):
        specs, cache_dtype, torch_dtype = _ext_build(req, vc, model_dtype)
        return _inkling(req, vc, cache_dtype, torch_dtype), cache_dtype, torch_dtype
    specs, cache_dtype, torch_dtype = _ext_build(req, vc, model_dtype)
    if ext.get("minimax_m3_sparse"):
        specs = _minimax_m3(specs, ext, vc, cache_dtype)
    if ext.get("per_layer_heads"):
        mc = vc.model_config
        for name, spec in specs.items():
            if name.endswith(".self_attn.attn"):
                arch = mc.model_arch_config[int(name.split(".")[2])]
                kv = mc.get_num_kv_heads(vc.parallel_config, arch_config=arch)
                specs[name] = replace(
                    spec, head_size=arch.head_size, head_size_v=arch.head_size, num_kv_heads=kv
                )
    for i in ext.get("no_kv_layers", ()):
        specs.pop(f"model.layers.{i}.self_attn.attn", None)
    if ext.get("kda_full_rank_gate"):
        alignment = _kimi_k3_kda_checkpoint_alignment(vc, req.get("gpu_name", ""))
        ext["kda_prefill_checkpoint_alignment"] = alignment
        for name, spec in specs.items():
            if name.endswith(".mixer"):
                specs[name] = replace(
                    spec,
                    num_prefill_checkpoint_blocks=int(alignment is not None),
                    prefill_checkpoint_alignment=alignment,
                )
    return specs, cache_dtype, torch_dtype


def _minimax_m3(specs, ext, vc, cache_dtype):  # type: ignore[no-untyped-def]
    """MiniMax-M3's sparse layers: the main K/V on MiniMaxM3SparseBackend and the indexer's side
    cache (built by vLLM's own MiniMaxM3IndexerCache), in vLLM's registration order."""
    from vllm.config import set_current_vllm_config
    from vllm.models.minimax_m3.common.indexer import MiniMaxM3IndexerCache, select_indexer_impl_cls
    from vllm.models.minimax_m3.common.sparse_attention import select_main_backend_and_impl_cls
    from vllm.v1.worker.utils import customize_attention_spec

    sparse = set(ext["minimax_m3_sparse"])
    out = {}
    with set_current_vllm_config(vc):
        dtype = vc.attention_config.resolve_indexer_kv_dtype("bf16")
        for name, s in specs.items():
            i = int(name.split(".")[2])
            if i not in sparse:
                out[name] = s
                continue
            backend, _ = select_main_backend_and_impl_cls(
                topk_blocks=ext["minimax_m3_topk_blocks"],
                kv_cache_dtype=cache_dtype,
                num_kv_heads=s.num_kv_heads,
            )
            impl = select_indexer_impl_cls(topk_blocks=ext["minimax_m3_topk_blocks"], indexer_kv_dtype=dtype)
            cache = MiniMaxM3IndexerCache(
                head_dim=ext["minimax_m3_index_dim"],
                prefix=f"{name}.index_cache",
                cache_config=vc.cache_config,
                indexer_kv_dtype=dtype,
                backend_cls=impl.indexer_backend_cls,
            )
            out[f"{name}.index_cache"] = customize_attention_spec(
                impl.indexer_backend_cls, cache.get_kv_cache_spec(vc)
            )
            out[name] = customize_attention_spec(backend, s)
    return out


def _inkling(req, vc, cache_dtype, torch_dtype):  # type: ignore[no-untyped-def]
    """Inkling's per-layer conv state (vLLM's InklingConvState) and attention spec, with the
    backends' customisation, in vLLM's registration order."""
    from vllm.config import set_current_vllm_config
    from vllm.models.inkling.nvidia import sconv_swa_attn as S
    from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend
    from vllm.v1.kv_cache_interface import FullAttentionSpec, SlidingWindowSpec
    from vllm.v1.worker.utils import customize_attention_spec

    cfg = vc.model_config.hf_text_config
    tp = int(req.get("tensor_parallel_size", 1))
    S.get_tensor_model_parallel_world_size = lambda: tp  # no process group on the oracle's CPU
    local = set(cfg.local_layer_ids)
    bs = vc.cache_config.block_size
    out = {}
    with set_current_vllm_config(vc):
        for i in range(int(cfg.num_hidden_layers)):
            is_local = i in local
            kv = cfg.swa_num_key_value_heads if is_local else cfg.num_key_value_heads
            hd = cfg.swa_head_dim if is_local else cfg.head_dim
            conv = S.InklingConvState(
                num_kv_heads=kv,
                head_dim=hd,
                hidden_size=cfg.hidden_size,
                kernel_size=cfg.sconv_kernel_size,
                prefix=f"model.layers.{i}.conv_state",
            )
            out[conv.prefix] = customize_attention_spec(conv.get_attn_backend(), conv.get_kv_cache_spec(vc))
            kw = dict(block_size=bs, num_kv_heads=max(1, kv // tp), head_size=hd, dtype=torch_dtype)
            attn = (
                SlidingWindowSpec(**kw, sliding_window=cfg.sliding_window_size)
                if is_local
                else FullAttentionSpec(**kw)
            )
            out[f"model.layers.{i}.attn"] = customize_attention_spec(FlashAttentionBackend, attn)
    return out


# The compute capability of the GPUs the cases name (the oracle runs on CPU); any other: SM 9.0.
_CAPABILITY = {"NVIDIA A100-SXM4-80GB": (8, 0), "NVIDIA L40S": (8, 9)}


def _kimi_k3_kda_checkpoint_alignment(vc, gpu_name=""):  # type: ignore[no-untyped-def]
    """KimiK3DeltaAttention.get_kv_cache_spec's checkpoint alignment, its prefill backend
    resolved ("auto", no additional_config) as on the named CUDA GPU (SM 9.0 unless named)."""
    from unittest import mock

    from vllm.models.kimi_k3.nvidia import kda
    from vllm.models.kimi_k3.nvidia.model import KimiLinearForCausalLM
    from vllm.platforms.interface import DeviceCapability

    text = vc.model_config.hf_text_config
    lac = text.linear_attn_config
    vc_text = vc.with_hf_config(text) if text is not vc.model_config.hf_config else vc
    recurrent_dtype = KimiLinearForCausalLM.get_mamba_state_dtype_from_config(vc_text)[1]
    major, minor = _CAPABILITY.get(gpu_name, (9, 0))
    gpu = mock.Mock(is_cuda=lambda: True, get_device_capability=lambda: DeviceCapability(major, minor))
    with mock.patch.object(kda, "current_platform", gpu):
        backend = kda.resolve_kda_prefill_backend(
            "auto", lac["head_dim"], vc.model_config.dtype, recurrent_dtype, lac.get("gate_lower_bound")
        )
    return kda.kda_prefill_checkpoint_alignment(backend)


STOCK._fill_from_model_config = _fill
STOCK.build_specs = _build

# --- Step5 (vllm/models/step5) -----------------------------------------------------------------
_step5_prev_fill = STOCK._fill_from_model_config
_step5_prev_build = STOCK.build_specs


def _step5_fill(req, mc, tp):  # type: ignore[no-untyped-def]
    req = _step5_prev_fill(req, mc, tp)
    if getattr(mc.hf_text_config, "model_type", None) == "step5":
        req["_ext"]["step5"] = True
    return req


def _step5_build(req, vc, model_dtype):  # type: ignore[no-untyped-def]
    ext = req.get("_ext") or {}
    if not ext.get("step5"):
        return _step5_prev_build(req, vc, model_dtype)
    import types

    from vllm.triton_utils import tl

    if not hasattr(tl, "extra"):
        tl.extra = types.SimpleNamespace(cuda=types.SimpleNamespace(libdevice=types.SimpleNamespace()))
    from vllm.model_executor.layers.attention.attention import Attention
    from vllm.models.step5.nvidia import model as M
    from vllm.models.step5.nvidia.config import checkpoint_has_step5_sparse_config, get_step5_sparse_config
    from vllm.models.step5.nvidia.csa_tail_ring import Step5CSATailRing, Step5CSATailRingBackend
    from vllm.models.step5.nvidia.sparse_attention import (
        Step5DSAAttentionBackend,
        Step5SplitKVFlashAttentionBackend,
    )
    from vllm.models.step5.nvidia.sparse_summary_cache import (
        Step5SparseSummaryBackend,
        Step5SparseSummaryCacheLayer,
    )
    from vllm.v1.attention.backend import AttentionType
    from vllm.v1.attention.backends.utils import get_supported_kv_cache_layouts, resolve_kv_cache_layout
    from vllm.v1.worker.utils import customize_attention_spec

    cache_dtype, torch_dtype = STOCK._resolve_dtype(req.get("dtype", "bf16"), model_dtype)
    hf = vc.model_config.hf_text_config
    tp = vc.parallel_config.tensor_parallel_size
    sparse = get_step5_sparse_config(hf)
    if not checkpoint_has_step5_sparse_config(hf):
        raise NotImplementedError("Step5 requires a checkpoint with a sparse_config section")
    window = getattr(hf, "sliding_window", None)
    layer_types = M._get_step5_layer_types(hf)
    other = getattr(hf, "attention_other_setting", None)
    specs = {}
    backends = {}
    for i in range(int(hf.num_hidden_layers)):
        # Step5DecoderLayer.__init__ / Step5Attention.__init__
        heads, groups, head_dim = (
            hf.num_attention_heads,
            hf.num_attention_groups,
            getattr(hf, "head_dim", None),
        )
        if other and i < len(layer_types) and layer_types[i] == other["attention_type"]:
            heads = other["num_attention_heads"] or heads
            groups = other["num_attention_groups"] or groups
            head_dim = other["head_dim"] or head_dim
        kind = M._per_layer_value(
            layer_types,
            i,
            name="layer_types",
            default="sliding_attention" if i % 2 == 0 else "full_attention",
        )
        sw = window if kind == "sliding_attention" else None
        if sw is not None and getattr(hf, "swa_num_attention_heads", None) is not None:
            heads = hf.swa_num_attention_heads
        head_dim = head_dim or hf.hidden_size // heads
        dsa = sparse is not None and M._is_step5_full_attention_layer(hf, i, sparse) and sw is None
        if dsa:
            M._validate_step5_dsa_parallel_geometry(
                total_num_heads=heads,
                total_num_kv_heads=groups,
                indexer_num_heads=int(sparse.sparse_indexer_num_heads),
                index_tp_size=int(sparse.index_tp_size),
                tp_size=tp,
            )
            if head_dim != 192:
                raise NotImplementedError(f"Step5 DSA kernels require head_size 192, got {head_dim}.")
        backend = Step5DSAAttentionBackend if dsa else Step5SplitKVFlashAttentionBackend
        layer = types.SimpleNamespace(
            attn_type=AttentionType.DECODER,
            kv_cache_dtype=cache_dtype,
            sliding_window=sw,
            attn_backend=backend,
            num_kv_heads=max(1, groups // tp),
            head_size=head_dim,
            head_size_v=head_dim,
            kv_cache_torch_dtype=torch_dtype,
        )
        name = f"model.layers.{i}.self_attn.attn"
        main = Attention.get_kv_cache_spec(layer, vc)
        specs[name] = customize_attention_spec(backend, main)
        if dsa:
            ctx = {name: types.SimpleNamespace(get_kv_cache_spec=lambda _vc, s=main: s)}
            summary = Step5SparseSummaryCacheLayer(
                prefix=f"{name}.sparse_summary_cache", target_impl=None, static_forward_context=ctx
            )
            ring = Step5CSATailRing(
                prefix=f"{name}.csa_tail_ring",
                main_layer_name=name,
                num_speculative_tokens=0,
                static_forward_context=ctx,
            )
            specs[summary.layer_name] = customize_attention_spec(
                Step5SparseSummaryBackend, summary.get_kv_cache_spec(vc)
            )
            specs[ring.layer_name] = customize_attention_spec(
                Step5CSATailRingBackend, ring.get_kv_cache_spec(vc)
            )
            backends[Step5SparseSummaryBackend.get_name()] = Step5SparseSummaryBackend
            backends[Step5CSATailRingBackend.get_name()] = Step5CSATailRingBackend
        backends[backend.get_name()] = backend
    # EngineCore._initialize_kv_caches resolves the layout from the backends' declarations
    # (Step5DSAAttentionBackend takes BLNHC only), before the planner groups the layers.
    layouts = [layout.name for layout in get_supported_kv_cache_layouts(list(backends.values()))]
    resolve_kv_cache_layout(vc, [layouts], specs.values())
    return specs, cache_dtype, torch_dtype


STOCK._fill_from_model_config = _step5_fill
STOCK.build_specs = _step5_build


# --- Qwen4-exp with QSA (vllm/models/qwen4_exp) ------------------------------------------------
_qsa_prev_fill = STOCK._fill_from_model_config
_qsa_prev_build = STOCK.build_specs


def _qsa_fill(req, mc, tp):  # type: ignore[no-untyped-def]
    req = _qsa_prev_fill(req, mc, tp)
    hf = mc.hf_text_config
    if getattr(hf, "model_type", None) in ("qwen4_exp", "qwen4_exp_text") and hf.indexer_n_heads is not None:
        from vllm.models.qwen4_exp.nvidia.model import _QSA_LAYER_TYPES

        req["_ext"]["qsa_layers"] = [i for i, t in enumerate(hf.layer_types) if t in _QSA_LAYER_TYPES]
    if getattr(hf, "model_type", None) in ("qwen4_exp", "qwen4_exp_text") and hf.ple_layer_ids:
        # Qwen4ExpDecoderLayer: layer i has a PLE layer when i + 1 is in ple_layer_ids.
        req["_ext"]["ple_layers"] = [i - 1 for i in hf.ple_layer_ids]
    return req


def _qsa_build(req, vc, model_dtype):  # type: ignore[no-untyped-def]
    specs, cache_dtype, torch_dtype = _qsa_prev_build(req, vc, model_dtype)
    ext = req.get("_ext") or {}
    if ext.get("ple_layers"):
        specs = _with_ple(specs, vc, ext)
    if not ext.get("qsa_layers"):
        return specs, cache_dtype, torch_dtype
    from vllm.models.qwen4_exp.common.qsa_cache import (
        QSACompressedKeyCache,
        QSAKeyStateCache,
        QSAStateBackend,
    )
    from vllm.models.qwen4_exp.nvidia.qsa import Qwen4ExpQSAFlashAttentionBackend
    from vllm.v1.attention.backends.utils import get_supported_kv_cache_layouts, resolve_kv_cache_layout
    from vllm.v1.worker.utils import customize_attention_spec

    hf = vc.model_config.hf_text_config
    indexer = vc.attention_config.resolve_indexer_kv_dtype("bf16")
    indexer_dtype = {"fp8": torch.float8_e4m3fn, "bf16": torch.bfloat16}[indexer]
    out = {}
    for name, spec in specs.items():
        i = int(name.split(".")[2])
        if i in ext["qsa_layers"] and name.endswith(".self_attn.attn"):
            # Qwen4ExpQSAAttention.__init__: the indexer's caches register before the KV.
            pre = f"model.layers.{i}.self_attn.indexer."
            common = {"cache_config": vc.cache_config, "vllm_config": vc,
                      "compress_ratio": int(hf.indexer_compress_ratio)}  # fmt: skip
            raw = QSAKeyStateCache(
                head_size=int(hf.indexer_head_dim),
                dtype=torch.bfloat16,
                cache_rope_positions=vc.model_config.uses_mrope,
                prefix=pre + "raw_key_cache",
                **common,
            )
            comp = QSACompressedKeyCache(
                head_size=int(hf.indexer_head_dim),
                dtype=indexer_dtype,
                prefix=pre + "compressed_key_cache",
                **common,
            )
            out[raw.prefix] = customize_attention_spec(QSAStateBackend, raw.get_kv_cache_spec(vc))
            out[comp.prefix] = customize_attention_spec(QSAStateBackend, comp.get_kv_cache_spec(vc))
            spec = customize_attention_spec(Qwen4ExpQSAFlashAttentionBackend, spec)
        out[name] = spec
    vc.compilation_config.static_forward_context.clear()
    from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend

    backends = [FlashAttentionBackend, Qwen4ExpQSAFlashAttentionBackend, QSAStateBackend]
    layouts = [layout.name for layout in get_supported_kv_cache_layouts(backends)]
    resolve_kv_cache_layout(vc, [layouts], out.values())
    return out, cache_dtype, torch_dtype


def _with_ple(specs, vc, ext):  # type: ignore[no-untyped-def]
    """Qwen4ExpPLELayer (ple_layer.py): a TP-replicated short-conv MambaSpec, as
    MambaBase.get_kv_cache_spec builds it, registered before its decoder layer's mixer; no prefill
    checkpoint, as the GDN layers export none (the oracle's Triton GDN). The GDN specs get their
    own mamba_type, as QwenGatedDeltaNetAttention's."""
    from vllm.model_executor.models import ModelRegistry
    from vllm.v1.attention.backends.registry import MambaAttentionBackendEnum
    from vllm.v1.kv_cache_interface import MambaSpec

    cls, _ = ModelRegistry.resolve_model_cls(vc.model_config.architecture, model_config=vc.model_config)
    cc = vc.cache_config
    ple = MambaSpec(
        shapes=tuple(cls.get_ple_mamba_state_shape_from_config(vc)),
        dtypes=tuple(cls.get_ple_mamba_state_dtype_from_config(vc)),
        block_size=cc.mamba_block_size,
        page_size_padded=cc.mamba_page_size_padded,
        mamba_type=MambaAttentionBackendEnum.SHORT_CONV,
        tp_replicated=True,
        mamba_cache_mode=cc.mamba_cache_mode,
        num_speculative_blocks=0,
    )
    out = {}
    for name, spec in specs.items():
        i = int(name.split(".")[2])
        if i in ext["ple_layers"] and f"model.layers.{i}.ple" not in out:
            out[f"model.layers.{i}.ple"] = ple
        if isinstance(spec, MambaSpec):
            spec = replace(spec, mamba_type=MambaAttentionBackendEnum.GDN_ATTN)
        out[name] = spec
    return out


STOCK._fill_from_model_config = _qsa_fill
STOCK.build_specs = _qsa_build


_more_make_vc = STOCK.make_vllm_config
_more_build = STOCK.build_specs


def _glm5next_fill(req, mc, tp):  # type: ignore[no-untyped-def]
    req = _glm5_prev_fill(req, mc, tp)
    hf = mc.hf_text_config
    if getattr(hf, "model_type", None) == "glm5_next_text":
        ext = req["_ext"]
        ext.pop("indexer_head", None)  # not the V3.2 indexer: oracle_more builds GLM-5-next's own
        ext["glm5next"] = True
    return req


def _glm5next_backends():  # type: ignore[no-untyped-def]
    """The non-SSM backends of a GLM-5-next MLA layer on an SM 9.0 GPU, in the order the layer
    registers them (its Indexer's k_cache and tail_cache before the MLA attention)."""
    from vllm.v1.attention.backends.mla.flashinfer_mla_sparse_sm90 import FlashInferMLASparseSM90Backend
    from vllm.v1.attention.backends.mla.indexer import Glm5NextIndexerBackend, KpoolTailBackend

    return [Glm5NextIndexerBackend, KpoolTailBackend, FlashInferMLASparseSM90Backend]


def _glm5next_make_vc(req, model_config=None):  # type: ignore[no-untyped-def]
    ext = req.get("_ext") or {}
    if not ext.get("glm5next"):
        return _more_make_vc(req, model_config)
    from unittest import mock

    from vllm.model_executor.models import ModelRegistry
    from vllm.platforms.interface import Platform

    mamba_layers = ext.pop("mamba_layers", None)
    vc = _more_make_vc(req, model_config)
    ext["mamba_layers"] = mamba_layers
    cc = vc.cache_config
    cc.enable_prefix_caching = True
    cc.mamba_cache_mode = "align"
    cc.user_specified_block_size = int(req["block_size"]) != 16
    cc.mamba_block_size = cc.block_size
    backends = classmethod(lambda cls, v: _glm5next_backends())
    with mock.patch.object(Platform, "_find_non_ssm_backends", backends):
        Platform.update_block_size_for_backend(vc)
    cc.mamba_block_size = cc.block_size
    model_cls, _ = ModelRegistry.resolve_model_cls(vc.model_config.architecture, model_config=vc.model_config)
    ext["mamba_shapes"] = model_cls.get_mamba_state_shape_from_config(vc)
    ext["mamba_dtypes"] = model_cls.get_mamba_state_dtype_from_config(vc)
    ext["attn_block_size"] = cc.block_size
    ext["mamba_page_size_padded"] = cc.mamba_page_size_padded
    return vc


def _glm5next_build(req, vc, model_dtype):  # type: ignore[no-untyped-def]
    ext = req.get("_ext") or {}
    specs, cache_dtype, torch_dtype = _more_build(req, vc, model_dtype)
    if not ext.get("glm5next"):
        return specs, cache_dtype, torch_dtype
    import torch
    from vllm.model_executor.layers.attention.mla_attention import _canonicalize_sparse_mla_kv_cache_dtype
    from vllm.models.glm5next.common.model import get_sparse_topk_buffer_width
    from vllm.utils.math_utils import cdiv, next_power_of_2
    from vllm.utils.torch_utils import kv_cache_dtype_str_to_dtype
    from vllm.v1.kv_cache_interface import (
        CircularBufferSpec,
        MLAAttentionSpec,
        SparseCacheRole,
        get_kv_quant_mode,
    )
    from vllm.v1.worker.utils import customize_attention_spec

    hf = vc.model_config.hf_text_config
    indexer_be, tail_be, mla_be = _glm5next_backends()
    bs = vc.cache_config.block_size
    kv_dtype_str = _canonicalize_sparse_mla_kv_cache_dtype(mla_be, vc.cache_config.cache_dtype)
    kv_dtype = kv_cache_dtype_str_to_dtype(kv_dtype_str, vc.model_config)
    ext["mla_cache_dtype"] = kv_dtype_str
    kpool = int(hf.index_kpool)
    ring = kpool * next_power_of_2(cdiv(kpool + vc.num_speculative_tokens, kpool))
    assert bs % ring == 0
    out = {}
    for name, s in specs.items():
        if not name.endswith(".self_attn.attn"):
            out[name] = s
            continue
        base = name[: -len(".attn")]
        ihd = int(hf.index_head_dim)
        out[base + ".indexer.k_cache"] = customize_attention_spec(
            indexer_be,
            MLAAttentionSpec(
                block_size=bs,
                num_kv_heads=1,
                max_tp_shards=1,
                head_size=ihd + ihd // 128 * 4,
                dtype=torch.uint8,
                cache_role=SparseCacheRole.INDEXER,
                tokens_per_state=kpool,
            ),
        )
        out[base + ".indexer.tail_cache"] = customize_attention_spec(
            tail_be,
            CircularBufferSpec(
                block_size=ring,
                num_kv_heads=2,
                head_size=ihd,
                head_size_v=0,
                dtype=torch.bfloat16,
                dcp_sharded=False,
            ),
        )
        out[name] = customize_attention_spec(
            mla_be,
            MLAAttentionSpec(
                block_size=bs,
                num_kv_heads=1,
                max_tp_shards=1,
                head_size=int(hf.kv_lora_rank) + int(hf.qk_rope_head_dim),
                dtype=kv_dtype,
                cache_dtype_str=kv_dtype_str,
                kv_quant_mode=get_kv_quant_mode(kv_dtype_str),
                state_content_bytes={"fp8_ds_mla": 656, "nvfp4_ds_mla": 352}.get(kv_dtype_str),
                topk_buffer_width=get_sparse_topk_buffer_width(hf),
                is_index_group_leader=True,
            ),
        )
    # The layout the engine core resolves from the workers' backends (KPOOL_TAIL reads BLHNC only):
    # block-outermost, so vLLM packs the groups' mixed page sizes (_get_packed_kv_cache_groups).
    from vllm.v1.attention.backends.utils import get_supported_kv_cache_layouts, resolve_kv_cache_layout

    layouts = [layout.name for layout in get_supported_kv_cache_layouts(_glm5next_backends())]
    ext["kv_cache_layout"] = resolve_kv_cache_layout(vc, [layouts], out.values()).name
    alignment = _glm5next_kda_checkpoint_alignment(vc)
    ext["kda_prefill_checkpoint_alignment"] = alignment
    for name, s in out.items():
        if name.endswith(".mixer"):
            out[name] = replace(
                s,
                num_prefill_checkpoint_blocks=int(alignment is not None),
                prefill_checkpoint_alignment=alignment,
            )
    return out, cache_dtype, torch_dtype


def _glm5next_kda_checkpoint_alignment(vc):  # type: ignore[no-untyped-def]
    """Glm5NextLinearAttention.get_kv_cache_spec's checkpoint alignment, its prefill backend
    resolved ("auto") as on an SM 9.0 CUDA GPU."""
    from unittest import mock

    from vllm.model_executor.layers.mamba.kda_checkpoint import kda_prefill_checkpoint_alignment
    from vllm.models.glm5next.common import kda
    from vllm.platforms.interface import DeviceCapability

    hf = vc.model_config.hf_text_config
    hopper = mock.Mock(is_cuda=lambda: True, get_device_capability=lambda: DeviceCapability(9, 0))
    with mock.patch.object(kda, "current_platform", hopper):
        backend = kda._resolve_kda_prefill_backend(
            "auto", hf.linear_head_dim, vc.model_config.dtype, hf.linear_lower_bound
        )
    return kda_prefill_checkpoint_alignment(backend)


_glm5_prev_fill = STOCK._fill_from_model_config
STOCK._fill_from_model_config = _glm5next_fill
STOCK.make_vllm_config = _glm5next_make_vc
STOCK.build_specs = _glm5next_build
# DeepSeek-V4 (vllm/models/deepseek_v4, DeepseekV4ForCausalLM / ...ForConditionalGeneration, the
# CUDA path: DeepseekV4FlashMLAAttention on SM 9x/10x). Every decoder layer keeps a sliding-window
# cache (DeepseekV4SWACache, 64-token blocks); a compressed layer (compress_rates of its
# layer_types entry > 1) also keeps its compressed MLA cache (DeepseekV4Attention, tokens_per_state
# = the ratio) and its compressor's state ring (CompressorStateCache), and a ratio-4 layer an
# indexer K cache (DeepseekV4IndexerCache) with a compressor of its own. The specs are vLLM's own
# get_kv_cache_spec, passed through customize_attention_spec with each layer's backend, in the
# order the layers register (indexer, SWA, attention, compressor); the layout is the one
# resolve_kv_cache_layout picks from those backends (the indexer asks for a block-outermost one).
_dsv4_prev_fill = STOCK._fill_from_model_config
_dsv4_prev_build = STOCK.build_specs


def _dsv4_fill(req, mc, tp):  # type: ignore[no-untyped-def]
    hf = mc.hf_text_config
    if getattr(hf, "model_type", None) != "deepseek_v4":
        return _dsv4_prev_fill(req, mc, tp)
    req = dict(req)
    # The stock reader would make MLA layers sliding from layer_types; DeepSeek-V4 builds its own.
    req["sliding_window"] = None
    req = _dsv4_prev_fill(req, mc, tp)
    req.pop("sliding_window", None)
    ext = req["_ext"]
    ext.pop("indexer_head", None)
    ext["dsv4"] = True
    E._CTX["ext"] = ext
    return req


def _dsv4_build(req, vc, model_dtype):  # type: ignore[no-untyped-def]
    ext = req.get("_ext") or {}
    if not ext.get("dsv4"):
        return _dsv4_prev_build(req, vc, model_dtype)
    import types

    import torch
    from vllm.config.vllm import set_current_vllm_config
    from vllm.models.deepseek_v4.attention import (
        DeepseekV4Attention,
        DeepseekV4IndexerCache,
        _resolve_dsv4_kv_cache_dtype,
    )
    from vllm.models.deepseek_v4.common.ops.fused_indexer_q import MXFP4_BLOCK_SIZE
    from vllm.models.deepseek_v4.compressor import CompressorStateCache
    from vllm.models.deepseek_v4.nvidia.flashmla import DeepseekV4FlashMLAAttention
    from vllm.v1.attention.backends.mla.indexer import dsa_indexer_uses_fp4
    from vllm.v1.attention.backends.mla.sparse_swa import DeepseekV4SWACache
    from vllm.v1.attention.backends.utils import get_supported_kv_cache_layouts, resolve_kv_cache_layout
    from vllm.v1.worker.utils import customize_attention_spec

    attn_cls = DeepseekV4FlashMLAAttention  # nvidia/model.py _select_dsv4_attn_cls on SM 9x/10x
    hf, cc = vc.model_config.hf_config, vc.cache_config
    specs, backends = {}, []

    def add(layer):  # type: ignore[no-untyped-def]
        backend = layer.get_attn_backend()
        specs[layer.prefix] = customize_attention_spec(backend, layer.get_kv_cache_spec(vc))
        if backend not in backends:
            backends.append(backend)

    with set_current_vllm_config(vc):
        # DeepseekV4Attention.__init__: the backend's block format fixes the cache dtype (fp8 and
        # auto become fp8_ds_mla, written back onto the cache config).
        kv_dtype, kv_torch = _resolve_dsv4_kv_cache_dtype(attn_cls.use_fp8_ds_mla_layout, cc.cache_dtype, cc)
        use_fp4 = dsa_indexer_uses_fp4(vc)
        ihd = int(hf.index_head_dim)
        index_head = ihd // 2 + ihd // MXFP4_BLOCK_SIZE if use_fp4 else ihd + ihd // 128 * 4
        for i in range(int(hf.num_hidden_layers)):
            p = f"model.layers.{i}.attn"
            ratio = max(1, hf.compress_rates.get(hf.layer_types[i], 0))
            if ratio == 4:  # DeepseekV4Indexer: its K cache, then its compressor's state
                add(
                    DeepseekV4IndexerCache(
                        head_dim=index_head,
                        dtype=torch.uint8,
                        prefix=f"{p}.indexer.k_cache",
                        cache_config=cc,
                        compress_ratio=ratio,
                    )
                )
                add(
                    CompressorStateCache(
                        state_dim=2 * 2 * ihd,
                        dtype=torch.float32,
                        compress_ratio=ratio,
                        prefix=f"{p}.indexer.compressor.state_cache",
                    )
                )
            add(
                DeepseekV4SWACache(
                    head_dim=int(hf.head_dim),
                    window_size=int(hf.sliding_window),
                    dtype=kv_torch,
                    prefix=f"{p}.swa_cache",
                    cache_config=cc,
                    backend_cls=attn_cls.swa_backend_cls,
                )
            )
            if ratio > 1:
                # The attention layer itself (too heavy to build here): its own get_kv_cache_spec
                # on the fields it reads.
                me = types.SimpleNamespace(
                    compress_ratio=ratio,
                    head_dim=int(hf.head_dim),
                    kv_cache_dtype=kv_dtype,
                    kv_cache_torch_dtype=kv_torch,
                )
                spec = DeepseekV4Attention.get_kv_cache_spec(me, vc)
                specs[p] = customize_attention_spec(attn_cls.backend_cls, spec)
                if attn_cls.backend_cls not in backends:
                    backends.append(attn_cls.backend_cls)
                coff = 1 + (ratio == 4)
                add(
                    CompressorStateCache(
                        state_dim=2 * coff * int(hf.head_dim),
                        dtype=torch.float32,
                        compress_ratio=ratio,
                        prefix=f"{p}.compressor.state_cache",
                    )
                )
        layouts = [layout.name for layout in get_supported_kv_cache_layouts(backends)]
        layout = resolve_kv_cache_layout(vc, [layouts], specs.values())
    ext["kv_cache_dtype"] = kv_dtype
    ext["kv_cache_layout"] = layout.name
    ext["backends"] = [b.get_name() for b in backends]
    return specs, kv_dtype, kv_torch


STOCK._fill_from_model_config = _dsv4_fill
STOCK.build_specs = _dsv4_build


# DeepSeek-V4 with pipeline stages (pipeline_parallel_size > 1): every stage is a worker with the
# caches of its own decoder layers (vllm/distributed/utils.py get_pp_indices); vLLM groups the
# merged specs once, projects the groups onto each worker and gives every worker the smallest
# worker's block count (vllm/v1/core/kv_cache_planning.py get_global_kv_cache_groups,
# get_kv_cache_configs). oracle.plan plans one worker, so this is its multi-worker form; the
# figures of the worker with the widest block are the ones reported.
_one_worker_plan = STOCK.plan


def _dsv4_pp_plan(req):  # type: ignore[no-untyped-def]
    pp = int(req.get("pipeline_parallel_size", 1))
    if pp == 1:
        return _one_worker_plan(req)
    import vllm
    from vllm.distributed.utils import get_pp_indices
    from vllm.v1.core import kv_cache_planning as P
    from vllm.v1.core.kv_cache_config_builder import get_kv_cache_config_builder
    from vllm.v1.core.kv_cache_utils import generate_scheduler_kv_cache_config, get_kv_cache_capacity
    from vllm.v1.kv_cache_interface import UniformTypeKVCacheSpecs

    model_config = STOCK._real_model_config(req)
    req = STOCK._fill_from_model_config(req, model_config, int(req.get("tensor_parallel_size", 1)))
    if not any((req.get("_ext") or {}).get(k) for k in ("dsv4", "dsv41")):
        raise ValueError("pipeline stages are planned for DeepSeek-V4 and V4.1 only")
    vc = STOCK.make_vllm_config(req, model_config)
    vc.parallel_config.pipeline_parallel_size = pp
    specs, cache_dtype, _ = STOCK.build_specs(req, vc, vc.model_config.dtype)
    n = int(vc.model_config.hf_config.num_hidden_layers)
    workers = []
    for rank in range(pp):
        a, b = get_pp_indices(n, rank, pp)
        workers.append({k: v for k, v in specs.items() if a <= int(k.split(".")[2]) < b})
    avail = int(req["available_memory_bytes"])
    groups = P.get_global_kv_cache_groups(vc, workers)
    builder = get_kv_cache_config_builder(vc)
    projected = [P._project_kv_cache_groups_to_worker(groups, w) for w in workers]
    per_worker = [P._pool_bytes_per_block_from_builder(builder, vc, g) for g in projected]
    widest = max(range(pp), key=lambda i: per_worker[i])
    out = {
        "name": req.get("name"),
        "vllm_version": vllm.__version__,
        "kv_cache_dtype": cache_dtype,
        "max_in_flight_tokens": vc.max_in_flight_tokens,
        "max_model_len": vc.model_config.max_model_len,
        "bytes_per_block": per_worker[widest],
        "bytes_per_block_by_stage": per_worker,
        "oracle_ext": {k: v for k, v in (req.get("_ext") or {}).items()},
    }
    gdesc = []
    for g in groups:
        spec = g.kv_cache_spec
        if isinstance(spec, UniformTypeKVCacheSpecs):
            rep, pages = next(iter(spec.kv_cache_specs.values())), spec.max_memory_usage_pages(vc)
        else:  # every layer one spec (vLLM's uniform path)
            rep, pages = spec, -(-spec.max_memory_usage_bytes(vc) // spec.page_size_bytes)
        gdesc.append(
            {
                "spec": type(spec).__name__,
                "layer_spec": type(rep).__name__,
                "num_layers": len(g.layer_names),
                "block_size": spec.block_size,
                "page_size_bytes": spec.page_size_bytes,
                "sliding_window": getattr(rep, "sliding_window", None),
                "blocks_per_request": pages,
            }
        )
    out["kv_cache_groups"] = gdesc
    out["blocks_per_request"] = sum(g["blocks_per_request"] for g in gdesc)
    out["estimated_max_model_len"] = min(
        P._estimate_max_model_len_from_groups(builder, vc, g, avail - bpb)
        for g, bpb in zip(projected, per_worker, strict=True)
    )
    try:
        cfgs = P.get_kv_cache_configs(vc, workers, [avail] * pp, groups)
    except ValueError as e:
        out["error"], out["enough_memory"] = str(e), False
        return out
    sched = generate_scheduler_kv_cache_config(cfgs)
    num_tokens, max_conc = get_kv_cache_capacity(vc, sched)
    out.update(
        enough_memory=True,
        num_blocks=cfgs[0].num_blocks,
        kv_cache_size_tokens=num_tokens,
        max_concurrency=max_conc,
        vllm_log_line=f"GPU KV cache size: {num_tokens:,} tokens; Maximum concurrency for "
        f"{vc.model_config.max_model_len:,} tokens per request: {max_conc:.2f}x",
    )
    return out


STOCK.plan = _dsv4_pp_plan


# DeepSeek-V4.1 (vllm/models/deepseek_v41, DeepseekV41ForCausalLM) on an SM90 GPU (H100 / H200 /
# H20), where nvidia/model.py _select_dsv4_attn_cls picks FlashMLA (mega attention is SM100 only)
# and the records are V4's (_use_v41_mxfp8_kv_record is SM100 only). The oracle runs on CPU, so
# the platform answers capability 9.0 while the specs are built. Every layer keeps a
# sliding-window cache (32-token blocks); a kv-source layer (kv_source_layer_ids) its compressed
# MLA cache (tokens_per_state = its ratio, 1 or 2), at ratio 2 its compressor ring
# (CircularBufferSpec), and if it is an index source too the indexer K cache; consumer layers read
# their source's caches and keep none.
_dsv41_prev_fill = STOCK._fill_from_model_config
_dsv41_prev_build = STOCK.build_specs


def _dsv41_fill(req, mc, tp):  # type: ignore[no-untyped-def]
    if getattr(mc.hf_config, "model_type", None) != "deepseek_v41":
        return _dsv41_prev_fill(req, mc, tp)
    req = dict(req)
    req["sliding_window"] = None
    req = _dsv41_prev_fill(req, mc, tp)
    req.pop("sliding_window", None)
    req.pop("sliding_window_pattern", None)
    ext = req["_ext"]
    ext.pop("indexer_head", None)
    ext["dsv41"] = True
    E._CTX["ext"] = ext
    return req


def _dsv41_build(req, vc, model_dtype):  # type: ignore[no-untyped-def]
    ext = req.get("_ext") or {}
    if not ext.get("dsv41"):
        return _dsv41_prev_build(req, vc, model_dtype)
    import types

    import torch
    from vllm.config.vllm import set_current_vllm_config
    from vllm.models.deepseek_v41.attention import (
        DeepseekV4Attention,
        DeepseekV4IndexerCache,
        _indexer_k_cache_head_dim,
        _resolve_dsv4_kv_cache_dtype,
        _use_v41_mxfp8_kv_record,
    )
    from vllm.models.deepseek_v41.compressor import CompressorStateCache
    from vllm.models.deepseek_v41.nvidia.flashmla import DeepseekV4FlashMLAAttention
    from vllm.platforms import current_platform
    from vllm.platforms.interface import DeviceCapability
    from vllm.v1.attention.backends.mla.indexer import dsa_indexer_uses_fp4
    from vllm.v1.attention.backends.mla.sparse_swa import DeepseekV4SWACache
    from vllm.v1.attention.backends.utils import get_supported_kv_cache_layouts, resolve_kv_cache_layout
    from vllm.v1.worker.utils import customize_attention_spec

    platform_cls = type(current_platform)
    saved = platform_cls.__dict__.get("get_device_capability")
    platform_cls.get_device_capability = classmethod(lambda cls, device_id=0: DeviceCapability(9, 0))
    try:
        attn_cls = DeepseekV4FlashMLAAttention
        hf, cc = vc.model_config.hf_config, vc.cache_config
        n = int(hf.num_hidden_layers)
        ratios = [int(r) for r in hf.compress_ratios[:n]]
        kv_sources, index_sources = set(hf.kv_source_layer_ids), set(hf.index_source_layer_ids)
        specs, backends = {}, []

        def add(prefix, spec, backend):  # type: ignore[no-untyped-def]
            if spec is not None:
                specs[prefix] = customize_attention_spec(backend, spec)
            if backend not in backends:
                backends.append(backend)

        with set_current_vllm_config(vc):
            kv_dtype, kv_torch = _resolve_dsv4_kv_cache_dtype(
                attn_cls.use_fp8_ds_mla_layout, cc.cache_dtype, cc
            )
            mxfp8 = _use_v41_mxfp8_kv_record()
            record = 528 if mxfp8 else 584
            alignment = 512 if mxfp8 else 576
            index_head = _indexer_k_cache_head_dim(int(hf.index_head_dim), dsa_indexer_uses_fp4(vc))
            for i in range(n):
                p = f"model.layers.{i}.attn"
                r = ratios[i]
                me = types.SimpleNamespace(
                    is_kv_source=i in kv_sources,
                    head_dim=int(hf.head_dim),
                    compress_ratio=r,
                    kv_cache_dtype=kv_dtype,
                    kv_cache_torch_dtype=kv_torch,
                    kv_page_alignment=alignment,
                    compressed_bytes_per_token=record,
                )
                add(p, DeepseekV4Attention.get_kv_cache_spec(me, vc), attn_cls.backend_cls)
                if i in index_sources and i in kv_sources:
                    k = DeepseekV4IndexerCache(
                        head_dim=index_head,
                        dtype=torch.uint8,
                        prefix=f"{p}.indexer.k_cache",
                        cache_config=cc,
                        compress_ratio=r,
                    )
                    add(k.prefix, k.get_kv_cache_spec(vc), k.get_attn_backend())
                swa = DeepseekV4SWACache(
                    head_dim=int(hf.head_dim),
                    window_size=int(hf.sliding_window),
                    dtype=kv_torch,
                    prefix=f"{p}.swa_cache",
                    cache_config=cc,
                    backend_cls=attn_cls.swa_backend_cls,
                    block_size=32,
                    packed_bytes_per_token=record,
                    packed_page_alignment=alignment,
                    packed_block_stride_alignment=None,
                    bounded_replay=cc.swa_bounded_replay,
                )
                add(swa.prefix, swa.get_kv_cache_spec(vc), swa.get_attn_backend())
                if i in kv_sources and r > 1:
                    ring = CompressorStateCache(
                        state_dim=2 * int(hf.head_dim),
                        dtype=torch.float32,
                        prefix=f"{p}.compressor.state_cache",
                    )
                    add(ring.prefix, ring.get_kv_cache_spec(vc), ring.get_attn_backend())
            layouts = [layout.name for layout in get_supported_kv_cache_layouts(backends)]
            layout = resolve_kv_cache_layout(vc, [layouts], specs.values())
    finally:
        if saved is None:
            del platform_cls.get_device_capability
        else:
            platform_cls.get_device_capability = saved
    ext["kv_cache_dtype"] = kv_dtype
    ext["kv_cache_layout"] = layout.name
    ext["backends"] = [b.get_name() for b in backends]
    return specs, kv_dtype, kv_torch


STOCK._fill_from_model_config = _dsv41_fill
STOCK.build_specs = _dsv41_build

# --- The Mamba cache dtypes and prefix caching as inputs (the "layout-" cases) -------------------
# --mamba-cache-dtype, --mamba-ssm-cache-dtype, --enable-prefix-caching and --mamba-block-size go
# into CacheConfig before VllmConfig.__post_init__, so vLLM's own hooks settle them as `vllm serve`
# does: NemotronHForCausalLMConfig / Qwen3_5ForConditionalGenerationConfig the "auto" SSM dtype,
# MambaModelConfig (through HybridAttentionMambaModelConfig) mamba_cache_mode and the Mamba block
# size; then Platform._align_hybrid_block_size on FlashAttention, as oracle_ext does, without its
# forced "align" mode.
_layout_prev_make_vc = STOCK.make_vllm_config
_LAYOUT_KEYS = ("enable_prefix_caching", "mamba_cache_dtype", "mamba_ssm_cache_dtype", "mamba_block_size")


def _layout_make_vc(req, model_config=None):  # type: ignore[no-untyped-def]
    import functools

    given = {k: req[k] for k in _LAYOUT_KEYS if k in req}
    ext = req.get("_ext") or {}
    if not given or not ext.get("mamba_layers"):
        return _layout_prev_make_vc(req, model_config)
    from vllm.model_executor.models import ModelRegistry
    from vllm.platforms.interface import Platform
    from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend

    real = STOCK.CacheConfig
    STOCK.CacheConfig = functools.partial(real, **given)
    try:
        vc = E._orig_make_vc(req, model_config)
    finally:
        STOCK.CacheConfig = real
    cc = vc.cache_config
    Platform._align_hybrid_block_size(vc, FlashAttentionBackend)
    model_cls, _ = ModelRegistry.resolve_model_cls(vc.model_config.architecture, model_config=vc.model_config)
    ext["mamba_shapes"] = model_cls.get_mamba_state_shape_from_config(vc)
    ext["mamba_dtypes"] = model_cls.get_mamba_state_dtype_from_config(vc)
    ext["attn_block_size"] = cc.block_size
    ext["mamba_page_size_padded"] = cc.mamba_page_size_padded
    ext["mamba_cache_mode"] = cc.mamba_cache_mode
    ext["mamba_block_size"] = cc.mamba_block_size
    ext["mamba_ssm_cache_dtype"] = cc.mamba_ssm_cache_dtype
    return vc


STOCK.make_vllm_config = _layout_make_vc
# Speculative decoding (req["speculative"]: method, num_speculative_tokens). The drafter's attention
# layers register after the target's in the same forward context, their specs marked is_draft
# (vllm/v1/worker/gpu/attn_utils.py get_kv_cache_spec); an MTP layer is a decoder layer of the
# target's own attention class (deepseek_mtp.py: DeepseekV2DecoderLayer, MLA; qwen3_next_mtp.py /
# qwen3_5_mtp.py: the full-attention decoder layer), so its spec is the target's full or MLA spec
# again. The layers: DeepSeek's num_nextn_predict_layers, Qwen3-Next's num_nextn_predict_layers or
# 1, Qwen3.5's mtp_num_hidden_layers or 1 (the MTP model files' num_mtp_layers). Every MambaSpec
# counts num_speculative_blocks = num_speculative_tokens (MambaBase.get_kv_cache_spec). A real
# SpeculativeConfig needs the draft's checkpoint: VllmConfig.speculative_config is an object whose
# methods are SpeculativeConfig's own, with the attributes they read.
_spec_prev_make = STOCK.make_vllm_config
_spec_prev_build = STOCK.build_specs


def _mtp_layers(hf):  # type: ignore[no-untyped-def]
    text = getattr(hf, "text_config", None) or hf
    mt = str(getattr(hf, "model_type", ""))
    if mt.startswith("qwen3_5"):
        return int(getattr(text, "mtp_num_hidden_layers", None) or 1)
    if mt == "qwen3_next":
        return int(getattr(hf, "num_nextn_predict_layers", None) or 1)
    return int(hf.num_nextn_predict_layers)


class _SpecConfig:
    from vllm.config.speculative import SpeculativeConfig as _S

    use_eagle = _S.use_eagle
    use_dflash = _S.use_dflash
    use_dspark = _S.use_dspark
    uses_draft_model = _S.uses_draft_model
    needs_eagle_block_drop = _S.needs_eagle_block_drop
    use_eagle_block_drop = _S.use_eagle_block_drop
    use_multi_module_mtp = _S.use_multi_module_mtp

    def __init__(self, method, n, n_predict):  # type: ignore[no-untyped-def]
        self.method, self.num_speculative_tokens = method, n
        self.disable_eagle_block_drop = self.parallel_drafting = self.use_heterogeneous_vocab = False
        self.draft_model_config = types.SimpleNamespace(
            hf_config=types.SimpleNamespace(num_nextn_predict_layers=n_predict)
        )


def _spec_make(req, model_config=None):  # type: ignore[no-untyped-def]
    vc = _spec_prev_make(req, model_config)
    spec = req.get("speculative")
    if spec:
        layers = _mtp_layers(vc.model_config.hf_config) if spec["method"] == "mtp" else 0
        object.__setattr__(
            vc, "speculative_config", _SpecConfig(spec["method"], spec["num_speculative_tokens"], layers)
        )
    return vc


def _spec_build(req, vc, model_dtype):  # type: ignore[no-untyped-def]
    specs, cache_dtype, torch_dtype = _spec_prev_build(req, vc, model_dtype)
    spec = req.get("speculative")
    if not spec:
        return specs, cache_dtype, torch_dtype
    from vllm.v1.kv_cache_interface import FullAttentionSpec, MambaSpec, MLAAttentionSpec

    n = int(spec["num_speculative_tokens"])
    specs = {
        k: replace(v, num_speculative_blocks=n) if isinstance(v, MambaSpec) else v for k, v in specs.items()
    }
    first = int(vc.model_config.hf_config.get_text_config().num_hidden_layers)
    if spec["method"] == "mtp":
        template = next(v for v in specs.values() if type(v) in (FullAttentionSpec, MLAAttentionSpec))
        for i in range(_mtp_layers(vc.model_config.hf_config)):
            specs[f"model.layers.{first + i}.mtp_block.self_attn.attn"] = replace(template, is_draft=True)
    elif spec.get("draft_hf_config"):
        # An EAGLE head (llama_eagle3.py LlamaModel): num_hidden_layers Llama decoder layers, each an
        # Attention of the head's KV heads (sharded by TP as any: max(1, H // TP)) and head dim,
        # in the cache dtype; full attention (the head sets no window).
        d = spec["draft_hf_config"]
        tp = int(req.get("tensor_parallel_size", 1))
        head = int(d.get("head_dim") or d["hidden_size"] // d["num_attention_heads"])
        kv = max(1, int(d.get("num_key_value_heads", d["num_attention_heads"])) // tp)
        template = next(v for v in specs.values() if type(v) is FullAttentionSpec)
        for i in range(int(d["num_hidden_layers"])):
            specs[f"draft_model.model.layers.{first + i}.self_attn.attn"] = replace(
                template, num_kv_heads=kv, head_size=head, head_size_v=head, is_draft=True
            )
    return specs, cache_dtype, torch_dtype


STOCK.make_vllm_config = _spec_make
STOCK.build_specs = _spec_build


if __name__ == "__main__":
    E.main()
