"""The agent context in contexa's layout (a `.GCC/` workspace, after the Git Context Controller paper): written for
the live files, read by `cortex agent import`.

    main.md                        the roadmap: the goal after `**Initialized:** <time>`, then `## Update (<time>)`s
    branches/<name>/log.md         `### Step <n> — <time>` blocks of **Observation:** / **Thought:** / **Action:**
    branches/<name>/commit.md      `## Commit `<id>`` blocks: timestamp, branch purpose, previous progress, contribution
    branches/<name>/metadata.yaml  name, purpose, created_from, created_at, status, merged_into, merged_at

What contexa's files do not say (a step's number and origin, its git branch and HEAD; a commit's kind, the steps it
covers) cortex writes as one `<!-- cortex {...} -->` line under each header: contexa's readers skip it, Markdown
hides it, and with it a round trip through the files is exact. A text line that would read as structure (a label, a
header, a `---` rule) is written with a backslash before it, as contexa does for `---`.

Files contexa wrote carry no such line; their mapping (docs/usage.md): a step's number is its place in the log; the
steps under `## Merged from `b`` that are b's own (same number and time, in order) are copies of b's, the rest the
branch's own; a commit covers the steps logged before its time since the previous commit (a copy counts at the time
of its merge header); a commit whose progress reads "Merging branch `b` ..." is the merge of b; the goal is the text
under **Initialized:**, each update a roadmap entry of its own.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ..errors import CortexError
from ..nesting import read_yaml
from .agent_records import AgentBranch, AgentCommit, AgentExport, AgentStep, RoadmapEntry, validate_branch_name

MAIN_PURPOSE = "Primary reasoning trajectory"
_STEP_LABELS = ("**Observation:**", "**Thought:**", "**Action:**")
_COMMIT_LABELS = ("**Timestamp:**", "**Branch Purpose:**", "**Previous Progress Summary:**",
                  "**This Commit's Contribution:**")
_STEP = re.compile(r"### Step (\d+)\s*(?:—|-)\s*(\S.*?)\s*$")
_MERGED = re.compile(r"## Merged from `([^`]+)` \((.*)\)\s*$")
_COMMIT = re.compile(r"## Commit `([^`]+)`\s*$")
_UPDATE = re.compile(r"## Update \((.*)\)\s*$")
_INITIALIZED = re.compile(r"\*\*Initialized:\*\*\s*(.*?)\s*$")
_NOTE = re.compile(r"<!-- cortex (\{.*\}) -->\s*$")
_RULE = re.compile(r"-{3,}\s*$")
_STRUCTURE = re.compile(r"\\*(\*\*(Observation|Thought|Action|Timestamp|Branch Purpose|Previous Progress Summary|"
                        r"This Commit's Contribution|Initialized):\*\*|#{1,3} |<!-- cortex |-{3,}\s*$)")
"""A line that would read as the files' structure (with any backslashes before it: those gain one more)."""
_MERGING = re.compile(r"Merging branch `([^`]+)` with purpose:")


def _stamp(value: datetime) -> str:
    return value.isoformat()


def _escaped(text: str) -> str:
    return "\n".join("\\" + line if _STRUCTURE.match(line) else line for line in text.split("\n"))


def _unescaped(lines: list[str]) -> str:
    return "\n".join(line[1:] if line.startswith("\\") and _STRUCTURE.match(line) else line
                     for line in lines).strip()


def _note(values: dict) -> str:
    # `>` only ever appears inside JSON strings: escaped, no text can close the comment early.
    return "<!-- cortex " + json.dumps(values, ensure_ascii=False).replace(">", "\\u003e") + " -->\n"


# --- writing -------------------------------------------------------------------------------------------------------

def render_roadmap(roadmap: list[RoadmapEntry]) -> str:
    first, *rest = roadmap
    return (f"# Project Roadmap\n\n**Initialized:** {_stamp(first.at)}\n\n{_escaped(first.text)}\n"
            + "".join(f"\n## Update ({_stamp(e.at)})\n{_escaped(e.text)}\n" for e in rest))


