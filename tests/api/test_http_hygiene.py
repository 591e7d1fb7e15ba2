"""HTTP itself, on every route: HEAD, OPTIONS, Vary, media types, charset, id lengths, counting of
the router's own answers, and reading the body before an early answer (issue 11). The request
head's size and time bounds need a real socket: tests/server/test_http_hygiene.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from litestar import Litestar, post
from litestar.params import RawBody
from litestar.testing import TestClient, create_test_client
from prometheus_client.parser import text_string_to_metric_families

from kvplan.api.app import create_app
from kvplan.api.hygiene import BODY_MEDIA_TYPES, MAX_ID_CHARS, MAX_PATH_BYTES, RouteHygiene
from kvplan.api.settings import Settings
from kvplan.presets import Registry
from tests.autoscale.conftest import FLEET

BUDGET_Q = "model=llama-3-8b&gpu=h100-sxm-80gb"
DEPLOYMENT = "/v1/deployments/serving/llama-8b-h100"
# One URL answering 200 for every GET route template of the app (a new route must be added here).
GET_URLS = {
    "/v1/per-token": "/v1/per-token?model=llama-3-8b",
    "/v1/budget": f"/v1/budget?{BUDGET_Q}",
    "/v1/fleet": "/v1/fleet?model=llama-3-70b&gpu=h100-sxm-80gb&count=8&context_tokens=8192",
    "/v1/sweep": f"/v1/sweep?{BUDGET_Q}&vary=context_tokens&values=1024,4096",
    "/v1/models": "/v1/models",
    "/v1/models/{model_id}": "/v1/models/llama-3-8b",
    "/v1/gpus": "/v1/gpus",
    "/v1/gpus/{gpu_id}": "/v1/gpus/h100-sxm-80gb",
    "/v1/engines": "/v1/engines",
    "/v1/deployments": "/v1/deployments",
    "/v1/deployments/{namespace}/{name}": DEPLOYMENT,
    "/v1/deployments/{namespace}/{name}/manifests": f"{DEPLOYMENT}/manifests?kind=epp",
    "/healthz": "/healthz",
    "/readyz": "/readyz",
    "/metrics": "/metrics",
    "/": "/",
    "/web/{file_path}": "/web/app.js",
    "/schema": "/schema",
    "/schema/{path}": "/schema/swagger",  # Litestar's own route for render plugins kvplan has not: 404
    "/schema/openapi.json": "/schema/openapi.json",
    "/schema/oauth2-redirect.html": "/schema/oauth2-redirect.html",
    "/schema/assets/{file_path}": "/schema/assets/swagger-ui.css",
}
POST_ROUTES = [
    "/v1/per-token",
    "/v1/budget",
    "/v1/budget/batch",
    "/v1/fleet",
    "/v1/simulate",
    "/v1/models/resolve",
    "/v1/plan",
]
# Answers whose format follows Accept (JSON, or text for Accept: text/plain).
NEGOTIATED = ["/v1/per-token", "/v1/budget", "/v1/fleet", "/v1/sweep", "/v1/models", "/v1/gpus"]
NOT_JSON = [
    "text/plain",
    "text/plain; charset=utf-8",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "application/xml",
    "application/octet-stream",
    "text/json",
    "application/jsonx",
]
JSON_TYPES = ["application/json", "application/json; charset=utf-8", "Application/JSON; Charset=UTF-8", None]


@pytest.fixture(scope="module")
def app(registry: Registry) -> Litestar:
    return create_app(Settings(deployments=str(FLEET)), registry=registry)


@pytest.fixture(scope="module")
def http(app: Litestar) -> Iterator[TestClient]:
    with TestClient(app) as c:
        yield c


@pytest.fixture(autouse=True)
def _healthz_answers_afterwards(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "http" in request.fixturenames:
        c = request.getfixturevalue("http")
        assert c.get("/healthz").status_code == 200


def _get_routes(app: Litestar) -> list[str]:
    return sorted(r.path_format for r in app.routes if "GET" in r.methods)


def _count(text: str, **labels: str) -> float:
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "kvplan_http_requests_total" and all(s.labels.get(k) == v for k, v in labels.items())
    )


def test_the_table_of_get_urls_covers_every_get_route(app):
    assert sorted(GET_URLS) == _get_routes(app)


@pytest.mark.parametrize("template", sorted(GET_URLS))
def test_head_answers_each_get_route_like_get_without_a_body(http, template):
    url = GET_URLS[template]
    get = http.get(url)
    head = http.head(url)
    assert get.status_code == (404 if template == "/schema/{path}" else 200), get.text[:300]
    assert head.status_code == get.status_code
    assert head.content == b""
    assert head.headers["content-type"] == get.headers["content-type"]
    if template != "/metrics":  # the metrics text grows between the two requests
        assert head.headers["content-length"] == get.headers["content-length"]


def test_head_on_a_route_without_get_is_405_naming_what_is_allowed(http):
    r = http.head("/v1/budget/batch")
    assert r.status_code == 405
    assert r.headers["allow"] == "OPTIONS, POST"
    assert r.content == b""


@pytest.mark.parametrize("template", sorted(GET_URLS))
def test_options_names_every_method_of_each_path(app, http, template):
    route = next(r for r in app.routes if r.path_format == template)
    expected = set(route.methods) | {"HEAD", "OPTIONS"}
    r = http.options(GET_URLS[template].split("?")[0])
    assert r.status_code == 204
    assert r.headers["allow"] == ", ".join(sorted(expected))


@pytest.mark.parametrize("path", POST_ROUTES)
def test_options_on_post_routes_names_get_when_the_path_has_one(app, http, path):
    route = next(r for r in app.routes if r.path_format == path)
    methods = set(route.methods) | {"OPTIONS"} | ({"HEAD"} if "GET" in route.methods else set())
    assert http.options(path).headers["allow"] == ", ".join(sorted(methods))


def test_405_allow_names_head_beside_get(http):
    r = http.delete("/v1/budget")
    assert r.status_code == 405
    assert r.headers["allow"] == "GET, HEAD, OPTIONS, POST"
    assert r.headers["content-type"].startswith("application/problem+json")


@pytest.mark.parametrize("path", NEGOTIATED)
@pytest.mark.parametrize("accept", ["application/json", "text/plain"])
def test_answers_that_follow_accept_say_vary_accept(http, path, accept):
    url = GET_URLS[path]
    r = http.get(url, headers={"accept": accept})
    assert r.status_code == 200
    assert r.headers["vary"] == "Accept"
    assert r.headers["content-type"].startswith(
        "text/plain" if accept == "text/plain" else "application/json"
    )


def test_a_304_says_vary_accept_too(http):
    etag = http.get(GET_URLS["/v1/budget"]).headers["etag"]
    r = http.get(GET_URLS["/v1/budget"], headers={"if-none-match": etag})
    assert r.status_code == 304
    assert r.headers["vary"] == "Accept"


@pytest.mark.parametrize("path", [*NEGOTIATED, "/metrics"])
def test_text_answers_name_their_charset_once(http, path):
    r = http.get(GET_URLS[path], headers={"accept": "text/plain"})
    if path == "/v1/sweep":
        r = http.get(GET_URLS[path] + "&format=csv")
    content_type = r.headers["content-type"]
    assert content_type.startswith("text/")
    assert content_type.count("charset") == 1, content_type


# /v1/simulate also reads traces (CSV, JSONL, and curl's form-urlencoded/octet-stream/text sniffed).
JSON_ONLY = [p for p in POST_ROUTES if p != "/v1/simulate"]


@pytest.mark.parametrize("content_type", NOT_JSON)
@pytest.mark.parametrize("path", JSON_ONLY)
def test_a_body_that_is_not_json_gets_415_on_each_post_route(http, path, content_type):
    r = http.post(path, content=b'{"model": "llama-3-8b"}', headers={"content-type": content_type})
    assert r.status_code == 415, r.text
    problem = r.json()
    assert problem["status"] == 415
    assert "application/json" in problem["detail"]
    assert r.headers["accept"] == "application/json"


@pytest.mark.parametrize("content_type", ["application/xml", "multipart/form-data; boundary=x", "text/json"])
def test_simulate_reads_traces_and_json_and_names_them_on_415(http, content_type):
    r = http.post(
        "/v1/simulate",
        content=b"TIMESTAMP,ContextTokens,GeneratedTokens",
        headers={"content-type": content_type},
    )
    assert r.status_code == 415
    assert {"application/json", "text/csv", "application/x-ndjson"} <= {
        t.strip() for t in r.headers["accept"].split(",")
    }


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "x-gzip"])
@pytest.mark.parametrize("path", POST_ROUTES)
def test_a_compressed_body_gets_415_on_each_post_route(http, path, encoding):
    r = http.post(
        path,
        content=b"\x1f\x8b\x08\x00\x00\x00\x00\x00",
        headers={"content-type": "application/json", "content-encoding": encoding},
    )
    assert r.status_code == 415
    assert r.headers["accept-encoding"] == "identity"


def test_a_json_body_in_another_charset_gets_415(http):
    r = http.post(
        "/v1/budget",
        content=b'{"model": "llama-3-8b"}',
        headers={"content-type": "application/json; charset=latin-1"},
    )
    assert r.status_code == 415
    assert "UTF-8" in r.json()["detail"]


@pytest.mark.parametrize("content_type", [*JSON_TYPES, "application/merge-patch+json"])
def test_json_bodies_are_read_with_or_without_a_content_type(http, content_type):
    headers = {"content-type": content_type} if content_type else {}
    body = b'{"model": "llama-3-8b", "gpu": "h100-sxm-80gb"}'
    r = http.post("/v1/budget", content=body, headers=headers)
    assert r.status_code == 200, r.text
    assert r.json()["concurrency"]["guaranteed"] > 0


def test_a_route_chooses_the_media_types_it_reads():
    """A later route (POST /v1/reconcile, a vLLM log as text/plain) names its own media types."""

    @post("/log", opt={BODY_MEDIA_TYPES: ("application/json", "text/plain")}, sync_to_thread=False)
    def read_log(body: RawBody) -> int:
        return len(body)

    with create_test_client([read_log], middleware=[RouteHygiene]) as c:
        assert (
            c.post("/log", content=b"INFO x", headers={"content-type": "text/plain; charset=utf-8"}).text
            == "6"
        )
        assert c.post("/log", content=b"{}", headers={"content-type": "application/json"}).status_code == 201
        r = c.post("/log", content=b"a=1", headers={"content-type": "application/x-www-form-urlencoded"})
        assert r.status_code == 415
        assert r.headers["accept"] == "application/json, text/plain"


@pytest.mark.parametrize("length", [MAX_ID_CHARS + 1, 1000, MAX_PATH_BYTES - 20])
@pytest.mark.parametrize("prefix", ["/v1/models/", "/v1/gpus/"])
def test_long_ids_get_404_without_the_id_echoed(http, prefix, length):
    long_id = "x" * length
    r = http.get(prefix + long_id)
    assert r.status_code == 404
    problem = r.json()
    assert problem["field"] in ("model_id", "gpu_id")
    assert long_id not in r.text
    assert len(r.content) < 1000


@pytest.mark.parametrize("prefix", ["/v1/models/", "/v1/gpus/"])
def test_ids_at_the_limit_are_looked_up(http, prefix):
    r = http.get(prefix + "x" * MAX_ID_CHARS)
    assert r.status_code == 404  # no such preset, said as for any unknown id
    assert len(r.content) < 2000


@pytest.mark.parametrize("length", [MAX_PATH_BYTES + 1, 10_000, 60_000])
def test_paths_over_the_limit_get_414_without_the_path_echoed(http, length):
    r = http.get("/v1/models/" + "y" * length)
    assert r.status_code == 414
    assert len(r.content) < 1000


def test_a_long_query_is_not_a_long_path(http):
    r = http.get(GET_URLS["/v1/budget"] + "&explain=false" * 200)  # 2,800 bytes of query
    assert r.status_code == 200


def test_router_404_and_405_and_414_are_counted(http):
    before = http.get("/metrics").text
    assert http.get("/no/such/route").status_code == 404
    assert http.put("/v1/budget", content=b"{}").status_code == 405
    assert http.get("/v1/models/" + "z" * (MAX_PATH_BYTES + 1)).status_code == 414
    after = http.get("/metrics").text
    assert (
        _count(after, status_code="404", path="<unmatched>")
        == _count(before, status_code="404", path="<unmatched>") + 1
    )
    assert _count(after, status_code="405", path="/v1/budget", method="PUT") == (
        _count(before, status_code="405", path="/v1/budget", method="PUT") + 1
    )
    assert _count(after, status_code="414") == _count(before, status_code="414") + 1


def test_415_and_long_id_404_are_counted_under_their_route(http):
    before = http.get("/metrics").text
    http.post("/v1/budget", content=b"{}", headers={"content-type": "text/plain"})
    http.get("/v1/gpus/" + "g" * 500)
    after = http.get("/metrics").text
    for path, status in (("/v1/budget", "415"), ("/v1/gpus/{gpu_id}", "404")):
        assert (
            _count(after, path=path, status_code=status) == _count(before, path=path, status_code=status) + 1
        )


def test_a_405_on_metrics_is_not_counted(http):
    http.post("/metrics")
    assert 'path="/metrics"' not in http.get("/metrics").text


@pytest.fixture(scope="module")
def small_drain(registry: Registry) -> Iterator[TestClient]:
    app = create_app(Settings(unread_body_bytes=3 * 1024 * 1024), registry=registry)
    with TestClient(app) as c:
        yield c


def test_a_413_reads_the_body_first_and_keeps_the_connection(small_drain):
    r = small_drain.post(
        "/v1/budget", content=b"x" * (2 * 1024 * 1024), headers={"content-type": "application/json"}
    )
    assert r.status_code == 413
    assert "connection" not in r.headers


def test_a_client_waiting_for_100_continue_gets_its_413_and_a_close(small_drain):
    r = small_drain.post(
        "/v1/budget",
        content=b"x" * (2 * 1024 * 1024),
        headers={"content-type": "application/json", "expect": "100-continue"},
    )
    assert r.status_code == 413
    assert r.headers["connection"] == "close"


@pytest.mark.parametrize(
    ("method", "path", "headers", "status"),
    [
        ("POST", "/no/such/route", {"content-type": "application/json"}, 404),
        ("POST", "/v1/sweep", {"content-type": "application/json"}, 405),
        ("POST", "/v1/budget", {"content-type": "text/plain"}, 415),
    ],
)
def test_other_early_answers_read_the_body_first(small_drain, method, path, headers, status):
    r = small_drain.request(method, path, content=b"{" * (1024 * 1024), headers=headers)
    assert r.status_code == status
    assert "connection" not in r.headers
