"""Reading vLLM's start-up logs and reconciling them with the plan."""
