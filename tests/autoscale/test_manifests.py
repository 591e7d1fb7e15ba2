"""Every config kvplan generates for a deployment validates for the program that reads it, for
every deployment of data/deployments.toml: KEDA's ScaledObject against KEDA's own CRD; the HPA and
prometheus-adapter's ConfigMap against Kubernetes' schemas, the adapter's rules with its keys and
queries Prometheus parses; the PrometheusRule through promtool; the endpoint picker's config with
the keys its plugins take and the plan's figures; the vLLM arguments among vLLM 0.33's flags. And
the route answers each of them, or says which kind, flavor or deployment it does not know."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import msgspec
import pytest
import yaml
from litestar.testing import TestClient

from kvplan.api.app import create_app
from kvplan.api.settings import Settings
from kvplan.core.autoscale.promql import DESIRED
from kvplan.presets import Registry
from kvplan.services.deployments import Fleet, Plan, read
from kvplan.services.manifests import EPP_FLAVORS, MANIFEST_KINDS, manifest_yaml
from tests.autoscale.vllm_flags import flags
from tests.deploy.schemas import K8S_VERSION, PROMETHEUS_RULE
from tests.metrics import metric_names_in, names_in_exposition

DATA = Path(__file__).parent / "data"
FLEET = DATA / "deployments.toml"
# Every engine setting the deployments file takes that becomes a `vllm serve` flag.
EVERY_SETTING = DATA / "deployments-every-setting.toml"
KEDA_CRD = yaml.safe_load((DATA / "keda.sh_scaledobjects.yaml").read_text())
SCALED_OBJECT = KEDA_CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
ENTRIES = {f"{d['namespace']}/{d['name']}": d for d in tomllib.loads(FLEET.read_text())["deployment"]}
NAMES = list(ENTRIES)

# KEDA's prometheus scaler reads these trigger metadata keys (keda.sh/docs, scalers/prometheus).
PROMETHEUS_SCALER_KEYS = {
    "serverAddress",
    "query",
    "threshold",
    "activationThreshold",
    "namespace",
    "customHeaders",
    "ignoreNullValues",
    "queryParameters",
    "unsafeSsl",
    "timeout",
}
# prometheus-adapter's externalRules: the keys of a rule and the templates its metricsQuery takes.
ADAPTER_RULE_KEYS = {"seriesQuery", "seriesFilters", "resources", "name", "metricsQuery"}
ADAPTER_TEMPLATES = {"Series", "LabelMatchers", "GroupBy", "GroupBySlice", "LabelValuesByName"}
# The endpoint picker's plugins, each with the parameters it takes, in either flavor.
PLUGINS = {
    "llm-d": {
        "approx-prefix-cache-producer": {
            "autoTune",
            "blockSizeTokens",
            "maxPrefixTokensToMatch",
            "lruCapacityPerServer",
        },
        "prefix-cache-scorer": {"prefixMatchInfoProducerName"},
        "queue-scorer": set(),
        "kv-cache-utilization-scorer": set(),
        "utilization-detector": {
            "queueDepthThreshold",
            "kvCacheUtilThreshold",
            "metricsStalenessThreshold",
            "headroom",
        },
        "concurrency-detector": {"maxConcurrency", "maxTokenConcurrency", "concurrencyMode", "headroom"},
        "max-score-picker": set(),
        "single-profile-handler": set(),
    },
    "gie": {
        "prefix-cache-scorer": {"autoTune", "blockSize", "maxPrefixBlocksToMatch", "lruCapacityPerServer"},
        "queue-scorer": set(),
        "kv-cache-utilization-scorer": set(),
        "max-score-picker": set(),
        "single-profile-handler": set(),
    },
}
SCORERS = {"prefix-cache-scorer", "queue-scorer", "kv-cache-utilization-scorer"}
PICKERS = {"max-score-picker"}
TOP_LEVEL = {
    "llm-d": {"apiVersion", "kind", "plugins", "schedulingProfiles", "flowControl"},
    "gie": {"apiVersion", "kind", "plugins", "schedulingProfiles", "saturationDetector"},
}
DURATION = re.compile(r"^\d+(ms|s|m)$")


@pytest.fixture(scope="module")
def fleet(registry: Registry) -> Fleet:
    return read(registry, FLEET.read_bytes())


@pytest.fixture(scope="module")
def client(registry: Registry) -> Iterator[TestClient]:
    with TestClient(create_app(Settings(deployments=str(FLEET)), registry=registry)) as c:
        yield c


def plan_of(fleet: Fleet, name: str) -> Plan:
    namespace, _, deployment = name.partition("/")
    return fleet.plans[(namespace, deployment)]


def generated(fleet: Fleet, kind: str, name: str, flavor: str | None = None) -> list[dict[str, Any]]:
    return [
        d for d in yaml.safe_load_all(manifest_yaml(kind, plan_of(fleet, name), fleet.settings, flavor)) if d
    ]


def unknown_fields(obj: Any, schema: dict[str, Any], at: str = "") -> list[str]:
    """The fields of `obj` its (structural) schema does not declare: a Kubernetes API server drops
    them without a word, so a misspelt field would pass a jsonschema check and do nothing."""
    if isinstance(obj, dict) and "properties" in schema:
        out = []
        for key, value in obj.items():
            if key in schema["properties"]:
                out += unknown_fields(value, schema["properties"][key], f"{at}.{key}")
            elif isinstance(schema.get("additionalProperties"), dict):
                out += unknown_fields(value, schema["additionalProperties"], f"{at}.{key}")
            elif not schema.get("x-kubernetes-preserve-unknown-fields"):
                out.append(f"{at}.{key}")
        return out
    if isinstance(obj, list) and "items" in schema:
        return [x for i, item in enumerate(obj) for x in unknown_fields(item, schema["items"], f"{at}[{i}]")]
    return []


def selector_of(query: str) -> tuple[str, dict[str, str]]:
    """A PromQL instant selector's metric name and its label matchers."""
    m = re.fullmatch(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\}", query)
    assert m, query
    return m.group(1), dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))


