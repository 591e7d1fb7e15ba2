"""The preset registry: data files loaded once, immutable, versioned by content."""

from __future__ import annotations

import json

import pytest

from kvplan.presets import PresetError, load_registry
from kvplan.presets.registry import BUILTIN_DIR
from tests.core.test_params import CLOSE, EXACT

# Every preset the parameter tests read (exact and close counts), and these.
REQUIRED_MODELS = {*EXACT, *CLOSE, "llama-3-70b", "llama-3.1-8b"} | {
    # chunked local attention, Mamba and linear-attention hybrids, Cohere2 windows (issue 12)
    "llama-4-scout",
    "llama-4-maverick",
    "qwen3-next-80b-a3b",
    "jamba-1.5-mini",
    "granite-4.0-h-small",
    "command-r7b",
    "falcon-h1-7b",
}
REQUIRED_GPUS = {
    "a100-40gb",
    "a100-80gb",
    "h100-sxm-80gb",
    "h100-pcie-80gb",
    "h200-141gb",
    "h20-96gb",
    "b200-180gb",
    "gb200-186gb",
    "l40s-48gb",
    "l4-24gb",
    "mi300x-192gb",
    "mi325x-256gb",
    "rtx-4090-24gb",
    "pool-80gib",
    "pool-141gib",
    "pool-160gib",
}


def test_every_required_model_and_gpu_is_a_preset(registry):
    assert set(registry.models) >= REQUIRED_MODELS
    assert set(registry.gpus) >= REQUIRED_GPUS


def test_every_model_records_where_its_numbers_come_from(registry):
    for m in registry.models.values():
        assert m.config_source, m.id
        assert m.params_source, m.id
        assert m.geometry.params_total, m.id


def test_every_gpu_says_whether_its_memory_is_nominal(registry):
    for g in registry.gpus.values():
        assert g.memory_source, g.id
        assert g.nominal == g.memory_source.startswith("nominal"), g.id


def test_seed_pools_are_exact_binary_sizes(registry):
    assert registry.gpu("pool-160gib").memory_bytes == 160 * 1024**3
    assert registry.gpu("pool-141gib").memory_bytes == 141 * 1024**3


def test_lookups_accept_hf_repo_names_and_any_case(registry):
    assert registry.model("meta-llama/Meta-Llama-3-70B").id == "llama-3-70b"
    assert registry.model("DeepSeek-V3").id == "deepseek-v3"
    assert registry.gpu("NVIDIA H200").id == "h200-141gb"


def test_registry_is_immutable(registry):
    with pytest.raises(TypeError):
        registry.models["x"] = registry.models["llama-3-8b"]  # type: ignore[index]


def test_version_is_a_content_hash(registry, tmp_path):
    assert registry.version.startswith("reg-")
    assert load_registry(extra_dir="").version == registry.version
    extra = tmp_path / "extra"
    (extra / "models").mkdir(parents=True)
    doc = json.loads((BUILTIN_DIR / "models" / "llama-3-8b.json").read_text())
    doc.update(id="my-llama", name="My Llama", hf_repo="me/my-llama", aliases=[])
    (extra / "models" / "my-llama.json").write_text(json.dumps(doc))
    reg = load_registry(extra_dir=extra)
    assert reg.version != registry.version
    assert reg.model("my-llama").geometry.num_layers == 32


def test_extra_presets_come_from_the_environment_variable(tmp_path, monkeypatch):
    (tmp_path / "gpus.toml").write_text(
        '[[gpu]]\nid = "lab-card"\nname = "Lab Card"\nmemory_bytes = 1073741824\n'
    )
    monkeypatch.setenv("KVPLAN_EXTRA_PRESETS", str(tmp_path))
    assert load_registry().gpu("lab-card").memory_bytes == 1024**3


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ("{not json", "(file)"),
        ('{"name": "x", "config": {}}', "id"),
        ('{"id": "x", "config": {"num_attention_heads": 8}}', "config.num_hidden_layers"),
        ('{"id": "x", "params": {"total": -1}, "config": {}}', "params.total"),
    ],
)
def test_malformed_model_file_stops_loading_naming_file_and_field(tmp_path, content, field):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "bad.json").write_text(content)
    with pytest.raises(PresetError) as e:
        load_registry(extra_dir=tmp_path)
    assert e.value.field == field
    assert e.value.path.endswith("bad.json")


def test_malformed_gpu_file_names_the_field(tmp_path):
    (tmp_path / "gpus.toml").write_text('[[gpu]]\nid = "x"\nname = "X"\nmemory_bytes = "lots"\n')
    with pytest.raises(PresetError) as e:
        load_registry(extra_dir=tmp_path)
    assert e.value.field == "gpu[0].memory_bytes"


def test_missing_extra_directory_is_an_error(tmp_path):
    with pytest.raises(PresetError):
        load_registry(extra_dir=tmp_path / "nope")


@pytest.mark.parametrize("total", ["0", "-1", "8.0", "true", '"8"'])
def test_a_parameter_count_is_a_positive_int_by_the_one_integer_rule(tmp_path, total):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "bad.json").write_text(
        f'{{"id": "x", "params": {{"total": {total}}}, "config": {{}}}}'
    )
    with pytest.raises(PresetError) as e:
        load_registry(extra_dir=tmp_path)
    assert (e.value.field, e.value.reason) == ("params.total", "must be a positive integer")


SEEN = "must be an integer from 1 to memory_bytes"


@pytest.mark.parametrize(
    ("extra", "field", "reason"),
    [
        ("memory_bytes = 0", "gpu[0].memory_bytes", "must be positive"),
        ("memory_bytes = 1024\nvllm_memory_bytes = 2048", "gpu[0].vllm_memory_bytes", SEEN),
        ("memory_bytes = 1024\nvllm_memory_bytes = 512.0", "gpu[0].vllm_memory_bytes", SEEN),
        ("memory_bytes = 1024\nvllm_memory_bytes = 0", "gpu[0].vllm_memory_bytes", SEEN),
    ],
)
def test_a_gpu_memory_figure_is_a_positive_int_by_the_one_integer_rule(tmp_path, extra, field, reason):
    (tmp_path / "gpus.toml").write_text(f'[[gpu]]\nid = "x"\nname = "X"\n{extra}\n')
    with pytest.raises(PresetError) as e:
        load_registry(extra_dir=tmp_path)
    assert (e.value.field, e.value.reason) == (field, reason)
    ok = '[[gpu]]\nid = "x"\nname = "X"\nmemory_bytes = 1024\nvllm_memory_bytes = 1024\n'
    (tmp_path / "gpus.toml").write_text(ok)
    assert load_registry(extra_dir=tmp_path).gpu("x").memory_bytes == 1024
