"""vLLM 0.33.0's own CUDA-graph capture sizes and graph keys for a set of engine settings, on CPU
(the oracle's install): VllmConfig._set_cudagraph_sizes (vllm/config/vllm.py) and
CudagraphDispatcher.initialize_cudagraph_keys (vllm/v1/cudagraph_dispatcher.py), as the runner
calls them, for each mode and setting below. Writes what tests/core/test_cudagraphs.py asserts:

    /tmp/lean/venv-lean/bin/python tests/oracle/cudagraph_probe.py ../shared/tools/vllm-oracle \\
        > tests/oracle/cudagraphs-vllm-0.33.0.json

The model config is the stock oracle's stub (enforce_eager off); no speculative decoding, no LoRA."""

from __future__ import annotations

import json
import sys

sys.path.insert(0, sys.argv[1])
import vllm
from vllm.config.compilation import CUDAGraphMode
from vllm.v1.cudagraph_dispatcher import CudagraphDispatcher

import oracle as O


def probe(mnbt, seqs, mode="FULL_AND_PIECEWISE", sizes=None, max_size=None):  # type: ignore[no-untyped-def]
    vc = O.make_vllm_config(
        {"block_size": 16, "max_model_len": 8192, "dtype": "bf16", "max_num_batched_tokens": mnbt}
    )
    vc.model_config.enforce_eager = False
    vc.scheduler_config.max_num_seqs = seqs
    cc = vc.compilation_config
    cc.cudagraph_mode = CUDAGraphMode[mode]
    cc.cudagraph_capture_sizes = sizes
    cc.max_cudagraph_capture_size = max_size
    vc._set_cudagraph_sizes()
    dispatcher = CudagraphDispatcher(vc)
    dispatcher.initialize_cudagraph_keys(cc.cudagraph_mode, 1)
    return {
        "max_num_batched_tokens": mnbt,
        "max_num_seqs": seqs,
        "cudagraph_mode": mode.lower(),
        "given_sizes": sizes,
        "given_max": max_size,
        "capture_sizes": list(cc.cudagraph_capture_sizes),
        "keys": {m.name: len(v) for m, v in dispatcher.cudagraph_keys.items()},
    }


def main() -> None:
    cases = []
    for mnbt, seqs in (
        (8192, 1024),
        (2048, 256),
        (16384, 1024),
        (8192, 128),
        (8192, 8),
        (600, 512),
        (8192, 300),
    ):
        for mode in ("FULL_AND_PIECEWISE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY"):
            cases.append(probe(mnbt, seqs, mode))
    cases.append(probe(8192, 256, sizes=[1, 2, 4, 8]))
    cases.append(probe(8192, 4, sizes=[1, 2, 4, 8]))
    cases.append(probe(8192, 256, max_size=64))
    cases.append(probe(8192, 256, max_size=1000))
    cases.append(probe(300, 256, sizes=[1, 32, 128, 512]))
    out = {
        "vllm_version": vllm.__version__,
        "probe": "tests/oracle/cudagraph_probe.py (vLLM 0.33.0 VllmConfig._set_cudagraph_sizes and "
        "CudagraphDispatcher.initialize_cudagraph_keys on CPU)",
        "cases": cases,
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
