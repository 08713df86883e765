"""The engine's use cases, by what they do: memories (write, read, prune), finding (search), context (selection,
repository map, snapshot) and overview (what to know, timeline, graph). Each function takes the `Workspace` it works
in and typed requests, and returns the engine's typed answers; `core/engine.py` is the facade over them."""
