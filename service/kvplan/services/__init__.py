"""Between the entry points (HTTP routes, CLI) and the pure core: resolve models and GPUs,
apply the engine profile's defaults, call the core, and label the answer."""
