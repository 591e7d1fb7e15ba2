"""Command lines read as vLLM 0.33's parser reads them (core/engine/command.py): the forms people
paste, each flag's value and effect; shell syntax refused, never evaluated; no input a 500."""

from __future__ import annotations

import contextlib
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.core.engine.command import read_command
from kvplan.core.errors import InvalidInput


def test_vllm_serve_with_sizes_and_fp8_reads_as_vllm_does():
    c = read_command(
        "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 2 --max-model-len 32k --kv-cache-dtype fp8"
    )
    assert (c.form, c.model) == ("vllm serve", "Qwen/Qwen3-32B")
    assert c.settings == {"tensor_parallel_size": 2, "max_model_len": 32_000, "kv_cache_dtype": "fp8"}


def test_the_api_server_module_with_model_flag_alias_and_equals():
    c = read_command(
        "python3 -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-3.1-70B -tp 4 "
        "--gpu-memory-utilization=0.85 --max-num-seqs 64"
    )
    assert c.form == "api_server" and c.model == "meta-llama/Llama-3.1-70B"
    assert c.settings == {"tensor_parallel_size": 4, "gpu_memory_utilization": 0.85, "max_num_seqs": 64}


def test_environment_switches_and_their_no_forms():
    c = read_command(
        "VLLM_USE_V1=1 CUDA_VISIBLE_DEVICES=0,1 vllm serve Qwen/Qwen3-8B --enforce-eager"
        " --no-enable-prefix-caching"
    )
    assert c.env == {"VLLM_USE_V1": "1", "CUDA_VISIBLE_DEVICES": "0,1"}
    assert c.settings["enforce_eager"] is True
    prefix = next(f for f in c.flags if f.option == "--enable-prefix-caching")
    assert prefix.value is False and prefix.given == "--no-enable-prefix-caching"


def test_a_speculative_config_is_read_whole_into_the_speculative_fields():
    c = read_command(
        "vllm serve Qwen/Qwen3-8B --speculative-config"
        """ '{"method": "eagle3", "model": "AngelSlim/Qwen3-8B_eagle3", "num_speculative_tokens": 3}'"""
    )
    spec = next(f for f in c.flags if f.option == "--speculative-config")
    assert spec.value == {
        "method": "eagle3",
        "model": "AngelSlim/Qwen3-8B_eagle3",
        "num_speculative_tokens": 3,
    }
    assert spec.effect == "plan" and spec.note
    assert c.settings == {
        "speculative_method": "eagle3",
        "speculative_model": "AngelSlim/Qwen3-8B_eagle3",
        "num_speculative_tokens": 3,
    }


def test_the_speculative_shorthands_set_one_key_each():
    """vllm/engine/arg_utils.py create_speculative_config: --spec-method, --spec-model and
    --spec-tokens fill the keys --speculative-config leaves out."""
    c = read_command("vllm serve deepseek-ai/DeepSeek-V3 --spec-method mtp --spec-tokens 2")
    assert c.settings == {"speculative_method": "mtp", "num_speculative_tokens": 2}


def test_a_shorthand_and_the_key_it_sets_are_mutually_exclusive():
    with pytest.raises(InvalidInput, match="mutually exclusive"):
        read_command(
            "vllm serve x/y --spec-tokens 2"
            """ --speculative-config '{"method": "ngram", "num_speculative_tokens": 3}'"""
        )


def test_a_json_flag_kvplan_does_not_model_is_read_whole_and_said_not_modelled():
    c = read_command("""vllm serve Qwen/Qwen3-8B --kv-transfer-config '{"kv_connector": "NixlConnector"}'""")
    f = next(f for f in c.flags if f.option == "--kv-transfer-config")
    assert f.value == {"kv_connector": "NixlConnector"} and f.effect == "memory" and f.note


def test_the_mamba_flags_and_prefix_caching_set_their_fields():
    c = read_command(
        "vllm serve ibm-granite/granite-4.0-h-small --mamba-cache-dtype float32 --mamba-ssm-cache-dtype auto"
        " --no-enable-prefix-caching"
    )
    assert c.settings == {"mamba_cache_dtype": "float32", "mamba_ssm_cache_dtype": "auto",
                          "enable_prefix_caching": False}  # fmt: skip
    assert read_command("vllm serve m --enable-prefix-caching --mamba-block-size 64").settings == {
        "enable_prefix_caching": True, "mamba_block_size": 64}  # fmt: skip


