"""Our input limits, each defined once with its reason. The wire schemas, the config readers
and the core's own checks all import them from here. vLLM's defaults are not limits: they live
in the engine profile (profiles.py)."""

from __future__ import annotations

# Bytes: one exbibyte is far above any GPU or fleet, and keeps every product of two figures
# (bytes × count) well inside what JSON clients read exactly as integers after division.
MAX_BYTES = 1 << 60
# Tokens: a tebitoken context is 8,000× the longest context any model takes; above it a
# blocks-per-request figure stops meaning anything.
MAX_TOKENS = 1 << 40
# Parameters: a quadrillion parameters is 1,000× the largest published model.
MAX_PARAMS = 1 << 50

# Model shape: no config has more layers, heads or head dimensions; the per-layer pass is linear
# in the layers, so the layer count bounds the work of one scenario.
MAX_LAYERS = 4096
MAX_HEADS = 65536
MAX_HEAD_DIM = 65536
# A Mamba state or any per-layer page above a tebibyte is not a real layer.
MAX_STATE_BYTES = 1 << 40

# Parallel sizes: no node or DP group holds more GPUs than this.
MAX_PARALLEL_SIZE = 1024
# vLLM accepts block sizes up to this; a block is at least one token.
MAX_BLOCK_SIZE = 65536
# max_num_seqs: the simulator's scheduler walks the running list each step, and no GPU runs more.
MAX_NUM_SEQS = 65536
# CUDA-graph capture sizes: vLLM's own default list for the largest batch has under 100; a
# thousand sizes is far beyond any engine's capture, and bounds the work of counting them.
MAX_CUDAGRAPH_CAPTURE_SIZES = 1024
# LoRA slots on a GPU (--max-loras): each holds an adapter for every wrapped module, so a few
# hundred already exceed any GPU; the bound keeps the slot arithmetic small.
MAX_LORAS = 65536
# Module names --lora-target-modules lists: a model has a few dozen kinds of module.
MAX_LORA_TARGETS = 256
# Target concurrency: above 2^32 requests no fleet exists.
MAX_CONCURRENCY = 1 << 32

# Tokens a speculative drafter proposes a step (vLLM bounds it only below; more is a typo).
MAX_SPECULATIVE_TOKENS = 1024

# Names and ids: preset ids, GPU ids and model names are short; longer is an attack or an error.
MAX_NAME_LENGTH = 200

# One call's breadth: scenarios in a batch, GPU types and layouts in a fleet, lengths in a mix.
MAX_BATCH = 1000
MAX_FLEET_TYPES = 64
MAX_LAYOUTS = 64
MAX_MIX = 32
MAX_GPU_COUNT = 1_000_000
MAX_GPUS_PER_NODE = 1024
MAX_COST_PER_HOUR = 1e9
# Mix shares are relative weights; a ratio above 10^9 between two is a typo.
MAX_SHARE = 1e9
# Sweep values: a chart with more points than this is not read.
MAX_SWEEP_VALUES_LENGTH = 4000
# Query strings: the widest GET request has about 40 fields, nested at most model.geometry.<field>.
MAX_QUERY_FIELDS = 256
MAX_QUERY_DEPTH = 4
# Request paths (percent-encoded, without the query): every kvplan path is far shorter.
MAX_PATH_BYTES = 2048
# Problem details echo what the caller sent (ids, enum values); never more than this of it.
MAX_DETAIL_CHARS = 600

# Memory the core's memo caches may hold: models with more layers than this (no released model
# has half as many) are computed every time, so a cached entry stays a few KiB.
MEMO_MAX_LAYERS = 256
# Scenarios whose canonical form is longer than this (an inline config.json) are answered every
# time instead of cached: the answer cache's entries stay small and its count meaningful.
MAX_CACHED_SCENARIO_BYTES = 4096

