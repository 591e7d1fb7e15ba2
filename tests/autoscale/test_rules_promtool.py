"""The replica rule's two forms count alike: promtool evaluates kvplan's recording rules
(core/autoscale/promql.py) on the series of many deployments, loads drawn at random (seeded) and
hand-picked edges, and every deployment's kvplan:deployment_desired_replicas (and its unclamped
count) must be what core/autoscale/rule.py gives for the same load, under both match_on modes;
and `promtool check rules` accepts the rules of both."""

from __future__ import annotations

import random
import subprocess
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from kvplan.core.autoscale.promql import DESIRED, alerts, rule_groups
from kvplan.core.autoscale.rule import desired_replicas
from kvplan.core.autoscale.types import ReplicaLoad, Replicas, Target
from tests.autoscale.prom import binary

PROMTOOL = binary("promtool")
SEED = 20_260_611
RANDOM_DEPLOYMENTS = 64
MINUTES = 10  # a sample a minute from 0 to 10m; the rules are read at 10m (the prompt mean: 5m to 10m)
MATCH_ON = {"namespace,deployment": ("namespace", "deployment"), "model_name": ("model_name",)}
UNCLAMPED = f"{DESIRED}:unclamped"


@dataclass(frozen=True)
class Engine:
    """One vLLM engine's gauges, and its prompts: `prompts_per_minute` of `prompt_tokens` each in
    the last MINUTES, after `old_prompts` of that length before the series start."""

    usage: float
    running: int
    waiting: int
    prompts_per_minute: int = 0
    prompt_tokens: int = 0
    old_prompts: int = 0
    finished_per_minute: int = 0  # vllm:request_success_total's increase a minute


@dataclass
class Case:
    """One deployment: its plan, its ready replicas (each a list of engines), and what it shows."""

    namespace: str
    name: str
    target: Target
    replicas: list[list[Engine]] = field(default_factory=list)
    why: str = "drawn at random"

    @property
    def model_name(self) -> str:
        return f"org/{self.name}"

    def mean_prompt_tokens(self) -> float | None:
        """The last 5 minutes' mean prompt (rate of the sum over rate of the count), or None."""
        engines = [e for r in self.replicas for e in r if e.prompts_per_minute]
        if not engines:
            return None
        return sum(e.prompts_per_minute * e.prompt_tokens for e in engines) / sum(
            e.prompts_per_minute for e in engines
        )

    def request_rate(self) -> float:
        """Requests finished a second over the last 5 minutes, every engine's summed."""
        return sum(e.finished_per_minute for r in self.replicas for e in r) / 60

    def expected(self) -> Replicas:
        """The Python rule's answer for this load (each replica summed over its engines)."""
        loads = [
            ReplicaLoad(
                kv_cache_usage_perc=sum(e.usage for e in r),
                num_requests_running=sum(e.running for e in r),
                num_requests_waiting=sum(e.waiting for e in r),
            )
            for r in self.replicas
        ]
        return desired_replicas(self.target, loads, self.mean_prompt_tokens(), "given", self.request_rate())


def target(
    c: int, s: int, u: float, ctx: int = 8192, lo: int = 1, hi: int = 10, rate: float | None = None
) -> Target:
    return Target(
        capacity_tokens=c,
        max_num_seqs=s,
        target_utilization=u,
        context_tokens=ctx,
        min_replicas=lo,
        max_replicas=hi,
        max_rate_per_s=rate,
    )


def idle(n: int) -> list[list[Engine]]:
    return [[Engine(0.0, 0, 0)] for _ in range(n)]