def test_moe_backend_sets_the_experts_kernel_the_step_time_model_prices():
    c = read_command("vllm serve openai/gpt-oss-120b --moe-backend marlin")
    assert c.settings == {"moe_backend": "marlin"}


def test_the_compilation_config_sets_the_cuda_graph_fields_as_vllms_validators_read_them():
    """CompilationConfig.validate_mode_before / validate_cudagraph_mode_before (vllm/config/
    compilation.py): names case-blind, or CompilationMode's 0-3 and CUDAGraphMode's 0-2."""
    c = read_command(
        """vllm serve m -cc '{"cudagraph_capture_sizes": [1, 2, 4, 8], """
        """"cudagraph_mode": "FULL_DECODE_ONLY", "mode": 3, "max_cudagraph_capture_size": 8, """
        """"pass_config": {}}'"""
    )
    assert c.settings == {"cudagraph_capture_sizes": [1, 2, 4, 8], "cudagraph_mode": "full_decode_only",
                          "compilation_mode": "vllm_compile", "max_cudagraph_capture_size": 8}  # fmt: skip
    assert read_command("vllm serve m --compilation-config.cudagraph_mode 1").settings == {
        "cudagraph_mode": "piecewise"
    }
    assert read_command("vllm serve m --cudagraph-capture-sizes 1 2 4 -O0").settings == {
        "cudagraph_capture_sizes": [1, 2, 4], "optimization_level": 0}  # fmt: skip
    assert read_command("vllm serve m -O 3").settings == {"optimization_level": 3}


@pytest.mark.parametrize(
    ("command", "words"),
    [
        (
            """vllm serve m --cudagraph-capture-sizes 1 2 -cc '{"cudagraph_capture_sizes": [4]}'""",
            "mutually exclusive",
        ),
        ("""vllm serve m -cc '{"cudagraph_mode": "sometimes"}'""", "cudagraph_mode"),
        ("""vllm serve m -cc '{"mode": 7}'""", "mode"),
        ("vllm serve m --cudagraph-capture-sizes 1 two", "not an integer"),
        ("vllm serve m -cc '[1, 2]'", "JSON object"),
    ],
)
def test_a_compilation_setting_vllm_refuses_is_a_400(command, words):
    with pytest.raises(InvalidInput) as e:
        read_command(command)
    assert words in e.value.reason


def test_a_multi_line_command_with_continuations():
    c = read_command(
        "vllm serve Qwen/Qwen3-8B \\\n  --max-model-len 8192 \\\n  --max-num-batched-tokens 16K\n"
    )
    assert c.settings == {"max_model_len": 8192, "max_num_batched_tokens": 16_384}


def test_vllms_printed_non_default_args():
    line = (
        "INFO 08-07 10:11:12 [api_server.py:1805] non-default args: {'model_tag': 'Qwen/Qwen3-32B', "
        "'model': 'Qwen/Qwen3-32B', 'max_model_len': 32768, 'tensor_parallel_size': 2, "
        "'gpu_memory_utilization': 0.9, 'enable_prefix_caching': False}"
    )
    c = read_command(line)
    assert (c.form, c.model) == ("non-default args", "Qwen/Qwen3-32B")
    assert c.settings == {"max_model_len": 32768, "tensor_parallel_size": 2, "gpu_memory_utilization": 0.9,
                          "enable_prefix_caching": False}  # fmt: skip


def test_the_image_form_takes_vllm_serves_arguments():
    c = read_command(
        "docker run --gpus all -p 8000:8000 vllm/vllm-openai:v0.11.0 --model Qwen/Qwen3-8B -tp 2"
    )
    assert (c.form, c.model, c.settings["tensor_parallel_size"]) == ("image", "Qwen/Qwen3-8B", 2)


def test_a_config_file_is_read_from_its_content():
    c = read_command(
        "vllm serve Qwen/Qwen3-8B --config cfg.yaml", {"max_model_len": 4096, "tensor-parallel-size": 2}
    )
    assert c.settings == {"max_model_len": 4096, "tensor_parallel_size": 2}


