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

A process's resident set also counts every page of its shared libraries it ever ran or read: LanceDB's code alone is
141 MiB, and a server that has opened, searched, written and selected keeps 75-85 MiB of it mapped, though one
command's work runs through about 45. Those pages are clean copies of the files, so they can be unmapped when quiet
and mapped again from the page cache by the next command that runs them (`drop_library_pages`).
"""

from __future__ import annotations

import ctypes
import re

_M_ARENA_MAX = -8
"""mallopt's parameter number for the arena limit (glibc's malloc.h)."""
_MADV_DONTNEED = 4
"""madvise's advice number for "unmap these pages" (Linux's mman.h)."""
_LIBRARY = re.compile(r"\.so(\.[0-9]+)*$")


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


def file_pages_bytes() -> int:
    """The process's resident pages that are files' (its libraries, mostly), from /proc; 0 where it is absent."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            return next((int(line.split()[1]) * 1024 for line in status if line.startswith("RssFile:")), 0)
    except OSError:
        return 0


def drop_library_pages() -> int:
    """Unmap the resident pages of the process's shared libraries that are still the files' own (never written:
    code, read-only data), and return how many bytes that was; 0 where /proc or madvise is absent.

    Safe because such a page holds nothing but the file's bytes: the next access maps it again (from the page cache,
    a minor fault). A mapping the loader wrote (relocations, then made read-only) has pages of its own, and
    unmapping those would lose them, so any mapping that is writable or holds an anonymous page is left alone."""
    libc = _libc()
    try:
        with open("/proc/self/smaps", encoding="ascii", errors="replace") as smaps:
            text = smaps.read()
    except OSError:
        return 0
    if libc is None:
        return 0
    dropped = 0
    for start, length, rss in _clean_library_mappings(text):
        if libc.madvise(ctypes.c_void_p(start), ctypes.c_size_t(length), _MADV_DONTNEED) == 0:
            dropped += rss
    return dropped


def _clean_library_mappings(smaps: str):
    """(start, length, resident bytes) of each mapping of a shared library, read-only and with no anonymous page."""
    mapping = None
    rss = 0
    for line in smaps.splitlines():
        head = line.split(maxsplit=5)
        if len(head) >= 5 and "-" in head[0] and not head[0].endswith(":"):
            mapping = None
            if len(head) == 6 and "w" not in head[1] and _LIBRARY.search(head[5].strip()):
                start, end = (int(part, 16) for part in head[0].split("-"))
                mapping = (start, end - start)
        elif mapping is not None and line.startswith("Rss:"):
            rss = int(line.split()[1]) * 1024
        elif mapping is not None and line.startswith("Anonymous:"):
            if rss and line.split()[1] == "0":
                yield (*mapping, rss)
            mapping = None


def arrow_on_the_c_heap() -> None:
    """Make pyarrow allocate from the C heap (above), for a process that lives on after large arrow work."""
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())


def arrow_pool() -> str:
    """The allocator pyarrow uses in this process (`system` once on the C heap), for a server's status."""
    import pyarrow as pa

    return str(pa.default_memory_pool().backend_name)