# Fleet planning work, bounded before it starts (core/fleet/plan.py fleet_work). A budget evaluation
# costs 20–80 µs and its first pass walks every layer (about 0.5 µs a layer), so at these limits
# the largest accepted fleet plans in under a second on one core.
MAX_FLEET_BUDGETS = 16_384
MAX_FLEET_LAYER_PASSES = 1 << 21
# Pipeline stages tried for a TP layout whose weights do not fit, from the first stage count whose
# weights share fits: each stage more frees memory, so a fit comes within a few stages or never.
MAX_PIPELINE_STAGE_TRIES = 9
# The cheapest-mix branch and bound visits at most this many nodes (each O(GPU types)), then
# answers the cheapest mix found so far and says so (warning cheapest_mix_search_limit).
MAX_MIX_SEARCH_NODES = 20_000
# Sweep points: one budget each; a chart with more points than this is not read.
MAX_SWEEP_POINTS = 200

# config.json sizes the parameter estimate reads (core/hf/params.py): released models stay below
# 2^15 for hidden size, 2^19 for vocabulary and MLP width and 2^10 routed experts, so these are
# typos or attacks; the estimate's total is held to MAX_PARAMS besides.
MAX_HIDDEN_SIZE = 1 << 24
MAX_VOCAB_SIZE = 1 << 24
MAX_INTERMEDIATE_SIZE = 1 << 24
MAX_EXPERTS = 65536
# One batch's work in layer passes, Σ over its scenarios of (layers + pipeline stages): 1,000
# scenarios of a 126-layer model are 0.13 M; 1,000 inline 4,096-layer configs (4.1 M, a minute
# of CPU) are refused before any is computed.
MAX_BATCH_LAYER_PASSES = 600_000

# The block-pool simulator (workload.py).

# Requests given or generated (first turns of conversations included, later turns not): a day of
# a busy replica (issue #29: 1M requests of a day-long mix in under 60 s). Each simulated request
# keeps about 1 KB of state for the whole run, so 1 GB at the limit.
MAX_REQUESTS = 1_000_000
# Requests listed in a body: about 100 bytes of JSON each, so a 2 MB body; generate more.
MAX_LISTED_REQUESTS = 20_000
# One request's prompt or output: 16.7M tokens, above the longest context any model takes (10M).
MAX_TOKENS_PER_REQUEST = 1 << 24
# Tokens of the whole workload, every turn with its history: bounds the prefill work (a million
# requests of 2,000 tokens).
MAX_TOTAL_TOKENS = 2_000_000_000
# The latest arrival step: a trillion steps is decades of decoding; arrivals past it are an
# arrival rate too small to mean anything, and a float that would overflow on the way.
MAX_ARRIVAL_STEP = 1 << 40
# Requests a step: at a million every arrival already lands on step 0.
MAX_ARRIVAL_RATE = 1e6
# The latest arrival in seconds: three years of a trace; later is a unit mistake (ms for s).
MAX_ARRIVAL_TIME = 1e8
# Requests a second (Poisson): a million a second puts every arrival at time 0 for any model.
MAX_ARRIVAL_RATE_PER_S = 1e6
# Requests in flight in a closed loop (vllm bench serve --max-concurrency): at most every request.
MAX_IN_FLIGHT = MAX_REQUESTS
# Seconds a user thinks between turns of a timed conversation: a day.
MAX_THINK_TIME = 86_400.0
# A trace body (/v1/simulate with text/csv or application/x-ndjson): Mooncake's conversation trace
# is 3 MB for 12,031 requests, so about 250,000 rows of it fit (an Azure CSV of MAX_REQUESTS rows is
# ~30 MB); read as it streams, one line at a time, each at most MAX_TRACE_LINE_BYTES (a 1M-token
# prompt's 2,048 hash ids are ~16 KB).
MAX_TRACE_BYTES = 64 << 20
MAX_TRACE_LINE_BYTES = 1 << 20
# Distinct blocks a trace's hash chains hold, all rows together: each is an interned node (~170
# bytes), and a body of MAX_TRACE_BYTES can carry ~8M new ones (1.4 GB); ids that rows share are one.
# Mooncake's conversation trace chains 182,790.
MAX_TRACE_CHAIN_BLOCKS = 2_000_000
# A trace's arrival times stretched (or squeezed, below 1) by at most this factor.
MAX_TIME_SCALE = 1e6
# The server's tokenizer, µs a prompt token: measured rates are 1.3 to 2.3 (docs/steptime.md);
# 1,000 (a 1,000-token prompt a second) is a CPU no deployment has, and bounds the arithmetic.
MAX_TOKENIZE_US = 1000
# A capacity search (core/traffic/search.py): at most this many simulations, and their work
# together (simulations × one simulation's step bound) at most MAX_SEARCH_STEPS, checked before
# the first runs.
MAX_SEARCH_POINTS = 40
MAX_SEARCH_STEPS = 4_000_000
# A capacity search over settings (`vary`): combinations searched at most.
MAX_CAPACITY_VARIANTS = 32
# A fleet by traffic, or a capacity search over settings: all the searches together.
MAX_FLEET_SEARCH_STEPS = 12_000_000
# A latency target: a day, in milliseconds.
MAX_SLO_MS = 86_400_000.0
# Conversation turns: each turn re-sends the history, so the tokens grow with turns squared.
MAX_TURNS = 64
# A user's new tokens in one turn, and a shared system prompt: a megatoken is a book.
MAX_USER_TOKENS = 1 << 20
MAX_SYSTEM_PROMPT_TOKENS = 1 << 20
# Steps a user thinks between turns: a billion steps is weeks; arrivals stay below 2^41.
MAX_THINK_STEPS = 1 << 30
# vLLM's priorities are ints; ±a million levels is more than any policy uses.
MAX_PRIORITY = 1 << 20
# Seeds stay below 2^62 so clients that read JSON numbers as int64 round-trip them.
MAX_SEED = 1 << 62
# A lognormal's sigma above 5 puts nearly every draw at 1 token or at the cap.
MAX_SIGMA = 5.0

