"""Worked figures: one decode step of Llama-3.1-70B (fp8 weights, bf16 KV) on four H100s, 64
requests at 2,048 tokens of context each, taken apart term by term. The coefficients are the
fitted ones (presets/data/perf/aic-0.12.0.json, h100_sxm); refitting moves these figures."""

from __future__ import annotations

import pytest

from kvplan.core.perf.steptime import Batch, _gemm_s, _interp_loglog
from tests.perf.steptime_cases import model

M = model("llama-3.1-70b", "h100-sxm-80gb", 4, "fp8")
STEP = Batch(64, 64 * 2048, 0, 0, 0)


def test_the_linear_layers_shapes_come_from_the_parameter_count():
    # dense weights a layer: (70,553,706,496 − 2 × 128,256 × 8,192 embedding and LM head) ÷ 80 = 855,654,502
    # attention: 8,192 × 128 × (2 × 64 + 2 × 8) = 150,994,944 → MLP (855,654,502 − 150,994,944) ÷ (3 × 8,192)
    # = 28,672 (Llama-3.1-70B's intermediate_size); TP 4: QKV 2,560 × 8,192, O 8,192 × 2,048,
    # gate_up 14,336 × 8,192, down 8,192 × 7,168
    assert [(g.n, g.k) for g in M.gemms] == [(2560, 8192), (8192, 2048), (14336, 8192), (8192, 7168)]
    # fp8: 213,909,504 bytes a layer a GPU, 17.1 GB over 80 layers: 5.11 ms at 3.35 TB/s
    assert sum(g.n * g.k for g in M.gemms) * 80 == 17_112_760_320


def test_the_64_token_step_costs_its_gemms_and_two_all_reduces_a_layer():
    # 64 decode requests run the 64-wide graph: m̃ = 64
    gemm = [_gemm_s(g, 64, 3.35e12) for g in M.gemms]
    # the weights' read at 78–84 % of HBM, + t0, times the fp8 shape factors (QKV 1.16, O 0.88,
    # gate_up 0.93, down 0.93): 17.3 + 11.7 + 50.7 + 27.6 µs = 107.4 µs a layer
    assert [round(g.scale, 2) for g in M.gemms] == [1.16, 0.88, 0.93, 0.93]
    assert sum(gemm) == pytest.approx(107.4e-6, rel=1e-3)
    assert M.allreduce_graph is not None
    # 64 × 8,192 = 524,288 bf16 elements: 12.76 µs on 4 GPUs (CUDA-graph custom all-reduce curve)
    allreduce = _interp_loglog(M.allreduce_graph, 64 * 8192)
    assert allreduce == pytest.approx(12.76e-6, rel=1e-3)
    # element-wise kernels (AIC's ElementWise ops): 80 × 3 (two add + RMSNorm, SiLU-and-mul) × 3 µs
    # = 0.72 ms, + 64 tokens × 80 × 2 B × (8 × 8,192 + 3 × 7,168) = 891,289,600 B ÷ (0.8 × 3.35 TB/s)
    # = 0.333 ms: 1.053 ms
    assert M.elementwise_kernels == 240 and M.elementwise_bytes_per_token == 13_926_400
    elementwise = 240 * 3e-6 + 64 * 13_926_400 / (0.8 * 3.35e12)
    assert elementwise == pytest.approx(1.0526e-3, rel=1e-3)
    # 80 × 107.4 µs + 160 × 12.76 µs + 1.05 ms = 8.59 + 2.04 + 1.05 = 11.69 ms
    assert M._tokens(64, True) == pytest.approx(80 * sum(gemm) + 160 * allreduce + elementwise, rel=1e-12)
    assert M._tokens(64, True) == pytest.approx(11.686e-3, rel=1e-3)


def test_decode_attention_reads_the_kv_at_the_fitted_rate():
    # a context token a layer a GPU: 8 KV heads ÷ TP 4 = 2 heads × 128 × (K + V) × 2 bytes = 1,024 B;
    # h100 bf16 decode fit: 3.34025e-13 s a byte (≈ 3.0 TB/s), t0 11.39 µs, 38.2 ns a request
    assert M.full.decode_per_ctx == pytest.approx(80 * 1024 * 3.34025e-13, rel=1e-9)
    # 131,072 context tokens × 80 layers × 1,024 B = 10.7 GB → 3.587 ms
    assert M.full.decode_per_ctx * 131_072 == pytest.approx(3.587e-3, rel=1e-3)


def test_the_whole_step_is_the_sum_of_its_terms():
    # 11.686 (linear + all-reduce + element-wise) + 0.186 (LM head, 64 rows × 32,064 × 8,192 bf16)
    # + 0.911 (attention t0, 80 layers) + 0.196 (80 × 64 requests × 38.2 ns) + 3.587 (KV read)
    # + 0.100 (async scheduling's exposed hand-off; host 0.8 + 64 × 0.01 = 1.44 ms hides) = 16.67 ms
    assert M.seconds(STEP) == pytest.approx(16.666e-3, rel=1e-3)
    _, b, until = M.decode_line(64, 64 * 2048)
    assert b == M.full.decode_per_ctx and until > 10**15  # full attention only: one line on
