"""cortex-tui's own themes; Textual's built-in themes are available too."""

from textual.theme import Theme

CORTEX_DARK = Theme(
    name="cortex-dark",
    primary="#7aa2f7",
    secondary="#bb9af7",
    accent="#e0af68",
    warning="#e0af68",
    error="#f7768e",
    success="#9ece6a",
    foreground="#c0caf5",
    background="#16161e",
    surface="#1f2335",
    panel="#24283b",
    dark=True,
    variables={"budget-memory": "#bb9af7", "budget-code": "#7aa2f7", "budget-warn": "#f7768e", "graph-edge": "#565f89"},
)

CORTEX_LIGHT = Theme(
    name="cortex-light",
    primary="#2e5ea8",
    secondary="#7847bd",
    accent="#b06d00",
    warning="#b06d00",
    error="#c0392b",
    success="#2d7d46",
    foreground="#1f2430",
    background="#f6f7fb",
    surface="#ffffff",
    panel="#e6e9f2",
    dark=False,
    variables={"budget-memory": "#7847bd", "budget-code": "#2e5ea8", "budget-warn": "#c0392b", "graph-edge": "#8a93a6"},
)

BUILTIN_THEMES: dict[str, Theme] = {t.name: t for t in (CORTEX_DARK, CORTEX_LIGHT)}
