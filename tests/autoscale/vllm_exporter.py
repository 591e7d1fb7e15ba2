"""A vLLM 0.33 look-alike /metrics on loopback, for one replica with one or more engines (data
parallel), whose load the test sets.

The series are vLLM's own (vllm/v1/metrics/loggers.py), written by prometheus_client as vLLM
writes them: the scheduler gauges and the prompt-length histogram labelled `model_name` and
`engine`, and `vllm:cache_config_info` labelled `engine` and every CacheConfig field (no
model_name). Prompt traffic is added as requests of one length, so the histogram's `_sum` is
that length times its `_count` in every scrape, and Prometheus's 5-minute rate ratio is exactly
that length. stop() takes the replica away (its scrapes fail); start() brings it back on the
same port."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

LABELS = ["model_name", "engine"]

# vLLM's CacheConfig.metrics_info(): every field as a string, "None" when unset.
CACHE_CONFIG_DEFAULTS = {
    "block_size": "16",
    "cache_dtype": "auto",
    "calculate_kv_scales": "False",
    "cpu_kvcache_space_bytes": "None",
    "cpu_offload_gb": "0",
    "enable_prefix_caching": "True",
    "gpu_memory_utilization": "0.9",
    "is_attention_free": "False",
    "kv_cache_memory_bytes": "None",
    "kv_cache_size_tokens": "None",
    "kv_sharing_fast_prefill": "False",
    "mamba_block_size": "None",
    "mamba_cache_dtype": "auto",
    "mamba_page_size_padded": "None",
    "mamba_ssm_cache_dtype": "auto",
    "num_cpu_blocks": "None",
    "num_gpu_blocks": "None",
    "num_gpu_blocks_override": "None",
    "prefix_caching_hash_algo": "sha256",
    "sliding_window": "None",
    "swap_space": "4",
}


def buckets_1_2_5(max_value: int) -> list[float]:
    """vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50, … up to max_value."""
    out: list[float] = []
    scale = 1
    while True:
        for m in (1, 2, 5):
            if m * scale > max_value:
                return out
            out.append(float(m * scale))
        scale *= 10


class VllmExporter:
    """One replica's /metrics. set_load() sets the replica's totals (spread over its engines, as a
    data-parallel pod's engines share its requests); add_prompts() records finished prefills;
    set_blocks() states an engine's cache config."""

    def __init__(
        self,
        model_name: str,
        engines: int = 1,
        num_gpu_blocks: int = 0,
        block_size: int = 16,
        max_model_len: int = 8192,
    ) -> None:
        self.model_name = model_name
        self.engines = [str(e) for e in range(engines)]
        self._lock = threading.Lock()  # a scrape sees no half-made change
        self._registry = CollectorRegistry(auto_describe=True)
        r = self._registry
        self._running = Gauge(
            "vllm:num_requests_running",
            "Number of requests in model execution batches.",
            LABELS,
            registry=r,
        )
        self._waiting = Gauge(
            "vllm:num_requests_waiting", "Number of requests waiting to be processed.", LABELS, registry=r
        )
        self._usage = Gauge(
            "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", LABELS, registry=r
        )
        self._prompts = Histogram(
            "vllm:request_prompt_tokens",
            "Number of prefill tokens processed.",
            LABELS,
            buckets=buckets_1_2_5(max_model_len),
            registry=r,
        )
        self._cache_config = Gauge(
            "vllm:cache_config_info",
            "Information of the LLMEngine CacheConfig",
            ["engine", *CACHE_CONFIG_DEFAULTS],
            registry=r,
        )
        self._config: dict[str, dict[str, str]] = {}
        for e in self.engines:  # vLLM creates every engine's series at start, at zero
            for family in (self._running, self._waiting, self._usage):
                family.labels(model_name, e).set(0)
            self._prompts.labels(model_name, e)
            self.set_blocks(num_gpu_blocks, block_size, engine=e)
        self._loads = {e: (0.0, 0, 0) for e in self.engines}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # The load -----------------------------------------------------------------------------------

    def set_load(self, kv_cache_usage_perc: float, running: int, waiting: int) -> None:
        """The replica's totals over its engines: usage split evenly, requests split with the
        remainder on engine 0."""
        n = len(self.engines)
        with self._lock:
            for i, e in enumerate(self.engines):
                share = (
                    kv_cache_usage_perc / n,
                    running // n + (running % n if i == 0 else 0),
                    waiting // n + (waiting % n if i == 0 else 0),
                )
                self._loads[e] = share
                self._usage.labels(self.model_name, e).set(share[0])
                self._running.labels(self.model_name, e).set(share[1])
                self._waiting.labels(self.model_name, e).set(share[2])

    def totals(self) -> tuple[float, int, int]:
        """(Σ kv_cache_usage_perc, Σ running, Σ waiting) over the engines, as the rule sums them."""
        with self._lock:
            loads = list(self._loads.values())
        usage = 0.0
        for u, _, _ in loads:
            usage += u
        return usage, sum(x[1] for x in loads), sum(x[2] for x in loads)

    def add_prompts(self, requests: int, tokens: int) -> None:
        """`requests` finished prefills of `tokens` tokens each, spread over the engines."""
        n = len(self.engines)
        with self._lock:
            for i, e in enumerate(self.engines):
                for _ in range(requests // n + (requests % n if i == 0 else 0)):
                    self._prompts.labels(self.model_name, e).observe(tokens)

    def set_blocks(self, num_gpu_blocks: int, block_size: int = 16, engine: str | None = None) -> None:
        """The cache config an engine (every engine, by default) reports."""
        with self._lock:
            for e in self.engines if engine is None else [engine]:
                old = self._config.get(e)
                if old is not None:
                    self._cache_config.remove(*old.values())
                labels = {
                    "engine": e,
                    **CACHE_CONFIG_DEFAULTS,
                    "num_gpu_blocks": str(num_gpu_blocks),
                    "block_size": str(block_size),
                }
                self._config[e] = labels
                self._cache_config.labels(**labels).set(1)

    def text(self) -> str:
        with self._lock:
            return generate_latest(self._registry).decode()

    # The server ---------------------------------------------------------------------------------

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}/metrics"

    @property
    def up(self) -> bool:
        return self._server is not None

    def start(self) -> None:
        """Serve /metrics on loopback: a free port the first time, the same port again after stop()."""
        if self._server is not None:
            return
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?")[0] != "/metrics":
                    self.send_error(404)
                    return
                body = exporter.text().encode()
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE_LATEST)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
        self._thread.daemon = True
        self._thread.start()

    def stop(self) -> None:
        """The replica is gone: its port refuses connections until start()."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        assert self._thread is not None
        self._thread.join(timeout=10)
        self._server = self._thread = None


@contextmanager
def exporters(*replicas: VllmExporter) -> Iterator[tuple[VllmExporter, ...]]:
    """The replicas started, and stopped however the block ends."""
    try:
        for r in replicas:
            r.start()
        yield replicas
    finally:
        for r in replicas:
            r.stop()
