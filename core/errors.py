"""The exception types the engine raises for problems a user can act on."""


class CortexError(Exception):
    """A user-facing failure. Its message is a single line that names the problem."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


class DatabaseLocked(CortexError):
    """Another process holds the database's write lock past the timeout: reads still work, so callers that can do
    without their write (creating tables at start-up) go on and let the write that needs it report."""


class UnusableLocation(CortexError):
    """A repository path or database location nothing can work with (missing, not a directory, not creatable):
    every command there fails the same way until the user points elsewhere."""


class DamagedDatabase(CortexError):
    """Files of a database are missing or damaged (its message names `cortex doctor`): never taken for a database
    that does not exist yet, so no command answers "no memories yet" over it."""
