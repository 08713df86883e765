"""One Textual widget per dashboard pane, fed by the engine's dataclasses; no engine logic lives here."""
