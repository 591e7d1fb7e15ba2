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
    body = {"command": (DATA / name).read_text(), "gpu": "h100-sxm-80gb"}
    if len(row) > 2 and row[2]:
        body["model"] = row[2]
    r = client.post("/v1/plan", json=body)
    status, reason = EXPECTED[name]
    assert r.status_code == status, r.text[:300]
    if status != 200:
        assert r.json()["detail"].split(": ", 1)[1].startswith(reason)
