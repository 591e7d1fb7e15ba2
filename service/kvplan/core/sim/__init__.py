"""The simulator: vLLM's block pool and V1 scheduler, the workload, and the simulation's entry."""
