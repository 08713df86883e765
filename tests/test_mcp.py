"""The real MCP server as a subprocess, driven by the official SDK client over stdio on real repositories."""

import asyncio
import os
import shutil
import sys
import time

import pytest
from cortex_tui.core.engine import Engine
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from .conftest import commit_file, wait_for

TOOLS = {"smart_search", "what_should_i_know", "select_context", "remember", "forget", "confirm", "memory_history",
         "memory_list", "memory_show", "task_done", "graph_neighbors", "agent_init", "agent_log", "agent_commit",
         "agent_roadmap", "agent_branch", "agent_switch", "agent_merge", "agent_abandon", "agent_branches", "agent_context",
         "memory_smart_search", "memory_what", "repo_map", "snapshot", "stats"}


@pytest.fixture
def shop(repo):
    commit_file(repo, "shop/pricing.py", "TAX = 0.2\n\ndef price_of(sku):\n    return 10 * (1 + TAX)\n", "Add pricing")
    commit_file(repo, "shop/cart.py", "from .pricing import price_of\n\nclass Cart:\n    def total(self, items):\n"
                "        return sum(price_of(i) for i in items)\n", "Add cart")
    Engine(repo).code_index(create=True).update(embed=True)
    return repo


MODES = pytest.mark.parametrize("served", [True, False], ids=["served", "in-process"])
"""`cortex mcp` as agents start it (attached to the repository's resident server, which runs the tools) and with
--no-daemon (the tools run on an engine of its own): arguments and answers cross the socket only in the first."""


def server(repo, *extra: str, served: bool = True) -> Client:
    """`cortex mcp` through the installed entry point."""
    env = {k: v for k, v in os.environ.items() if k.startswith(("CORTEX_", "GIT_"))}
    args = ["-m", "cortex_tui.app.cli.client", "mcp", "-C", str(repo), *extra, *([] if served else ["--no-daemon"])]
    return Client(StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(repo)),
                  read_timeout_seconds=120)


def resident_calls(repo) -> int:
    """Calls the repository's resident server has answered (0 when none runs)."""
    from cortex_tui.app.link import connection, protocol

    paths = protocol.server_paths(*connection.server_key(str(repo), None))
    # Asked again until it answers: a server busy with a long command on a loaded machine may miss one request.
    found = wait_for(lambda: connection.ask(paths, "status"), seconds=10)
    return found["calls"] if found else 0


async def call(client, tool: str, **arguments):
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


async def error(client, tool: str, **arguments) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    return result.content[0].text


async def test_initialize_names_the_server_and_its_installed_version(repo):
    """Clients show and log the server's version; an empty one says nothing about which cortex answered."""
    from importlib.metadata import version

    async with server(repo, "--no-watch", served=False) as client:
        assert (client.server_info.name, client.server_info.version) == ("cortex", version("cortex-tui"))


