"""Every curl in the README answers 200 (a new user's first queries), and the seed example the
README quotes gives the figures it quotes. Hub and log-file examples are exercised elsewhere
(tests/api/test_hub_models.py, tests/api/test_reconcile.py): they need a Hub or a file."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from tests.seed import A_BLOCKS, blocks_of

README = (Path(__file__).parents[2] / "README.md").read_text()
CURLS = [
    " ".join(line.rstrip("\\").strip() for line in cmd.splitlines())
    for block in re.findall(r"```sh\n(.*?)```", README, re.S)
    for cmd in re.split(r"\n(?=curl |kvplan |#)", block)
    if cmd.startswith("curl ")
]
LOCAL = [c for c in CURLS if "@" not in c and "Qwen/" not in c and "RedHatAI/" not in c]


def test_the_readme_shows_curls_for_every_kind_of_question():
    assert len(LOCAL) >= 6
    assert {p for c in LOCAL for p in re.findall(r"/v1/[a-z-]+", c)} >= {
        "/v1/budget", "/v1/per-token", "/v1/fleet", "/v1/sweep", "/v1/simulate"}  # fmt: skip


@pytest.mark.parametrize("command", LOCAL, ids=range(len(LOCAL)))
def test_each_readme_curl_answers(client, command):
    args = shlex.split(command.split(" #")[0])
    url = next(a for a in args if a.startswith("http"))
    path = url.removeprefix("http://127.0.0.1:8000")
    headers = dict(h.split(": ", 1) for h in (args[i + 1] for i, a in enumerate(args) if a == "-H"))
    data = next((args[i + 1] for i, a in enumerate(args) if a == "-d"), None)
    if data is None:
        r = client.get(path, headers=headers)
    else:
        r = client.post(path, content=json.dumps(json.loads(data)), headers=headers)
    assert r.status_code == 200, r.text[:300]
    assert r.text.strip()


def test_the_readme_seed_example_gives_the_figures_it_quotes(client):
    body = json.loads(
        re.search(r"-d '(\{\"model\": \"llama-3-70b\", \"gpu\": \"pool-160gib\".*?\})'", README).group(1)
    )
    b = client.post("/v1/budget", json=body).json()
    assert blocks_of(b) == A_BLOCKS
    assert b["concurrency"]["guaranteed"] == 6
