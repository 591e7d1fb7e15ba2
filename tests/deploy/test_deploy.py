"""deploy/ validated offline: the overlays build, every object validates against the Kubernetes
schemas (kubernetes-validate ships them), probes, ports, user and command match the app and the
image, the deployments file the app is given plans, the dashboard and alerts query metrics the app
really exports (the deployments' rules being what kvplan generates), and hadolint passes."""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml
from litestar.testing import TestClient

from kvplan.api.app import create_app
from kvplan.api.settings import Settings
from kvplan.cli import main
from kvplan.presets import load_registry
from tests.deploy.image import ROOT, dockerfile_runtime
from tests.deploy.schemas import CRD_SCHEMAS, K8S_VERSION, PROMETHEUS_RULE
from tests.metrics import metric_names_in, names_in_exposition
from tests.seed import C

DEPLOY = ROOT / "deploy"
KUBECTL = shutil.which("kubectl")


def build(overlay: str) -> list[dict]:
    if KUBECTL is None:
        pytest.skip("kubectl (with kustomize) is not installed")
    out = subprocess.run(
        [KUBECTL, "kustomize", str(DEPLOY / "overlays" / overlay)], capture_output=True, text=True, check=True
    ).stdout
    return [d for d in yaml.safe_load_all(out) if d]


@pytest.mark.parametrize("overlay", ["dev", "prod"])
def test_overlay_builds_and_every_object_validates(overlay):
    objects = build(overlay)
    kinds = {o["kind"] for o in objects}
    assert {
        "Deployment",
        "Service",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
        "ServiceMonitor",
        "ConfigMap",
    } <= kinds
    for o in objects:
        if o["kind"] in CRD_SCHEMAS:
            jsonschema.validate(o, CRD_SCHEMAS[o["kind"]])
        else:
            kubernetes_validate.validate(o, K8S_VERSION, strict=True)
        assert o["metadata"].get("namespace") == f"kvplan{'-dev' if overlay == 'dev' else ''}"


def deployment(overlay: str = "prod") -> dict:
    return next(o for o in build(overlay) if o["kind"] == "Deployment")


def test_probes_paths_and_port_match_the_app():
    app = create_app(registry=load_registry(extra_dir=""))
    paths = {r.path for r in app.routes}
    c = deployment()["spec"]["template"]["spec"]["containers"][0]
    port = {p["name"]: p["containerPort"] for p in c["ports"]}
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        assert c[probe]["httpGet"]["path"] in paths
        assert c[probe]["httpGet"]["port"] == "http"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert port["http"] == dockerfile_runtime()["expose"] == int(c["args"][c["args"].index("--port") + 1])
    with TestClient(app) as client:
        for probe in ("readinessProbe", "livenessProbe"):
            assert client.get(c[probe]["httpGet"]["path"]).status_code == 200


def test_container_runs_the_images_entry_point_hardened():
    d = deployment()
    pod = d["spec"]["template"]["spec"]
    c = pod["containers"][0]
    image = dockerfile_runtime()
    assert [*c["command"], *c["args"]] == image["cmd"]
    uid = int(image["user"].split(":")[0])
    assert pod["securityContext"]["runAsUser"] == uid and pod["securityContext"]["runAsNonRoot"]
    sc = c["securityContext"]
    assert (
        sc["readOnlyRootFilesystem"]
        and sc["capabilities"]["drop"] == ["ALL"]
        and not sc["allowPrivilegeEscalation"]
    )
    env = {e["name"]: e["value"] for e in c["env"]}
    pre_stop = float(
        re.search(r"sleep\((\d+(?:\.\d+)?)\)", " ".join(c["lifecycle"]["preStop"]["exec"]["command"])).group(
            1
        )
    )
    assert pod["terminationGracePeriodSeconds"] > pre_stop + int(env["KVPLAN_DRAIN_SECONDS"])
    assert c["resources"]["requests"]["cpu"] and c["resources"]["limits"]["memory"]