@MODES
async def test_every_tool_on_a_real_repository(shop, served):
    async with server(shop, "--no-watch", served=served) as client:
        listed = (await client.list_tools()).tools
        assert {t.name for t in listed} == TOOLS
        for tool in listed:
            assert len(tool.description) > 40 and tool.input_schema["type"] == "object"
        select = next(t for t in listed if t.name == "select_context")
        assert select.input_schema["required"] == ["task"] and "budget" in select.input_schema["properties"]

        made = await call(client, "remember", text="Prices include tax; never add it twice.", kind="decision",
                          files=["shop/pricing.py"], key="tax-rule")
        assert made["outcome"] == "created" and made["memory"]["files"] == ["shop/pricing.py"]
        again = await call(client, "remember", text="Prices include a 20% tax; never add it twice.", kind="decision",
                           key="tax-rule")
        assert again["outcome"] == "new_version"
        history = await call(client, "memory_history", key="tax-rule")
        assert [v["status"] for v in history["versions"]] == ["superseded", "active"]

        found = await call(client, "smart_search", query="add tax twice", limit=5)
        assert found["hits"][0]["id"] == again["memory"]["id"]
        code = await call(client, "smart_search", query="price of sku", filters={"code_only": True})
        assert code["hits"] and all(h["source"] == "code" for h in code["hits"])

        what = await call(client, "what_should_i_know")
        assert what["branch"] == "main"

        selected = await call(client, "select_context", task="change how tax is applied to prices", budget=4000)
        assert selected["tokens"] <= 4000 and "def price_of(sku):" in selected["context"]
        assert any(i.get("path") == "shop/pricing.py" for i in selected["items"])
        assert selected["frame_tokens"] + sum(i["document_tokens"] for i in selected["items"]) == selected["tokens"], \
            "each item's share of the document and the frame add up to the total an agent pays"

        graph = await call(client, "graph_neighbors", node="shop/pricing.py")
        assert graph["node"] == "file:shop/pricing.py"
        assert any(n["node"] == "file:shop/cart.py" for n in graph["neighbours"]), "cart imports pricing"

        forgotten = await call(client, "forget", id=again["memory"]["id"])
        assert [m["id"] for m in forgotten["forgotten"]] == [again["memory"]["id"]]
        assert all(h["id"] != again["memory"]["id"] for h in (await call(client, "smart_search", query="add tax twice"))["hits"])

        assert (await call(client, "agent_init", goal="Apply tax once"))["branch"]["name"] == "main"
        step = await call(client, "agent_log", observation="cart adds tax again", thought="double tax",
                          action="read shop/cart.py")
        assert step["n"] == 1
        await call(client, "agent_branch", name="inline-tax", purpose="compute tax in the cart")
        await call(client, "agent_log", observation="simpler", action="prototype")
        await call(client, "agent_switch", name="main")
        merge = await call(client, "agent_merge", name="inline-tax")
        assert merge["kind"] == "merge" and merge["steps"] == [2]
        commit_text = "tax applied once, in pricing"
        await call(client, "agent_log", observation="tests pass", action="commit")
        assert (await call(client, "agent_commit", contribution=commit_text))["steps"] == [3]
        assert (await call(client, "agent_roadmap", text="then round totals to cents"))["seq"] == 2
        context = await call(client, "agent_context", k=3)
        assert commit_text in context["markdown"] and len(context["commits"]) == 2
        assert "2. then round totals to cents" in context["markdown"]
    assert (resident_calls(shop) > 0) is served, "the tools ran where the mode says"


async def test_the_repo_map_and_the_snapshot_come_from_the_resident_server(shop):
    from cortex_tui.core.tokens import count_tokens

    async with server(shop, "--no-watch") as client:
        found = await call(client, "repo_map", budget=60, focus=["shop/cart.py"])
        assert found["tokens"] == count_tokens(found["text"]) <= 60
        assert found["seeds"] == ["shop/cart.py"] and found["files"][0] == "shop/pricing.py"
        assert found["entries"][0] | {"score": 0} == {"path": "shop/pricing.py", "line": 3, "name": "price_of",
                                                      "signature": "def price_of(sku):", "score": 0,
                                                      "within": None}
        assert "budget" in await error(client, "repo_map", budget=0)
        await call(client, "remember", text="Cart totals [/] include tax", kind="decision", files=["shop/cart.py"])
        (shop / "shop" / "cart.py").write_text((shop / "shop" / "cart.py").read_text() + "\n# rounding\n")
        snap = await call(client, "snapshot")
        assert snap["tokens"] == count_tokens(snap["text"]) <= 1000
        assert "Cart totals [/] include tax (shop/cart.py)" in snap["text"] and snap["map_files"]
        resource = await client.read_resource("cortex://snapshot")
        assert resource.contents[0].text == snap["text"] == (await call(client, "snapshot"))["text"]
    assert resident_calls(shop) > 0


