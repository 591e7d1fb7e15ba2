"""`kvplan serve` runs the service; `kvplan budget` and `kvplan per-token` answer one question
without a server (key=value arguments, the same fields as the API)."""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import sys
import tempfile


def _serve(args: argparse.Namespace) -> int:
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
        http="httptools",
        lifespan="on",
        access_log=False,
        log_config=None,
        timeout_graceful_shutdown=settings.drain_seconds,
        server_header=False,
    )
    return 0


def _one_shot(kind: str, pairs: list[str], as_json: bool) -> int:
    import msgspec

    from kvplan.api.errors import problem_for
    from kvplan.api.http import decode_pairs, envelope
    from kvplan.api.render import budget_text, per_token_text
    from kvplan.api.resolve import budget_input, per_token_args, resolve_model
    from kvplan.api.schemas import BudgetRequest, PerTokenRequest
    from kvplan.core.budget import compute_budget
    from kvplan.core.pertoken import per_token
    from kvplan.core.profiles import DEFAULT_PROFILE_ID
    from kvplan.presets import load_registry

    reg = load_registry()
    try:
        kv = [p.split("=", 1) for p in pairs]
        if any(len(x) != 2 for x in kv):
            print("arguments are key=value pairs, e.g. model=llama-3-70b gpu=h100-sxm-80gb", file=sys.stderr)
            return 2
        if kind == "budget":
            req = decode_pairs([(k, v) for k, v in kv], BudgetRequest)
            inp, model, gpu = budget_input(reg, req)
            b = compute_budget(inp, explain=not as_json)
            if as_json:
                head = {"model": model.label, "gpu": gpu, "registry_version": reg.version}
                sys.stdout.write(envelope(head, msgspec.json.encode(b)).decode() + "\n")
            else:
                sys.stdout.write(budget_text(b, model.label, gpu, reg.version))
        else:
            ptr = decode_pairs([(k, v) for k, v in kv], PerTokenRequest)
            model = resolve_model(reg, ptr.model)
            dtype, skip, par = per_token_args(ptr)
            pt = per_token(model.geometry, dtype, skip, par, ptr.context_tokens, explain=not as_json)
            engine = ptr.engine or DEFAULT_PROFILE_ID
            if as_json:
                head = {"model": model.label, "engine": engine, "registry_version": reg.version}
                sys.stdout.write(envelope(head, msgspec.json.encode(pt)).decode() + "\n")
            else:
                sys.stdout.write(per_token_text(pt, model.label, engine, reg.version))
    except Exception as e:
        p = problem_for(e)
        if p.status >= 500:
            raise
        print(f"error: {p.detail}", file=sys.stderr)
        return 1
    return 0


def openapi_json() -> str:
    import msgspec

    from kvplan.api.app import create_app
    from kvplan.presets import load_registry

    app = create_app(registry=load_registry(extra_dir=""))
    raw = msgspec.json.encode(app.openapi_schema.to_schema(), order="sorted")
    return msgspec.json.format(raw, indent=2).decode() + "\n"


def main(argv: list[str] | None = None) -> int:
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
    sub.add_parser("openapi", help="print the OpenAPI document (make openapi writes openapi/openapi.json)")
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "openapi":
        sys.stdout.write(openapi_json())
        return 0
    return _one_shot(args.command, args.pairs, args.json)


if __name__ == "__main__":
    sys.exit(main())
