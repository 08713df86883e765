"""The dashboard's footer, rebuilt only when the keys it shows change."""

from __future__ import annotations

from textual import events, on
from textual.screen import Screen

from ...widgets.footer import FittingFooter


class SteadyFooter(FittingFooter):
    """Textual's footer rebuilds its keys (removes and mounts a widget per key, styles and lays them out again) after
    each refresh of the screen's bindings, and a pane refreshes them whenever its highlighted item changes, so every
    pane's first results did: eight rebuilds before the dashboard's first full frame, one per refresh even while
    one was pending, most of them of the same keys. Here a rebuild is asked for only when the keys to show differ
    from those shown, and never while one is already on its way (it composes the keys as they are when it runs)."""

    _shown: tuple | None = None
    """What the keys on show were composed from (see `_keys`); None before the first composition with bindings."""
    _pending = False
    """A rebuild was asked for and has not composed yet."""

    def compose(self):
        self._pending = False
        if self._bindings_ready:
            self._shown = self._keys(self.screen)
        yield from super().compose()

    def bindings_changed(self, screen: Screen) -> None:
        # Textual's own rule first: the bindings are ready, and a footer of another screen or an app without focus
        # waits for the next change.
        self._bindings_ready = True
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            self._rebuild_if_changed()

    @on(events.Resize)
    def _resized(self, event: events.Resize) -> None:
        # Which keys fit whole depends on the width, which `_keys` holds; FittingFooter's handler, which rebuilds on
        # every resize (the first one too, while the bindings are not ready), is not run as well.
        event.prevent_default()
        if self._bindings_ready:
            self._rebuild_if_changed()

    def _rebuild_if_changed(self) -> None:
        if not self._pending and self._keys(self.screen) != self._shown:
            self._pending = True
            self.call_after_refresh(self.recompose)

    def _keys(self, screen: Screen) -> tuple:
        """Everything the composed keys depend on: each shown binding's key, label, action and whether it is enabled,
        in order, and the width they are fitted to."""
        shown = tuple((binding.key, binding.description, binding.action, enabled)
                      for _node, binding, enabled, _tooltip in screen.active_bindings.values() if binding.show)
        return shown + (self.app.size.width,)
