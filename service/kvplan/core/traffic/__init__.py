"""Capacity under traffic: the highest request rate a replica sustains within latency targets."""
