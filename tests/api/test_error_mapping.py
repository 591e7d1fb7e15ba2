"""Every core error type maps to a 4xx problem naming its field; every warning code is documented."""

from __future__ import annotations

import msgspec

from kvplan.api.errors import problem_for
from kvplan.core import errors
from kvplan.core import warnings as w


def all_subclasses(cls: type) -> set[type]:
    out = set()
    for sub in cls.__subclasses__():
        out |= {sub, *all_subclasses(sub)}
    return out


def test_every_core_error_type_is_a_4xx_naming_its_field():
    for cls in {errors.KvplanError, *all_subclasses(errors.KvplanError)}:
        if issubclass(cls, errors.UnknownName):
            exc = cls("gpu", "GPU preset", "h101", ("h100-sxm-80gb",), ("h100-sxm-80gb",))
        else:
            exc = cls("context_tokens", "must be at least 1")
        p = problem_for(exc)
        assert 400 <= p.status < 500, cls
        assert p.field == exc.field


def test_unknown_presets_are_404_and_unknown_closed_names_are_400_by_class_not_by_wording():
    assert problem_for(errors.UnknownPreset("model", "model", "x", ())).status == 404
    assert problem_for(errors.UnknownName("engine", "engine profile", "x", ("vllm@0.33",))).status == 400
    # The status follows the type: a closed-set name whose kind happens to end in "preset" is a 400.
    assert problem_for(errors.UnknownName("kv_cache_dtype", "dtype preset", "x", ("auto",))).status == 400


def test_decoding_errors_are_400_and_anything_else_is_a_500_without_details():
    assert problem_for(msgspec.DecodeError("bad")).status == 400
    assert problem_for(RecursionError()).status == 400
    p = problem_for(ZeroDivisionError("secret"))
    assert p.status == 500 and "secret" not in p.detail


def test_every_warning_code_is_documented():
    codes = {getattr(w, k) for k in dir(w) if k.isupper() and k != "CODES"}
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


def test_a_client_gone_mid_body_is_a_499_not_an_unhandled_error():
    from litestar.exceptions import InternalServerException

    p = problem_for(InternalServerException("client disconnected prematurely"))
    assert p.status == 499
