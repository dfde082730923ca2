"""Materialize's `unnest(list)` in a SELECT list, anywhere in its expressions: every call of one
SELECT runs in lockstep (PostgreSQL's rule), one row per element index."""
