"""What model a log's name for it means when it cannot be looked up as given: a local path
(`/data/models/Qwen2.5-32B-Instruct-AWQ`), a served name, or a Hub id the Hub does not answer
for. The name is cut to its last component and its stem (no organisation, no tuning or
quantization suffix) compared with the stems of the presets' names, Hub ids and aliases; the
quantization the name states (`-AWQ`, `-FP8`, `-GPTQ-Int4`, `nvfp4`, …) is kept beside it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# A name's quantization suffix and the --quantization that prices its weights: w4a16 and
# GPTQ-Int4 are 4-bit integer weights in groups of 128 (as gptq); w8a8 and int8 are a byte a
# weight (as fp8, the same bytes).
_QUANT: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.IGNORECASE), q)
    for p, q in (
        (r"[-_.](?:awq)(?:[-_.]|$)", "awq"),
        (r"[-_.](?:gptq)(?:[-_.]|$)", "gptq"),
        (r"[-_.]w4a16(?:[-_.]|$)", "gptq"),
        (r"[-_.]nvfp4(?:[-_.]|$)|[-_.]fp4(?:[-_.]|$)", "modelopt_fp4"),
        (r"[-_.]fp8(?:[-_.]|$)", "fp8"),
        (r"[-_.](?:w8a8|int8)(?:[-_.]|$)", "fp8"),
    )
)
# Words after the model's size that change neither its shape nor its weights' size, and the
# quantization words themselves: cut from a stem.
_NOISE = re.compile(
    r"[-_.](?:instruct|chat|it|hf|base|sft|dpo|rl|preview|latest|dynamic|quantized|awq|gptq|int4|int8|"
    r"w4a16|w8a8|w4a8|fp8|fp4|nvfp4|bnb|4bit|8bit|marlin|g128|\d{4})(?=[-_.]|$)|^meta(?=[-_])",
    re.IGNORECASE,
)


# A Hugging Face cache directory: models--{org}--{name}[/snapshots/{sha}].
_HF_CACHE = re.compile(r"models--([\w.-]+?)--([\w.-]+)")


def last_component(name: str) -> str:
    """A local path's or Hub id's last component (`/data/models/X/` → X); a Hugging Face cache
    path's model name (`…/models--org--X/snapshots/<sha>` → X)."""
    cached = _HF_CACHE.search(name)
    if cached is not None:
        return cached.group(2)
    return name.strip().strip("\"'").rstrip("/").rsplit("/", 1)[-1]


def stem(name: str) -> str:
    """A model name without organisation, suffixes that leave its shape alone, case or
    separators (a cache directory writes 3.1 as 3-1): `meta-llama/Llama-3.1-8B-Instruct` and
    `llama-3.1-8b` share `llama318b`."""
    s = last_component(name).lower()
    previous = None
    while previous != s:
        previous, s = s, _NOISE.sub("", s)
    return re.sub(r"[-_. ]", "", s)


def stated_quantization(name: str) -> str | None:
    """The --quantization a model's name states (`-AWQ` → awq), if any."""
    last = last_component(name)
    return next((q for pattern, q in _QUANT if pattern.search(last)), None)


def match_preset(name: str, presets: Mapping[str, Iterable[str]]) -> str | None:
    """The preset (id → its names: id, Hub id, aliases) whose stem is the name's, if exactly one."""
    want = stem(name)
    if not want:
        return None
    found = {pid for pid, names in presets.items() if any(stem(n) == want for n in (pid, *names))}
    return found.pop() if len(found) == 1 else None
