"""kvplan: KV-cache capacity planning that reproduces vLLM's own arithmetic."""

from . import compiled

__version__ = "0.1.0"

compiled.install()  # the simulator's compiled modules, when built and fresh (kvplan/compiled.py)
