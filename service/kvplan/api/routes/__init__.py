"""Route handlers: thin. Decode, call the core, encode."""
