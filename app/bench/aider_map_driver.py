"""Aider's own RepoMap, run by the interpreter of an environment where aider-chat is installed (`cortex bench map
--aider-python`). Standalone on purpose: it imports aider and the standard library only, never cortex, so aider's
pinned dependencies stay out of cortex's environment.

One JSON request per line on standard input ({"root", "task", "files", "budgets"}), one JSON answer per line on
standard output ({budget: {"text", "seconds"}}). The task's mentions are taken by aider's Coder methods (file
mentions, identifier mentions, identifier-filename matches), as aider does for a chat message with no file added.
"""

import json
import os
import sys
import time
from types import SimpleNamespace


class _Model:
    """What RepoMap asks of a model: token counts (cl100k_base, as cortex counts)."""

    def __init__(self) -> None:
        import tiktoken

        self._encoding = tiktoken.get_encoding("cl100k_base")

    def token_count(self, text):
        return len(self._encoding.encode(text if isinstance(text, str) else json.dumps(text), disallowed_special=()))


def _quiet_io():
    """Aider's own InputOutput (it reads the files), with its messages kept off standard output (the protocol)."""
    from aider.io import InputOutput

    class Quiet(InputOutput):
        def tool_output(self, *args, **kwargs):
            pass

        tool_warning = tool_error = tool_output

    return Quiet(pretty=False, yes=True, fancy_input=False)


def _mentions(root, files, task):
    from aider.coders.base_coder import Coder

    coder = SimpleNamespace(
        get_addable_relative_files=lambda: files, get_all_relative_files=lambda: files,
        get_inchat_relative_files=lambda: [], abs_read_only_fnames=set(),
        get_rel_fname=lambda fname: os.path.relpath(fname, root))
    fnames = Coder.get_file_mentions(coder, task)
    idents = Coder.get_ident_mentions(coder, task)
    fnames.update(Coder.get_ident_filename_matches(coder, idents))
    return fnames, idents


def main() -> None:
    from aider.repomap import RepoMap

    model, quiet = _Model(), _quiet_io()
    for line in sys.stdin:
        request = json.loads(line)
        root, files = request["root"], request["files"]
        fnames, idents = _mentions(root, files, request["task"])
        answer = {}
        for budget in request["budgets"]:
            started = time.perf_counter()
            repo_map = RepoMap(map_tokens=budget, root=root, main_model=model, io=quiet)
            text = repo_map.get_repo_map(set(), {os.path.join(root, f) for f in files}, mentioned_fnames=fnames,
                                         mentioned_idents=idents) or ""
            answer[str(budget)] = {"text": text, "seconds": time.perf_counter() - started}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