def test_the_presets_config_map_is_mounted_where_the_app_reads_extra_presets(tmp_path):
    d = deployment()
    c = d["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in c["env"]}
    mount = next(m for m in c["volumeMounts"] if m["mountPath"] == env["KVPLAN_EXTRA_PRESETS"])
    volume = next(v for v in d["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"])
    cm = next(
        o
        for o in build("prod")
        if o["kind"] == "ConfigMap" and o["metadata"]["name"] == volume["configMap"]["name"]
    )
    for name, text in cm["data"].items():
        (tmp_path / name).write_text(text)
    reg = load_registry(extra_dir=tmp_path)  # the shipped extra presets load
    assert "l20-48gb" in reg.gpus


def test_the_deployments_config_map_is_mounted_where_kvplan_deployments_points_and_plans(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.delenv("KVPLAN_EXTRA_PRESETS", raising=False)  # the built-in presets plan it
    d = deployment()
    c = d["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in c["env"]}
    directory, _, file = env["KVPLAN_DEPLOYMENTS"].rpartition("/")
    mount = next(m for m in c["volumeMounts"] if m["mountPath"] == directory)
    assert "subPath" not in mount  # an edit of the ConfigMap reaches the mounted directory
    volume = next(v for v in d["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"])
    cm = next(
        o
        for o in build("prod")
        if o["kind"] == "ConfigMap" and o["metadata"]["name"] == volume["configMap"]["name"]
    )
    assert cm["metadata"]["name"] == "kvplan-deployments"  # no hash suffix: edited in place
    (tmp_path / file).write_text(cm["data"][file])
    assert main(["deployments", str(tmp_path / file)]) == 0, capsys.readouterr().out  # every one plans


def test_the_service_monitor_keeps_the_deployment_series_own_labels():
    [monitor] = [o for o in build("prod") if o["kind"] == "ServiceMonitor"]
    assert all(e["honorLabels"] for e in monitor["spec"]["endpoints"])


@functools.cache
def exported_metric_names() -> set[str]:
    """Every metric name the app exports as deployed: with the base's deployments file."""
    settings = Settings(deployments=str(DEPLOY / "base" / "deployments.toml"))
    app = create_app(settings, registry=load_registry(extra_dir=""))
    with TestClient(app) as client:
        client.get("/v1/budget", params=C)  # group C: a warning
        client.get("/v1/budget", params={"model": "nope"})
        text = client.get("/metrics").text
    return names_in_exposition(text)


def test_every_dashboard_query_names_a_metric_the_app_exports():
    dash = json.loads((DEPLOY / "monitoring" / "grafana-dashboard.json").read_text())
    exported = exported_metric_names()
    titles = " ".join(p["title"].lower() for p in dash["panels"])
    for needed in ("request rate", "error ratio", "p50", "p99", "core compute", "warnings", "registry"):
        assert needed in titles
    for panel in dash["panels"]:
        for target in panel["targets"]:
            names = metric_names_in(target["expr"])
            assert names, target["expr"]
            assert names <= exported, (panel["title"], names - exported)


RULE_FILES = {
    "prometheusrule.yaml": {"KvplanHighErrorRatio", "KvplanHighLatency", "KvplanDeploymentsReloadFailed"},
    "kvplan-deployments-rules.yaml": {"KvplanDesiredReplicasAboveMax", "KvplanEngineBlocksDifferFromPlan"},
}


@pytest.mark.parametrize("file", RULE_FILES)
def test_alert_rules_parse_and_query_exported_metrics(tmp_path, file):
    rule = yaml.safe_load((DEPLOY / "monitoring" / file).read_text())
    jsonschema.validate(rule, PROMETHEUS_RULE)
    exported = exported_metric_names()
    rules = [r for g in rule["spec"]["groups"] for r in g["rules"]]
    assert RULE_FILES[file] <= {r.get("alert") for r in rules}
    for r in rules:
        names = metric_names_in(r["expr"])
        # an alert on no kvplan metric would pass the subset check vacuously
        assert names or "record" in r, r["expr"]
        assert names <= exported, (r.get("alert") or r["record"], names - exported)
        assert r["expr"].count("(") == r["expr"].count(")")
    promtool = shutil.which("promtool")
    if promtool:  # the full PromQL parse where Prometheus' own tool is installed
        rules = tmp_path / "rules.yaml"
        rules.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
        subprocess.run([promtool, "check", "rules", str(rules)], check=True, capture_output=True)


def test_the_deployments_rules_are_the_ones_kvplan_generates_now():
    committed = (DEPLOY / "monitoring" / "kvplan-deployments-rules.yaml").read_text()
    settings = Settings(deployments=str(DEPLOY / "base" / "deployments.toml"))
    with TestClient(create_app(settings, registry=load_registry(extra_dir=""))) as client:
        deployments = client.get("/v1/deployments").json()["deployments"]
        assert deployments
        for d in deployments:
            url = f"/v1/deployments/{d['namespace']}/{d['deployment']}/manifests"
            assert client.get(url, params={"kind": "prometheusrule"}).text == committed, (
                "regenerate it: kvplan manifests prometheusrule "
                f"{d['namespace']}/{d['deployment']} --deployments deploy/base/deployments.toml"
                " > deploy/monitoring/kvplan-deployments-rules.yaml"
            )


def test_dockerfile_passes_hadolint_and_is_pinned_and_multi_stage():
    hadolint = shutil.which("hadolint") or str(Path(__import__("sys").executable).parent / "hadolint")
    subprocess.run([hadolint, str(ROOT / "Dockerfile")], check=True, capture_output=True)
    text = (ROOT / "Dockerfile").read_text()
    assert text.count("\nFROM ") + text.startswith("FROM ") >= 2
    assert re.match(r"python:3\.11\.\d+-slim", dockerfile_runtime()["base"])
    assert "--require-hashes -r requirements.lock" in text
    ignore = (ROOT / ".dockerignore").read_text()
    assert ignore.splitlines()[1] == "*" or "*" in ignore.splitlines()


def test_image_cmd_user_and_port_match_the_apps_entry_point():
    image = dockerfile_runtime()
    assert image["cmd"][:2] == ["kvplan", "serve"]
    from kvplan.cli import main  # the console script `kvplan` is kvplan.cli:main

    assert callable(main)
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'kvplan = "kvplan.cli:main"' in pyproject
    assert (
        image["env"]["KVPLAN_PORT"] == str(image["expose"]) == image["cmd"][image["cmd"].index("--port") + 1]
    )
    assert image["user"].split(":")[0].isdigit() and image["user"] != "0"
