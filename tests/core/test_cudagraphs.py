"""The CUDA graphs vLLM 0.33 captures, and the graph memory estimate that follows them
(core/engine/cudagraphs.py, core/engine/nonkv.py). The sizes and graph counts are vLLM's own:
tests/oracle/cudagraphs-vllm-0.33.0.json ran vLLM 0.33.0's VllmConfig._set_cudagraph_sizes and
CudagraphDispatcher.initialize_cudagraph_keys on CPU (tests/oracle/cudagraph_probe.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvplan.core.engine.cudagraphs import capture_sizes, cudagraph_mode, eager_forward, graphs
from kvplan.core.engine.nonkv import cudagraph_memory
from kvplan.core.engine.profiles import CALIBRATION_CAPTURED_GRAPHS, get_profile

PROBES = json.loads((Path(__file__).parents[1] / "oracle" / "cudagraphs-vllm-0.33.0.json").read_text())


def _sizes(p: dict) -> tuple[int, ...]:
    return capture_sizes(
        given=tuple(p["given_sizes"]) if p["given_sizes"] else None,
        given_max=p["given_max"],
        max_num_seqs=p["max_num_seqs"],
        max_num_batched_tokens=p["max_num_batched_tokens"],
        blackwell=False,
    )


def test_the_probes_come_from_vllm_0_33_0():
    assert PROBES["vllm_version"] == "0.33.0" and len(PROBES["cases"]) >= 30


@pytest.mark.parametrize(
    "probe",
    PROBES["cases"],
    ids=[
        f"{p['cudagraph_mode']}-mnbt{p['max_num_batched_tokens']}-seqs{p['max_num_seqs']}"
        f"-sizes{p['given_sizes']}-max{p['given_max']}"
        for p in PROBES["cases"]
    ],
)
def test_capture_sizes_and_graphs_are_vllms_own(probe):
    sizes = _sizes(probe)
    assert list(sizes) == probe["capture_sizes"]
    g = graphs(probe["cudagraph_mode"], sizes, probe["max_num_seqs"])
    assert g.captured == sum(probe["keys"].values())
    assert g.decode_graphs + g.mixed_graphs == g.captured


def test_the_calibration_logs_captured_102_graphs():
    """All 42 vLLM 0.19 calibration logs ran max_num_seqs 1024, max_num_batched_tokens 8192 at
    -O2: 51 sizes, a piecewise and a full decode graph each (docs/memory-model.md)."""
    sizes = capture_sizes(
        given=None, given_max=None, max_num_seqs=1024, max_num_batched_tokens=8192, blackwell=False
    )
    assert (
        graphs(cudagraph_mode(None, None, None, False), sizes, 1024).captured == CALIBRATION_CAPTURED_GRAPHS
    )


def test_blackwell_raises_the_default_ceiling_to_1024():
    """vllm/config/vllm.py _set_cudagraph_sizes: default_max_graph_size = 1024 on SM 10.x, else 512."""
    kw = {"given": None, "given_max": None, "max_num_seqs": 1024, "max_num_batched_tokens": 8192}
    assert capture_sizes(**kw, blackwell=False)[-1] == 512
    assert capture_sizes(**kw, blackwell=True)[-1] == 1024


@pytest.mark.parametrize(
    ("given", "compilation", "level", "eager", "mode"),
    [
        (None, None, None, False, "full_and_piecewise"),  # -O2, vLLM's default
        (None, None, 0, False, "none"),  # OPTIMIZATION_LEVEL_00: cudagraph_mode NONE
        (None, None, 1, False, "piecewise"),  # OPTIMIZATION_LEVEL_01
        (None, None, 3, False, "full_and_piecewise"),  # OPTIMIZATION_LEVEL_03
        ("piecewise", None, None, True, "none"),  # enforce_eager: CUDAGraphMode.NONE
        ("full", None, 0, False, "full"),  # a mode given wins over the level's
        (None, "none", None, False, "full_decode_only"),  # without_piecewise
        ("piecewise", "stock_torch_compile", None, False, "none"),  # without_piecewise
        ("piecewise", None, 0, False, "none"),  # -O0's compilation mode is NONE
        ("full_and_piecewise", "vllm_compile", 0, False, "full_and_piecewise"),
    ],
)
def test_the_mode_in_force_follows_vllms_config_rules(given, compilation, level, eager, mode):
    """vllm/config/vllm.py: enforce_eager sets CUDAGraphMode.NONE; OPTIMIZATION_LEVEL_00–03 give
    NONE / PIECEWISE / FULL_AND_PIECEWISE; _normalize_piecewise_cudagraph_mode drops the
    piecewise routine when the compilation mode is not VLLM_COMPILE (-O0: NONE)."""
    assert cudagraph_mode(given, compilation, level, eager) == mode


@pytest.mark.parametrize(
    ("compilation", "level", "eager", "eager_pytorch"),
    [
        (None, None, False, False),  # -O2: vLLM_COMPILE
        (None, None, True, True),  # --enforce-eager sets compilation mode NONE
        ("vllm_compile", None, True, True),
        ("none", None, False, True),
        (None, 0, False, True),  # -O0's compilation mode is NONE
        ("vllm_compile", 0, False, False),  # a mode given wins over the level's
        ("stock_torch_compile", None, False, False),
    ],
)
def test_the_forward_is_eager_pytorch_without_compilation(compilation, level, eager, eager_pytorch):
    """vllm/config/vllm.py: enforce_eager sets CompilationMode.NONE (and CUDAGraphMode.NONE)."""
    assert eager_forward(compilation, level, eager) is eager_pytorch


def test_max_cudagraph_capture_size_must_be_the_largest_given_size():
    """_set_cudagraph_sizes raises when both are given and disagree."""
    from kvplan.core.errors import InvalidInput

    with pytest.raises(InvalidInput) as e:
        capture_sizes(
            given=(1, 2, 4), given_max=8, max_num_seqs=256, max_num_batched_tokens=8192, blackwell=False
        )
    assert e.value.field == "max_cudagraph_capture_size"


def test_a_capture_maximum_of_a_billion_tokens_is_refused_before_its_sizes_are_listed():
    """Multiples of 16 up to 2^30 are 67M sizes: listing them took minutes and gigabytes (found by
    the budget's invariant test). Up to the limit of given sizes, they are listed as vLLM does."""
    from kvplan.core.errors import InvalidInput
    from kvplan.core.limits import MAX_CUDAGRAPH_CAPTURE_SIZES

    with pytest.raises(InvalidInput) as e:
        capture_sizes(
            given=None, given_max=1 << 30, max_num_seqs=256, max_num_batched_tokens=1 << 30, blackwell=False
        )
    assert e.value.field == "max_cudagraph_capture_size" and "67,108,883 batch sizes" in e.value.reason
    largest = 256 + 16 * (MAX_CUDAGRAPH_CAPTURE_SIZES - 35)  # 1, 2, 4, 31 multiples of 8, then of 16
    sizes = capture_sizes(
        given=None, given_max=largest, max_num_seqs=256, max_num_batched_tokens=largest, blackwell=False
    )
    assert len(sizes) == MAX_CUDAGRAPH_CAPTURE_SIZES and sizes[-1] == largest
    with pytest.raises(InvalidInput):
        capture_sizes(
            given=None,
            given_max=largest + 16,
            max_num_seqs=256,
            max_num_batched_tokens=largest + 16,
            blackwell=False,
        )


def test_the_graph_estimate_scales_with_the_graphs_captured_and_is_zero_without_graphs():
    rules = get_profile("vllm@0.33").memory
    fitted = cudagraph_memory(rules, 32, False)
    assert cudagraph_memory(rules, 32, False, CALIBRATION_CAPTURED_GRAPHS) == fitted
    assert cudagraph_memory(rules, 32, False, 8) == fitted * 8 // CALIBRATION_CAPTURED_GRAPHS
    assert cudagraph_memory(rules, 32, False, 0) == 0
    assert cudagraph_memory(rules, 32, True, 102) == 0


def test_profiles_whose_capture_rules_are_not_mirrored_keep_the_fitted_figure():
    rules = get_profile("vllm@0.19").memory
    assert cudagraph_memory(rules, 32, False, 8) == cudagraph_memory(rules, 32, False)
    assert cudagraph_memory(rules, 32, False, 0) == 0


@given(
    seqs=st.integers(1, 4096),
    mnbt=st.integers(1, 65536),
    mode=st.sampled_from(["piecewise", "full", "full_decode_only", "full_and_piecewise"]),
)
def test_capture_sizes_are_sorted_unique_and_within_the_batch(seqs, mnbt, mode):
    sizes = capture_sizes(
        given=None, given_max=None, max_num_seqs=seqs, max_num_batched_tokens=mnbt, blackwell=False
    )
    assert list(sizes) == sorted(set(sizes)) and all(1 <= s <= mnbt for s in sizes)
    g = graphs(mode, sizes, seqs)
    assert 0 < g.captured <= 2 * len(sizes)