def edges() -> list[Case]:
    """The loads where the two forms could part: demand exactly on a whole number of replicas
    (by tokens, by requests, by the queue at the mean prompt, by sums whose order changes their
    last bit), just above one, no ready replica, clamps at both bounds, min_replicas 0, and the
    prompt mean's fallback to context_tokens."""
    e = Engine
    table = [
        ("tokens-exactly-3", "3 × 0.8 of the KV at u = 0.8 (the sum is 2.4000000000000004): 3",
         target(100_000, 256, 0.8), [[e(0.8, 10, 0)]] * 3),
        ("requests-exactly-4", "4 × 96 requests at u·S = 96: 4",
         target(1_000_000, 128, 0.75), [[e(0.1, 96, 0)]] * 4),
        ("queue-exactly-2", "25 waiting × 4,000 prompt tokens = 2 × 0.5 × 100,000: 2",
         target(100_000, 1024, 0.5), [[e(0.0, 0, 25, 3, 4000)], [e(0.0, 0, 0, 3, 4000)]]),
        ("sum-order", "0.1 + 0.2 + 0.3 is 0.6000000000000001 one way, 0.6 the other: 1 at u = 0.6",
         target(100_000, 256, 0.6), [[e(0.1, 1, 0)], [e(0.2, 1, 0)], [e(0.3, 1, 0)]]),
        ("just-above-2", "a millionth of a replica above 2: 3",
         target(1_000_000, 1024, 1.0), [[e(1.0, 1, 0)], [e(1.0, 1, 0)], [e(1e-6, 0, 0)]]),
        ("no-replica", "no ready replica: min_replicas (2)", target(400_000, 256, 0.8, lo=2, hi=6), []),
        ("no-replica-min-0", "no ready replica, min_replicas 0: 0",
         target(400_000, 256, 0.8, lo=0, hi=6), []),
        ("min-0-idle", "idle, min_replicas 0: 0", target(400_000, 256, 0.8, lo=0, hi=6), idle(2)),
        ("min-0-loaded", "some load, min_replicas 0: 1",
         target(400_000, 256, 0.8, lo=0, hi=6), [[e(0.3, 5, 0)]]),
        ("min-3-idle", "idle: min_replicas (3)", target(400_000, 256, 0.8, lo=3, hi=6), idle(3)),
        ("min-equals-max", "min_replicas = max_replicas = 3 under load: 3",
         target(400_000, 256, 0.8, lo=3, hi=3), [[e(0.9, 200, 50)]] * 5),
        ("above-max", "far more than max_replicas (3): clamped to 3",
         target(200_000, 64, 0.8, lo=1, hi=3), [[e(1.0, 64, 500, 10, 2000)]] * 3),
        ("old-prompts-only", "prompts before the last 5 minutes only: waiting at context_tokens",
         target(300_000, 256, 0.8, ctx=32_768), [[e(0.2, 10, 20, 0, 100, old_prompts=500)]]),
        ("no-prompt-series", "waiting requests and no prompt histogram: context_tokens",
         target(300_000, 256, 0.8, ctx=16_384), [[e(0.2, 10, 5)]]),
        ("data-parallel", "two engines of one replica summed",
         target(250_000, 128, 0.9),
         [[e(0.45, 30, 3, 4, 1500), e(0.45, 31, 2, 2, 1500)], [e(0.7, 60, 0, 1, 1500)]]),
        ("prompt-mean-weighted", "each replica weighed by its prompts: (2 × 1,000 + 6 × 3,000) / 8 = 2,500",
         target(250_000, 512, 0.7), [[e(0.5, 10, 40, 2, 1000)], [e(0.5, 10, 40, 6, 3000)]]),
        ("rate-binds", "1,500 a minute = 25/s; at 0.8 × 4/s a replica 7.8125: 8, above KV and requests",
         target(1_000_000, 256, 0.8, rate=4.0, hi=12), [[e(0.2, 20, 0, finished_per_minute=750)]] * 2),
        ("rate-below", "the rate term under the others: the KV's 3",
         target(100_000, 256, 0.8, rate=50.0), [[e(0.8, 10, 0, finished_per_minute=60)]] * 3),
        ("rate-no-targets", "requests finish, no latency targets: no rate term, 1",
         target(1_000_000, 256, 0.8), [[e(0.1, 5, 0, finished_per_minute=6000)]]),
        ("rate-no-series", "latency targets, no finished requests: the rate term is 0, min_replicas",
         target(1_000_000, 256, 0.8, rate=2.0, lo=1), idle(2)),
    ]  # fmt: skip
    return [Case("edge", name, t, replicas, why) for name, why, t, replicas in table]