# The block-pool simulator (scheduler.py).

# Steps the loop runs (see visit_bound; a run of decode steps only crossing block boundaries is
# advanced at once, and its crossings count as blocks): 3.4 µs each when little else happens in
# them, so 69 s measured. A day of 1M requests is bounded by ~8.2M; the bound's 8 steps a request
# also caps the requests, every conversation turn counted, at 2.5M.
MAX_SIMULATED_STEPS = 20_000_000
# Blocks handed out over a run: where blocks are keyed (shared prefixes, preempted requests, every
# block of a snapshot run) the caching, lookups and freeing are per block, 0.3–0.8 µs each, so
# 80 s at most (measured, in blocks of 1); elsewhere they are counted, not walked. A day of 1M
# requests of ~1,400 tokens takes ~90M in blocks of 16.
MAX_BLOCK_EVENTS = 100_000_000

# The block-pool simulator (blockpool.py).
# The largest pool a real deployment makes is about 14M blocks (a 0.5B-parameter model on a
# 192 GB GPU at block_size 1; under 1M at vLLM's default block_size 16). Memory is spent only on
# blocks handed out, about 100 bytes each, so the cap bounds meaning, not memory: a larger
# num_blocks is a typo or a probe.
MAX_NUM_BLOCKS = 1 << 24

# The block-pool simulator (simulate.py).
# Snapshots list every block of the pool: a few, of small pools.
MAX_SNAPSHOTS = 10
MAX_SNAPSHOT_BLOCKS = 4096
# Points in the answer's series: a chart wider than this is not read.
MAX_SERIES = 500