@MODES
async def test_every_filter_and_option_of_every_tool(shop, served):
    """Agents call the tools with filters and options, through the resident server by default: each one once, and
    each must narrow or shape the answer as it says (a filter that failed to cross the socket failed the call)."""
    import datetime

    async with server(shop, "--no-watch", served=served) as client:
        tax = await call(client, "remember", text="Prices include tax; never add it twice.", kind="decision",
                         title="Tax once", tags=["money", "tax"], files=["shop/pricing.py"], key="tax-rule")
        again = await call(client, "remember", text="Prices include a 20% tax; never add it twice.", kind="decision",
                           key="tax-rule", files=["shop/pricing.py"])
        task = await call(client, "remember", text="Add a fuel surcharge to the cart total.", kind="task",
                          tags=["shipping"])
        assert tax["memory"]["title"] == "Tax once" and tax["memory"]["tags"] == ["money", "tax"]

        async def hits(query="tax cart price", **arguments):
            return (await call(client, "smart_search", query=query, **arguments))["hits"]

        everything = await hits()
        assert {h["source"] for h in everything} == {"memory", "code"}
        assert {h["kind"] for h in await hits(filters={"kinds": ["task"]})} == {"task"}
        assert [h["id"] for h in await hits(filters={"tags": ["shipping"]})] == [task["memory"]["id"]]
        assert all(h.get("path", "shop/pricing.py") == "shop/pricing.py" and
                   (h["source"] == "code" or "shop/pricing.py" in h["memory"]["files"])
                   for h in await hits(filters={"files": ["shop/pricing.py"]}))
        assert {h["source"] for h in await hits(filters={"branch": "main"})} >= {"memory"}
        assert all(h["source"] == "code" for h in await hits(filters={"branch": "elsewhere"}))
        turn = (await call(client, "remember", text="User: why is tax added twice?\n\nAssistant: the cart adds it "
                           "again", kind="agent", tags=["claude-code", "session", "turn"]))["memory"]["id"]
        assert turn in {h["id"] for h in await hits()}, "an imported session's turn is searched with the rest"
        assert turn not in {h["id"] for h in await hits(filters={"past_sessions": "without"})}
        assert [h["id"] for h in await hits(filters={"past_sessions": "only"})] == [turn]
        beside = await call(client, "smart_search", query="tax cart price", filters={"past_sessions": "beside"})
        assert turn not in {h["id"] for h in beside["hits"]} and [h["id"] for h in beside["past_sessions"]] == [turn]
        await call(client, "forget", id=turn)  # the checks below count the memories above
        memories = {h["id"] for h in everything if h["source"] == "memory"}
        assert {h["id"] for h in await hits(filters={"since": "7d"})} == memories, "since keeps new memories only"
        assert not await hits(filters={"since": "2999-01-01"})
        today = datetime.datetime.now(datetime.UTC).date().isoformat()
        assert {h["id"] for h in await hits(filters={"since": today})} == memories
        assert all(h["source"] == "memory" for h in await hits(filters={"memories_only": True}))
        assert all(h["source"] == "code" for h in await hits(filters={"code_only": True}))
        current = {h["id"] for h in await hits(filters={"memories_only": True})}
        with_history = {h["id"] for h in await hits(filters={"memories_only": True, "history": True})}
        assert with_history > current, "the superseded version of tax-rule is found with history"
        assert len(await hits(limit=1)) == 1
        assert [h["id"] for h in await hits(filter=True)] == [h["id"] for h in everything], "no LLM configured"
        assert {h["kind"] for h in await hits("kind:task surcharge")} == {"task"}, "inline filters in the query"
        all_at_once = await hits(filters={"kinds": ["decision"], "tags": ["tax"], "files": ["shop/pricing.py"],
                                          "branch": "main", "since": "1d", "memories_only": True, "history": True},
                                 limit=5)
        assert all_at_once and {h["kind"] for h in all_at_once} == {"decision"}

        for fmt, marker in (("markdown", "## shop/pricing.py"), ("xml", "<file path=\"shop/pricing.py\""),
                            ("json", '"path": "shop/pricing.py"')):
            selected = await call(client, "select_context", task="change how tax is applied to prices", budget=3000,
                                  include_tests="no", max_items=2, format=fmt)
            assert selected["format"] == fmt and selected["tokens"] <= 3000 and len(selected["items"]) <= 2
            assert marker in selected["context"], (fmt, selected["context"][:300])
        for tests in ("yes", "auto"):
            assert (await call(client, "select_context", task="tax", include_tests=tests))["items"]

        what = await call(client, "what_should_i_know", per_section=1)
        assert len(what["open_tasks"]) == 1 and len(what["recent_memories"]) <= 1
        near = await call(client, "graph_neighbors", node=f"mem:{again['memory']['id']}", depth=2, limit=1)
        assert len(near["neighbours"]) == 1
        by_id = await call(client, "memory_history", key=tax["memory"]["id"])
        assert [v["version"] for v in by_id["versions"]] == [1, 2]

        await call(client, "agent_init", goal="Apply tax once")
        await call(client, "agent_branch", name="try", purpose="an alternative")
        await call(client, "agent_switch", name="main")
        step = await call(client, "agent_log", observation="seen", thought="so", action="did", branch="try")
        assert step["branch"] == "try"
        made = await call(client, "agent_commit", contribution="tried it", previous_summary="nothing yet",
                          update_roadmap="then merge", branch="try")
        assert made["branch"] == "try"
        merged = await call(client, "agent_merge", name="try", target="main", summary="merged the try")
        assert merged["branch"] == "main"
        context = await call(client, "agent_context", branch="main", k=0)
        assert "then merge" in context["markdown"]
        assert (await call(client, "forget", id=task["memory"]["id"]))["forgotten"][0]["id"] == task["memory"]["id"]
    assert (resident_calls(shop) > 0) is served


