"""Regenerate kvplan's table of the architectures whose vision tower serves images only, from
vLLM's model code (an unzipped vLLM wheel): each model marks its towers with
`self._mark_tower_model(vllm_config, modalities)` (vllm/model_executor/models/interfaces.py), and
vLLM skips a tower's weights when every one of its modalities has --limit-mm-per-prompt 0.

    python -m tests.engine.vision_towers /tmp/flags-vllm > /dev/null   # prints the table's body

tests/engine/test_vision_towers.py asserts the committed table is this output when the wheel is
there (it is not in CI: the table is committed)."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path


def _modalities(node: ast.ClassDef) -> set[frozenset[str]]:
    found: set[frozenset[str]] = set()
    for n in ast.walk(node):
        if (
            isinstance(n, ast.Call)
            and getattr(n.func, "attr", None) == "_mark_tower_model"
            and len(n.args) > 1
        ):
            try:
                v = ast.literal_eval(n.args[1])
            except ValueError:
                continue
            found.add(frozenset({v} if isinstance(v, str) else v))
    return found


def image_only_architectures(wheel: Path) -> list[str]:
    """Registered architectures whose towers holding "image" hold no "video" (their class's own
    __init__ or, when inherited, the nearest base class's that marks towers)."""
    models = wheel / "vllm" / "model_executor" / "models"
    classes: dict[str, tuple[set[frozenset[str]], list[str]]] = {}
    for f in sorted(models.glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases]
                classes.setdefault(node.name, (_modalities(node), bases))

    def towers(name: str, depth: int = 0) -> set[frozenset[str]]:
        own, bases = classes.get(name, (set(), []))
        if own or depth > 8:
            return own
        for b in bases:
            if found := towers(b, depth + 1):
                return found
        return set()

    registry = (models / "registry.py").read_text()
    out = []
    for arch, _module, cls in sorted(set(re.findall(r'"(\w+)":\s*\(\s*"(\w+)",\s*"(\w+)"', registry))):
        vision = [t for t in towers(cls) if "image" in t]
        if vision and all("video" not in t for t in vision):
            out.append(arch)
    return sorted(set(out))


if __name__ == "__main__":
    for arch in image_only_architectures(Path(sys.argv[1])):
        print(f'    "{arch}",')