# Reconciling a running vLLM (schemas/reconcile.py, core/logs/enginelog.py, services/reconcile.py).
# A start-up log is a few thousand lines; a /metrics scrape is tens of KiB.
MAX_LOG_BYTES = 8 << 20
MAX_METRICS_BYTES = 1 << 20
# A log is read a line at a time, each up to this many characters (vLLM's longest, the engine's
# non-default arguments, is a few KiB), and for at most this many lines.
MAX_LINE_CHARS = 16_384
MAX_LOG_LINES = 2_000_000
# A printed dict of engine arguments, and the closing braces tried to find its end (a value may
# hold braces of its own).
MAX_ARGS_CHARS = 8_192
MAX_ARGS_TRIES = 64
# A whole log: closing braces tried, and lines read as a command (`vllm serve …`, `non-default
# args: {…}`). A start-up log prints its arguments once or twice; 1,000 lines of them made a log
# cost a parse each (0.3 s a dict cut short, 6 ms a 15 KB command), seconds before the deadline.
MAX_LOG_ARGS_TRIES = 4 * MAX_ARGS_TRIES
MAX_LOG_COMMANDS = 32
# Figures kept: a log states each a few times (once a rank); more is noise or an attack on memory.
MAX_FIGURES_PER_LINE = 16
MAX_FIGURES_PER_NAME = 64
MAX_FIGURES = 4_096
# A /metrics scrape: samples, a line's length and its labels (vLLM's widest sample,
# cache_config_info, has about 20 labels).
MAX_METRICS_SAMPLES = 20_000
MAX_METRICS_LINE_CHARS = 65_536
MAX_METRICS_LABELS = 128

# The deployments file (KVPLAN_DEPLOYMENTS) and what an autoscaler observes of one deployment
# (schemas/deployments.py): each replica's /metrics is at most MAX_METRICS_BYTES.
MAX_DEPLOYMENTS = 1000
# The deployments file: read on each change; 6 MB of TOML held the event loop 5 s before it moved off.
MAX_DEPLOYMENTS_FILE_BYTES = 8 << 20
# A deployment with latency targets is planned by rate searches (POST /v1/capacity's, each bounded
# by MAX_SEARCH_STEPS or MAX_FLEET_SEARCH_STEPS with vary): a file holds at most this many such
# entries, and each entry's searches stop after DEPLOYMENT_SEARCH_SECONDS, so one reading of the
# file ends within minutes on a loaded core. An unchanged entry reuses its last search.
MAX_SLO_DEPLOYMENTS = 16
DEPLOYMENT_SEARCH_SECONDS = 60.0
# What an autoscaler reports of a deployment's finished requests a second (the replica rule's rate
# term): far above any fleet's, below what would overflow the rule's arithmetic.
MAX_OBSERVED_REQUEST_RATE = 1e7
MAX_REPLICAS = 10_000
MAX_OBSERVED_REPLICAS = 1000
# The largest request count and prompt-token total one replica reports: larger is no vLLM's
# figure, and would overflow the replica rule's arithmetic.
MAX_REPLICA_REQUESTS = 1_000_000_000
MAX_REPLICA_PROMPT_TOKENS = 10**18

# A `vllm serve` command line (core/engine/command.py): a long one, with JSON configs, is a few KiB.
MAX_COMMAND_CHARS = 65_536
# Brackets nested in a YAML command or --config: real ones nest a few; PyYAML recurses on each.
MAX_YAML_NESTING = 32
# A YAML command or --config with its aliases (*name) written out: a manifest of 11 KB is ~500 nodes.
MAX_YAML_NODES = 10_000
MAX_YAML_CHARS = 1 << 20
MAX_COMMAND_TOKENS = 4_096

# A Hub checkpoint's safetensors header: a dimension or a tensor larger than these is not a
# checkpoint's (hub/safetensors.py).
MAX_DIMENSION = 1 << 40
MAX_ELEMENTS = 1 << 48
# "Did you mean": difflib is quadratic in the lengths, so an unknown deployment is compared with at
# most this many names of at most this many characters (a fleet of 1,000 long names cost 4.7 s).
MAX_SUGGESTION_NAMES = 200
MAX_SUGGESTED_CHARS = 128