@MODES
async def test_bad_arguments_are_errors_and_the_server_keeps_serving(shop, tmp_path, served):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not yours\n")
    os.symlink(outside, shop / "escape")
    async with server(shop, "--no-watch", served=served) as client:
        assert "budget" in await error(client, "select_context", task="anything", budget=0)
        assert "Unknown tool" in await error(client, "no_such_tool")
        assert "limit" in await error(client, "smart_search", query="x", limit="many")
        assert "no node" in await error(client, "graph_neighbors", node="does/not/exist.py")
        assert "unknown kind" in await error(client, "remember", text="x", kind="gossip")
        assert "cortex agent init" in await error(client, "agent_commit", contribution="x")
        for escape in ("../outside/secret.txt", "/etc/passwd", "escape/secret.txt", "shop/../../outside"):
            assert "outside the repository" in await error(client, "remember", text="x", files=[escape])
        assert "outside the repository" in await error(client, "graph_neighbors", node="../../etc/passwd")
        assert "outside the repository" in await error(client, "smart_search", query="x", filters={"files": ["escape/a"]})
        assert "empty" in await error(client, "agent_init", goal="  ")
        one_line = [
            (await error(client, tool, **arguments), field) for tool, arguments, field in (
                ("select_context", {"task": "x", "max_items": -1}, "max_items"),
                ("select_context", {"task": "x", "budget": -5}, "budget"),
                ("smart_search", {"query": "x", "limit": 0}, "limit"),
                ("smart_search", {"query": "x", "filters": {"kinds": "decision", "since": 5}}, "filters.kinds"),
                ("smart_search", {"query": "x", "filters": {"sinse": "7d"}}, "filters.sinse"),
                ("smart_search", {"query": "x", "filters": {"since": "99999999d"}}, "since"),
                ("remember", {}, "text"),
                ("remember", {"text": ["a"], "tags": "x"}, "tags"),
                ("graph_neighbors", {"node": "x", "depth": 9}, "depth"),
                ("graph_neighbors", {"node": "x", "limit": 0}, "limit"),
                ("what_should_i_know", {"per_section": -1}, "per_section"),
                ("agent_context", {"k": -1}, "k"),
                ("forget", {"id": 5}, "id"),
            )
        ]
        for message, field in one_line:
            assert "\n" not in message and field in message, message
        assert (await call(client, "what_should_i_know"))["branch"] == "main", "still serving"
    assert not any(p.name == ".cortex" for p in outside.iterdir())
    written = {p.relative_to(shop).parts[0] for p in shop.rglob("*") if p.is_file() and p.stat().st_mtime > time.time() - 600}
    assert written <= {".cortex", ".git", "shop", "src", "README.md"}


