"""Real `vllm serve` commands people posted (data/commands/NN-*.txt verbatim, the Kubernetes
manifests they came in as NN-*.yaml, each source in NN-*.url), posted to /v1/plan as pasted: each
plans, or is a 400 that says why (a flag vLLM 0.33 no longer has, a value a shell would have to
fill in, an option syntax vLLM 0.33 refuses); never a 500. The GPU is the one each names where it
names one (cases.tsv), else an H100; where the Hub id is not a preset, the preset of its family
(the Hub is not reachable here)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "commands"
CASES = {
    row[0][:2]: row
    for row in csv.reader((DATA / "cases.tsv").read_text().splitlines(), delimiter="\t")
    if row and row[0][:2].isdigit()
}
# paste → (status, the start of the 400's reason)
EXPECTED = {
    "01-gh-vllm-12256.txt": (400, "--enable-reasoning is gone from vLLM 0.33's `vllm "),
    "02-gh-vllm-13124.txt": (200, ""),
    "03-gh-vllm-7456.txt": (400, "--speculative-model is gone from vLLM 0.33's `vllm"),
    # The EAGLE-3 draft is a Hub model, and the Hub is offline here: its KV and weights are unknown.
    "04-gh-airunway-243.txt": (400, "'RedHatAI/Qwen3-8B-speculator.eagle3': RedHatAI/Qw"),
    "05-gh-vllm-2847.txt": (200, ""),
    "06-gh-llmos-41.txt": (200, ""),
    "07-gh-vllm-12898.txt": (200, ""),
    "08-gh-vllm-12106.txt": (400, "--limit-mm-per-prompt 'image=10' is not JSON (Expe"),
    "09-gh-vllm-35720.txt": (200, ""),
    # MTP on the stand-in preset, which ships no MTP layers (Qwen3.6-27B does).
    "10-gh-vllm-49011.txt": (400, "qwen3-32b has no MTP layers (num_nextn_predict_la"),
    "11-web-mynw-425280.txt": (200, ""),
    "12-gh-vllm-24162.txt": (200, ""),
    "13-gh-recipes-12.txt": (200, ""),
    "14-gh-vllm-17250.txt": (400, "--limit-mm-per-prompt 'image=5,video=0' is not JSO"),
    "15-gh-tenstorrent-23.txt": (200, ""),
    "16-gh-vllm-9420.txt": (400, "--load-format 'gguf' is not one vLLM takes; valid:"),
    "17-gh-dolphin-145.txt": (400, "`docker run -d` is not a `vllm serve` command: sen"),
    "18-gh-password_locking-serve.txt": (400, "--model `$HOME/models/DeepSeek-R1-Distill-Qwen-1.5"),
    "19-gh-BjornWest-120b.txt": (200, ""),
    "20-gh-WohimLee-launch.txt": (200, ""),
    "21-gh-liveoibench-start.txt": (400, "the model `${MODEL_NAME}` needs a shell to evaluat"),
    "22-gh-amd-template-fp8kv.txt": (400, "the model `$HF_MODEL` needs a shell to evaluate (`"),
    "23-gh-vllm-31480.txt": (200, ""),
    "24-gh-vllm-31480-nda.txt": (200, ""),
    "25-gh-vllm-14614.txt": (200, ""),
    "26-gh-vllm-5344.txt": (200, ""),
    "27-gh-vllm-13139.txt": (200, ""),
    "28-gh-wagerc97-vllm.txt": (200, ""),
    "29-k8s-lahlfors-reasoning.txt": (400, "--model `${MODEL_REASONING}` needs a shell to eval"),
    "30-k8s-aiops-llama70b-a10g.txt": (200, ""),
    "31-k8s-qwen72b-awq.txt": (200, ""),
    "32-k8s-techpulse-v011.txt": (200, ""),
    "33-k8s-llama8b-v063.txt": (200, ""),
    "34-k8s-llama2-70b-a100.txt": (200, ""),
    "35-k8s-qwen7b-awq-v030.txt": (200, ""),
    "36-k8s-qwen3-32b-fp8-g6e.txt": (200, ""),
    "37-gh-Doan-vllm-v042.txt": (200, ""),
    "38-gh-dagnaputra-serve7b.txt": (200, ""),
    "39-gh-yandy-run-ps1.txt": (200, ""),
    "40-gh-kika-run06.txt": (400, "the model `$MODEL` needs a shell to evaluate (`$M`"),
    "41-gh-qwen3-32b-dupdtype.txt": (200, ""),
    "42-gh-qwen3-8b-maxmodellength.txt": (400, "--rope-scaling is gone from vLLM 0.33's `vllm serv"),
    "43-gh-qwen3-30b-gptq-ep.txt": (200, ""),
    "44-gh-qwen3-14b-fp8-cvd.txt": (200, ""),
    "45-gh-ProxmoxVED-2047-journald.txt": (200, ""),
    "46-gh-hfblog-3432-h200.txt": (200, ""),
    "47-gh-rocm-5554-calckv.txt": (400, "--calculate-kv-scales is gone from vLLM 0.33's `vl"),
    "48-gh-vllm-33155-gptoss.txt": (400, '`$(` near `120b"\nmax_model_len=$((85 * 1024))\n\nVLL'),
    "49-gh-vllm-22303-enforce-true.txt": (400, "`true` stands where a flag should (after --enforce"),
    "50-gh-vllm-15664-l40s.txt": (200, ""),
    "51-web-myoceane-a100.txt": (200, ""),
    "52-web-evokernel-a100x8.txt": (200, ""),
    "53-gh-qwen3vl-awq-dotted.txt": (200, ""),
    "54-gh-internvl-32K-16K.txt": (200, ""),
    "55-gh-qwen35-9b-rtx5090.txt": (200, ""),
    "56-gh-qwen3-30b-fp8-v0102.txt": (400, "--swap-space is gone from vLLM 0.33's `vllm serve`"),
    "57-gh-mao-code-server2gpu.txt": (400, "--swap-space is gone from vLLM 0.33's `vllm serve`"),
    "58-gh-codellama34b-preempt.txt": (400, "--swap-space is gone from vLLM 0.33's `vllm serve`"),
    "59-gh-RARE-phi35-tokpool.txt": (400, "--tokenizer-pool-size is gone from vLLM 0.33's `vl"),
    "60-gh-legacy-api-server.txt": (400, "--swap-space is gone from vLLM 0.33's `vllm serve`"),
    "61-gh-qwen3-14b-lora-32K.txt": (200, ""),
    "62-gh-nohup-qwen3-06b.txt": (200, ""),
    # Issue 26's flags, gathered 2026-12-05. Hub ids that are no preset plan as the preset in
    # cases.tsv; the EAGLE-3 draft is a Hub model, unreachable here.
    "63-gh-vllm-38893-gemma4-eagle3.txt": (400, "'RedHatAI/gemma-4-26B-A4B-it-speculator.eagle3': "),
    "64-gh-vllm-33624-justfile-mtp.txt": (400, "--tensor-parallel-size '{{GPUS}}' is not an intege"),
    "65-gh-vllm-12755-ds-mtp-api.txt": (400, "---trust-remote-code is not a flag vLLM 0.33's `vl"),
    "66-gh-vllm-6496-offload-lora-wrapped.txt": (200, ""),
    "67-gh-vllm-9339-offload-export.txt": (400, "--model `$MODEL_PATH` needs a shell to evaluate (`"),
    # The whole command sits inside double quotes, as the comment posted it.
    "68-gh-vllm-9339-glm4-offload.txt": (400, "`vllm serve /glm4-9b-chat --port 25011 --served-mo"),
    "69-gh-vllm-15877-vl-awq-offload.txt": (200, ""),
    "70-gh-vllm-14096-gguf-offload.txt": (200, ""),
    "71-gh-qwen3vl-1492-ep-typo.txt": (200, ""),
    "72-gh-vllm-16883-ngram-rope.txt": (400, "--rope-scaling is gone from vLLM 0.33's `vllm serv"),
    "73-gh-vllm-9400-ngram-legacy.txt": (400, "--speculative_model is gone from vLLM 0.33's `vllm"),
    "74-gh-vllm-16729-cc-pydict.txt": (400, "--compilation-config \"{'cudagraph_capture_sizes': "),
    "75-gh-vllm-12243-O-dict.txt": (400, "--optimization-level \"{'level': 3, 'compile_sizes'"),
    "76-gh-vllm-10722-O-level3.txt": (400, '--optimization-level \'{"level": 3, "inductor_speci'),
    # DSpark is a vLLM 0.33 drafter kvplan does not plan yet.
    "77-gh-vllm-52435-dsv4-dspark-pp3.txt": (400, "'dspark': kvplan does not plan this drafter's KV a"),
    "78-gh-kyuz0-53-qwen36-lmonly-mtp.txt": (200, ""),
    "79-gh-eugr-237-qwen36-fp8-mtp5.txt": (200, ""),
    "80-gh-intel-312-qwen3-32b-eagle3.txt": (400, "--model `$MODEL_PATH` needs a shell to evaluate (`"),
    "81-gh-vllm-40696-qwen35-4b-apc.txt": (200, ""),
    "82-gh-ascend-3022-qwen3-235b-dp8-ep.txt": (200, ""),
    "83-gh-xorbits-4112-qwen3vl-awq-ep.txt": (200, ""),
    "84-gh-rocm-828-qwen3-235b-fp8-ep.txt": (400, "--swap-space is gone from vLLM 0.33's `vllm serve`"),
    # $2 is a script's positional argument.
    "85-gh-ascend-7742-glm51-dp-ep-mtp.txt": (400, "--port '$2' is not an integer"),
    "86-gh-flagscale-ds-dp-ep.txt": (400, "the model `${MODEL_PATH}` needs a shell to evaluat"),
    "87-gh-glmv-15-glm41v-mm32.txt": (200, ""),
    "88-gh-vllm-15737-vl-mm-kv.txt": (400, "--limit-mm-per-prompt 'image=5,video=5' is not JSO"),
    "89-gh-recipes-qwen35-lmonly.txt": (200, ""),
    "90-gh-recipes-qwen35-mtp1.txt": (200, ""),
    "91-gh-southfreebird-mlp-spec.txt": (400, "--speculative-config: 'disable_by_batch_size' is n"),
    "92-gh-nemotron-finance-mamba-fp32.txt": (200, ""),
    # Reader gap: the output redirection after the value (`>vllm.log 2>&1 &`) hides the value.
    "93-gh-nemotron-vl-dp8-mamba.txt": (200, ""),  # ends `>vllm.log 2>&1 &`: the redirections dropped
    # The page doubles every continuation backslash.
    "94-web-gigagpu-multilora.txt": (400, "` ` stands where a flag should: quote a value with"),
    # --lora-extra-vocab-size was removed from vLLM; the suggestion is a near spelling, not a successor.
    "95-web-neuralbase-lora-extravocab.txt": (400, "--lora-extra-vocab-size is gone from vLLM 0.33"),
    "29-k8s-lahlfors-reasoning.yaml": (400, "--model `${MODEL_REASONING}` needs a shell to eval"),
    "30-k8s-aiops-llama70b-a10g.yaml": (200, ""),
    "31-k8s-qwen72b-awq.yaml": (200, ""),
    "32-k8s-techpulse-v011.yaml": (200, ""),
    "33-k8s-llama8b-v063.yaml": (200, ""),
    "34-k8s-llama2-70b-a100.yaml": (200, ""),
    "35-k8s-qwen7b-awq-v030.yaml": (200, ""),
    "36-k8s-qwen3-32b-fp8-g6e.yaml": (200, ""),
}


def test_every_paste_has_its_source_and_an_expectation():
    pastes = {p.name for p in DATA.iterdir() if p.suffix in (".txt", ".yaml") and p.name[:2].isdigit()}
    assert pastes == set(EXPECTED)
    assert all(p.with_suffix(".url").read_text().strip() for p in DATA.glob("[0-9][0-9]-*.txt"))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_real_command_plans_or_says_why(client, name):
    row = CASES.get(name[:2], [])
    gpu = row[1] if len(row) > 1 and row[1] else "h100-sxm-80gb"
    body = {"command": (DATA / name).read_text(), "gpu": gpu}
    if len(row) > 2 and row[2]:
        body["model"] = row[2]
    r = client.post("/v1/plan", json=body)
    status, reason = EXPECTED[name]
    assert r.status_code == status, r.text[:300]
    if status != 200:
        assert r.json()["detail"].split(": ", 1)[1].startswith(reason)


def _plan(client, name, drop=""):
    """The paste planned as the parametrized test plans it, optionally without one line."""
    row = CASES[name[:2]]
    command = (DATA / name).read_text().replace(drop, "")
    r = client.post("/v1/plan", json={"command": command, "gpu": row[1], "model": row[2]})
    assert r.status_code == 200, r.text[:300]
    return r.json()


def test_a_pasted_lora_and_cpu_offload_both_move_the_weights(client):
    plan = _plan(client, "66-gh-vllm-6496-offload-lora-wrapped.txt")
    assert plan["command"]["settings"]["max_lora_rank"] == 64
    assert plan["lora_bytes_per_gpu"] > 0
    assert plan["weights_offloaded_bytes"] == 2 * 1024**3


def test_a_pasted_cpu_offload_with_awq_keeps_seven_gib_off_the_gpu(client):
    plan = _plan(client, "69-gh-vllm-15877-vl-awq-offload.txt")
    assert plan["command"]["settings"]["quantization"] == "awq"
    assert plan["weights_offloaded_bytes"] == 7 * 1024**3


def test_a_pasted_mtp_config_adds_a_layer_of_kv_and_the_draft_weights(client):
    name = "90-gh-recipes-qwen35-mtp1.txt"
    with_mtp = _plan(client, name)
    mtp_line = """  --speculative-config '{"method": "mtp", "num_speculative_tokens": 1}' \\\n"""
    without = _plan(client, name, drop=mtp_line)
    layers = {g["kind"]: g["layers"] for g in with_mtp["groups"]}
    base = {g["kind"]: g["layers"] for g in without["groups"]}
    assert layers["full_attention"] == base["full_attention"] + 1
    assert with_mtp["weights_bytes_per_gpu"] > without["weights_bytes_per_gpu"]
    assert with_mtp["num_blocks"] < without["num_blocks"]


def test_a_pasted_float32_mamba_state_makes_the_pages_larger(client):
    name = "92-gh-nemotron-finance-mamba-fp32.txt"
    fp32 = _plan(client, name)
    auto = _plan(client, name, drop="  --mamba_ssm_cache_dtype float32 \\\n")
    assert fp32["command"]["settings"]["mamba_ssm_cache_dtype"] == "float32"
    assert fp32["bytes_per_block"] > auto["bytes_per_block"]
    assert fp32["num_blocks"] < auto["num_blocks"]


def test_a_pasted_data_parallel_expert_parallel_deployment_counts_every_engine(client):
    plan = _plan(client, "82-gh-ascend-3022-qwen3-235b-dp8-ep.txt")
    assert plan["command"]["settings"]["enable_expert_parallel"] is True
    assert plan["data_parallel"]["engines"] == 8
    assert plan["data_parallel"]["gpus"] == 32
    # No pooled figure of one engine's GPUs against the whole model: the engines share its experts.
    assert "pooled" not in plan or plan["pooled"] is None
    assert "pooled_not_deployable" not in {w["code"] for w in plan["warnings"]}


def test_an_abbreviated_flag_reads_as_vllm_s_argparse_reads_it(client):
    """argparse's allow_abbrev (FlexibleArgumentParser keeps it): the README's typo is a prefix."""
    plan = _plan(client, "71-gh-qwen3vl-1492-ep-typo.txt")
    flag = next(f for f in plan["command"]["flags"] if f["given"] == "--enable-expert-paralle")
    assert flag["field"] == "enable_expert_parallel"
    assert plan["command"]["settings"]["enable_expert_parallel"] is True