def render_log(branch: AgentBranch, steps: list[AgentStep], commits: list[AgentCommit]) -> str:
    merged_at = {c.merged_from: c.at for c in commits if c.merged_from}
    out = [f"# OTA Log — branch `{branch.name}`\n\n"]
    section = ""
    for s in steps:
        source = s.origin.rpartition("#")[0]
        if source and source != section:
            out.append(f"\n## Merged from `{source}` ({_stamp(merged_at.get(source, s.at))})\n\n")
        section = source
        out.append(render_step(s))
    return "".join(out)


def render_step(s: AgentStep) -> str:
    """One step's block of log.md (a step logged on the branch itself is appended to the file as this)."""
    source, _, number = s.origin.rpartition("#")
    note = {"n": s.n, "origin": s.origin, "git_branch": s.git_branch, "head": s.head}
    return (f"### Step {number if source else s.n} — {_stamp(s.at)}\n{_note(note)}"
            f"**Observation:** {_escaped(s.observation)}\n\n**Thought:** {_escaped(s.thought)}\n\n"
            f"**Action:** {_escaped(s.action)}\n\n---\n")


def render_commits(branch: AgentBranch, commits: list[AgentCommit]) -> str:
    out = [f"# Commit History — branch `{branch.name}`\n\n"]
    for c in commits:
        note = {"seq": c.seq, "kind": c.kind, "steps": list(c.steps), "merged_from": c.merged_from,
                "git_branch": c.git_branch, "head": c.head}
        out.append(f"## Commit `{c.id}`\n{_note(note)}**Timestamp:** {_stamp(c.at)}\n\n"
                   f"**Branch Purpose:** {_escaped(c.purpose)}\n\n"
                   f"**Previous Progress Summary:** {_escaped(c.summary)}\n\n"
                   f"**This Commit's Contribution:** {_escaped(c.contribution)}\n\n---\n")
    return "".join(out)


def render_metadata(branch: AgentBranch, merged_at: datetime | None) -> str:
    import yaml

    return yaml.safe_dump({"name": branch.name, "purpose": branch.purpose, "created_from": branch.parent,
                           "created_at": _stamp(branch.created_at), "status": branch.status,
                           "merged_into": branch.merged_into or None,
                           "merged_at": _stamp(merged_at) if merged_at else None},
                          sort_keys=False, allow_unicode=True, width=100)


# --- reading -------------------------------------------------------------------------------------------------------

def is_workspace(directory: Path) -> bool:
    return (directory / "main.md").is_file() and any((directory / "branches").glob("*/metadata.yaml"))


def _time(value, where: str) -> datetime:
    try:
        parsed = value if isinstance(value, datetime) else datetime.fromisoformat(str(value).strip())
    except ValueError:
        raise CortexError(f"{where}: {value!r} is not an ISO time") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)  # contexa writes UTC; a bare time is taken as it


@dataclass
class _Block:
    header: re.Match
    line: int
    section: str = ""
    """The branch named by the `## Merged from` header the block sits under ("" for none)."""
    section_at: datetime | None = None
    note: dict | None = None
    fields: dict[str, list[str]] = field(default_factory=dict)

    def text(self, label: str) -> str:
        return _unescaped(self.fields.get(label, []))