@MODES
async def test_a_20_mb_memory_or_step_is_refused_by_its_size_at_once(shop, served):
    big = "the cache keeps one price per region and sku; the worker reads price_table_v2 at start\n" * 240_000
    async with server(shop, "--no-watch", served=served) as client:
        await call(client, "agent_init", goal="Apply tax once")
        started = time.monotonic()
        said = [await error(client, "remember", text=big), await error(client, "agent_log", observation=big)]
        # Seconds to pass 20 MB as JSON, not the minutes of scanning and embedding it.
        assert time.monotonic() - started < 20
        assert [s.split(": ", 1)[1] for s in said] == [f"memory text is {len(big):,} bytes; the limit is 1,000,000",
                                                       f"the observation is {len(big):,} bytes; the limit is 1,000,000"]
        assert (await call(client, "what_should_i_know"))["branch"] == "main", "still serving"


async def test_every_tool_refuses_arguments_it_does_not_take_and_does_nothing(shop):
    """An agent that passes an option a tool lacks (a misspelling, an option of another tool) is told so in one line
    naming the argument and those the tool takes, instead of getting an answer that silently ignored it."""
    async with server(shop, "--no-watch") as client:
        listed = (await client.list_tools()).tools
        for tool in listed:
            message = await error(client, tool.name, colour="blue")
            accepted = list(tool.input_schema.get("properties", {}))
            assert "\n" not in message and "'colour'" in message, message
            assert all(name in message for name in accepted), (tool.name, message)
        refused = await error(client, "select_context", task="tax", min_scroe=0.5, budget=2000)
        assert "'min_scroe'" in refused and "budget" in refused and "task" in refused
        both = await error(client, "remember", text="Prices include tax.", kinds="decision", tag=["x"])
        assert "unknown arguments 'kinds', 'tag'" in both
        assert (await call(client, "memory_list"))["memories"] == [], "a refused remember stored nothing"
        filters = await error(client, "smart_search", query="tax", filters={"kind": ["task"]})
        assert "filters.kind" in filters and "\n" not in filters, "nested objects refuse unknown fields too"
    assert resident_calls(shop) > 0


