"""The C heap of a long-lived process: one malloc arena, and free memory handed back to the system.

glibc gives each thread that allocates its own arena (up to eight per core). LanceDB's query threads, onnxruntime's
and the tokenizer's then each grow an arena to the largest work they did, and freed memory scattered over several
arenas is rarely at an arena's top, so it stays resident: in the resident server on a 2,000-file repository each
search left 2-30 MiB behind for good (about 100 MiB over the first dozen searches). With one arena the same
searches leave nothing once warm, and `malloc_trim` returns the free pages inside the heap, not only its top.
Elsewhere (musl, macOS) both calls are absent and do nothing.

pyarrow allocates from a pool of its own (mimalloc in its wheels), which keeps what it freed for reuse: building the
repository map's symbol graph on a 2,000-file repository left 45 MiB resident for good. On the C heap instead, the
same build leaves 7 MiB once trimmed (docs/benchmarks.md).
"""

from __future__ import annotations

import ctypes

_M_ARENA_MAX = -8
"""mallopt's parameter number for the arena limit (glibc's malloc.h)."""


def _libc():
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def one_arena() -> bool:
    """Make every thread allocate from the main arena; call before the process starts threads. True when the C
    library took it. The threads doing native work here mostly take turns on the GIL or a lock anyway, and the
    arena lock cost no measurable time (see docs/benchmarks.md)."""
    libc = _libc()
    try:
        return bool(libc is not None and libc.mallopt(_M_ARENA_MAX, 1))
    except AttributeError:
        return False


def trim() -> None:
    """Return the heap's free pages to the system (a few milliseconds on a 400 MiB heap)."""
    libc = _libc()
    try:
        if libc is not None:
            libc.malloc_trim(0)
    except AttributeError:
        pass


def arrow_on_the_c_heap() -> None:
    """Make pyarrow allocate from the C heap (above), for a process that lives on after large arrow work."""
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())


def arrow_pool() -> str:
    """The allocator pyarrow uses in this process (`system` once on the C heap), for a server's status."""
    import pyarrow as pa

    return str(pa.default_memory_pool().backend_name)
