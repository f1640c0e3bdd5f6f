"""Persistence: tables, the async engine, migrations and the repository that owns every query."""
