"""Where cortex keeps things on disk: per-repository database, global store, caches, config."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from platformdirs import user_cache_dir, user_config_dir, user_data_dir

from .credentials import ENDPOINT_OPTIONS, CloudCredentials

APP_NAME = "cortex-tui"
CORTEX_DIRNAME = ".cortex"


def cortex_dir(root: Path) -> Path:
    return root / CORTEX_DIRNAME


def default_db_uri(root: Path) -> str:
    return str(cortex_dir(root) / "db")


def default_global_db_uri() -> str:
    """The global store's place unless the setting `global_db` (CORTEX_GLOBAL_DB) names another."""
    return str(Path(user_data_dir(APP_NAME)) / "global-db")


def cache_dir() -> Path:
    return Path(os.environ.get("CORTEX_CACHE_DIR") or user_cache_dir(APP_NAME))


def user_config_file(env: Mapping[str, str] | None = None) -> Path:
    """`$CORTEX_CONFIG` of `env` (default: this process's environment), else the user's config directory's."""
    explicit = (os.environ if env is None else env).get("CORTEX_CONFIG")
    return Path(explicit or Path(user_config_dir(APP_NAME)) / "config.toml")


def is_remote_uri(uri: str) -> bool:
    """Object-storage URIs (s3://, gs://, az://, ...) have no local directory to lock or create."""
    return "://" in uri and not uri.startswith("file://")


def team_queue_file(root: Path) -> Path:
    """Team writes made while the team store was unreachable, waiting for `cortex sync`."""
    return cortex_dir(root) / "team-queue.jsonl"


def remote_storage_options(uri: str, endpoint: str | None, timeout_s: float,
                           credentials: CloudCredentials | None = None) -> dict[str, str]:
    """LanceDB storage options for an object-storage URI: timeouts, an S3-compatible endpoint, and the caller's
    credentials when given (None: LanceDB reads this process's environment itself). The options are handed to
    LanceDB only, never printed or stored."""
    seconds = f"{max(timeout_s, 0.1):g}s"
    options = credentials.storage_options(uri) if credentials is not None else {}
    options.update({"timeout": seconds, "connect_timeout": seconds, "client_max_retries": "1",
                    "client_retry_timeout": f"{max(int(timeout_s), 1)}"})
    if endpoint and uri.startswith("s3://"):
        for name in ENDPOINT_OPTIONS:  # the setting wins over the variables
            options.pop(name, None)
        options["endpoint"] = endpoint
        if endpoint.startswith("http://"):
            options["allow_http"] = "true"
    return options


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
