"""The step-time model: how long one engine step takes on a GPU (docs/steptime.md)."""
