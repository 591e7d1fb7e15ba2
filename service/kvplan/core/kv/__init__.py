"""KV bytes: per layer, per token and per GPU; parallel layouts; vLLM's KV-cache groups and
packing; the requests a pool holds."""
