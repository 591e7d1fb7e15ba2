"""The rules and figures the code cites live in the repository.

Code and ledger lines cite `docs/vllm-rules.md §n[.m]` (a section or subsection heading) and
`docs/seed-figures.md table n` (a `## Table n` heading). Every such citation under service/ must
name a heading that exists, and nothing may cite the documents that are not in the repository
(VLLM_FACTS, the Chinese seed's "seed table n").

KVPLAN_CITATIONS_ROOT points the scan at another tree (say, a copy with rewritten citations);
by default it is the repository's service/.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
RULES = DOCS / "vllm-rules.md"
FIGURES = DOCS / "seed-figures.md"
ROOT = Path(os.environ.get("KVPLAN_CITATIONS_ROOT") or REPO / "service")

SECTION = r"§\d+(?:\.\d+)?"
# One pattern for every citation form: "docs/vllm-rules.md §3", the short "vllm-rules §3",
# lists ("§3, §4 and §8"), and "docs/seed-figures.md table 2" / "seed-figures table 2".
CITATION = re.compile(
    rf"(?:docs/)?vllm-rules(?:\.md)?\s+(?P<sections>{SECTION}(?:\s*(?:,|and|&)\s*{SECTION})*)"
    r"|(?:docs/)?seed-figures(?:\.md)?\s+table\s+(?P<table>\d+)"
)
# Citations of documents outside the repository.
OUTSIDE = re.compile(r"VLLM_FACTS|(?i:\bseed\s+table\b)")
RULE_HEADING = re.compile(rf"^#{{2,3}} ({SECTION}) \S", re.M)
TABLE_HEADING = re.compile(r"^## Table (\d+)\b", re.M)
# Where the rule sections come from: VLLM_FACTS.md's numbering, kept so that rewriting a
# citation of its section n as docs/vllm-rules.md section n keeps the citation's meaning.
FACTS_SECTIONS = {
    "§1": "Per-token bytes",
    "§2": "Geometry from a Hugging Face config.json",
    "§3": "Memory budget",
    "§4": "Concurrency and requests",
    "§5": "KV cache dtypes",
    "§6": "Parallelism",
    "§7": "Block pool behaviour",
    "§8": "Hybrid models",
    "§9": "Engine profiles",
    "§10": "Geometry of popular models",
}
# A stale citation for the self-test, split so that the mechanical rewrite of citations in
# service/ and tests/ leaves it alone.
STALE = "VLLM_FACTS" + " §3 and the seed" + " table 2"
TEXT_SUFFIXES = {".py", ".js", ".html", ".css", ".md", ".toml", ".json", ".txt", ".yaml", ".yml"}


def source_files(root: Path, suffixes: set[str]) -> list[Path]:
    skip = ("__pycache__", ".egg-info")
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and p.suffix in suffixes and not any(s in part for part in p.parts for s in skip)
    )


def texts(path: Path) -> list[tuple[int, str]]:
    """(first line, text) of the whole file, and for Python of every string it contains:
    implicitly concatenated literals arrive joined, so a citation split across them is seen."""
    source = path.read_text(encoding="utf-8")
    out = [(1, source)]
    if path.suffix == ".py":
        try:
            tree = ast.parse(source, filename=str(path))
        except SyntaxError:  # a file mid-edit: its raw text is still scanned
            return out
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                out.append((node.lineno, node.value))
    return out


def citations(root: Path) -> list[tuple[str, str, str]]:
    """(where, kind, id) of every citation in the .py files under root: kind "rule" with a
    section id like "§8.3", or "table" with a table number."""
    found: dict[tuple[str, str, str], str] = {}
    for path in source_files(root, {".py"}):
        for first_line, text in texts(path):
            for m in CITATION.finditer(text):
                where = f"{path.relative_to(root)}:{first_line + text.count(chr(10), 0, m.start())}"
                if m["sections"]:
                    for section in re.findall(SECTION, m["sections"]):
                        found.setdefault((str(path), "rule", section), where)
                else:
                    found.setdefault((str(path), "table", m["table"]), where)
    return sorted((where, kind, ident) for (_, kind, ident), where in found.items())


def rule_sections() -> set[str]:
    return set(RULE_HEADING.findall(RULES.read_text(encoding="utf-8")))


def seed_tables() -> set[str]:
    return set(TABLE_HEADING.findall(FIGURES.read_text(encoding="utf-8")))


def unresolved(root: Path) -> list[str]:
    sections, tables = rule_sections(), seed_tables()
    bad = []
    for where, kind, ident in citations(root):
        if kind == "rule" and ident not in sections:
            bad.append(f"{where}: docs/vllm-rules.md has no section {ident}")
        if kind == "table" and ident not in tables:
            bad.append(f"{where}: docs/seed-figures.md has no table {ident}")
    return bad


def outside_citations(root: Path) -> list[str]:
    bad = []
    for path in source_files(root, TEXT_SUFFIXES):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OUTSIDE.search(line):
                bad.append(f"{path.relative_to(root)}:{n}: {line.strip()}")
    return bad


def test_every_rule_citation_names_a_section_of_docs_vllm_rules():
    rules = [c for c in citations(ROOT) if c[1] == "rule"]
    assert rules, f"no docs/vllm-rules.md citation under {ROOT}: is the pattern still right?"
    assert [b for b in unresolved(ROOT) if "vllm-rules" in b] == []


def test_every_seed_citation_names_a_table_of_docs_seed_figures():
    tables = [c for c in citations(ROOT) if c[1] == "table"]
    assert tables, f"no docs/seed-figures.md citation under {ROOT}: is the pattern still right?"
    assert [b for b in unresolved(ROOT) if "seed-figures" in b] == []


def test_no_file_under_service_cites_a_document_outside_the_repository():
    assert outside_citations(ROOT) == []


def test_docs_vllm_rules_keeps_the_section_numbers_of_vllm_facts():
    text = RULES.read_text(encoding="utf-8")
    top = re.findall(r"^## (§\d+) (.+)$", text, re.M)
    assert [s for s, _ in top][: len(FACTS_SECTIONS)] == list(FACTS_SECTIONS)
    for section, title in top:
        if section in FACTS_SECTIONS:
            assert title.startswith(FACTS_SECTIONS[section]), (section, title)
    headings = RULE_HEADING.findall(text)
    assert len(headings) == len(set(headings)), "a section number is used twice"
    for sub in (h for h in headings if "." in h):
        assert sub.split(".")[0] in headings, f"{sub} has no parent section"


def test_docs_seed_figures_holds_the_seed_tables_example_and_groups():
    text = FIGURES.read_text(encoding="utf-8")
    assert seed_tables() >= {"1", "2"}
    assert re.search(r"^## Worked example\b", text, re.M)
    assert re.search(r"^## Parameter groups\b", text, re.M)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("(docs/vllm-rules.md §3, §4, §8; vllm/v1/worker/utils.py)", ["§3", "§4", "§8"]),
        ("see vllm-rules §8.3 and §9", ["§8.3", "§9"]),
        ('"docs/seed-figures.md table 2 (pooled arithmetic)"', ["2"]),
        ("seed-figures table 1", ["1"]),
        ("docs/vllm-rules.md, the whole page", []),
    ],
)
def test_the_citation_pattern_reads_lists_and_short_forms(text, expected):
    got = []
    for m in CITATION.finditer(text):
        got += re.findall(SECTION, m["sections"]) if m["sections"] else [m["table"]]
    assert got == expected


def test_a_citation_of_a_missing_section_or_table_is_reported(tmp_path):
    (tmp_path / "ok.py").write_text(
        '"""Budget (docs/vllm-rules.md §3, §8.3)."""\nX = "docs/seed-figures.md table 2"\n'
    )
    (tmp_path / "bad.py").write_text(
        '"""Nowhere (docs/vllm-rules.md §3, §99).\n\nSee docs/vllm-rules.md §3.99."""\n'
        'Y = ("docs/seed-figures.md " "table 9")\n'
        f"# {STALE}\n"
    )
    assert unresolved(tmp_path) == [
        "bad.py:1: docs/vllm-rules.md has no section §99",
        "bad.py:3: docs/vllm-rules.md has no section §3.99",
        "bad.py:4: docs/seed-figures.md has no table 9",
    ]
    assert outside_citations(tmp_path) == [f"bad.py:5: # {STALE}"]
