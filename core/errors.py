"""The one exception type the engine raises for problems a user can act on."""


class CortexError(Exception):
    """A user-facing failure. Its message is a single line that names the problem."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))
