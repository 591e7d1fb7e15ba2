"""Fleets: which layout of which GPU type holds how many requests, and sweeps along one axis."""
