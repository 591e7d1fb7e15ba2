"""Between the entry points (HTTP routes, CLI) and the pure core: resolve models and GPUs,
apply the engine profile's defaults, call the core, label the answer, keep the answers.

    models.py     a request's model parsed once (ModelRef), resolved into a geometry
    inline.py     the inline geometry (schemas.GeometrySpec) ⇄ the core's Geometry
    scenarios.py  a decoded request → the core's input (budget, fleet, simulation)
    answers.py    a request → the core's result and the labels every answer carries
    cache.py      the answer cache (keys, what may be kept, ETags)
    catalog.py    the catalog's answers: presets, one model's details, a config.json resolved
    query.py      key=value pairs (query strings, CLI arguments) → a request
    reconcile.py  a vLLM log → the plan beside it
"""