def random_cases(rng: random.Random, n: int) -> list[Case]:
    """`n` deployments of random plans and loads: 0 to 6 replicas, some of two engines, usage to
    4 decimals, queues, prompt traffic on most."""
    out = []
    for i in range(n):
        s = rng.choice([16, 32, 64, 128, 256, 512, 1024])
        ctx = rng.choice([2048, 4096, 8192, 16_384, 32_768, 131_072])
        lo = rng.randint(0, 3)
        t = target(
            rng.randrange(16_384, 2_000_000),
            s,
            rng.choice([0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0]),
            ctx,
            lo,
            rng.randint(max(1, lo), lo + 12),
        )
        traffic = rng.random() < 0.7
        if rng.random() < 0.4:  # latency targets: a sustained rate a replica
            t = msgspec.structs.replace(t, max_rate_per_s=round(rng.uniform(0.2, 40.0), 3))
        replicas = []
        for _ in range(rng.randint(0, 6)):
            replicas.append(
                [
                    Engine(
                        usage=round(rng.random(), 4),
                        running=rng.randint(0, s),
                        waiting=rng.choice([0, 0, rng.randint(0, 2 * s)]),
                        prompts_per_minute=rng.randint(1, 30) if traffic and rng.random() < 0.8 else 0,
                        prompt_tokens=rng.randint(16, ctx),
                        old_prompts=rng.randint(0, 1000),
                        finished_per_minute=rng.choice([0, rng.randint(1, 3000)]),
                    )
                    for _ in range(rng.choice([1, 1, 1, 2]))
                ]
            )
        out.append(Case(rng.choice(["serving", "research", "batch"]), f"random-{i:02d}", t, replicas))
    return out


def all_cases() -> list[Case]:
    return edges() + random_cases(random.Random(SEED), RANDOM_DEPLOYMENTS)


# promtool's files --------------------------------------------------------------------------------