async def test_an_agent_lists_reads_and_closes_memories_and_abandons_branches(shop):
    """What the CLI does with `list`, `show`, `done`, `agent branches` and `agent abandon`, an agent does over MCP:
    before, it saw open tasks in what_should_i_know that it had no tool to close."""
    async with server(shop, "--no-watch") as client:
        task = (await call(client, "remember", text="Add a fuel surcharge to the cart total.", kind="task",
                           title="[bold]Fuel[/] surcharge", tags=["shipping"]))["memory"]
        note = (await call(client, "remember", text="Carts are per user.", tags=["cart"]))["memory"]
        assert [m["id"] for m in (await call(client, "memory_list"))["memories"]] == [note["id"], task["id"]]
        assert [m["id"] for m in (await call(client, "memory_list", kind="task", status="open"))["memories"]] == [task["id"]]
        assert [m["id"] for m in (await call(client, "memory_list", tag="cart", limit=1))["memories"]] == [note["id"]]
        shown = await call(client, "memory_show", id=task["id"])
        assert shown["text"] == "Add a fuel surcharge to the cart total." and shown["title"] == "[bold]Fuel[/] surcharge"
        assert [t["id"] for t in (await call(client, "what_should_i_know"))["open_tasks"]] == [task["id"]]

        closed = await call(client, "task_done", id=task["id"])
        assert closed["task_state"] == "done"
        assert (await call(client, "what_should_i_know"))["open_tasks"] == []
        assert [m["id"] for m in (await call(client, "memory_list", status="done"))["memories"]] == [task["id"]]
        assert (await call(client, "task_done", id=task["id"], reopen=True))["task_state"] == "open"
        assert "no memory with id" in await error(client, "memory_show", id="000000000000")
        assert "no memory with id" in await error(client, "task_done", id="000000000000")
        assert "unknown kind" in await error(client, "memory_list", kind="gossip")

        await call(client, "agent_init", goal="Apply tax once")
        await call(client, "agent_log", observation="main work", action="read")
        await call(client, "agent_branch", name="regex", purpose="try a regex")
        await call(client, "agent_log", observation="regex is slow", action="measure")
        listed = await call(client, "agent_branches")
        assert listed["current"] == "regex" and [b["name"] for b in listed["branches"]] == ["main", "regex"]
        assert listed["steps"] == {"main": 1, "regex": 1} and listed["commits"] == {"main": 0, "regex": 0}
        abandoned = await call(client, "agent_abandon", name="regex")
        assert abandoned["status"] == "abandoned"
        after = await call(client, "agent_branches")
        assert after["current"] == "main" and [b["status"] for b in after["branches"]] == ["active", "abandoned"]
        assert "main cannot be abandoned" in await error(client, "agent_abandon", name="main")
        assert "is abandoned" in await error(client, "agent_log", observation="late", branch="regex")
    assert resident_calls(shop) > 0


async def test_agent_context_gives_the_steps_of_the_last_k_commits(shop):
    """context(k): the roadmap, the branch and its metadata, and the last k commits each with the
    observation-thought-action steps it covers, not only the steps since the last commit."""
    async with server(shop, "--no-watch") as client:
        await call(client, "agent_init", goal="Apply tax once")
        for milestone in ("one", "two", "three"):
            for n in (1, 2):
                await call(client, "agent_log", observation=f"seen {milestone}.{n}", thought=f"so {milestone}.{n}",
                           action=f"did {milestone}.{n}")
            await call(client, "agent_commit", contribution=f"milestone {milestone}")
        await call(client, "agent_log", observation="pending work")
        two = await call(client, "agent_context", k=2)
        assert [c["contribution"] for c in two["commits"]] == ["milestone two", "milestone three"]
        assert [s["observation"] for s in two["commit_steps"]] == ["seen two.1", "seen two.2", "seen three.1",
                                                                   "seen three.2"]
        assert [s["observation"] for s in two["steps"]] == ["pending work"]
        markdown = two["markdown"]
        assert "Apply tax once" in markdown and "Purpose: Apply tax once" in markdown
        assert markdown.index("milestone two") < markdown.index("**O:** seen two.2 **T:** so two.2 **A:** did two.2") \
            < markdown.index("milestone three") < markdown.index("seen three.1")
        assert "seen one.1" not in markdown, "steps of older commits stay behind their commit"
        assert "git main@" in markdown, "each commit says where git was"
        assert (await call(client, "agent_context", k=0))["commit_steps"] == []
    assert resident_calls(shop) > 0


