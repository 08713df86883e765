"""The GitHub Action's one step of its own (`action.yml` at the repository's root): the context `cortex context`
gives for a new issue's title and body, posted as a comment on the issue, or written to a file (`--dry-run`).

The context is `cortex context`'s own output, run as a process in the checked-out repository, so the comment says
exactly what a person running the command there would get. Posting uses the standard library (one REST call).

    python -m cortex_tui.app.issue_comment --event "$GITHUB_EVENT_PATH" --budget 6000 [--dry-run comment.md]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

MARKER = "<!-- cortex-context -->"
"""Opens every comment this posts, so a workflow (or a person) can find and replace it."""
COMMENT_LIMIT = 65_536
"""GitHub refuses longer comment bodies."""


class ActionError(Exception):
    """What stops the step, said in one line."""


@dataclass(frozen=True)
class Issue:
    """The issue an `issues` (or `issue_comment`) event is about."""

    repository: str
    number: int
    title: str
    body: str

    @property
    def task(self) -> str:
        return f"{self.title}\n\n{self.body}".strip()

    @classmethod
    def from_event(cls, path: Path) -> Issue:
        try:
            event = json.loads(path.read_text(encoding="utf-8"))
            issue = event["issue"]
            return cls(event["repository"]["full_name"], int(issue["number"]), issue.get("title") or "",
                       issue.get("body") or "")
        except OSError as exc:
            raise ActionError(f"cannot read the event {path}: {exc.strerror}") from exc
        except (ValueError, KeyError, TypeError) as exc:
            raise ActionError(f"{path} is not an issue's event (it needs issue.number, issue.title and "
                              f"repository.full_name)") from exc


def context_of(issue: Issue, budget: int, cwd: Path) -> str:
    """`cortex context` for the issue, as the command prints it into a file."""
    if not issue.task:
        raise ActionError(f"issue #{issue.number} has neither a title nor a body")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "context.md"
        done = subprocess.run([sys.executable, "-m", "cortex_tui.app.cli.client", "context", "-", "--budget",
                               str(budget), "--output", str(out)], input=issue.task, cwd=cwd, text=True,
                              capture_output=True)
        if done.returncode != 0:
            said = done.stderr.strip().splitlines()
            raise ActionError(said[-1] if said else f"cortex context exited {done.returncode}")
        return out.read_text(encoding="utf-8")


def comment(issue: Issue, context: str, budget: int) -> str:
    """The comment: one line saying what it is, then the context folded away, fenced so that nothing in it (code
    fences of its own, HTML) changes how the comment renders."""
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", context)), default=0))
    body = (f"{MARKER}\n**cortex context** for this issue, within {budget:,} tokens (`cortex context` on the "
            f"default branch's checkout).\n\n<details><summary>The context</summary>\n\n{fence}markdown\n{context}"
            f"{'' if context.endswith(chr(10)) else chr(10)}{fence}\n\n</details>\n")
    if len(body) > COMMENT_LIMIT:
        raise ActionError(f"the comment would be {len(body):,} characters, over GitHub's {COMMENT_LIMIT:,}: "
                          f"give a smaller budget")
    return body


def post(issue: Issue, body: str, token: str, api: str) -> str:
    """Post the comment; returns its address."""
    request = urllib.request.Request(
        f"{api.rstrip('/')}/repos/{issue.repository}/issues/{issue.number}/comments",
        data=json.dumps({"body": body}).encode(), method="POST",
        headers={"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
                 "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.loads(answer.read()).get("html_url", "")
    except urllib.error.HTTPError as exc:
        raise ActionError(f"GitHub refused the comment: HTTP {exc.code} {exc.reason}") from exc
    except urllib.error.URLError as exc:
        raise ActionError(f"GitHub could not be reached: {exc.reason}") from exc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cortex_tui.app.issue_comment",
                                     description="post cortex's context for an issue as a comment on it")
    parser.add_argument("--event", type=Path, required=True, help="the event's JSON (GITHUB_EVENT_PATH)")
    parser.add_argument("--budget", type=int, default=6000, help="token budget of the context")
    parser.add_argument("--dry-run", type=Path, metavar="FILE", help="write the comment here instead of posting it")
    args = parser.parse_args(argv)
    try:
        if args.budget < 1:
            raise ActionError("the budget is a number of tokens, 1 or more")
        issue = Issue.from_event(args.event)
        body = comment(issue, context_of(issue, args.budget, Path.cwd()), args.budget)
        if args.dry_run:
            args.dry_run.write_text(body, encoding="utf-8")
            print(f"wrote the comment for #{issue.number} to {args.dry_run}")
            return 0
        token = os.environ.get("GITHUB_TOKEN", "")
        if not token:
            raise ActionError("GITHUB_TOKEN is not set (the action passes its github-token input)")
        url = post(issue, body, token, os.environ.get("GITHUB_API_URL", "https://api.github.com"))
        print(f"commented on #{issue.number}: {url}")
        return 0
    except ActionError as exc:
        print(f"cortex issue comment: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
