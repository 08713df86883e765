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


class NoDatabase(CortexError):
    """No database exists at the location yet (nothing was written there): reads answer "nothing yet" over it, and
    writers create it."""


class StoreUnreachable(CortexError):
    """A remote store did not answer (down, unreachable or too slow; nothing was decided there): the team store is
    left out of reads, and team writes are queued, until it answers."""


class GoneUnderCompaction(CortexError):
    """A compaction of a shared remote store met versions another machine's cleanup removed while this one listed
    or rewrote them: that machine has done the compaction, so this one need not."""


class ReadOnlyDatabase(CortexError):
    """The owner took the database's write permission away: it is read as it is, and a write (or a table it lacks)
    is refused."""