def test_a_config_file_is_read_as_vllms_load_config_file_turns_it_into_flags():
    """InferenceX's gpt-oss B200 script (benchmarks/single_node/gptoss_fp4_b200.sh): a JSON string
    for --compilation-config, `no-enable-prefix-caching: true` (prefix caching off), and the
    command line's own flags win over the file's (vllm/utils/argparse_utils.py)."""
    config = {
        "kv-cache-dtype": "fp8",
        "compilation-config": '{"pass_config":{"fuse_allreduce_rms":true,"eliminate_noops":true}}',
        "no-enable-prefix-caching": True,
        "max-cudagraph-capture-size": 2048,
        "tensor-parallel-size": 4,
        "enforce-eager": False,
    }
    c = read_command("vllm serve openai/gpt-oss-120b --config config.yaml --tensor-parallel-size 2", config)
    assert c.settings == {
        "kv_cache_dtype": "fp8",
        "enable_prefix_caching": False,
        "max_cudagraph_capture_size": 2048,
        "tensor_parallel_size": 2,
        "enforce_eager": False,
    }


def test_a_config_key_set_false_is_read_as_vllm_reads_it_spelling_and_all():
    """load_config_file writes `--no-{key}` only where that spelling is an option: `enforce_eager:
    false` adds nothing (the default stays), `enforce-eager: false` turns it off; on the command
    line --no-enforce_eager is --no-enforce-eager (underscores read as dashes)."""
    assert read_command("vllm serve m --config c.yaml", {"enforce_eager": False}).settings == {}
    assert read_command("vllm serve m --config c.yaml", {"no-enable-prefix-caching": False}).settings == {}
    assert read_command("vllm serve m --no-enforce_eager").settings == {"enforce_eager": False}


def test_a_config_files_values_are_not_a_shells_and_its_errors_name_the_config():
    c = read_command("vllm serve m --config c.yaml", {"served-model-name": "$NAME"})
    assert c.labels == {"served_model_name": ["$NAME"]}
    with pytest.raises(InvalidInput) as e:
        read_command("vllm serve m --config c.yaml", {"max-model-len": "lots"})
    assert e.value.field == "config" and "is not an integer" in e.value.reason


def test_a_commented_out_export_in_a_script_is_a_comment():
    script = "cd /x\n# export VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1\nvllm serve m"
    assert read_command(script).env == {}
    assert read_command("# VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1 vllm serve m").settings == {
        "flashinfer_moe_mxfp4_mxfp8": True  # a root prompt
    }


def test_an_image_sees_its_own_environment_not_the_hosts():
    c = read_command(
        "export VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1 && docker run --gpus all -e HF_HUB_OFFLINE=1 "
        "vllm/vllm-openai:latest --model openai/gpt-oss-120b"
    )
    assert c.env == {"HF_HUB_OFFLINE": "1"} and "flashinfer_moe_mxfp4_mxfp8" not in c.settings


def test_an_export_anywhere_before_the_command_reaches_its_environment():
    script = (
        "cat > config.yaml << EOF\nkv-cache-dtype: fp8\nEOF\n\n"
        "export TORCH_CUDA_ARCH_LIST=10.0\nexport VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1\n\n"
        "vllm serve openai/gpt-oss-120b --tensor-parallel-size 2"
    )
    assert read_command(script).settings == {"tensor_parallel_size": 2, "flashinfer_moe_mxfp4_mxfp8": True}
    chained = read_command(
        "export VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1 && python3 -m vllm.entrypoints.openai.api_server"
        " --model m"
    )
    assert chained.env == {"VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8": "1"}
    assert read_command("cd /x; X=1; vllm serve m").env == {}  # not exported: not vllm's
    piped = read_command("export A=1; export X=1 | tee log; vllm serve m")
    assert piped.env == {"A": "1"}  # a pipe's export stays in its subshell


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ("vllm serve $(cat model.txt) -tp 2", "needs a shell to evaluate"),
        ("vllm serve `cat m` -tp 2", "needs a shell to evaluate"),
        ("vllm serve Qwen/Qwen3-8B --max-model-len ${LEN}", "needs a shell to evaluate"),
        ("vllm serve 'Qwen/Qwen3-8B -tp 2", "quotes do not pair"),
        ("sglang serve Qwen/Qwen3-8B", "is not a `vllm serve` command"),
        ("vllm serve Qwen/Qwen3-8B --tensor-paralel-size 2", "did you mean --tensor-parallel-size?"),
        ("vllm serve Qwen/Qwen3-8B --max-model-len lots", "is not an integer"),
        ("vllm serve Qwen/Qwen3-8B --kv-cache-dtype fp9", "valid:"),
        ("vllm serve Qwen/Qwen3-8B --speculative-config '{method: eagle'", "is not JSON"),
        ("vllm serve Qwen/Qwen3-8B --tensor-parallel-size", "needs a value"),
        ("vllm serve Qwen/Qwen3-8B --config c.yaml", "send its content as `config`"),
        ("non-default args: {'model': 'x', 'max_model_len': 4", "does not close"),
    ],
)
def test_what_kvplan_cannot_read_is_a_400_naming_why(command, words):
    with pytest.raises(InvalidInput) as e:
        read_command(command)
    assert words in e.value.reason


