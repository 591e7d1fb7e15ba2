#!/usr/bin/env python
"""vLLM 0.33's own LoRA slot bytes on CPU: the real model built on the meta device (no memory,
no weights) and wrapped by vLLM's real LoRAModelManager (vllm/lora/model_manager.py
_create_lora_modules → each wrapper's create_lora_weights), then the bytes of every
lora_a_stacked / lora_b_stacked (MoE: w13_/w2_ lora_a/b_stacked) summed, per TP rank.

Run with the oracle's venv (vLLM 0.33.0 on CPU); reads a JSON list of requests on stdin:

  {"name": …, "config": {…config.json…}, "max_loras": 4, "max_lora_rank": 16,
   "lora_dtype": "auto", "fully_sharded_loras": false, "target_modules": null,
   "tensor_parallel_size": 1, "enable_moe_shared_loras": false,
   "enable_mixed_moe_lora_format": false, "is_3d_moe_weight": false}

and prints a JSON list: {"name", "bytes_per_rank": [...], "kinds": {wrapper: [modules, bytes]}}
(kinds of rank 0). Tensor parallel runs one process a rank (gloo).

What is stubbed, because there is no GPU: Attention.__init__ (the KV layer, no LoRA slots), the
platform's Punica wrapper (the CPU one), and FusedMoEWithLoRA.__init__'s modular-kernel checks
and the kernel wiring of its set_mapping (its create_lora_weights, which makes the slots from the
real moe_config, runs as is)."""

from __future__ import annotations

import json
import os
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")

_STACKS = (
    "lora_a_stacked",
    "lora_b_stacked",
    "w13_lora_a_stacked",
    "w13_lora_b_stacked",
    "w2_lora_a_stacked",
    "w2_lora_b_stacked",
)


def _patch() -> None:
    import torch
    import vllm.model_executor.layers.attention.attention as attention
    from vllm import envs
    from vllm.lora.layers import fused_moe
    from vllm.lora.layers.utils import _get_lora_device
    from vllm.platforms import current_platform

    def attention_init(self, *args, **kwargs):  # the KV layer: no LoRA slots
        torch.nn.Module.__init__(self)

    attention.Attention.__init__ = attention_init
    type(current_platform).get_punica_wrapper = classmethod(
        lambda cls: "vllm.lora.punica_wrapper.punica_cpu.PunicaWrapperCPU"
    )

    def moe_init(self, base_layer):  # FusedMoEWithLoRA.__init__ up to its kernel checks
        fused_moe.BaseLayerWithLoRA.__init__(self)
        self.base_layer = base_layer
        self.moe_config = base_layer.moe_config
        self._shared_experts = base_layer._shared_experts
        par = self.moe_config.moe_parallel_config
        self.tp_size, self.tp_rank = par.tp_size, par.tp_rank
        self.device = _get_lora_device(base_layer)
        self._enable_aux_cuda_stream = envs.VLLM_LORA_ENABLE_DUAL_STREAM
        self._w13_slices = 2 if base_layer.moe_config.is_act_and_mul else 1
        self.enable_moe_shared_loras = False
        self.n_slices = self.local_num_experts * (self._w13_slices + 1)

    fused_moe.FusedMoEWithLoRA.__init__ = moe_init
    # set_mapping hands the slots to the modular kernel, which is not built here: the base one.
    fused_moe.FusedMoEWithLoRA.set_mapping = fused_moe.BaseLayerWithLoRA.set_mapping

    def moe3d_init(self, base_layer):
        moe_init(self, base_layer)
        self._w13_slices = 1

    fused_moe.FusedMoE3DWithLoRA.__init__ = moe3d_init


def _run(rank: int, world: int, req: dict, port: int, out: str) -> None:
    import torch
    from vllm.config import DeviceConfig, ModelConfig, ParallelConfig, VllmConfig, set_current_vllm_config
    from vllm.config.lora import LoRAConfig
    from vllm.distributed import init_distributed_environment, initialize_model_parallel

    _patch()
    d = tempfile.mkdtemp(prefix="lora_oracle_")
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(req["config"], f)
    mc = ModelConfig(
        model=d, skip_tokenizer_init=True, dtype=req.get("model_dtype", "bfloat16"), max_model_len=4096
    )
    lc = LoRAConfig(
        max_loras=req.get("max_loras", 1),
        max_lora_rank=req.get("max_lora_rank", 16),
        lora_dtype=req.get("lora_dtype", "auto"),
        fully_sharded_loras=req.get("fully_sharded_loras", False),
        target_modules=req.get("target_modules"),
        enable_moe_shared_loras=req.get("enable_moe_shared_loras", False),
        enable_mixed_moe_lora_format=req.get("enable_mixed_moe_lora_format", False),
    )
    lc.verify_with_model_config(mc)
    vc = VllmConfig(
        model_config=mc,
        lora_config=lc,
        device_config=DeviceConfig(device="cuda"),
        parallel_config=ParallelConfig(tensor_parallel_size=world),
    )
    with set_current_vllm_config(vc):
        init_distributed_environment(
            world_size=world,
            rank=rank,
            local_rank=rank,
            distributed_init_method=f"tcp://127.0.0.1:{port}",
            backend="gloo",
        )
        initialize_model_parallel(world)
        from vllm.lora.model_manager import LoRAModelManager
        from vllm.model_executor.model_loader.utils import initialize_model
        from vllm.utils.torch_utils import set_default_torch_dtype

        with set_default_torch_dtype(mc.dtype), torch.device("meta"):
            model = initialize_model(vllm_config=vc)
        if req.get("is_3d_moe_weight"):  # a 3D-weight MoE class (gpt-oss's layout) on this model
            type(model).is_3d_moe_weight = True
        mgr = LoRAModelManager(model, 256, 8192, mc.get_vocab_size(), lc, torch.device("meta"), vc)
        kinds: dict[str, list[int]] = {}
        total = 0
        for module in mgr.modules.values():
            kind = type(module).__name__
            tensors = []
            for attr in _STACKS:
                if "FusedMoE" in kind and attr in ("lora_a_stacked", "lora_b_stacked"):
                    continue  # views into the w13/w2 stacks
                v = getattr(module, attr, None)
                if v is None:
                    continue
                tensors += [v] if isinstance(v, torch.Tensor) else list(v)
            b = sum(t.numel() * t.element_size() for t in tensors)
            total += b
            k = kinds.setdefault(kind, [0, 0])
            k[0] += 1
            k[1] += b
    with open(f"{out}.{rank}", "w") as f:
        json.dump({"total": total, "kinds": kinds}, f)


def _one(req: dict, port: int) -> dict:
    import torch.multiprocessing as mp

    world = int(req.get("tensor_parallel_size", 1))
    out = tempfile.mktemp(prefix="lora_oracle_out_")
    mp.start_processes(_run, args=(world, req, port, out), nprocs=world, start_method="spawn")
    ranks = []
    for r in range(world):
        with open(f"{out}.{r}") as f:
            ranks.append(json.load(f))
    return {
        "name": req.get("name"),
        "bytes_per_rank": [r["total"] for r in ranks],
        "kinds": ranks[0]["kinds"],
    }


def main() -> None:
    reqs = json.load(sys.stdin)
    print(json.dumps([_one(r, 29600 + i) for i, r in enumerate(reqs)]))


if __name__ == "__main__":
    main()
