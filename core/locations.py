"""Where cortex keeps things on disk: per-repository database, global store, caches, config."""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_cache_dir, user_config_dir, user_data_dir

APP_NAME = "cortex-tui"
CORTEX_DIRNAME = ".cortex"


def cortex_dir(root: Path) -> Path:
    return root / CORTEX_DIRNAME


def default_db_uri(root: Path) -> str:
    return str(cortex_dir(root) / "db")


def global_db_uri() -> str:
    return os.environ.get("CORTEX_GLOBAL_DB") or str(Path(user_data_dir(APP_NAME)) / "global-db")


def cache_dir() -> Path:
    return Path(os.environ.get("CORTEX_CACHE_DIR") or user_cache_dir(APP_NAME))


def user_config_file() -> Path:
    return Path(os.environ.get("CORTEX_CONFIG") or Path(user_config_dir(APP_NAME)) / "config.toml")


def is_remote_uri(uri: str) -> bool:
    """Object-storage URIs (s3://, gs://, az://, ...) have no local directory to lock or create."""
    return "://" in uri and not uri.startswith("file://")


def confine(root: Path, path: str) -> str:
    """A path a client gave, as a repository-relative POSIX path, refused when it leads outside the repository
    (`../`, an absolute path elsewhere, or a symlink pointing out)."""
    from .errors import CortexError

    if not path or "\x00" in path:
        raise CortexError(f"bad path {path!r}")
    base = root.resolve()
    target = (base / path).resolve()
    if target != base and base not in target.parents:
        raise CortexError(f"path {path!r} is outside the repository {base}")
    return target.relative_to(base).as_posix()
