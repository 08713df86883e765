"""The agent context on disk: markdown to read (roadmap, each branch's log and commits) and `metadata.yaml`, which
holds every field and is what `cortex agent import` reads, so a round trip is exact."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from ..errors import CortexError
from ..nesting import read_yaml
from .agent_records import AgentBranch, AgentCommit, AgentExport, AgentStep, RoadmapEntry, validate_branch_name

FORMAT = 1
_INTERNAL = {"memory_id", "branch"}
"""Not written: memory ids are made again on import, and a step's or commit's branch is the section it is in."""


def _stamp(value: datetime) -> str:
    return value.isoformat()


def _plain(record) -> dict:
    out = {}
    for key, value in record.__dict__.items():
        if key in _INTERNAL:
            continue
        out[key] = _stamp(value) if isinstance(value, datetime) else list(value) if isinstance(value, tuple) else value
    return out


def write_export(directory: Path, current: str, roadmap: list[RoadmapEntry], branches: list[AgentBranch],
                 steps: dict[str, list[AgentStep]], commits: dict[str, list[AgentCommit]]) -> list[Path]:
    import yaml

    directory.mkdir(parents=True, exist_ok=True)
    written = []

    def put(path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)

    put(directory / "roadmap.md", "# Roadmap\n\n" + "".join(f"{e.seq}. {e.text}  \n   _{_stamp(e.at)}_\n" for e in roadmap))
    for b in branches:
        folder = directory / "branches" / b.name
        log = [f"# {b.name}: observation-thought-action log\n", f"Purpose: {b.purpose}\n"]
        for s in steps[b.name]:
            origin = f" (merged from {s.origin})" if s.origin else ""
            log.append(f"\n## Step {s.n}{origin} · {_stamp(s.at)} · git {s.head[:8] or '-'}\n\n"
                       f"**Observation:** {s.observation}\n\n**Thought:** {s.thought}\n\n**Action:** {s.action}\n")
        put(folder / "log.md", "".join(log))
        lines = [f"# {b.name}: commits\n"]
        for c in commits[b.name]:
            lines.append(f"\n## {c.kind} {c.id} · {_stamp(c.at)} · git {c.head[:8] or '-'} · steps {list(c.steps)}\n\n"
                         f"Purpose: {c.purpose}\n\nProgress before:\n\n{c.summary or '(none)'}\n\n"
                         f"Contribution:\n\n{c.contribution}\n")
        put(folder / "commits.md", "".join(lines))
    metadata = {
        "format": FORMAT,
        "current": current,
        "roadmap": [_plain(e) for e in roadmap],
        "branches": [
            {**_plain(b), "steps": [_plain(s) for s in steps[b.name]], "commits": [_plain(c) for c in commits[b.name]]}
            for b in branches
        ],
    }
    put(directory / "metadata.yaml", yaml.safe_dump(metadata, sort_keys=False, allow_unicode=True, width=100))
    return written


def read_export(directory: Path) -> AgentExport:
    path = directory / "metadata.yaml"
    data = read_yaml(path, "not a `cortex agent export` directory")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CortexError(f"{path}: unknown format (expected format: {FORMAT})")
    try:
        roadmap = [RoadmapEntry(e["seq"], e["text"], _time(e["at"])) for e in data["roadmap"]]
        branches, steps, commits = [], {}, {}
        for b in data["branches"]:
            name = validate_branch_name(b["name"])
            branches.append(AgentBranch(name, b["purpose"], b["parent"], b["status"], b["merged_into"],
                                        _time(b["created_at"])))
            steps[name] = [AgentStep(name, s["n"], s["observation"], s["thought"], s["action"], s["origin"],
                                     s["git_branch"], s["head"], _time(s["at"]), "") for s in b["steps"]]
            commits[name] = [AgentCommit(c["id"], name, c["seq"], c["kind"], c["purpose"], c["summary"],
                                         c["contribution"], tuple(c["steps"]), c["merged_from"], c["git_branch"],
                                         c["head"], _time(c["at"]), "") for c in b["commits"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise CortexError(f"{path}: missing or bad field ({exc})") from None
    if data["current"] not in steps:
        raise CortexError(f"{path}: current branch {data['current']!r} is not among the branches")
    return AgentExport(data["current"], roadmap, branches, steps, commits)


def read_agent_dir(directory: Path) -> tuple[str, AgentExport]:
    """What `cortex agent import` reads: a `cortex agent export`, or a contexa workspace (`.GCC/`, the directory
    holding it, or cortex's live files), with what it is."""
    from .contexa_files import is_workspace, read_workspace

    if not directory.is_dir():
        raise CortexError(f"{directory} is not a directory")
    if (directory / "metadata.yaml").is_file():
        return "cortex export", read_export(directory)
    for candidate in (directory, directory / ".GCC"):
        if is_workspace(candidate):
            return "contexa workspace", read_workspace(candidate)
    raise CortexError(f"{directory} is neither a `cortex agent export` (metadata.yaml) nor a contexa workspace "
                      "(main.md and branches/<name>/metadata.yaml, or a .GCC/ holding them)")


def _time(value) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)