def selector(labels: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def constant(value: float) -> str:
    """A series of one value, written without an exponent (promtool's series notation has none)."""
    return f"{Decimal(repr(value)):f}+0x{MINUTES}"


def input_series(case: Case) -> list[dict[str, str]]:
    """kvplan's series of the plan, and each engine's vLLM series, a sample a minute."""
    t = case.target
    plan = {"namespace": case.namespace, "deployment": case.name, "model_name": case.model_name}
    kvplan = selector(
        {**plan, "accelerator_type": "h100-sxm-80gb", "job": "kvplan", "instance": "kvplan:8000"}
    )
    gauges = {
        "kv_cache_capacity_tokens": t.capacity_tokens,
        "max_num_seqs": t.max_num_seqs,
        "target_utilization": t.target_utilization,
        "context_tokens": t.context_tokens,
        "min_replicas": t.min_replicas,
        "max_replicas": t.max_replicas,
    }
    if t.max_rate_per_s is not None:  # only a deployment with latency targets publishes it
        gauges["max_rate_per_s"] = t.max_rate_per_s
    out = [{"series": f"kvplan_deployment_{g}{kvplan}", "values": constant(v)} for g, v in gauges.items()]
    for r, engines in enumerate(case.replicas):
        for i, e in enumerate(engines):
            labels = selector({**plan, "engine": str(i), "instance": f"{case.name}-{r}:8000", "job": "vllm"})
            out += [
                {"series": f"vllm:kv_cache_usage_perc{labels}", "values": constant(e.usage)},
                {"series": f"vllm:num_requests_running{labels}", "values": constant(e.running)},
                {"series": f"vllm:num_requests_waiting{labels}", "values": constant(e.waiting)},
            ]
            if e.finished_per_minute:
                done = selector({**plan, "engine": str(i), "instance": f"{case.name}-{r}:8000", "job": "vllm",
                                 "finished_reason": "length"})  # fmt: skip
                out.append(
                    {
                        "series": f"vllm:request_success_total{done}",
                        "values": f"0+{e.finished_per_minute}x{MINUTES}",
                    }
                )
            if e.prompts_per_minute or e.old_prompts:
                count, tokens = e.old_prompts, e.old_prompts * e.prompt_tokens
                per_minute = e.prompts_per_minute * e.prompt_tokens
                out += [
                    {
                        "series": f"vllm:request_prompt_tokens_count{labels}",
                        "values": f"{count}+{e.prompts_per_minute}x{MINUTES}",
                    },
                    {
                        "series": f"vllm:request_prompt_tokens_sum{labels}",
                        "values": f"{tokens}+{per_minute}x{MINUTES}",
                    },
                ]
    return out


def expected_counts(case: Case, match_on: tuple[str, ...]) -> list[dict[str, Any]]:
    """promtool's tests of one deployment: its desired count and its unclamped count."""
    expected = case.expected()
    names = {"namespace": case.namespace, "deployment": case.name, "model_name": case.model_name}
    joined = {k: names[k] for k in match_on}
    desired_labels = joined if match_on == MATCH_ON["namespace,deployment"] else names
    return [
        {
            "expr": DESIRED + selector({"namespace": case.namespace, "deployment": case.name}),
            "eval_time": f"{MINUTES}m",
            "exp_samples": [
                {"labels": DESIRED + selector(desired_labels), "value": expected.desired_replicas}
            ],
        },
        {
            "expr": UNCLAMPED + selector(joined),
            "eval_time": f"{MINUTES}m",
            "exp_samples": [{"labels": UNCLAMPED + selector(joined), "value": expected.unclamped_replicas}],
        },
    ]


def above_max(cases: list[Case], match_on: tuple[str, ...]) -> dict[str, Any]:
    """promtool's test of KvplanDesiredReplicasAboveMax's expression: the deployments whose
    unclamped count the Python rule puts above max_replicas, with that count (a comparison drops
    the series' name)."""
    labels = [{"namespace": c.namespace, "deployment": c.name, "model_name": c.model_name} for c in cases]
    return {
        "expr": alert_expr("KvplanDesiredReplicasAboveMax", match_on),
        "eval_time": f"{MINUTES}m",
        "exp_samples": [
            {"labels": selector({k: names[k] for k in match_on}), "value": e.unclamped_replicas}
            for c, names in zip(cases, labels, strict=True)
            if (e := c.expected()).clamped_by == "max_replicas"
        ],
    }


def alert_expr(name: str, match_on: tuple[str, ...]) -> str:
    return str(next(a["expr"] for a in alerts(match_on) if a["alert"] == name))


def unit_tests(
    directory: Path, match_on: tuple[str, ...], test: dict[str, Any]
) -> subprocess.CompletedProcess[str]:
    """`promtool test rules` of one test group on kvplan's rules for `match_on`."""
    rules = write_rules(directory, match_on)
    unit = {"rule_files": [rules.name], "evaluation_interval": "1m", "tests": [{"interval": "1m", **test}]}
    (directory / "tests.yml").write_text(yaml.safe_dump(unit, sort_keys=False))
    return promtool("test", "rules", str(directory / "tests.yml"))


def write_rules(directory: Path, match_on: tuple[str, ...]) -> Path:
    path = directory / "rules.yml"
    path.write_text(yaml.safe_dump({"groups": rule_groups(match_on)}, sort_keys=False))
    return path


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=60, check=False)


# The tests ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("match_on", MATCH_ON)
def test_promtool_counts_every_deployment_as_the_python_rule_does(match_on, tmp_path):
    cases, joined = all_cases(), MATCH_ON[match_on]
    run = unit_tests(
        tmp_path,
        joined,
        {
            "input_series": [s for c in cases for s in input_series(c)],
            "promql_expr_test": [
                *(t for c in cases for t in expected_counts(c, joined)),
                above_max(cases, joined),
            ],
        },
    )
    edges = "\n".join(f"  {c.name}: {c.why}" for c in cases if c.namespace == "edge")
    assert run.returncode == 0, f"{run.stdout[-8000:]}{run.stderr[-4000:]}\nthe edges:\n{edges}"


