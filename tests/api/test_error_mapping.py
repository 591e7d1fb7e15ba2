"""Every error answers with the status of its nearest mapped ancestor, as a problem naming its
field: each subclass of every class api/errors.py maps (core, Hub, the shell's own, msgspec's,
Litestar's, and subclasses defined here) is raised through an app with the service's exception
handlers. Every warning code is documented."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import pytest
from litestar import get
from litestar._signature.types import ExtendedMsgSpecValidationError  # a subclass Litestar defines
from litestar.exceptions import (
    HTTPException,
    InternalServerException,
    NotFoundException,
    TemplateNotFoundException,
    ValidationException,
)
from litestar.testing import TestClient, create_test_client

from kvplan.api.errors import EXCEPTION_HANDLERS, PROBLEMS, ApiError, problem_for
from kvplan.core import errors
from kvplan.core import warnings as w
from kvplan.hub import errors as hub


# Subclasses no module defines: each must answer as its parent does.
class MyHubTimeout(hub.HubUnavailable):
    """A Hub timeout of its own: a 503 with Retry-After, as HubUnavailable."""


class MyPresetGone(errors.UnknownPreset):
    """A preset that was removed: a 404, as UnknownPreset."""


class MyBatchTooLarge(ApiError):
    """The shell's own error: its own status."""


class MySchedulerDefect(errors.SchedulerStateError):
    """A defect: a 500, as InternalInconsistency."""


Status = int | Callable[[Any], int]

# The status each mapped class answers, written here independently of api/errors.py.
STATUS: dict[type[BaseException], Status] = {
    BaseException: 500,  # anything unmapped: InternalInconsistency, PoolExhausted, WorkStopped, …
    errors.KvplanError: 400,
    errors.UnknownName: 400,
    errors.UnknownPreset: 404,
    errors.UnknownDeployment: 404,
    hub.HubError: 502,
    hub.ModelNotOnHub: 404,
    hub.GatedModel: 403,
    hub.ModelTooLarge: 422,
    hub.ModelUnreadable: 422,
    hub.HubUnavailable: 503,
    hub.HubBadAnswer: 502,
    ApiError: lambda e: e.status,
    msgspec.ValidationError: 400,
    msgspec.DecodeError: 400,
    RecursionError: 400,
    ValidationException: 400,
    NotFoundException: 404,
    InternalServerException: lambda e: e.status_code,
    HTTPException: lambda e: e.status_code,
}
RETRY_AFTER = {hub.HubUnavailable: "30", hub.HubBadAnswer: "30"}

# How to build an instance of each family (the nearest entry along the class's MRO).
BUILD: dict[type[BaseException], Callable[[Any], BaseException]] = {
    BaseException: lambda cls: cls("something broke"),
    errors.KvplanError: lambda cls: cls("context_tokens", "must be at least 1"),
    errors.UnknownName: lambda cls: cls("gpu", "GPU preset", "h101", ("h100-sxm-80gb",), ("h100-sxm-80gb",)),
    errors.InternalInconsistency: lambda cls: cls("budget", ["more blocks than the pool holds"]),
    errors.SchedulerStateError: lambda cls: cls("request 0: no transition from finished on arrive"),
    hub.HubError: lambda cls: cls("the Hub did not answer within 1 s"),
    ApiError: lambda cls: cls(409, "the batch needs too many layer passes", field="scenarios"),
    HTTPException: lambda cls: cls(detail="refused"),
    TemplateNotFoundException: lambda cls: cls(template_name="page.html"),
    msgspec.ValidationError: lambda cls: cls("Expected `int`, got `str` - at `$.block_size`"),
    ExtendedMsgSpecValidationError: lambda cls: cls([{"message": "Expected `int`", "key": "block_size"}]),
}


def nearest(cls: type, table: dict[type[BaseException], Any]) -> Any:
    return next(table[c] for c in cls.__mro__ if c in table)


def all_subclasses(cls: type) -> set[type]:
    out = set()
    for sub in cls.__subclasses__():
        out |= {sub, *all_subclasses(sub)}
    return out


CORE_ERRORS = {
    c
    for c in vars(errors).values()
    if isinstance(c, type) and issubclass(c, BaseException) and c.__module__ == errors.__name__
}
ROOTS = (set(STATUS) - {BaseException}) | CORE_ERRORS
EVERY_ERROR = sorted(
    ROOTS | {sub for root in ROOTS for sub in all_subclasses(root)},
    key=lambda c: (c.__module__, c.__qualname__),
)

_raising: list[BaseException] = []


@get("/raise", sync_to_thread=False)
def raise_it() -> None:
    raise _raising[0]


@pytest.fixture(scope="module")
def tiny() -> Iterator[TestClient[Any]]:
    with create_test_client([raise_it], exception_handlers=EXCEPTION_HANDLERS) as client:
        yield client


def answer(client: TestClient[Any], exc: BaseException) -> Any:
    _raising[:] = [exc]
    return client.get("/raise")


