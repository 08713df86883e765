"""What command handlers take from their parsed arguments: the engine they run on, and comma-separated lists."""

from __future__ import annotations

from pathlib import Path

engine_source = None
"""Set by the resident server (`cortex serve`): a callable (path, db, settings) -> Engine that hands commands its
warm engines instead of building one per command."""


def engine_from(args):
    from ..core.config import load_settings
    from ..core.engine import Engine

    settings = load_settings(use_global=False if getattr(args, "no_global", False) else None)
    if engine_source is not None:
        return engine_source(Path(args.path), args.db, settings)
    return Engine(Path(args.path), db=args.db, settings=settings)


def split_list(values: list[str] | None) -> tuple[str, ...]:
    out: list[str] = []
    for value in values or []:
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return tuple(out)
