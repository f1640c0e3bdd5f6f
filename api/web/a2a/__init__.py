"""The A2A door: agent card, AgentBeats request parsing, the executor and the Result artifact."""
