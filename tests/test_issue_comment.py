"""The GitHub Action (`action.yml`): its dry run writes the comment `cortex context` would give for an issue, read
from a recorded `issues` event; posting sends that comment to the API it is given (a local HTTP server here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import yaml
from cortex_tui.app.issue_comment import MARKER

from .conftest import commit_file

EVENT = Path(__file__).parent / "events" / "issues_opened.json"
ROOT = Path(__file__).parent.parent


def _shop(repo: Path) -> Path:
    commit_file(repo, "shop/pricing.py", "TAX = 0.2\n\n\ndef price_of(sku):\n    return 10 * (1 + TAX)\n", "Add pricing")
    commit_file(repo, "shop/cart.py", "from .pricing import price_of\n\n\nclass Cart:\n    def total(self, items):\n"
                "        return sum(price_of(i) * (1 + 0.2) for i in items)\n", "Add cart")
    commit_file(repo, "docs/faq.md", "# FAQ\n\nWrite ```code``` in fences.\n", "Add a FAQ")
    return repo


def _run(repo: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """As the action's steps run it: one-shot processes, no resident server."""
    return subprocess.run([sys.executable, *args], cwd=repo, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "CORTEX_NO_DAEMON": "1", **(env or {})})


def test_the_dry_run_writes_the_comment_cortex_context_gives(repo, tmp_path):
    _shop(repo)
    assert _run(repo, "-m", "cortex_tui.app.cli.client", "index", "--no-embed").returncode == 0
    out = tmp_path / "comment.md"
    done = _run(repo, "-m", "cortex_tui.app.issue_comment", "--event", str(EVENT), "--budget", "3000",
                "--dry-run", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"wrote the comment for #42 to {out}\n"
    event = json.loads(EVENT.read_text())["issue"]
    expected = tmp_path / "context.md"
    task = f"{event['title']}\n\n{event['body']}"
    assert _run(repo, "-m", "cortex_tui.app.cli.client", "context", task, "--budget", "3000", "--output",
                str(expected)).returncode == 0
    context = expected.read_text()
    assert "def price_of(sku):" in context and "class Cart:" in context
    body = out.read_text()
    assert body.startswith(MARKER) and "within 3,000 tokens" in body
    # The context verbatim, inside a fence longer than any run of backticks in it (the FAQ's ``` stays text).
    fence = body.split("<summary>The context</summary>\n\n")[1].split("markdown\n")[0]
    assert set(fence) == {"`"} and len(fence) >= 4
    assert f"{fence}markdown\n{context}{'' if context.endswith(chr(10)) else chr(10)}{fence}\n" in body


def test_posting_sends_that_comment_to_the_issue(repo, tmp_path):
    _shop(repo)
    assert _run(repo, "-m", "cortex_tui.app.cli.client", "index", "--no-embed").returncode == 0
    received: list[tuple[str, dict, dict]] = []

    class GitHub(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (the standard library's name)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            received.append((self.path, dict(self.headers), body))
            answer = json.dumps({"html_url": "https://github.com/octo-org/shop/issues/42#issuecomment-1"}).encode()
            self.send_response(201)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    api = HTTPServer(("127.0.0.1", 0), GitHub)
    threading.Thread(target=api.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{api.server_port}"
        done = _run(repo, "-m", "cortex_tui.app.issue_comment", "--event", str(EVENT), "--budget", "3000",
                    env={"GITHUB_TOKEN": "ghs_test_token_for_a_local_server", "GITHUB_API_URL": url})
        dry = tmp_path / "comment.md"
        assert _run(repo, "-m", "cortex_tui.app.issue_comment", "--event", str(EVENT), "--budget", "3000",
                    "--dry-run", str(dry)).returncode == 0
    finally:
        api.shutdown()
    assert done.returncode == 0, done.stderr
    assert done.stdout == "commented on #42: https://github.com/octo-org/shop/issues/42#issuecomment-1\n"
    [(path, headers, body)] = received
    assert path == "/repos/octo-org/shop/issues/42/comments"
    assert headers["Authorization"] == "Bearer ghs_test_token_for_a_local_server"
    assert body == {"body": dry.read_text()}


def test_a_bad_event_or_a_missing_token_is_one_line(repo, tmp_path):
    _shop(repo)
    bad = tmp_path / "push.json"
    bad.write_text(json.dumps({"ref": "refs/heads/main", "repository": {"full_name": "octo-org/shop"}}))
    for args, env, said in (
            (["--event", str(bad)], {}, "is not an issue's event"),
            (["--event", str(tmp_path / "absent.json")], {}, "cannot read the event"),
            (["--event", str(EVENT), "--budget", "0"], {}, "the budget is a number of tokens"),
            (["--event", str(EVENT)], {"GITHUB_TOKEN": ""}, "GITHUB_TOKEN is not set")):
        done = _run(repo, "-m", "cortex_tui.app.issue_comment", *args, env=env)
        assert done.returncode == 1 and said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_action_installs_this_package_and_runs_the_module():
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) == {"budget", "embed", "dry-run", "github-token", "python-version"}
    steps = "\n".join(step.get("run", "") for step in action["runs"]["steps"])
    assert 'pip install --quiet "$GITHUB_ACTION_PATH"' in steps
    assert "python -m cortex_tui.app.issue_comment --event \"$GITHUB_EVENT_PATH\"" in steps
