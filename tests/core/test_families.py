"""The family table (core/hf/families/__init__.py), as vLLM's model registry: each architecture
and model type declared by one family, each module under core/hf/families/ a row of the table and
each row a module holding its own hooks, and each config of the corpora that kvplan reads
claimed by one family at most (the standard reader's own rules otherwise). That each family
reads its configs as before is the oracle cases' (test_oracle_cases.py) and the family API tests'."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

import kvplan.core.hf.families as families_package
from kvplan.core.errors import InvalidInput
from kvplan.core.hf.families import FAMILIES
from kvplan.core.hf.family import STANDARD, Family
from kvplan.core.hf.reader import family_of, from_hf_config, language_config
from tests.hub.repos import ALL_REPOS

FAMILIES_DIR = Path(families_package.__file__).parent
ROOT = Path(__file__).resolve().parents[2]
CONFIG_DIRS = (
    ROOT.parent / "shared" / "data" / "hf-configs",  # the shared corpus, where the checkout has it
    ROOT / "tests" / "core" / "data" / "hf-configs",
    ROOT / "tests" / "calibration" / "data" / "hf-configs",
    ROOT / "tests" / "hub" / "data",
)
PRESETS = ROOT / "service" / "kvplan" / "presets" / "data" / "models"
HOOKS = [f.name for f in dataclasses.fields(Family) if f.default is None]  # every hook defaults to None
ALIASES = {old: new for row in FAMILIES for old, new in row.aliases.items()}
# Rows no config of the corpora exercises: Nemotron-NAS (its rules are tests/core/test_hybrid.py's), and
# the hybrids kvplan refuses (no config of theirs is read).
UNEXERCISED = {"nemotron_nas", "unread_hybrids"}


def _stem(row: Family) -> str:
    return row.module.rsplit(".", 1)[-1]


def test_no_two_families_declare_the_same_architecture() -> None:
    owners: dict[str, list[str]] = defaultdict(list)
    for row in FAMILIES:
        for arch in row.architectures:
            owners[arch].append(_stem(row))
    assert {a: m for a, m in owners.items() if len(m) > 1} == {}


def test_no_two_families_declare_the_same_model_type() -> None:
    """Model types, the old names aliased to them, and the prefixes a family reads: each is one
    family's, and no family's model type starts with another family's prefix."""
    owners: dict[str, list[str]] = defaultdict(list)
    for row in FAMILIES:
        for name in (*row.model_types, *row.aliases):
            owners[name].append(_stem(row))
    assert {t: m for t, m in owners.items() if len(m) > 1} == {}
    for row in FAMILIES:
        for prefix in row.model_type_prefixes:
            taken = {t: m for t, m in owners.items() if t.startswith(prefix) and m != [_stem(row)]}
            assert taken == {}, f"{_stem(row)} reads the prefix {prefix!r}"
    for old, new in ALIASES.items():
        assert family_of(new) is next(r for r in FAMILIES if old in r.aliases), old


def test_every_family_module_is_a_row_and_every_row_a_module() -> None:
    files = sorted(p.stem for p in FAMILIES_DIR.glob("*.py") if p.stem != "__init__")
    rows = sorted(_stem(row) for row in FAMILIES)
    assert rows == files
    for row in FAMILIES:
        assert row.module == f"{families_package.__name__}.{_stem(row)}"
        assert importlib.util.find_spec(row.module) is not None
        assert (FAMILIES_DIR / f"{_stem(row)}.py").is_file()


def test_a_family_hooks_are_its_own_module_functions() -> None:
    """A row's rules live in its own file: every hook is a function of the row's module."""
    for row in FAMILIES:
        for hook in HOOKS:
            fn = getattr(row, hook)
            if fn is not None:
                assert fn.__module__ == row.module, f"{_stem(row)}.{hook} is {fn.__module__}'s"


def test_claims_by_architecture_come_before_claims_by_name() -> None:
    """A claim needs architectures (or claim_by_name), a check architectures; the rows claiming by
    name too are walked after every row claiming by architecture alone."""
    for row in FAMILIES:
        assert row.claim is not None or not row.claim_by_name, _stem(row)
        if row.claim is not None or row.check is not None:
            assert row.architectures, _stem(row)
    by_name = [row.claim_by_name for row in FAMILIES if row.claim is not None]
    assert by_name == sorted(by_name)


def _corpus() -> Iterator[tuple[str, Mapping[str, Any]]]:
    seen: set[str] = set()

    def once(source: str, config: Any) -> Iterator[tuple[str, Mapping[str, Any]]]:
        key = json.dumps(config, sort_keys=True)
        if isinstance(config, Mapping) and key not in seen:
            seen.add(key)
            yield source, config

    for d in CONFIG_DIRS:
        for path in sorted(d.glob("*.json")) if d.is_dir() else ():
            source = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else f"shared/{path.name}"
            yield from once(source, json.loads(path.read_text()))
    for path in sorted(PRESETS.glob("*.json")):
        yield from once(f"presets/{path.name}", json.loads(path.read_text()).get("config"))
    for repo in ALL_REPOS:
        yield from once(f"hub/{repo.repo_id}", repo.config)


def _accepted() -> list[tuple[str, Mapping[str, Any]]]:
    out = []
    for source, config in _corpus():
        try:
            from_hf_config(config)
        except InvalidInput:
            continue
        out.append((source, config))
    return out


ACCEPTED = _accepted()


def claimants(config: Mapping[str, Any]) -> set[str]:
    """The families the table says read a config: those naming one of its architectures, and
    those reading the model type it goes by (its top level's or its text config's)."""
    archs = set(config.get("architectures") or ())
    names = {str(config.get("model_type") or ""), str(language_config(config).get("model_type") or "")}
    rows = {_stem(row) for row in FAMILIES if archs & row.architectures}
    rows |= {_stem(family_of(ALIASES.get(t, t))) for t in names} - {_stem(STANDARD)}
    return rows


def test_the_corpora_are_read() -> None:
    assert len(ACCEPTED) >= 100


@pytest.mark.parametrize(("source", "config"), ACCEPTED, ids=[s for s, _ in ACCEPTED])
def test_a_config_is_claimed_by_one_family_at_most(source: str, config: Mapping[str, Any]) -> None:
    assert len(claimants(config)) <= 1, claimants(config)


def test_every_family_reads_some_config_of_the_corpora() -> None:
    """A row no config exercises is a row whose names nothing checks; the few are listed."""
    claimed = {row for _, config in ACCEPTED for row in claimants(config)}
    assert {_stem(row) for row in FAMILIES} - claimed == UNEXERCISED
