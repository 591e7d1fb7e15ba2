"""A model's values: its attention geometry, recurrent state, quantization and weights."""
