"""cortex-tui: a local-first memory and context engine for coding with LLM agents."""

__version__ = "0.1.0"