def _blocks(path: Path, header: re.Pattern, labels: tuple[str, ...]) -> list[_Block]:
    """The file's blocks: a header line, an optional cortex note, labelled fields (each running to the next label),
    up to a `---` rule."""
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except FileNotFoundError:
        raise CortexError(f"{path} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CortexError(f"{path} is not readable: {exc}") from None
    out: list[_Block] = []
    current: _Block | None = None
    label = ""
    section, section_at = "", None
    for number, line in enumerate(lines, 1):
        if (m := header.match(line)) is not None:
            current, label = _Block(m, number, section, section_at), ""
            out.append(current)
        elif (m := _MERGED.match(line)) is not None:
            current, section, section_at = None, m[1], _time(m[2], f"{path}:{number}")
        elif current is None:
            continue
        elif not label and current.note is None and (m := _NOTE.match(line)) is not None:
            try:
                current.note = json.loads(m[1])
            except json.JSONDecodeError:
                raise CortexError(f"{path}:{number}: the cortex note is not JSON") from None
        elif _RULE.match(line):
            current = None
        elif (found := next((lab for lab in labels if line.startswith(lab)), None)) is not None:
            label = found
            rest = line[len(found):]
            current.fields[found] = [rest[1:] if rest.startswith(" ") else rest]
        elif label:
            current.fields[label].append(line)
    return out


@dataclass
class _Branch:
    branch: AgentBranch
    merged_at: datetime | None
    steps: list[_Block]
    commits: list[_Block]
    folder: Path


def _branch(folder: Path) -> _Branch:
    path = folder / "metadata.yaml"
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise CortexError(f"{path}: not a mapping of name, purpose, created_from, created_at, status")
    try:
        name = validate_branch_name(str(data["name"]))
        status = str(data.get("status") or "active")
        created = _time(data["created_at"], str(path))
    except KeyError as exc:
        raise CortexError(f"{path}: missing field {exc}") from None
    if name != folder.name:
        raise CortexError(f"{path}: names branch {name!r} but sits in branches/{folder.name}/")
    if status not in ("active", "merged", "abandoned"):
        raise CortexError(f"{path}: status {status!r} is not active, merged or abandoned")
    merged_at = data.get("merged_at")
    branch = AgentBranch(name, str(data.get("purpose") or ""), str(data.get("created_from") or ""), status,
                         str(data.get("merged_into") or ""), created)
    return _Branch(branch, _time(merged_at, str(path)) if merged_at else None,
                   [b for b in _blocks(folder / "log.md", _STEP, _STEP_LABELS)
                    if any(b.text(label) for label in _STEP_LABELS)],
                   _blocks(folder / "commit.md", _COMMIT, _COMMIT_LABELS), folder)


def _roadmap(path: Path) -> list[RoadmapEntry]:
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise CortexError(f"{path} is not readable: {exc}") from None
    entries: list[tuple[datetime, list[str]]] = []
    for number, line in enumerate(lines, 1):
        if (m := (_INITIALIZED.match(line) if not entries else _UPDATE.match(line))) is not None:
            entries.append((_time(m[1], f"{path}:{number}"), []))
        elif entries:
            entries[-1][1].append(line)
    if not entries:
        raise CortexError(f"{path}: no `**Initialized:** <time>` line: not a contexa roadmap")
    return [RoadmapEntry(seq, _unescaped(text), at) for seq, (at, text) in enumerate(entries, 1)]


def read_workspace(directory: Path) -> AgentExport:
    """A contexa workspace (or cortex's live files) as the records `cortex agent import` stores."""
    branches = {b.branch.name: b for b in map(_branch, sorted(p.parent for p in
                                                                (directory / "branches").glob("*/metadata.yaml")))}
    if "main" not in branches:
        raise CortexError(f"{directory / 'branches'}: no main branch")
    for b in branches.values():
        for name in (b.branch.parent, b.branch.merged_into):
            if name and name not in branches:
                raise CortexError(f"{b.folder / 'metadata.yaml'}: names branch {name!r}, which has no folder")
    steps: dict[str, list[AgentStep]] = {}

    def resolve(name: str, seen: tuple[str, ...] = ()) -> list[AgentStep]:
        if name in steps:
            return steps[name]
        if name in seen:
            raise CortexError(f"{directory / 'branches'}: branches merged into each other in a cycle ({name})")
        steps[name] = _steps(branches[name], branches, lambda source: resolve(source, (*seen, name)))
        return steps[name]

    for name in branches:
        resolve(name)
    commits = {name: _commits(b, steps[name]) for name, b in branches.items()}
    current = "main"
    state = directory / ".cortex.json"
    if state.is_file():
        try:
            current = str(json.loads(state.read_text(encoding="utf-8")).get("current") or "main")
        except (OSError, ValueError, AttributeError):
            raise CortexError(f"{state} is not cortex's JSON") from None
        if current not in branches:
            raise CortexError(f"{state}: current branch {current!r} has no folder")
    listed = sorted((b.branch for b in branches.values()), key=lambda b: (b.name != "main", b.created_at, b.name))
    return AgentExport(current, _roadmap(directory / "main.md"), listed, steps, commits)


def _steps(b: _Branch, branches: dict[str, _Branch], resolved) -> list[AgentStep]:
    path = b.folder / "log.md"
    out: list[AgentStep] = []
    matched: dict[str, int] = {}
    """Per `## Merged from` source: how far into its steps the copies so far have matched."""
    for block in b.steps:
        at = _time(block.header[2], f"{path}:{block.line}")
        observation, thought, action = (block.text(label) for label in _STEP_LABELS)
        last = out[-1].n if out else 0
        if block.note is not None:
            try:
                n, origin = int(block.note["n"]), str(block.note["origin"])
                git_branch, head = str(block.note["git_branch"]), str(block.note["head"])
            except (KeyError, TypeError, ValueError):
                raise CortexError(f"{path}:{block.line}: the cortex note lacks n, origin, git_branch or head") from None
            if n <= last:
                raise CortexError(f"{path}:{block.line}: step {n} after step {last}")
            out.append(AgentStep(b.branch.name, n, observation, thought, action, origin, git_branch, head, at, ""))
            continue
        origin = ""
        if block.section and block.section in branches and block.section != b.branch.name:
            source = branches[block.section]
            start = matched.get(block.section, 0)
            number = int(block.header[1])
            for k in range(start, len(source.steps)):
                theirs = source.steps[k]
                if int(theirs.header[1]) == number and _time(theirs.header[2], "") == at:
                    origin = f"{block.section}#{resolved(block.section)[k].n}"
                    matched[block.section] = k + 1
                    break
        out.append(AgentStep(b.branch.name, last + 1, observation, thought, action, origin, "", "", at, ""))
    return out


def _commits(b: _Branch, steps: list[AgentStep]) -> list[AgentCommit]:
    path = b.folder / "commit.md"
    sections = {block.line: block.section_at for block in b.steps}
    effective = [(s, sections.get(block.line) if s.origin else s.at) for s, block in zip(steps, b.steps)]
    out: list[AgentCommit] = []
    covered = 0
    for seq, block in enumerate(b.commits, 1):
        commit_id = block.header[1].strip()
        if not commit_id:
            raise CortexError(f"{path}:{block.line}: a commit without an id")
        at = _time(block.text("**Timestamp:**"), f"{path}:{block.line}")
        purpose, summary, contribution = (block.text(label) for label in _COMMIT_LABELS[1:])
        if block.note is not None:
            try:
                note = block.note
                out.append(AgentCommit(commit_id, b.branch.name, int(note["seq"]), str(note["kind"]), purpose,
                                       summary, contribution, tuple(int(n) for n in note["steps"]),
                                       str(note["merged_from"]), str(note["git_branch"]), str(note["head"]), at, ""))
            except (KeyError, TypeError, ValueError):
                raise CortexError(f"{path}:{block.line}: the cortex note lacks seq, kind, steps, merged_from, "
                                  "git_branch or head") from None
            continue
        numbers = []
        while covered < len(effective) and (effective[covered][1] or at) <= at:
            numbers.append(effective[covered][0].n)
            covered += 1
        merging = _MERGING.match(summary)
        out.append(AgentCommit(commit_id, b.branch.name, seq, "merge" if merging else "commit", purpose, summary,
                               contribution, tuple(numbers), merging[1] if merging else "", "", "", at, ""))
    if len({c.id for c in out}) != len(out):
        raise CortexError(f"{path}: two commits with one id")
    return out