async def test_the_first_names_are_aliases_of_the_tools(shop):
    """`memory_smart_search` and `memory_what` are listed with the schema of the tool they name and answer as it
    does: one implementation, so they cannot drift."""
    from cortex_tui.app.mcp.tools import TOOL_ALIASES, TOOL_CALLS

    assert TOOL_ALIASES == {"memory_smart_search": "smart_search", "memory_what": "what_should_i_know"}
    assert set(TOOL_ALIASES.values()) <= set(TOOL_CALLS) and not set(TOOL_ALIASES) & set(TOOL_CALLS)
    async with server(shop, "--no-watch") as client:
        await call(client, "remember", text="Prices include tax; never add it twice.", kind="decision")
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for alias, target in TOOL_ALIASES.items():
            assert tools[alias].input_schema == tools[target].input_schema
            assert tools[alias].description == f"Alias of {target}. {tools[target].description}"
            assert tools[alias].annotations == tools[target].annotations
        searched = await call(client, "smart_search", query="add tax twice", limit=3)
        aliased = await call(client, "memory_smart_search", query="add tax twice", limit=3)
        assert [h["id"] for h in aliased["hits"]] == [h["id"] for h in searched["hits"]] and aliased["hits"]
        assert (await call(client, "memory_what", per_section=1))["branch"] == "main"
        assert "'colour'" in await error(client, "memory_what", colour="blue")
    assert resident_calls(shop) > 0


@MODES
async def test_the_server_keeps_the_index_fresh(shop, served):
    async with server(shop, served=served) as client:
        await call(client, "smart_search", query="warm up")
        (shop / "shop" / "shipping.py").write_text("def fuel_surcharge_for(weight):\n    return weight * 0.15\n")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            hits = (await call(client, "smart_search", query="fuel surcharge", filters={"code_only": True}))["hits"]
            if any(h.get("path") == "shop/shipping.py" for h in hits):
                break
            await asyncio.sleep(0.5)
        else:
            pytest.fail("the new file never became searchable")


@MODES
async def test_listeners_hear_when_any_process_changes_a_memory(shop, served):
    """An agent listening to `cortex://memories` is told when a shell (another process) writes a memory."""
    import subprocess

    import anyio

    async with server(shop, served=served) as client:
        await call(client, "what_should_i_know")
        async with client.listen(resource_subscriptions=["cortex://memories"]) as subscription:
            heard = None
            for attempt in range(6):  # the watcher of a --no-daemon server starts after its own index pass
                done = subprocess.run([sys.executable, "-m", "cortex_tui.app.cli.client", "remember",
                                       f"Invoices are numbered per year ({attempt})", "-C", str(shop)],
                                      capture_output=True, text=True, timeout=300)
                assert done.returncode == 0, done.stderr
                with anyio.move_on_after(10):
                    async for event in subscription:
                        heard = event
                        break
                if heard is not None:
                    break
        assert heard is not None and heard.uri == "cortex://memories"
        read = await client.read_resource("cortex://memories")
        assert "Invoices are numbered per year" in read.contents[0].text


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def _wait_listening(port: int) -> None:
    import socket

    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        await asyncio.sleep(0.3)
    pytest.fail("the HTTP server never listened")


def _status_of_post(port: int, headers: dict[str, str]) -> int:
    import urllib.error
    import urllib.request

    body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
    request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


async def test_http_transport_needs_the_bearer_token_and_listens_on_localhost_only(shop):
    import subprocess

    from cortex_tui.app.mcp.http import token_path
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    token_file = token_path()
    token_file.unlink(missing_ok=True)
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "cortex_tui.app.cli.main", "mcp", "-C", str(shop), "--no-watch",
                             "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        await _wait_listening(port)
        assert token_file.stat().st_mode & 0o777 == 0o600
        token = token_file.read_text().strip()
        assert len(token) >= 32
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {token}"},
                        {"Authorization": f"Bearer {token[:-1]}"}):
            assert _status_of_post(port, headers) == 401, headers
        with pytest.raises(BaseException):
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                await client.list_tools()
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)) as client:
            assert (await call(client, "what_should_i_know"))["branch"] == "main"
        listening = subprocess.run(["ss", "-ltn"], capture_output=True, text=True).stdout if shutil.which("ss") else ""
        assert f"0.0.0.0:{port}" not in listening
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert str(token_file) in err and token not in err, "the path is printed, never the token"


