"""What a benchmark run adds to the engine's steps: the OpenAI server's request path before a
request reaches the engine and after its first token leaves it, and when the engine can first
schedule it.

The mechanisms of vLLM's serving path, timed-only (they change when a request joins a step
and when the client sees its tokens, never which requests a step of the exact scheduler takes once
they have joined):

- The request path outside the engine. A request crosses HTTP, the API server and the IPC to the
  engine core before it is scheduled, and its first token crosses the IPC, the output processor
  (detokenization) and the SSE stream back: time the client counts in TTFT and end-to-end
  latency, not in the gaps between later tokens. A PRIOR from two public runs at concurrency 1,
  each TTFT less one forward step (a TPOT of the same page) less the 2 ms that vLLM's micro-batch
  tokenizer waited for a lone request then (as vLLM PR #44172 measured it; gone from 0.23):
  5.8 ms on vLLM 0.17.1 and 4.3 ms on vLLM 0.22.1 (PATH_SOURCE; docs/steptime.md has the
  arithmetic). Their middle, 5.05 ms, rounded to 5. It is charged on the way in: every request's
  TTFT and end-to-end latency hold it once, and a closed loop's next request reaches the engine
  that long after the engine finished its predecessor, as with any split between the way in and
  the way out.
- Tokenization is serialised (vLLM 0.23 and later, and before 0.10). The server tokenizes a prompt
  on its renderer's thread pool (vllm/renderers/base.py:
  `_SwappableExecutor(max_workers=renderer_num_workers)`, and vllm/config/model.py
  `renderer_num_workers: int = 1`), one prompt after another. Requests sent
  at once (a closed loop's wave: every request of a wave finishes at the same step and the client
  sends their successors together) therefore reach the engine one tokenization apart, and the
  engine's steps split them (v1/engine/core.py run_busy_loop: the input queue is read between
  steps). The rate depends on the tokenizer, the text and the CPU; the request may give it
  (`tokenize_us_per_token`). The default is a PRIOR measured with vLLM's tokenizer call on aiperf's
  synthetic prompts (windows of Shakespeare) through the Llama-3, o200k (gpt-oss) and Qwen3
  tokenizers: 1.31–1.43 µs a token once scaled to a DGX H100's CPU by vLLM issue #19012's timing of
  the same reference input; their middle, 1.33, rounded (tests/perf/tokenizer_rates.py; a
  benchmark's random-token prompts take 1.56–2.28 µs).
- Tokenization was micro-batched in vLLM 0.10–0.22 instead (AsyncMicrobatchTokenizer, PR
  #19334; removed by PR #45759). Its loop takes the first prompt waiting when it is free, waits
  batch_wait_timeout_s = 2 ms for more (up to max_batch_size = 32; a full batch stops waiting),
  tokenizes them in one call and hands them all over at once: a lone request waits the 2 ms, and
  a wave's prompts reach the engine together. The call on n prompts runs on the tokenizers
  library's threads: it takes BATCH_COST[n] of n single calls, as vLLM's maintainers measured it
  (PR #45759, TOKENIZERS_PARALLELISM on). The engine profile says whether a version had it
  (core/engine/profiles.py tokenizer_batch_wait_s).
- Async scheduling schedules a step ahead. With async scheduling (on by default in 0.33) the
  engine core's batch queue holds two steps (v1/engine/core.py step_with_batch_queue): step N+1 is
  scheduled as soon as step N is launched, so a request that reaches the engine while step N runs
  is first scheduled in step N+2, not N+1. When the engine idles (nothing left to run), the next
  request is scheduled at once.
"""

from __future__ import annotations

from itertools import pairwise

import msgspec

from ..engine.profiles import MICROBATCH_MAX, MICROBATCH_WAIT_S
from ..ledger import Step

PATH_SOURCE = (
    "pegainfer-project/pegainfer 'Qwen3-4B Optimization' (2026-03-13, vLLM 0.17.1, RTX 5070 Ti); "
    "openinfer-project/openinfer docs/benchmarks/qwen3-4b-serving-vllm-rtx5090.md @6de4908 "
    "(vLLM 0.22.1, RTX 5090); less vLLM PR #44172's 2 ms micro-batch tokenizer wait (removed by "
    "PR #45759)"
)
TOKENIZE_SOURCE = (
    "vllm/renderers/base.py (renderer thread pool), vllm/config/model.py (renderer_num_workers = 1); "
    "rate: tests/perf/tokenizer_rates.py (aiperf's Shakespeare prompts through the Llama-3, o200k and "
    "Qwen3 tokenizers, scaled to the DGX H100 CPU of vLLM issue #19012)"
)
MICROBATCH_SOURCE = (
    "AsyncMicrobatchTokenizer (vllm/utils/__init__.py, later vllm/utils/async_utils.py: "
    f"batch_wait_timeout_s {MICROBATCH_WAIT_S:g}, max_batch_size {MICROBATCH_MAX}), vLLM 0.10.0 "
    "(PR #19334) to 0.22 (removed by PR #45759); one call's cost on n prompts: PR #45759's "
    "measurement with TOKENIZERS_PARALLELISM on"
)
# One tokenizer call on n prompts costs BATCH_COST[n] of n calls on one (linear between the sizes
# measured): vLLM PR #45759's timing of `tokenizer.encode([prompt] * n)` with the tokenizers
# library's threads on (Qwen3-0.6B's tokenizer, n copies of one prompt, "hello " × 10,000; 8.08,
# 4.35, 2.64, 1.99, 1.71 and 1.71 s for 1,024 prompts at n = 1, 2, 4, 8, 16, 32). Different
# prompts, as a benchmark sends, were not measured.
BATCH_COST = {1: 1.0, 2: 0.5393, 4: 0.3273, 8: 0.2460, 16: 0.2120, 32: 0.2122}
_BATCH_SIZES = tuple(sorted(BATCH_COST))
MICROBATCH_STEP = "tokenizer micro-batches"
TOKENIZE_PRIOR = "server tokenization (prior)"
TOKENIZE_GIVEN = "server tokenization (the request's rate)"
AHEAD_SOURCE = "vllm/v1/engine/core.py (step_with_batch_queue), vllm/v1/core/sched/async_scheduler.py"


