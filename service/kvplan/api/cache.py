"""The answer cache lives in the service layer (services/cache.py); its names stay importable here."""

from kvplan.services.cache import DOORKEEPER_KEYS, ENTRY_OVERHEAD, ByteBoundedCache

__all__ = ["DOORKEEPER_KEYS", "ENTRY_OVERHEAD", "ByteBoundedCache"]
