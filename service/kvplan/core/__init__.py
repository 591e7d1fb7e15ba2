"""The pure calculation core: plain values in, plain values out.

No framework, no I/O, no logging. Errors are `kvplan.core.errors` types; the
API layer decides what HTTP status each one becomes.

One room a concern, as vLLM splits its own tree; the ground floor (errors, warnings, ledger,
limits, units, validate, memo) is what every room may use.

    engine/   the engine's rules: version profiles and their defaults (profiles.py), dtypes,
              and the memory vLLM subtracts besides weights and KV (nonkv.py: the formula;
              its constants are fitted by tests/calibration/memory.py)
    model/    a model's values: attention geometry, recurrent state, quantization, weights,
              and which GPU architecture a layout's kernels hold on
    hf/       reading config.json as vLLM does: the standard reader walks the family table
              (families/__init__.py); one module a family (families/step5.py reads Step5)
    kv/       KV bytes per layer (layers.py) and per token (pertoken.py), parallel layouts,
              vLLM's KV-cache groups and packing, the requests a pool holds (concurrency.py)
    budget/   the memory budget and its blocks, one module a vLLM step (kv_cache_utils.py)
    fleet/    which layout of which GPU type holds how many requests; sweeps along one axis
    sim/      vLLM's block pool and V1 scheduler (its admission rule: scheduler.py
              Scheduler.step and _admit), the workload, and the simulation's entry
    logs/     reading what a vLLM engine printed, and reconciling it with the plan
    autoscale/ the replica rule over vLLM's load (rule.py), the same rule as Prometheus recording
              rules (promql.py), and the autoscaler and router configs built from a plan
"""
