"""The pure calculation core: plain values in, plain values out.

No framework, no I/O, no logging. Errors are `kvplan.core.errors` types; the
API layer decides what HTTP status each one becomes.
"""
