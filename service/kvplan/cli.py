"""`kvplan serve` runs the service; `kvplan budget` and `kvplan per-token` answer one question
without a server (key=value arguments, the same fields as the API); `kvplan deployments` plans a
deployments file (a check for CI) and `kvplan manifests` prints a config generated from one of its
plans, as /v1/deployments does."""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Callable


def _serve(args: argparse.Namespace) -> int:
    """Run the HTTP service under uvicorn; with several workers, first point prometheus-client's
    multiprocess mode at a fresh directory so a scrape sums every worker. Returns the exit code."""
    workers = args.workers
    if workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # Set before prometheus_client is imported anywhere, so every worker shares the directory.
        metrics_dir = tempfile.mkdtemp(prefix="kvplan-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
        atexit.register(shutil.rmtree, metrics_dir, ignore_errors=True)
    os.environ["KVPLAN_HOST"], os.environ["KVPLAN_PORT"] = args.host, str(args.port)
    import uvicorn

    from kvplan.api.settings import Settings

    settings = Settings()
    uvicorn.run(
        "kvplan.api.app:create_app",
        factory=True,
        host=args.host,
        port=args.port,
        workers=workers,
        loop="uvloop",
        # httptools, with a size and a time bound on each request head (see kvplan.api.protocol).
        http="kvplan.api.protocol:BoundedHttpToolsProtocol",
        lifespan="on",
        access_log=False,
        log_config=None,
        timeout_keep_alive=settings.keep_alive_seconds,  # type: ignore[arg-type]  # a float works
        timeout_graceful_shutdown=settings.drain_seconds,
        server_header=False,
    )
    return 0


def _answer(compute: Callable[[], str], hub_hint: str = "") -> int:
    """Print what `compute` answers, or one `error:` line for bad input or an unreachable Hub:
    exit 1 for input to fix, 2 for a Hub to retry."""
    import msgspec

    from kvplan.core.errors import KvplanError
    from kvplan.hub import HubError, HubUnavailable

    try:
        out = compute()
    except (KvplanError, msgspec.ValidationError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except HubError as e:
        print(f"error: {e.field}: {e.reason}{hub_hint}", file=sys.stderr)
        return 2 if isinstance(e, HubUnavailable) else 1
    sys.stdout.write(out)
    return 0


def _one_shot(kind: str, pairs: list[str], as_json: bool) -> int:
    """Answer one budget or per-token question from key=value pairs, as text or JSON, without the HTTP
    layer; the same decoding and services as the GET routes. Returns the exit code."""
    from kvplan.presets import load_registry
    from kvplan.render import budget_text, per_token_text
    from kvplan.schemas import BudgetRequest, PerTokenRequest
    from kvplan.services.answers import budget_answer, encode_answer, per_token_answer
    from kvplan.services.query import decode_pairs

    reg = load_registry()
    kv = [p.split("=", 1) for p in pairs]
    if any(len(x) != 2 for x in kv):
        print("arguments are key=value pairs, e.g. model=llama-3-70b gpu=h100-sxm-80gb", file=sys.stderr)
        return 2

    def compute() -> str:
        if kind == "budget":
            b, labels = budget_answer(reg, decode_pairs([(k, v) for k, v in kv], BudgetRequest), not as_json)
            if as_json:
                return encode_answer(labels, b).decode() + "\n"
            gpu = reg.gpus.get(labels["gpu"] or "")
            return budget_text(b, labels["model"], labels["gpu"], reg.version, gpu_preset=gpu)
        pt, labels = per_token_answer(
            reg, decode_pairs([(k, v) for k, v in kv], PerTokenRequest), not as_json
        )
        if as_json:
            return encode_answer(labels, pt).decode() + "\n"
        return per_token_text(pt, labels["model"], labels["engine"], reg.version)

    return _answer(compute)


def _reconcile(args: argparse.Namespace) -> int:
    """Reconcile a log file (and optionally a /metrics scrape) against the plan, as POST /v1/reconcile
    does, and print the text or JSON answer. Returns the exit code."""
    import msgspec

    from kvplan.presets import load_registry
    from kvplan.render import reconcile_text
    from kvplan.schemas.reconcile import ReconcileOverrides
    from kvplan.services.reconcile import reconcile

    try:
        from pathlib import Path

        text = sys.stdin.read() if args.log == "-" else Path(args.log).read_text(encoding="utf-8")
        metrics = Path(args.metrics).read_text(encoding="utf-8") if args.metrics else None
    except (OSError, UnicodeDecodeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    def compute() -> str:
        given = {
            "model": args.model,
            "engine": args.engine,
            "gpu": args.gpu,
            "target_concurrency": args.target,
        }
        overrides = msgspec.convert({k: v for k, v in given.items() if v is not None}, ReconcileOverrides)
        result = reconcile(load_registry(), text, metrics, overrides)
        return msgspec.json.encode(result).decode() + "\n" if args.json else reconcile_text(result)

    return _answer(compute, " (give --model a preset id to plan offline)")


def _deployments_file(given: str | None) -> str:
    path = given or os.environ.get("KVPLAN_DEPLOYMENTS", "")
    if not path:
        print("error: name the deployments file (or set KVPLAN_DEPLOYMENTS)", file=sys.stderr)
    return path


def _deployments(args: argparse.Namespace) -> int:
    """Plan a deployments file as the service does and print every plan (the text or JSON of
    /v1/deployments, without a reload's state): exit 1 when the file or any deployment of it cannot
    be planned, so CI can check a ConfigMap's file before it is applied; 2 without a file."""
    import msgspec

    from kvplan.presets import load_registry
    from kvplan.render_deployments import deployments_text
    from kvplan.services.deployments import deployment_list, plan_file

    path = _deployments_file(args.file)
    if not path:
        return 2
    fleet, failures = plan_file(load_registry(), path)
    result = deployment_list(fleet, failures, path, None)
    sys.stdout.write(msgspec.json.encode(result).decode() + "\n" if args.json else deployments_text(result))
    return 1 if failures else 0


def _manifests(args: argparse.Namespace) -> int:
    """Print the config GET /v1/deployments/{namespace}/{name}/manifests answers for a deployment of
    the file: exit 1 for a kind, flavor or deployment that is not one, or a deployment (or file)
    that cannot be planned; 2 without a file."""
    from kvplan.core.errors import KvplanError
    from kvplan.presets import load_registry
    from kvplan.services.deployments import lookup, plan_file
    from kvplan.services.manifests import manifest_yaml

    path = _deployments_file(args.deployments)
    if not path:
        return 2
    namespace, _, name = args.deployment.partition("/")

    def compute() -> str:
        if not name:
            raise KvplanError("deployment", f"{args.deployment!r} is not NAMESPACE/NAME")
        fleet, failures = plan_file(load_registry(), path)
        failed = next((f for f in failures if f.deployment in (None, args.deployment)), None)
        if failed is not None and failed.deployment is None:
            raise KvplanError(failed.field, failed.reason)
        if failed is not None:
            why = f"{failed.field}: {failed.reason}"
            raise KvplanError("deployment", f"{args.deployment} is not planned: {why}")
        assert fleet is not None
        return manifest_yaml(args.kind, lookup(fleet, namespace, name, True), fleet.settings, args.flavor)

    return _answer(compute)


def openapi_json() -> str:
    import msgspec

    from kvplan.api.app import create_app
    from kvplan.presets import load_registry

    app = create_app(registry=load_registry(extra_dir=""))
    raw = msgspec.json.encode(app.openapi_schema.to_schema(), order="sorted")
    return msgspec.json.format(raw, indent=2).decode() + "\n"


def _plan(argv: list[str]) -> int:
    """`kvplan plan [key=value …] [--json] -- vllm serve …`: the command after `--` (or a
    `command=…` pair: vLLM's non-default args line), planned as POST /v1/plan plans it."""
    import msgspec

    from kvplan.presets import load_registry
    from kvplan.render import budget_text, command_text
    from kvplan.schemas.plan import PlanRequest
    from kvplan.services.answers import encode_answer
    from kvplan.services.plan import budget_question, plan_budget
    from kvplan.services.query import decode_pairs

    ours, _, words = _split(argv)
    as_json = "--json" in ours
    pairs = [p.split("=", 1) for p in ours if p != "--json"]
    if any(len(p) != 2 for p in pairs) or not (words or any(k == "command" for k, _ in pairs)):
        print("usage: kvplan plan [key=value …] [--json] -- vllm serve MODEL --flag …", file=sys.stderr)
        return 2
    if words:
        import shlex

        pairs.append(["command", shlex.join(words)])
    reg = load_registry()

    def compute() -> str:
        req = decode_pairs([(k, v) for k, v in pairs], PlanRequest)
        question, read = budget_question(req, {k for k, _ in pairs})
        b, labels, command = plan_budget(reg, question, read, not as_json)
        if as_json:
            return encode_answer({**labels, "command": msgspec.to_builtins(command)}, b).decode() + "\n"
        gpu = labels["gpu"]
        plan = budget_text(b, labels["model"], gpu, reg.version, gpu_preset=reg.gpus.get(gpu or ""))
        return command_text(command).lstrip("\n") + "\n" + plan

    return _answer(compute)


def _compiled(action: str) -> int:
    """`kvplan compiled build|status`: exit 1, with the reason, when the build cannot be made."""
    from kvplan import compiled

    if action == "status":
        print(compiled.STATUS)
        return 0
    try:
        print(compiled.build())
    except compiled.BuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def _split(argv: list[str]) -> tuple[list[str], str, list[str]]:
    if "--" not in argv:
        return argv, "", []
    i = argv.index("--")
    return argv[:i], "--", argv[i + 1 :]


def main(argv: list[str] | None = None) -> int:
    """The command line: `serve`, one-shot `budget`/`per-token`/`plan`, `reconcile`, `deployments`,
    `manifests`, `openapi` and `compiled`. Returns the process's exit code."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["plan"]:  # its own syntax: everything after `--` is vLLM's, untouched
        return _plan(argv[1:])
    parser = argparse.ArgumentParser(prog="kvplan", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the HTTP service")
    serve.add_argument("--host", default=os.environ.get("KVPLAN_HOST", "127.0.0.1"))
    serve.add_argument("--port", type=int, default=int(os.environ.get("KVPLAN_PORT", "8000")))
    serve.add_argument("--workers", type=int, default=int(os.environ.get("KVPLAN_WORKERS", "1")))
    for name in ("budget", "per-token"):
        p = sub.add_parser(name, help=f"answer one {name} question and exit")
        p.add_argument("pairs", nargs="+", metavar="key=value")
        p.add_argument("--json", action="store_true", help="JSON instead of text")
    rec = sub.add_parser("reconcile", help="read a vLLM start-up log and put kvplan's plan beside it")
    rec.add_argument("log", help="the engine's log file (- for standard input)")
    rec.add_argument("--metrics", help="a scrape of the engine's /metrics")
    rec.add_argument("--model", help="a preset or Hub id, when the log names a local path")
    rec.add_argument("--engine", help="a profile or vLLM version, when the log prints none")
    rec.add_argument("--gpu", help="a GPU preset, when the log prints no total memory")
    rec.add_argument("--target", type=int, help="a concurrency to size the what-ifs for")
    rec.add_argument("--json", action="store_true", help="JSON instead of text")
    dep = sub.add_parser("deployments", help="plan a deployments file, print each plan; exit 1 if one fails")
    dep.add_argument("file", nargs="?", help="the deployments file (default: $KVPLAN_DEPLOYMENTS)")
    dep.add_argument("--json", action="store_true", help="/v1/deployments' JSON instead of text")
    from kvplan.services.manifests import MANIFEST_KINDS

    man = sub.add_parser("manifests", help="print a config generated from a deployment's plan")
    man.add_argument("kind", choices=MANIFEST_KINDS, help="the config, as GET …/manifests?kind= answers it")
    man.add_argument("deployment", metavar="NAMESPACE/NAME")
    man.add_argument("--deployments", help="the deployments file (default: $KVPLAN_DEPLOYMENTS)")
    man.add_argument("--flavor", help="the endpoint picker's (kind epp): llm-d, the default, or gie")
    sub.add_parser("plan", help="plan a `vllm serve` command: kvplan plan gpu=… -- vllm serve MODEL --flag …")
    sub.add_parser("openapi", help="print the OpenAPI document (make openapi writes openapi/openapi.json)")
    comp = sub.add_parser("compiled", help="the simulator compiled by mypyc: build it, or say which one runs")
    comp.add_argument("action", choices=("build", "status"))
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "reconcile":
        return _reconcile(args)
    if args.command == "deployments":
        return _deployments(args)
    if args.command == "manifests":
        return _manifests(args)
    if args.command == "openapi":
        sys.stdout.write(openapi_json())
        return 0
    if args.command == "compiled":
        return _compiled(args.action)
    return _one_shot(args.command, args.pairs, args.json)


if __name__ == "__main__":
    sys.exit(main())
