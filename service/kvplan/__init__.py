"""kvplan: KV-cache capacity planning that reproduces vLLM's own arithmetic."""

__version__ = "0.1.0"
