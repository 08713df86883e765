"""Versions of installed distributions, read from their metadata only when asked: importing `importlib.metadata`
costs about a tenth of a second, which the thin client and most commands need not pay."""

from __future__ import annotations

from dataclasses import dataclass

DISTRIBUTION = "cortex-tui"
"""cortex's own distribution, as installed (`pip`, `pipx`, `uv tool`): its version is the one `--version` shows."""


@dataclass(frozen=True)
class ComponentVersion:
    """One part of what answers: what it is and which version of it (`cortex doctor` lists them)."""

    component: str
    version: str


def distribution_version(name: str) -> str | None:
    """The installed version of a distribution; None when it is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def cortex_version() -> str:
    return distribution_version(DISTRIBUTION) or "not installed"
