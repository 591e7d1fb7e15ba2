"""Reading a Hugging Face config.json as vLLM reads it: the shared field readers and defaults,
the standard reader, and one module per architecture family (families/)."""
