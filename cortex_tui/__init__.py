"""cortex-tui: a local-first memory and context engine for coding with LLM agents.

The Python API (docs/api.md): `from cortex_tui import Engine, MemoryDraft, SearchRequest, SelectRequest, assemble`.
"""

__version__ = "0.1.0"

__all__ = ["CortexError", "Engine", "MapRequest", "MemoryDraft", "SearchFilters", "SearchRequest", "SelectRequest",
           "assemble"]


def __getattr__(name: str) -> object:
    """The API's names, imported on first use: the `cortex` thin client imports this package for its version, and
    must not pay for the engine's imports (LanceDB, the model's runtime) on every command."""
    if name not in __all__:
        raise AttributeError(f"module 'cortex_tui' has no attribute {name!r}")
    from .core.context.assemble import assemble
    from .core.engine import Engine
    from .core.errors import CortexError
    from .core.records import MemoryDraft
    from .core.requests import MapRequest, SearchFilters, SearchRequest, SelectRequest

    public = {"CortexError": CortexError, "Engine": Engine, "MapRequest": MapRequest, "MemoryDraft": MemoryDraft,
              "SearchFilters": SearchFilters, "SearchRequest": SearchRequest, "SelectRequest": SelectRequest,
              "assemble": assemble}
    globals().update(public)
    return public[name]