class ServingPrior(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """The server's request path: PRIORS (not fitted, least of all on silicon_sample.csv), but for
    the tokenizer's rate when the request gives its own (its prompts, its CPU)."""

    request_path_s: float = 5e-3  # HTTP, API server and IPC, both ways (public runs at concurrency 1)
    tokenize_s_per_token: float = 1.3e-6  # one thread, prose, a DGX H100's CPU (tokenizer_rates.py)
    tokenize_given: bool = False  # the request gave the rate: its prompts, its CPU
    scheduled_ahead: bool = True  # async scheduling: the next step is scheduled when one launches
    tokenizer_batch_wait_s: float = 0.0  # the engine profile's micro-batch wait (0: none, as in 0.33)
    tokenizer_batch_max: int = MICROBATCH_MAX

    def admission_seconds(self, prompt_tokens: int) -> float:
        """How long the server's one tokenizer thread holds a prompt of this length."""
        return self.tokenize_s_per_token * prompt_tokens

    def batch_seconds(self, prompt_tokens: int, prompts: int) -> float:
        """How long one micro-batch's call holds the tokenizer: its prompts' tokens at the rate,
        shared by the library's threads (BATCH_COST)."""
        return self.tokenize_s_per_token * prompt_tokens * batch_cost(prompts)

    def explain(self) -> tuple[Step, ...]:
        """The mechanisms as ledger steps, each with its source: a timed answer's
        `timing.steps` shows what its latencies hold besides the engine's steps."""
        batching = self.tokenizer_batch_wait_s > 0
        return (
            Step(
                "request path outside the engine (prior)",
                "each request reaches the server's tokenizer request_path after it is sent: HTTP, the "
                "API server, the IPC to the engine core and its first token's way back (IPC, "
                "detokenization, SSE), all charged on the way in; TTFT and end-to-end latency hold it "
                "once, the gaps between later tokens never",
                {"request_path_s": self.request_path_s},
                "prior, not fitted",
                "s",
                PATH_SOURCE,
            ),
            Step(
                TOKENIZE_GIVEN if self.tokenize_given else TOKENIZE_PRIOR,
                "a prompt takes tokens × per_token on the server's one tokenizer thread, in the "
                "order requests are sent; in micro-batches (next step) if this engine had them"
                if batching
                else "each request reaches the engine at max(sent + request_path, previous request "
                "tokenized) + tokens × per_token: one tokenizer thread, in the order requests are sent",
                {"per_token_s": self.tokenize_s_per_token},
                "the request's rate" if self.tokenize_given else "prior, not fitted",
                "s",
                "the request's tokenize_us_per_token" if self.tokenize_given else TOKENIZE_SOURCE,
            ),
            Step(
                MICROBATCH_STEP,
                "a request's prompt is tokenized in a batch: the tokenizer, once free, takes the "
                "first waiting, waits wait_s for more (up to max_prompts; a full batch stops "
                "waiting), tokenizes them in one call of Σ tokens × per_token × BATCH_COST[n] and "
                "hands them to the engine together; a lone request waits wait_s"
                if batching
                else "none in this engine: each prompt is tokenized alone, as it reaches the tokenizer",
                {"wait_s": self.tokenizer_batch_wait_s, "max_prompts": self.tokenizer_batch_max}
                if batching
                else {"wait_s": 0.0},
                batching,
                "",
                MICROBATCH_SOURCE,
            ),
            Step(
                "scheduled a step ahead",
                "async scheduling: a request that reaches the engine while step N runs joins step "
                "N + 2 (step N + 1 was scheduled when N launched); an idle engine schedules it at once"
                if self.scheduled_ahead
                else "no async scheduling: a request joins the first step that starts after it",
                {"async_scheduling": self.scheduled_ahead},
                self.scheduled_ahead,
                "",
                AHEAD_SOURCE,
            ),
        )


def batch_cost(prompts: int) -> float:
    """BATCH_COST at n prompts, linear between the sizes measured (the largest's beyond)."""
    for low, high in pairwise(_BATCH_SIZES):
        if low <= prompts <= high:
            return BATCH_COST[low] + (BATCH_COST[high] - BATCH_COST[low]) * (prompts - low) / (high - low)
    return BATCH_COST[_BATCH_SIZES[-1]] if prompts > _BATCH_SIZES[-1] else 1.0


def serving_prior(
    async_scheduling: bool, tokenize_us_per_token: float | None = None, tokenizer_batch_wait_s: float = 0.0
) -> ServingPrior:
    """The serving path of a timed run: the prior's, with the request's tokenizer rate if it gave
    one and the engine profile's micro-batching."""
    if tokenize_us_per_token is None:
        return ServingPrior(scheduled_ahead=async_scheduling, tokenizer_batch_wait_s=tokenizer_batch_wait_s)
    return ServingPrior(
        scheduled_ahead=async_scheduling,
        tokenize_s_per_token=tokenize_us_per_token * 1e-6,
        tokenize_given=True,
        tokenizer_batch_wait_s=tokenizer_batch_wait_s,
    )
