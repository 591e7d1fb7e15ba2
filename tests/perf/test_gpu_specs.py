"""GPU presets carry AIConfigurator's peak figures for every GPU its vLLM tables cover; a GPU
without them cannot be timed, and says which can."""

from __future__ import annotations

import pytest

from kvplan.core.errors import InvalidInput, NoGpuSpecs
from kvplan.presets import PresetError, load_registry
from kvplan.presets.perf import load_coefficients
from tests.perf.steptime_cases import REGISTRY

TIMED = {
    "a100-40gb": "a100_sxm",
    "a100-80gb": "a100_sxm",
    "h100-sxm-80gb": "h100_sxm",
    "h200-141gb": "h200_sxm",
    "b200-180gb": "b200_sxm",
    "b300-288gb": "b300_sxm",
    "gb200-186gb": "gb200",
    "gb300-288gb": "gb300",
    "l40s-48gb": "l40s",
    "rtx-pro-6000-96gb": "rtx_pro_6000_server",
}


@pytest.mark.parametrize(("gpu", "system"), TIMED.items())
def test_every_gpu_the_aic_tables_cover_has_specs_and_fitted_tables(gpu, system):
    specs = REGISTRY.gpu_specs(gpu)
    assert specs.aic_system == system and system in load_coefficients().systems
    assert specs.source.startswith(f"AIConfigurator 0.12.0 systems/{system}.yaml")


def test_h100_specs_are_aics_figures():
    s = REGISTRY.gpu_specs("h100-sxm-80gb")
    # systems/h100_sxm.yaml: mem_bw 3350 GB/s, bf16 989 TFLOP/s, fp8 1978, NVLink 450 GB/s a direction
    assert (s.hbm_bytes_per_s, s.bf16_flops, s.fp8_flops, s.fp4_flops) == (
        3_350 * 10**9,
        989 * 10**12,
        1_978 * 10**12,
        None,
    )
    assert s.intra_node_bytes_per_s == 450 * 10**9 and s.peak_flops("fp8") == s.fp8_flops


@pytest.mark.parametrize("gpu", ["b300-288gb", "gb300-288gb", "rtx-pro-6000-96gb"])
def test_the_new_blackwell_presets_are_nominal_with_aics_memory(gpu):
    preset = REGISTRY.gpu(gpu)
    assert preset.nominal and "mem_capacity" in preset.memory_source


@pytest.mark.parametrize("gpu", ["mi300x-192gb", "pool-80gib", "h100-pcie-80gb"])
def test_a_gpu_without_specs_raises_no_gpu_specs_naming_it(gpu):
    with pytest.raises(NoGpuSpecs) as e:
        REGISTRY.gpu_specs(gpu)
    assert isinstance(e.value, InvalidInput) and e.value.field == "gpu" and e.value.gpu == gpu
    assert gpu in e.value.reason and "h100-sxm-80gb" in e.value.reason
    assert set(e.value.with_specs) == set(TIMED)


def test_a_malformed_specs_table_stops_start_up_naming_it(tmp_path):
    (tmp_path / "gpus.toml").write_text(
        '[[gpu]]\nid = "x"\nname = "X"\nmemory_bytes = 1024\n[gpu.specs]\naic_system = "h100_sxm"\n'
    )
    with pytest.raises(PresetError, match=r"gpu\[0\]\.specs"):
        load_registry(tmp_path)
