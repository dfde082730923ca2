"""Persistent queries: sink planning, record encoding, query lifecycle."""
