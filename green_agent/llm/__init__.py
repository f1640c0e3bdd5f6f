"""The LLM side: the OpenAI-compatible client (`client`), the per-endpoint gate that keeps under a provider's
limits and waits out its outages (`gate`), the NL judge (`judge`), the bundled local model (`local`) and the
prompts. Imports core and the white-agent reply parser."""