@pytest.mark.parametrize("match_on", MATCH_ON)
def test_promtool_finds_the_one_engine_whose_blocks_are_not_the_plans(match_on, tmp_path):
    """Deployment a plans 7,006 blocks: engine 1 of its pod a-1 has 6,910. b's engine has its plan's
    2,800; c, which kvplan does not plan, is not kvplan's to judge."""
    plans = {"a": 7006, "b": 2800}
    engines = {("a", "a-0:8000", "0"): 7006, ("a", "a-1:8000", "0"): 7006, ("a", "a-1:8000", "1"): 6910}
    engines |= {("b", "b-0:8000", "0"): 2800, ("c", "c-0:8000", "0"): 100}
    series = []
    for name, blocks in plans.items():
        labels = {"namespace": "serving", "deployment": name, "model_name": f"org/{name}"}
        info = selector({**labels, "num_gpu_blocks": str(blocks), "block_size": "16", "job": "kvplan"})
        series.append({"series": f"kvplan_deployment_cache_config_info{info}", "values": constant(1)})
    for (name, instance, engine), blocks in engines.items():
        target_labels = {"namespace": "serving", "deployment": name, "instance": instance, "job": "vllm"}
        config = {"engine": engine, "block_size": "16", "cache_dtype": "auto", "num_gpu_blocks": str(blocks)}
        series += [
            {
                "series": f"vllm:cache_config_info{selector({**target_labels, **config})}",
                "values": constant(1),
            },
            {
                "series": "vllm:num_requests_running"
                + selector({**target_labels, "model_name": f"org/{name}", "engine": engine}),
                "values": constant(2),
            },
        ]
    joined = MATCH_ON[match_on]
    names = {"namespace": "serving", "deployment": "a", "model_name": "org/a"}
    found = {k: names[k] for k in joined} | {"num_gpu_blocks": "6910", "instance": "a-1:8000", "engine": "1"}
    expected = {
        "expr": alert_expr("KvplanEngineBlocksDifferFromPlan", joined),
        "eval_time": f"{MINUTES}m",
        # model_name mode multiplies the engine's info by its pod's running count (2) for the label
        "exp_samples": [{"labels": selector(found), "value": 1 if "namespace" in joined else 2}],
    }
    run = unit_tests(tmp_path, joined, {"input_series": series, "promql_expr_test": [expected]})
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("match_on", MATCH_ON)
def test_promtool_check_rules_accepts_the_rules_of_either_match_on(match_on, tmp_path):
    run = promtool("check", "rules", str(write_rules(tmp_path, MATCH_ON[match_on])))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "SUCCESS" in run.stdout + run.stderr


def test_the_deployments_promtool_checks_reach_every_clamp_binding_and_prompt_source():
    cases = all_cases()
    answers = [c.expected() for c in cases]
    assert len(cases) >= 40
    assert {a.clamped_by for a in answers} == {None, "min_replicas", "max_replicas"}
    assert {a.binding for a in answers} == {"tokens", "requests", "rate"}
    assert {a.mean_prompt_tokens_source for a in answers} == {"given", "context_tokens"}
    assert {a.ready_replicas for a in answers} >= {0, 1, 2, 3, 4, 5, 6}
    assert len({a.desired_replicas for a in answers}) >= 8
    by_name = {c.name: a for c, a in zip(cases, answers, strict=True)}
    assert [
        by_name[n].desired_replicas for n in ("tokens-exactly-3", "requests-exactly-4", "queue-exactly-2")
    ] == [3, 4, 2]
    assert by_name["prompt-mean-weighted"].mean_prompt_tokens == 2500
    assert [by_name[n].desired_replicas for n in ("rate-binds", "rate-below", "rate-no-targets")] == [8, 3, 1]
    assert by_name["rate-binds"].binding == "rate" and by_name["rate-no-targets"].replicas_for_rate is None
