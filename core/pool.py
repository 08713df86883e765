"""One shared pool of threads for the engine's short, independent reads: table queries, git, the query embedding.

A search used to start three pools of its own (and `what` another), and starting their threads cost tens of
milliseconds per call on a busy machine. Only leaf work is submitted here: a job never waits on another job of
this pool, so any number of searches and `what`s from dashboard workers and MCP threads can share it without
deadlock.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

READS = ThreadPoolExecutor(max_workers=8, thread_name_prefix="cortex-read")
