"""The engine's rules: version profiles, dtypes and the memory vLLM subtracts besides weights and KV."""
