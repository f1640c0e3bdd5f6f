"""One trial's conversation: the simulated customer (`user_simulator`) and the half-duplex loop that relays
between it, the white agent and the environment (`orchestrator`). Imports core, llm, scoring, white_agent."""
