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

import _imp
import ctypes
import re
from collections.abc import Iterator

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


def status_bytes(field: str) -> int | None:
    """One memory figure of this process from /proc/self/status, in bytes (`VmRSS`: resident; `RssAnon`: its own;
    `RssFile`: files' pages); None where /proc is absent."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            return next((int(line.split()[1]) * 1024 for line in status if line.startswith(f"{field}:")), None)
    except OSError:
        return None


def library_pages_bytes() -> int:
    """The resident pages of the process's shared libraries that `drop_library_pages` would unmap; 0 where /proc is
    absent. Counted from the mappings themselves, so what another thread maps meanwhile, or a file that is not a
    library, never passes for it (a figure for all files' pages, taken as a floor after a drop, once did: a drop
    made while an index pass mapped its code in left the server 145 MiB of pages over its bound)."""
    text = _smaps()
    return sum(rss for _, _, rss in _clean_library_mappings(text)) if text else 0


def _smaps() -> str:
    try:
        with open("/proc/self/smaps", encoding="ascii", errors="replace") as smaps:
            return smaps.read()
    except OSError:
        return ""


def drop_library_pages() -> int:
    """Unmap the resident pages of the process's shared libraries that are still the files' own (never written:
    code, read-only data), and return how many bytes that was; 0 where /proc or madvise is absent.

    Such a page holds nothing but the file's bytes, so the next access maps it again (from the page cache, a minor
    fault). The pages stay in the page cache: this changes what the process maps, not the machine's free memory
    (unmapped, they are the first the kernel reclaims when it needs memory). A page the loader wrote (relocations,
    then made read-only) is the process's own, and unmapping it would lose it: a mapping that is writable, holds an
    anonymous page or has a page in swap (a written page, swapped out) is left alone. A library being loaded
    (mapped whole, then its data mapped over and relocated) must not be loaded meanwhile: no import starts during a
    drop, and the caller holds back its commands and calls. An import another thread began before (a watcher's
    index pass meeting a new language) is not held back; the window is the few microseconds between the loader's
    mappings."""
    libc = _libc()
    if libc is None:
        return 0
    _imp.acquire_lock()
    try:
        text = _smaps()
        dropped = 0
        for start, length, rss in _clean_library_mappings(text):
            if libc.madvise(ctypes.c_void_p(start), ctypes.c_size_t(length), _MADV_DONTNEED) == 0:
                dropped += rss
        return dropped
    finally:
        _imp.release_lock()


def _clean_library_mappings(smaps: str) -> Iterator[tuple[int, int, int]]:
    """(start, length, resident bytes) of each mapping of a shared library that is read-only and holds only the
    file's pages: none anonymous, none in swap."""
    mapping: tuple[int, int] | None = None
    fields: dict[str, int] = {}
    for line in [*smaps.splitlines(), "0-0 ---p 0 0:0 0"]:  # a last header ends the last mapping
        head = line.split(maxsplit=5)
        if len(head) >= 5 and "-" in head[0] and not head[0].endswith(":"):
            if mapping is not None and fields.get("Rss") and fields.get("Anonymous") == 0 and fields.get("Swap") == 0:
                yield (*mapping, fields["Rss"] * 1024)
            mapping, fields = None, {}
            if len(head) == 6 and "w" not in head[1] and _LIBRARY.search(head[5].strip()):
                start, end = (int(part, 16) for part in head[0].split("-"))
                mapping = (start, end - start)
        elif mapping is not None and len(head) == 3 and head[0] in ("Rss:", "Anonymous:", "Swap:"):
            fields[head[0][:-1]] = int(head[1])


def arrow_on_the_c_heap() -> None:
    """Make pyarrow allocate from the C heap (above), for a process that lives on after large arrow work."""
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())


def arrow_pool() -> str:
    """The allocator pyarrow uses in this process (`system` once on the C heap), for a server's status."""
    import pyarrow as pa

    return str(pa.default_memory_pool().backend_name)
