"""The engine's shared types, below every other room: errors, the bounds on what an agent sends, the
serialized results (trial results, events, the report), token usage, seeds, the bounded cache, and one
trial's spec and state. Imports only domain_kit."""
