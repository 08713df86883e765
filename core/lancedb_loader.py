"""LanceDB imported without the work at import time it never needs here.

`import lancedb` imports `lance_namespace`, whose models come from the package `lance_namespace_urllib3_client`; that
package's top level also imports its OpenAPI client, about 370 methods each wrapped by pydantic's `validate_call`.
Building those wrappers was half of every process's LanceDB import (2.2 s -> 1.0 s of CPU per process, 14 MiB less;
docs/benchmarks.md): the resident server, each index pass's child process and every in-process command paid it.

The models are needed (a local connection answers with them); the client only by a REST namespace, which cortex does
not open. So a stand-in for the package's top level is registered before LanceDB is imported: its submodules (the
models) import as usual, and the first attribute asked of the top level itself imports the real one, so anything that
does use the client still gets it whole.

Two more costs are deferred for the import's duration only (1.0-1.1 s -> 0.66-0.76 s of CPU; docs/benchmarks.md):
- On Python < 3.12 LanceDB marks its methods with the `overrides` package, which disassembles every base class at
  class creation to check the mark (0.3 s). From 3.12 on LanceDB uses `typing.override`, a marker that checks nothing;
  the same marker stands in here while LanceDB imports, and the real package stays importable for anyone else.
- About 200 pydantic models (the namespace's requests and answers) build their validators when defined; defined with
  pydantic's `defer_build`, each builds them on its first use instead, which a local connection rarely makes.
Both are process-wide for that moment: another thread that defines a pydantic model or first imports `overrides`
meanwhile gets the same (a model built on first use; the marker). The import is done under a lock, so two threads
asking at once cannot leave either in place.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

CLIENT_PACKAGE = "lance_namespace_urllib3_client"
_importing = threading.Lock()


def load_lancedb() -> Any:
    """The `lancedb` module, imported (once per process) without the REST client's top level."""
    with _importing:  # a second thread's "before" would be the first one's stand-ins, restored for good
        if "lancedb" not in sys.modules:
            _stand_in_for_client()
            with _override_marks_unchecked(), _models_built_on_first_use():
                import lancedb
    import lancedb

    return lancedb


@contextmanager
def _override_marks_unchecked() -> Iterator[None]:
    if sys.version_info >= (3, 12) or "overrides" in sys.modules:
        yield  # LanceDB uses typing.override itself, or the real package is already someone's
        return
    from typing_extensions import override

    stand_in = types.ModuleType("overrides")
    stand_in.override = override  # type: ignore[attr-defined]
    stand_in.EnforceOverrides = type("EnforceOverrides", (), {})  # type: ignore[attr-defined]
    sys.modules["overrides"] = stand_in
    try:
        yield
    finally:
        if sys.modules.get("overrides") is stand_in:
            del sys.modules["overrides"]


@contextmanager
def _models_built_on_first_use() -> Iterator[None]:
    from pydantic import BaseModel

    # A model's config is merged from its bases' when the class is made: models made meanwhile keep the setting.
    before = BaseModel.model_config
    BaseModel.model_config = {**before, "defer_build": True}
    try:
        yield
    finally:
        BaseModel.model_config = before


def _stand_in_for_client() -> None:
    if CLIENT_PACKAGE in sys.modules:
        return
    spec = importlib.util.find_spec(CLIENT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return  # a LanceDB without it: nothing to spare
    stand_in = types.ModuleType(CLIENT_PACKAGE)
    stand_in.__spec__ = spec
    stand_in.__file__ = spec.origin
    stand_in.__path__ = list(spec.submodule_search_locations)

    def real_attribute(name: str) -> Any:
        if sys.modules.get(CLIENT_PACKAGE) is stand_in:
            del sys.modules[CLIENT_PACKAGE]
        real = importlib.import_module(CLIENT_PACKAGE)
        # Submodules imported meanwhile (the models) were set on the stand-in; the real package's own imports find
        # them loaded and would not set them on it.
        for attribute, value in vars(stand_in).items():
            if isinstance(value, types.ModuleType) and not hasattr(real, attribute):
                setattr(real, attribute, value)
        return getattr(real, name)

    stand_in.__getattr__ = real_attribute  # type: ignore[method-assign]
    sys.modules[CLIENT_PACKAGE] = stand_in