def promtool() -> str:
    """Prometheus' own checker: a test is skipped without it only outside CI."""
    found = shutil.which("promtool")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is not installed, and CI must run it")
        pytest.skip("promtool is not installed")
    return found


def promtool_checks(groups: list[dict[str, Any]], tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": groups}))
    done = subprocess.run([promtool(), "check", "rules", str(rules)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_fleet_plans_every_deployment_of_the_file(fleet):
    assert fleet.failures == ()
    assert sorted(f"{ns}/{n}" for ns, n in fleet.plans) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_the_scaled_object_validates_against_kedas_crd_and_scales_on_that_deployments_count(fleet, name):
    [so] = generated(fleet, "keda", name)
    jsonschema.validate(so, SCALED_OBJECT)
    assert unknown_fields(so, SCALED_OBJECT) == []
    entry, spec = ENTRIES[name], so["spec"]
    assert (so["metadata"]["namespace"], spec["scaleTargetRef"]["name"]) == (
        entry["namespace"],
        entry["name"],
    )
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (
        entry.get("min_replicas", 1),
        entry["max_replicas"],
    )
    [trigger] = spec["triggers"]
    assert (trigger["type"], trigger["metricType"]) == ("prometheus", "AverageValue")
    meta = trigger["metadata"]
    assert set(meta) <= PROMETHEUS_SCALER_KEYS and all(isinstance(v, str) for v in meta.values())
    assert meta["threshold"] == "1"
    assert meta["serverAddress"] == fleet.settings.prometheus_address
    assert selector_of(meta["query"]) == (
        DESIRED,
        {"namespace": entry["namespace"], "deployment": entry["name"]},
    )
    window = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"]
    assert window["stabilizationWindowSeconds"] == fleet.settings.cooldown_seconds


@pytest.mark.parametrize("name", NAMES)
def test_the_hpa_and_the_adapters_config_map_validate_against_kubernetes(fleet, name):
    hpa, config_map = generated(fleet, "hpa", name)
    for obj in (hpa, config_map):
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    entry, spec = ENTRIES[name], hpa["spec"]
    assert (hpa["metadata"]["namespace"], spec["scaleTargetRef"]["name"]) == (
        entry["namespace"],
        entry["name"],
    )
    assert (spec["minReplicas"], spec["maxReplicas"]) == (
        max(1, entry.get("min_replicas", 1)),
        entry["max_replicas"],
    )
    [metric] = spec["metrics"]
    assert metric["type"] == "External"
    assert metric["external"]["target"] == {"type": "AverageValue", "averageValue": "1"}
    assert metric["external"]["metric"]["selector"] == {"matchLabels": {"deployment": entry["name"]}}
    [rule] = yaml.safe_load(config_map["data"]["config.yaml"])["externalRules"]
    assert rule["name"]["as"] == metric["external"]["metric"]["name"]


def test_the_adapters_rule_has_its_keys_and_queries_prometheus_parses(fleet, tmp_path):
    _, config_map = generated(fleet, "hpa", NAMES[0])
    config = yaml.safe_load(config_map["data"]["config.yaml"])
    assert set(config) == {"externalRules"}
    [rule] = config["externalRules"]
    assert set(rule) <= ADAPTER_RULE_KEYS and {"seriesQuery", "name", "metricsQuery"} <= set(rule)
    assert set(rule["name"]) <= {"matches", "as"} and re.search(rule["name"]["matches"], DESIRED)
    assert set(rule["resources"]) <= {"overrides", "namespaced", "template"}
    assert rule["resources"]["overrides"] == {"namespace": {"resource": "namespace"}}
    used = set(re.findall(r"<<\.(\w+)>>", rule["metricsQuery"]))
    assert {"Series", "LabelMatchers"} <= used <= ADAPTER_TEMPLATES
    assert selector_of(rule["seriesQuery"])[0] == DESIRED
    rendered = (
        rule["metricsQuery"]
        .replace("<<.Series>>", DESIRED)
        .replace("<<.LabelMatchers>>", 'namespace="serving",deployment="llama-8b-h100"')
        .replace("<<.GroupBy>>", "namespace")
    )
    queries = [
        {"record": "adapter:series", "expr": rule["seriesQuery"]},
        {"record": "adapter:value", "expr": rendered},
    ]
    promtool_checks([{"name": "prometheus-adapter", "rules": queries}], tmp_path)


def test_the_prometheus_rule_validates_and_promtool_checks_its_groups(fleet, tmp_path):
    rules = {name: generated(fleet, "prometheusrule", name) for name in NAMES}
    [rule] = rules[NAMES[0]]
    assert all(r == [rule] for r in rules.values())  # one rule for every deployment
    jsonschema.validate(rule, PROMETHEUS_RULE)
    recorded = {r["record"] for g in rule["spec"]["groups"] for r in g["rules"] if "record" in r}
    assert DESIRED in recorded
    promtool_checks(rule["spec"]["groups"], tmp_path)


def test_the_prometheus_rule_reads_only_series_kvplan_exports(fleet, client):
    [rule] = generated(fleet, "prometheusrule", NAMES[0])
    exported = names_in_exposition(client.get("/metrics").text)
    for r in (r for g in rule["spec"]["groups"] for r in g["rules"]):
        assert metric_names_in(r["expr"]) <= exported, r.get("record") or r["alert"]


def check_plugins(config: dict[str, Any], flavor: str) -> dict[str, dict[str, Any]]:
    """Each plugin's keys and parameters are ones its type takes; every pluginRef names a plugin
    (by its name, else its type); each profile scores with positive weights and ends in one picker.
    Returns the plugins by name."""
    assert set(config) == TOP_LEVEL[flavor]
    by_name = {p.get("name", p["type"]): p for p in config["plugins"]}
    assert len(by_name) == len(config["plugins"])  # names are unique
    for p in config["plugins"]:
        assert set(p) <= {"type", "name", "parameters"}
        assert set(p.get("parameters", {})) <= PLUGINS[flavor][p["type"]], p
    for profile in config["schedulingProfiles"]:
        assert set(profile) == {"name", "plugins"}
        types = []
        for ref in profile["plugins"]:
            assert set(ref) <= {"pluginRef", "weight"} and ref["pluginRef"] in by_name
            types.append(by_name[ref["pluginRef"]]["type"])
            if types[-1] in SCORERS:
                assert ref["weight"] > 0
        assert [t for t in types if t in PICKERS] == [types[-1]]
    return by_name


@pytest.mark.parametrize("flavor", EPP_FLAVORS)
@pytest.mark.parametrize("name", NAMES)
def test_the_endpoint_pickers_config_takes_the_plans_blocks_and_thresholds_in_range(fleet, name, flavor):
    [config] = generated(fleet, "epp", name, flavor)
    plugins = check_plugins(config, flavor)
    b = plan_of(fleet, name).budget
    # The block vLLM runs with: the attention groups' (one size; raised over the one asked for in a
    # hybrid of attention and Mamba layers).
    [block] = {g.block_size for g in b.groups if not g.kind.startswith("mamba")}
    if flavor == "llm-d":
        index = plugins["approx-prefix-cache-producer"]["parameters"]
        assert (index["blockSizeTokens"], index["lruCapacityPerServer"]) == (block, b.num_blocks)
        assert index["maxPrefixTokensToMatch"] == b.max_model_len
        saturation = plugins[config["flowControl"]["saturationDetector"]["pluginRef"]]
        assert saturation["type"] == "utilization-detector"
        thresholds = saturation["parameters"]
        concurrency = next(p["parameters"] for p in plugins.values() if p["type"] == "concurrency-detector")
        assert concurrency["concurrencyMode"] in ("requests", "tokens", "hybrid")
        assert concurrency["maxConcurrency"] == b.max_num_seqs
        assert concurrency["maxTokenConcurrency"] == b.kv_cache_size_tokens
    else:
        index = plugins["prefix-cache-scorer"]["parameters"]
        assert (index["blockSize"], index["lruCapacityPerServer"]) == (block * 4, b.num_blocks)
        assert index["maxPrefixBlocksToMatch"] == math.ceil(b.max_model_len / block)
        thresholds = config["saturationDetector"]
    assert 0 < thresholds["kvCacheUtilThreshold"] <= 1
    assert isinstance(thresholds["queueDepthThreshold"], int) and thresholds["queueDepthThreshold"] >= 1
    assert DURATION.match(thresholds["metricsStalenessThreshold"])


def test_a_hybrids_prefix_index_counts_the_block_vllm_raised_its_attention_to(fleet):
    b = plan_of(fleet, "research/granite-4-h-small").budget
    attention = next(g for g in b.groups if g.kind == "full_attention")
    assert attention.block_size > b.block_size  # vLLM's _align_hybrid_block_size raised it
    [config] = generated(fleet, "epp", "research/granite-4-h-small", "llm-d")
    producer = next(p for p in config["plugins"] if p["type"] == "approx-prefix-cache-producer")
    assert producer["parameters"]["blockSizeTokens"] == attention.block_size


def vllm_flags_used(args: list[str]) -> list[tuple[str, bool]]:
    """Each flag of a `vllm serve` argument list and whether a value came with it (after `=`, or
    as the arguments up to the next flag)."""
    out = []
    for i, arg in enumerate(args):
        if arg.startswith("-"):
            flag, eq, _ = arg.partition("=")
            out.append((flag, bool(eq) or (i + 1 < len(args) and not args[i + 1].startswith("-"))))
    return out


@pytest.mark.parametrize("toml", [FLEET, EVERY_SETTING], ids=["fleet", "every-setting"])
def test_every_vllm_argument_is_a_vllm_serve_flag_of_0_33_taking_a_value_as_it_does(registry, toml):
    known = flags()
    fleet = read(registry, toml.read_bytes())
    assert fleet.failures == ()
    for plan in fleet.plans.values():
        [doc] = yaml.safe_load_all(manifest_yaml("vllm-args", plan, fleet.settings))
        args = doc["args"]
        assert args[0] == plan.served_model and not args[0].startswith("-")  # the positional model_tag
        for flag, valued in vllm_flags_used(args[1:]):
            assert flag in known, f"{flag} is not a flag of vLLM 0.33"
            assert valued == known[flag], f"{flag} {'takes' if known[flag] else 'takes no'} value"


def test_the_every_setting_file_gives_each_flag_kvplan_writes(registry):
    fleet = read(registry, EVERY_SETTING.read_bytes())
    used = {
        flag
        for plan in fleet.plans.values()
        for flag, _ in vllm_flags_used(
            yaml.safe_load(manifest_yaml("vllm-args", plan, fleet.settings))["args"]
        )
    }
    source = (Path(__file__).parents[2] / "service/kvplan/core/autoscale/manifests.py").read_text()
    written = set(re.findall(r'"(--[a-z-]+)', source))
    assert written - {"--revision"} <= used  # --revision: a Hub model's, checked below


def test_a_preset_served_under_its_own_name_is_still_served_from_its_repository(registry):
    fleet = read(registry, EVERY_SETTING.read_bytes())
    plan = fleet.plans[("lab", "every-flag")]
    [doc] = yaml.safe_load_all(manifest_yaml("vllm-args", plan, fleet.settings))
    assert doc["args"][:2] == ["meta-llama/Llama-3.1-8B", "--served-model-name=llama"]


def test_a_hub_model_pinned_at_a_revision_is_served_at_it(fleet):
    plan = plan_of(fleet, "serving/llama-8b-h100")
    hub = {"repo_id": "acme/llama", "revision": "v1.2", "sha": "a" * 40, "from_cache": True}
    pinned = msgspec.structs.replace(
        plan,
        spec=msgspec.structs.replace(plan.spec, model="acme/llama@v1.2"),
        labels={**plan.labels, "hub": hub},
        served_model="acme/llama",
        model_name="acme/llama",
    )
    [doc] = yaml.safe_load_all(manifest_yaml("vllm-args", pinned, fleet.settings))
    assert doc["args"][:3] == ["acme/llama", "--served-model-name=acme/llama", "--revision=v1.2"]
    assert flags()["--revision"]  # a flag of vLLM 0.33 that takes a value
    unpinned = msgspec.structs.replace(pinned, spec=msgspec.structs.replace(plan.spec, model="acme/llama"))
    [doc] = yaml.safe_load_all(manifest_yaml("vllm-args", unpinned, fleet.settings))
    assert not any(a.startswith("--revision") for a in doc["args"])


def test_a_cooldown_over_an_hour_is_the_longest_window_kubernetes_takes(registry):
    fleet = read(registry, EVERY_SETTING.read_bytes())
    assert fleet.settings.cooldown_seconds > 3600
    plan = fleet.plans[("lab", "every-flag")]
    text = manifest_yaml("hpa", plan, fleet.settings)
    hpa, _ = yaml.safe_load_all(text)
    assert hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 3600
    assert "not cooldown_seconds (7200)" in text
    [so] = yaml.safe_load_all(manifest_yaml("keda", plan, fleet.settings))
    assert so["spec"]["cooldownPeriod"] == 7200
    behavior = so["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert behavior["scaleDown"]["stabilizationWindowSeconds"] == 3600


# Through HTTP -------------------------------------------------------------------------------------


def manifests_url(name: str) -> str:
    return f"/v1/deployments/{name}/manifests"


@pytest.mark.parametrize(
    ("kind", "flavor"),
    [(k, None) for k in MANIFEST_KINDS if k != "epp"] + [("epp", f) for f in (None, *EPP_FLAVORS)],
)
def test_each_kind_answers_its_yaml(client, fleet, kind, flavor):
    params = {"kind": kind, **({"flavor": flavor} if flavor else {})}
    for name in NAMES:
        r = client.get(manifests_url(name), params=params)
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/yaml")  # see routes/deployments.py YAML
        assert r.text == manifest_yaml(kind, plan_of(fleet, name), fleet.settings, flavor)


@pytest.mark.parametrize("kind", [None, "helm"])
def test_an_unknown_or_missing_kind_is_a_400_naming_kind_and_the_kinds_there_are(client, kind):
    r = client.get(manifests_url(NAMES[0]), params={"kind": kind} if kind else {})
    assert r.status_code == 400
    problem = r.json()
    assert problem["field"] == "kind"
    assert all(k in problem["detail"] for k in MANIFEST_KINDS)


def test_an_unknown_flavor_is_a_400_naming_flavor_and_the_flavors_there_are(client):
    r = client.get(manifests_url(NAMES[0]), params={"kind": "epp", "flavor": "envoy"})
    assert r.status_code == 400
    problem = r.json()
    assert problem["field"] == "flavor"
    assert all(f in problem["detail"] for f in EPP_FLAVORS)


def test_an_unknown_deployment_is_a_404_with_the_known_ones(client):
    r = client.get(manifests_url("serving/llama-8b"), params={"kind": "keda"})
    assert r.status_code == 404
    problem = r.json()
    assert problem["field"] == "deployment"
    assert sorted(problem["valid"]) == sorted(NAMES)
    assert problem["suggestions"] == ["serving/llama-8b-h100"]