def test_every_mapped_class_has_its_status_written_here():
    assert set(PROBLEMS) == set(STATUS)


def test_the_app_answers_errors_with_these_handlers(client):
    assert client.app.exception_handlers == EXCEPTION_HANDLERS


def test_the_test_reaches_core_hub_shell_litestar_and_its_own_subclasses():
    names = {c.__name__ for c in EVERY_ERROR}
    assert {"InvalidDistribution", "SimulationStopped", "SchedulerStateError", "PoolExhausted"} <= names
    assert {"ModelNotOnHub", "MyHubTimeout", "MyPresetGone", "MethodNotAllowedException"} <= names


@pytest.mark.parametrize("cls", EVERY_ERROR, ids=lambda c: c.__qualname__)
def test_every_error_answers_with_its_nearest_mapped_ancestors_status_naming_its_field(tiny, cls):
    exc = nearest(cls, BUILD)(cls)
    status = nearest(cls, STATUS)
    expected = status(exc) if callable(status) else status
    r = answer(tiny, exc)
    assert r.status_code == expected
    assert r.headers["content-type"].startswith("application/problem+json")
    body = r.json()
    assert body["status"] == expected and body["title"] and body["detail"]
    assert body["instance"] == "/raise"
    field = getattr(exc, "field", None)
    if field is not None:
        assert body["field"] == field
    if nearest(cls, STATUS) is STATUS[BaseException]:  # a defect: nothing of it in the answer
        assert "field" not in body and str(exc) not in body["detail"]
    assert r.headers.get("retry-after") == nearest(cls, {**RETRY_AFTER, BaseException: None})


def test_a_subclass_defined_here_answers_as_its_parent(tiny):
    r = answer(tiny, MyHubTimeout("the Hub took 10 s"))
    assert (r.status_code, r.json()["title"], r.headers["retry-after"]) == (503, "Hub unavailable", "30")
    assert answer(tiny, MyPresetGone("model", "model", "gone", ())).status_code == 404
    assert answer(tiny, MySchedulerDefect("stuck")).status_code == 500


def test_stopped_work_outside_the_heavy_pool_is_a_defect_and_a_scheduler_defect_is_a_500(tiny):
    # Stopped work is answered 503 by offload.run_heavy (tests/api/test_offload.py, and a real
    # simulation past its deadline in tests/api/test_simulation_limits_api.py), never here.
    assert answer(tiny, errors.SimulationStopped("stopped at step 16")).status_code == 500
    assert answer(tiny, errors.SchedulerStateError("stuck")).status_code == 500


def test_unknown_presets_are_404_and_unknown_closed_names_are_400_by_class_not_by_wording(tiny):
    assert answer(tiny, errors.UnknownPreset("model", "model", "x", ())).status_code == 404
    assert (
        answer(tiny, errors.UnknownName("engine", "engine profile", "x", ("vllm@0.33",))).status_code == 400
    )
    # The status follows the type: a closed-set name whose kind happens to end in "preset" is a 400.
    r = answer(tiny, errors.UnknownName("kv_cache_dtype", "dtype preset", "x", ("auto",)))
    assert r.status_code == 400 and r.json()["valid"] == ["auto"]


def test_a_preset_registry_too_long_to_list_is_not_listed_but_a_closed_set_is(tiny):
    many = tuple(f"gpu-{i}" for i in range(51))
    assert "valid" not in answer(tiny, errors.UnknownPreset("gpu", "GPU preset", "x", many)).json()
    assert len(answer(tiny, errors.UnknownName("engine", "engine profile", "x", many)).json()["valid"]) == 51


def test_decoding_errors_are_400_and_anything_else_is_a_500_without_details():
    assert problem_for(msgspec.DecodeError("bad")).status == 400
    assert problem_for(RecursionError()).status == 400
    p = problem_for(ZeroDivisionError("secret"))
    assert p.status == 500 and "secret" not in p.detail


def test_every_warning_code_is_documented():
    codes = {getattr(w, k) for k in dir(w) if k.isupper() and k not in ("CODES", "SEVERITY")}
    assert codes == set(w.CODES)
    assert all(w.CODES.values())


def test_long_names_are_refused_without_echoing_them_whole(client):
    r = client.post("/v1/budget", json={"model": "m" * 5000, "gpu": "h100-sxm-80gb"})
    assert r.status_code == 400
    assert r.json()["field"] == "model" and len(r.text) < 1000


def test_a_problem_detail_never_echoes_more_than_its_cap(client):
    r = client.get("/v1/sweep", params={"model": "llama-3-8b", "gpu": "h100-sxm-80gb", "vary": "v" * 20000})
    assert r.status_code == 400
    assert len(r.json()["detail"]) <= 601


def test_a_client_gone_mid_body_is_a_499_not_an_unhandled_error(tiny):
    r = answer(tiny, InternalServerException("client disconnected prematurely"))
    assert (r.status_code, r.json()["title"]) == (499, "Client closed request")
