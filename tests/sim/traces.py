"""The two public traces the simulator is measured on, kept compact and expanded to the formats
they are published in (see data/README.md for their provenance and how they were copied).

- Azure LLM inference trace 2023, conversation: `data/azure-conv-2023.txt` holds each row as
  `HH:MM:SS.mmm,ContextTokens,GeneratedTokens` (the date 2023-11-16 and the timestamps' last four
  decimals dropped); `azure_csv()` writes the published CSV back, its timestamps to the millisecond.
- Mooncake FAST'25 conversation trace: `data/mooncake-conversation.txt` holds each row as
  `timestamp input_length output_length hash-id-runs` (`0,14-27` is [0, 14, 15, …, 27]);
  `mooncake_jsonl()` writes the published JSONL back, byte for byte.
"""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).parent / "data"


def azure_csv() -> bytes:
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    for row in (DATA / "azure-conv-2023.txt").read_text().split():
        time, context, generated = row.split(",")
        lines.append(f"2023-11-16 {time}0000,{context},{generated}")
    return ("\r\n".join(lines)).encode()


def _ids(runs: str) -> list[int]:
    ids: list[int] = []
    for run in runs.split(","):
        a, _, b = run.partition("-")
        ids.extend(range(int(a), int(b or a) + 1))
    return ids


def mooncake_rows() -> list[tuple[int, int, int, list[int]]]:
    rows = []
    for line in (DATA / "mooncake-conversation.txt").read_text().splitlines():
        t, i, o, runs = line.split(" ")
        rows.append((int(t), int(i), int(o), _ids(runs)))
    return rows


def mooncake_jsonl() -> bytes:
    lines = []
    for t, i, o, h in mooncake_rows():
        ids = ", ".join(map(str, h))
        lines.append(
            f'{{"timestamp": {t}, "input_length": {i}, "output_length": {o}, "hash_ids": [{ids}]}}\n'
        )
    return "".join(lines).encode()


def unbounded_hit_rate() -> float:
    """Mooncake's prompt tokens an unbounded cache of 512-token blocks would hold: a block hits
    when the same chain prefix was seen before (its id, as ids name the prefix)."""
    seen: set[int] = set()
    hit = total = 0
    for _, length, _, ids in mooncake_rows():
        total += length
        for j, h in enumerate(ids):
            block = min(512, length - 512 * j)
            if h in seen:
                hit += block
            seen.add(h)
    return hit / total
