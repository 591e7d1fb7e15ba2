"""`kvplan deployments` plans a deployments file as the service does and prints what
/v1/deployments answers, exiting 1 when the file or a deployment of it cannot be planned (a CI
check of a ConfigMap's file); `kvplan manifests` prints the YAML the manifests route answers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar.testing import TestClient

from kvplan.api.app import create_app
from kvplan.api.settings import Settings
from kvplan.cli import main
from kvplan.presets import Registry
from kvplan.services.manifests import EPP_FLAVORS, MANIFEST_KINDS

FLEET = Path(__file__).parent / "data" / "deployments.toml"
NAMES = ["research/gpt-oss-120b-h100", "research/granite-4-h-small", "serving/deepseek-v3-h200"]
ONE_FAILS = """
[[deployment]]
namespace = "serving"
name = "fits"
model = "llama-3.1-8b"
gpu = "h100-sxm-80gb"
max_replicas = 4

[[deployment]]
namespace = "serving"
name = "upside-down"
model = "llama-3.1-8b"
gpu = "h100-sxm-80gb"
min_replicas = 3
max_replicas = 2
"""


@pytest.fixture(autouse=True)
def no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KVPLAN_DEPLOYMENTS", raising=False)
    monkeypatch.delenv("KVPLAN_EXTRA_PRESETS", raising=False)


@pytest.fixture(scope="module")
def client(registry: Registry) -> Iterator[TestClient]:
    with TestClient(create_app(Settings(deployments=str(FLEET)), registry=registry)) as c:
        yield c


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """The command's exit code and what it wrote (not what the test's service logged before)."""
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_file_that_plans_prints_the_routes_text_and_exits_0(capsys, client):
    code, out, _ = run(capsys, "deployments", str(FLEET))
    assert code == 0
    route = client.get("/v1/deployments", params={"format": "text"}).text
    # The route says how its last reload went; the command read the file once, now.
    assert out.splitlines() == [line for line in route.splitlines() if not line.startswith("last reading:")]


def test_its_json_is_the_routes_but_for_when_it_was_read(capsys, client):
    code, out, _ = run(capsys, "deployments", str(FLEET), "--json")
    assert code == 0
    mine, route = json.loads(out), client.get("/v1/deployments").json()
    assert mine["last_reload"] is None and route["last_reload"]["successful"]
    for answer in (*mine["deployments"], *route["deployments"]):
        answer.pop("planned_at")
    assert {k: v for k, v in mine.items() if k != "last_reload"} == {
        k: v for k, v in route.items() if k != "last_reload"
    }


def test_the_file_defaults_to_kvplan_deployments(capsys, monkeypatch):
    monkeypatch.setenv("KVPLAN_DEPLOYMENTS", str(FLEET))
    assert run(capsys, "deployments") == run(capsys, "deployments", str(FLEET))


def test_without_a_file_it_says_to_name_one_and_exits_2(capsys):
    code, out, err = run(capsys, "deployments")
    assert (code, out) == (2, "")
    assert "KVPLAN_DEPLOYMENTS" in err


def test_a_deployment_that_fails_is_named_beside_the_plans_and_exits_1(capsys, tmp_path):
    (tmp_path / "d.toml").write_text(ONE_FAILS)
    code, out, _ = run(capsys, "deployments", str(tmp_path / "d.toml"))
    assert code == 1
    assert "serving/fits" in out
    assert "! serving/upside-down: max_replicas: is 2, below min_replicas (3)" in out


@pytest.mark.parametrize(
    ("content", "said"),
    [(None, "No such file or directory"), ("[[deployment]\n", "not TOML"), ("[deploy]\n", "[[deployment]]")],
    ids=["missing", "not-toml", "unknown-table"],
)
def test_a_file_that_cannot_be_used_exits_1_saying_why(capsys, tmp_path, content, said):
    path = tmp_path / "d.toml"
    if content is not None:
        path.write_text(content)
    code, out, _ = run(capsys, "deployments", str(path))
    assert code == 1
    assert "no deployment is planned" in out and said in out


@pytest.mark.parametrize(
    ("kind", "flavor"),
    [(k, None) for k in MANIFEST_KINDS if k != "epp"] + [("epp", f) for f in (None, *EPP_FLAVORS)],
)
def test_manifests_prints_the_yaml_the_route_answers(capsys, client, kind, flavor):
    for name in NAMES:
        argv = ["manifests", kind, name, "--deployments", str(FLEET)] + (
            ["--flavor", flavor] if flavor else []
        )
        code, out, _ = run(capsys, *argv)
        params = {"kind": kind, **({"flavor": flavor} if flavor else {})}
        assert code == 0
        assert out == client.get(f"/v1/deployments/{name}/manifests", params=params).text


def test_manifests_reads_the_file_kvplan_deployments_names(capsys, monkeypatch):
    monkeypatch.setenv("KVPLAN_DEPLOYMENTS", str(FLEET))
    code, out, _ = run(capsys, "manifests", "keda", NAMES[0])
    assert code == 0 and out.startswith(f"# kvplan keda for {NAMES[0]}")


def test_manifests_of_a_kind_that_is_not_one_exits_2_with_the_kinds(capsys):
    with pytest.raises(SystemExit) as exit_:
        run(capsys, "manifests", "helm", NAMES[0], "--deployments", str(FLEET))
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "invalid choice: 'helm'" in err
    assert all(kind in err for kind in ("prometheusrule", "keda", "hpa", "epp", "vllm-args"))


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["epp", NAMES[0], "--flavor", "envoy"], "flavor: 'envoy' is not one; valid: llm-d, gie"),
        (["keda", "serving/llama-8b"], "did you mean serving/llama-8b-h100?"),
        (["keda", "llama-8b-h100"], "deployment: 'llama-8b-h100' is not NAMESPACE/NAME"),
    ],
    ids=["flavor", "deployment", "no-namespace"],
)
def test_manifests_of_what_is_not_one_exits_1_naming_it(capsys, argv, said):
    code, out, err = run(capsys, "manifests", *argv, "--deployments", str(FLEET))
    assert (code, out) == (1, "")
    assert said in err


def test_manifests_of_a_deployment_that_fails_exits_1_saying_why(capsys, tmp_path):
    (tmp_path / "d.toml").write_text(ONE_FAILS)
    code, out, err = run(
        capsys, "manifests", "keda", "serving/upside-down", "--deployments", str(tmp_path / "d.toml")
    )
    assert (code, out) == (1, "")
    assert "serving/upside-down is not planned: max_replicas: is 2, below min_replicas (3)" in err
    code, out, _ = run(capsys, "manifests", "keda", "serving/fits", "--deployments", str(tmp_path / "d.toml"))
    assert code == 0 and "name: fits" in out