def test_http_on_a_port_in_use_is_a_one_line_error(shop):
    """Another program on the port: one line naming it and a non-zero exit, not uvicorn's log and traceback."""
    import socket
    import subprocess

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "cortex_tui.app.cli.main", "mcp", "-C", str(shop),
                               "--no-watch", "--http", str(port)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stderr == f"cortex: error: cannot listen on 127.0.0.1:{port}: Address already in use\n"


def test_the_token_file_is_made_0600_once_and_refused_when_others_can_read_it(tmp_path):
    from cortex_tui.app.mcp.http import load_or_create_token
    from cortex_tui.core.errors import CortexError

    path = tmp_path / "config" / "mcp-token"
    token = load_or_create_token(path)
    assert path.stat().st_mode & 0o777 == 0o600 and load_or_create_token(path) == token
    path.chmod(0o644)
    with pytest.raises(CortexError, match="readable by others"):
        load_or_create_token(path)


async def test_a_paraphrase_is_answered_with_its_match_and_code_changes_are_flagged_until_confirmed(shop):
    async with server(shop, "--no-watch") as client:
        first = await call(client, "remember", text="Use tabs for indentation in Go files", kind="decision")
        near = await call(client, "remember", text="Go files are indented with tabs", kind="decision")
        assert near["near_duplicate"] is True and near["memory"] is None
        assert near["match"]["id"] == first["memory"]["id"]
        version = await call(client, "remember", text="Go files are indented with tabs", version_of=near["match"]["id"])
        assert version["outcome"] == "new_version" and version["memory"]["version"] == 2
        both = await call(client, "remember", text="Go files are indented with tabs!", new=True)
        assert both["outcome"] == "created" and both["near_duplicate"] is False
        tax = await call(client, "remember", text="price_of adds the tax", files=["shop/pricing.py"], symbols=["price_of"])
        assert tax["memory"]["code_change"] is None
        commit_file(shop, "shop/pricing.py", "TAX = 0.2\n\ndef price_of(sku):\n    return 12 * (1 + TAX)\n", "Reprice")
        found = await call(client, "smart_search", query="price_of adds the tax")
        hit = next(h for h in found["hits"] if h["id"] == tax["memory"]["id"])
        assert hit["memory"]["code_change"]["symbol"] == "price_of"
        confirmed = await call(client, "confirm", id=tax["memory"]["id"])
        assert confirmed["confirmed"]["code_change"] is None


async def test_a_writing_tool_called_again_with_its_idempotency_key_writes_once(shop):
    """Writing tools carried no write id: an agent that lost a tool's answer and called again logged the step
    twice. Each now takes an optional `idempotency_key` (else a new id, given back as `write_id`): the same key
    again answers the first call's result, `repeated`, and writes nothing; the key for another write is refused."""
    async with server(shop, "--no-watch") as client:
        await call(client, "agent_init", goal="ship the cache")
        first = await call(client, "agent_log", observation="the cache misses", idempotency_key="agent-step-0001")
        again = await call(client, "agent_log", observation="the cache misses", idempotency_key="agent-step-0001")
        assert again == {**first, "repeated": True} and first["write_id"] == "agent-step-0001"
        other = await error(client, "agent_roadmap", text="measure the hit rate", idempotency_key="agent-step-0001")
        assert "write id agent-step-0001 was used by another write (mcp-agent_log" in other and "\n" not in other
        made_up = await call(client, "remember", text="The cache is warmed at boot")
        assert len(made_up["write_id"]) > 8 and "repeated" not in made_up
        context = await call(client, "agent_context")
        assert [s["observation"] for s in context["steps"]] == ["the cache misses"]
        assert "idempotency_key" in await error(client, "forget", id="0" * 12, idempotency_key="no spaces")
    assert resident_calls(shop) > 0