def test_nothing_is_executed(tmp_path):
    marker = tmp_path / "ran"
    with pytest.raises(InvalidInput):
        read_command(f"vllm serve $(touch {marker}) -tp 2")
    read_command(f"vllm serve 'a; touch {marker}' -tp 2")
    assert not marker.exists()


words = st.sampled_from(
    ["vllm", "serve", "-tp", "2", "--tensor-parallel-size", "--max-model-len", "32k", "'", '"', "\\",
     "{", "--no-enable-prefix-caching", "--speculative-config", '{"a":1}', "=", "--kv-cache-dtype", "fp8",
     "$", "x", "-O3", "--compilation-config.mode", "--max_model_len=auto"]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(words, st.text(max_size=8)), max_size=30))
def test_no_command_line_raises_anything_but_a_400(parts):
    with contextlib.suppress(InvalidInput):
        read_command(" ".join(parts))


def calls(line: str) -> int:
    """Python function calls reading `line` takes: a count, not a time, so the machine's load
    does not move it."""
    n = 0

    def count(frame, event, arg):  # type: ignore[no-untyped-def]
        nonlocal n
        n += event == "call"

    sys.setprofile(count)
    try:
        read_command(line)
    finally:
        sys.setprofile(None)
    return n


@settings(max_examples=30, deadline=None)
@given(
    st.sampled_from(["-tp 2", "--max-model-len 32k", "--no-enable-prefix-caching", "--kv-cache-dtype fp8",
                     "--speculative-config '{\"method\": \"ngram\"}'", '--served-model-name "a b"'])
)  # fmt: skip
def test_reading_takes_time_linear_in_the_flags(flag):
    base = "vllm serve Qwen/Qwen3-8B "
    small, large = calls(base + " ".join([flag] * 100)), calls(base + " ".join([flag] * 1000))
    assert large <= small * 10 * 1.1  # ten times the flags, at most ten times the work


