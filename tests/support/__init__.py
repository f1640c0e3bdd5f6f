"""Shared test utilities: a deterministic OpenAI-compatible server and loopback server helpers."""