def test_the_cli_plans_the_command_after_the_double_dash(capsys):
    from kvplan.cli import main

    code = main(["plan", "gpu=h100-sxm-80gb", "--", "vllm", "serve", "meta-llama/Llama-3.1-8B", "-tp", "2",
                 "--max-model-len", "32k"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "read from the command (vllm serve)" in out and "32000 · planned" in out


def test_the_cli_says_how_to_call_it(capsys):
    from kvplan.cli import main

    assert main(["plan", "gpu=h100-sxm-80gb"]) == 2
    assert "kvplan plan [key=value …]" in capsys.readouterr().err


def test_reconcile_reads_a_logs_command_with_the_same_parser():
    from kvplan.core.logs.enginelog import read_log

    log = read_log(
        "$ vllm serve meta-llama/Meta-Llama-3-8B -tp 2 --max-model-len 8k\n"
        "Available KV cache memory: 2.0 GiB\n"
    )
    read = {f.name: f.value for f in log.figures}
    assert (read["model"], read["tensor_parallel_size"], read["max_model_len"]) == (
        "meta-llama/Meta-Llama-3-8B",
        2,
        8000,
    )


@pytest.mark.parametrize(
    ("pasted", "model", "settings"),
    [
        ("nohup vllm serve Qwen/Qwen3-8B --max-model-len 32K \\\n  > vllm.log 2>&1 &", "Qwen/Qwen3-8B",
         {"max_model_len": 32768}),
        ("vllm serve Qwen/Qwen3-8B -tp 2 2>&1 | tee log.txt", "Qwen/Qwen3-8B", {"tensor_parallel_size": 2}),
        ("cd /srv && vllm serve Qwen/Qwen3-8B -tp 2", "Qwen/Qwen3-8B", {"tensor_parallel_size": 2}),
        ("user@host:~/vllm$ vllm serve Qwen/Qwen3-8B \\   \n  --max-model-len 8192", "Qwen/Qwen3-8B",
         {"max_model_len": 8192}),
        ("# start it\n# vllm serve Qwen/Qwen3-8B --max-model-len 4096", "Qwen/Qwen3-8B",
         {"max_model_len": 4096}),
        ("vllm serve Qwen/Qwen3-8B --max-num-batched-token=65536", "Qwen/Qwen3-8B",
         {"max_num_batched_tokens": 65536}),
        ("docker run --security-opt seccomp=unconfined -v $PWD/m:/m vllm/vllm-openai:latest"
         " --model Qwen/Qwen3-8B", "Qwen/Qwen3-8B", {}),
        ("vllm serve Qwen/Qwen3-8B --lora-modules a=$HOME/lora --max-model-len 4096", "Qwen/Qwen3-8B",
         {"max_model_len": 4096}),
        ("vllm serve Qwen/Qwen3-8B \u2014tp 2 --served-model-name \u201cq\u201d".replace("\u2014", "-"),
         "Qwen/Qwen3-8B", {"tensor_parallel_size": 2}),
    ],
    ids=["nohup-redirect-background", "pipe", "after-cd", "prompt-and-trailing-spaces",
         "root-prompt-and-comment", "argparse-prefix", "docker-options",
         "variable-in-a-flag-without-memory-effect",
         "smart-quotes"],
)  # fmt: skip
def test_a_command_is_read_as_people_paste_it(pasted, model, settings):
    c = read_command(pasted)
    assert (c.model, c.settings) == (model, settings)


def test_the_mxfp8_environment_switch_sets_its_field_and_a_bad_value_is_named():
    c = read_command("VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1 vllm serve openai/gpt-oss-120b -tp 2")
    assert c.settings == {"tensor_parallel_size": 2, "flashinfer_moe_mxfp4_mxfp8": True}
    assert read_command("VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=2 vllm serve m").settings == {
        "flashinfer_moe_mxfp4_mxfp8": True  # vllm/envs.py: bool(int(value))
    }
    with pytest.raises(InvalidInput) as e:
        read_command("VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=yes vllm serve openai/gpt-oss-120b")
    assert e.value.field == "command" and "VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8='yes'" in e.value.reason


def test_the_older_marlin_switch_names_marlin_as_vllm_0_33s_flag_does():
    """InferenceX's Hopper gpt-oss scripts export VLLM_MXFP4_USE_MARLIN=1 (vLLM before 0.33 read it;
    0.33 spells it --moe-backend marlin)."""
    c = read_command("VLLM_MXFP4_USE_MARLIN=1 vllm serve openai/gpt-oss-120b -tp 2")
    assert c.settings == {"tensor_parallel_size": 2, "moe_backend": "marlin"}
    assert read_command("VLLM_MXFP4_USE_MARLIN=0 vllm serve openai/gpt-oss-120b").settings == {}
    both = read_command("VLLM_MXFP4_USE_MARLIN=1 vllm serve openai/gpt-oss-120b --moe-backend triton")
    assert both.settings == {"moe_backend": "triton"}  # the flag, checked before the variable


def test_mxfp8_activations_in_vllm_0_33s_quantization_config_set_the_same_field():
    """vLLM 0.33 has no VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8: the experts' activations are
    --quantization-config's moe.activation (vllm/config/quantization.py)."""
    c = read_command(
        'vllm serve openai/gpt-oss-120b --quantization-config \'{"moe": {"activation": "mxfp8"}}\''
    )
    assert c.settings == {"flashinfer_moe_mxfp4_mxfp8": True}
    (flag,) = c.flags
    assert (flag.effect, flag.field) == ("plan", "flashinfer_moe_mxfp4_mxfp8")  # not "not modelled"
    dotted = read_command("vllm serve openai/gpt-oss-120b --quantization-config.moe.activation mxfp8")
    assert dotted.settings == {"flashinfer_moe_mxfp4_mxfp8": True}
    other = read_command('vllm serve m --quantization-config \'{"moe": {"weight": "mxfp8"}}\'')
    assert other.settings == {}  # online MXFP8 weights: not an activation switch
    with pytest.raises(InvalidInput) as e:
        read_command('vllm serve m --quantization-config \'{"moe": {"activation": "bogus"}}\'')
    assert e.value.field == "command" and "'bogus' is not a name vLLM knows" in e.value.reason


def test_docker_options_are_not_the_engines_environment():
    c = read_command(
        "docker run -e HF_TOKEN=x --security-opt seccomp=unconfined vllm/vllm-openai --model m/m"
    )
    assert c.env == {"HF_TOKEN": "(redacted)"}  # the answer does not repeat a secret


def test_a_flag_at_vllms_default_changes_nothing():
    (runner,) = read_command("vllm serve Qwen/Qwen3-8B --runner auto").flags
    assert (runner.effect, runner.note) == ("none", "vLLM's default")


def test_dtype_data_parallel_expert_parallel_and_cpu_offload_set_the_plans_fields():
    c = read_command("vllm serve m/m --dtype half -dp 4 -ep --cpu-offload-gb 10")
    assert c.settings == {
        "dtype": "half",
        "data_parallel_size": 4,
        "enable_expert_parallel": True,
        "cpu_offload_bytes": 10 * 1024**3,  # vllm/model_executor/offloader/base.py int(GiB × 1024³)
    }


def test_cpu_offload_gb_is_fractional_gib_truncated_to_bytes():
    c = read_command("vllm serve m/m --cpu-offload-gb 0.3")
    assert c.settings["cpu_offload_bytes"] == int(0.3 * 1024**3) == 322122547


def test_the_prefetch_offloader_ignores_cpu_offload_gb():
    """create_offloader picks prefetch when named, or under auto when --offload-group-size > 0
    (vllm/model_executor/offloader/base.py); the UVA budget then moves nothing."""
    for extra in ("--offload-backend prefetch", "--offload-group-size 8"):
        c = read_command(f"vllm serve m/m --cpu-offload-gb 10 {extra}")
        assert "cpu_offload_bytes" not in c.settings


def test_integer_choices_and_list_flags_keep_vllms_types():
    c = read_command("vllm serve m/m --enable-lora --max-lora-rank 8 --served-model-name=a")
    read = {f.option: f.value for f in c.flags}
    assert read["--max-lora-rank"] == 8 and read["--served-model-name"] == ["a"]


def test_a_flag_vllm_no_longer_has_says_what_took_its_place():
    with pytest.raises(InvalidInput) as e:
        read_command('vllm serve Qwen/Qwen3-8B --rope-scaling \'{"type": "yarn"}\'')
    assert "is gone from vLLM 0.33" in e.value.reason and "--hf-overrides" in e.value.reason


def test_the_removed_flags_table_never_hides_a_flag_vllm_0_33_has():
    from kvplan.core.engine.command import REMOVED
    from kvplan.core.engine.flags import canonical

    assert [flag for flag in REMOVED if canonical(flag) is not None] == []


@pytest.mark.parametrize(
    "tail", [">vllm.log 2>&1 &", "> vllm.log 2>&1", "2>err.log", "1> out.log | tee x", ">>log 2>>err"]
)
def test_a_redirection_after_a_numeric_value_leaves_the_value_alone(tail):
    assert read_command(f"vllm serve m --max-model-len 16384 {tail}").settings == {"max_model_len": 16384}


def test_a_flag_vllm_removed_with_lora_extra_vocab_says_to_drop_it():
    with pytest.raises(InvalidInput) as e:
        read_command("vllm serve m --enable-lora --lora-extra-vocab-size 256")
    assert "drop it" in e.value.reason


@pytest.mark.parametrize("flag", ["--cpu-offload-gb", "--kv-offloading-size"])
def test_a_size_in_gib_past_any_memory_is_a_400_not_an_overflow(flag):
    with pytest.raises(InvalidInput) as e:
        read_command(f"vllm serve m {flag} 1e300")
    assert flag in e.value.reason
