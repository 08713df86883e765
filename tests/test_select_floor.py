"""Every token the meter spends is one the task needs, through the resident server as `cortex select` runs: working-
tree changes, memories and files a memory names enter only above a floor set against the task's best candidates; a
copy of a chosen file stays out; a selection stops when nothing relevant is left and says so; only what did not fit
is "left out for budget"; the context reads most relevant first."""

from __future__ import annotations

from .conftest import commit_file

PROGRESS = '''"""Progress bars for long-running commands."""


class ProgressBar:
    """Shows how far a long-running loop has come and how long the rest will take."""

    def __init__(self, iterable, length=None, label=None, width=36):
        self.iterable = iterable
        self.length = length
        self.label = label or ""
        self.width = width
        self.pos = 0

    def render_progress(self):
        """Draw the bar: the filled part, the percentage and the time left."""
        filled = int(self.width * self.pos / max(self.length or 1, 1))
        bar = "#" * filled + "-" * (self.width - filled)
        percent = 100 * self.pos // max(self.length or 1, 1)
        return f"{self.label} [{bar}] {percent}%"

    def update(self, steps):
        self.pos += steps
        return self.render_progress()
'''
TERMINAL = '''"""What the terminal can do."""


def terminal_width(default=80):
    """Columns of the terminal, or the default when there is none."""
    import shutil

    return shutil.get_terminal_size((default, 24)).columns
'''
UNRELATED = '''"""Parsing of configuration files."""


def read_config(path):
    """Read a config file of key = value lines into a dictionary."""
    values = {}
    for line in open(path, encoding="utf-8"):
        key, _, value = line.partition("=")
        values[key.strip()] = value.strip()
    return values
'''
TASK = "the progress bar rendering shows the wrong percentage when the length is unknown"


def _files(cli, selection: dict) -> list[str]:
    return [i["path"] for i in selection["chosen"] if i["kind"] != "memory"]


def _project(repo) -> None:
    commit_file(repo, "src/progress.py", PROGRESS, "Add progress bars")
    commit_file(repo, "src/terminal.py", TERMINAL, "Add terminal helpers")


def test_unrelated_working_changes_and_a_copy_stay_out_and_say_why(cli, repo):
    _project(repo)
    # A working change that has nothing to do with the task: a new module, an ignore file, a copy of a file.
    (repo / "src/config_reader.py").write_text(UNRELATED, encoding="utf-8")
    (repo / ".cortexignore").write_text("build/\n", encoding="utf-8")
    (repo / "src/_progress_copy.py").write_text(PROGRESS, encoding="utf-8")
    selection = cli.json("select", TASK, "--budget", "1000")
    files = _files(cli, selection)
    assert files[0] == "src/progress.py", files
    assert "src/config_reader.py" not in files and ".cortexignore" not in files
    assert "src/_progress_copy.py" not in files
    reasons = {i["path"]: i.get("reason") for i in selection["left_out"] if i["kind"] != "memory"}
    assert reasons.get("src/_progress_copy.py") == "a copy of src/progress.py", reasons
    assert all(r != "over the budget" for p, r in reasons.items() if p in ("src/config_reader.py", ".cortexignore"))


def test_a_selection_stops_when_nothing_relevant_is_left_and_says_so(cli, repo):
    _project(repo)
    selection = cli.json("select", TASK, "--budget", "12000")
    assert selection["tokens"] < 2000, selection["tokens"]
    assert any("nothing else reaches the floor" in n for n in selection["notes"]), selection["notes"]
    code, out, _ = cli("select", TASK, "--budget", "12000")
    assert code == 0 and "of 12,000 tokens: nothing else reaches the floor" in out
    assert "left out for budget" not in out


def test_left_out_for_budget_lists_only_what_did_not_fit(cli, repo):
    _project(repo)
    topics = ("spinner", "eta", "throughput", "label", "width", "colour")
    for n, topic in enumerate(topics):
        commit_file(repo, f"src/bar_{topic}.py", f'''"""The progress bar's {topic}."""


def render_progress_{topic}(bar, length=None):
    """The {topic} part of the progress bar rendering; an unknown length shows the {topic} alone."""
    {topic}_value = bar.pos * {n + 2} if length else 0
    percentage = 100 * bar.pos // max(length or 1, 1)
    return f"{{{topic}_value}} {{percentage}}%"
''', f"Bar {topic}")
    over_somewhere = False
    for budget in ("300", "600", "900", "3000"):
        selection = cli.json("select", TASK, "--budget", budget)
        free = selection["budget"] - selection["tokens"]
        over = [i for i in selection["left_out"] if i.get("reason") == "over the budget"]
        assert all(i["tokens"] > free for i in over), (budget, free, over)
        over_somewhere = over_somewhere or bool(over)
        if over:
            code, out, _ = cli("select", TASK, "--budget", budget)
            assert "left out for budget: " in out and "nothing else reaches the floor" not in out
    assert over_somewhere, "some budget here is too small for every relevant file"


def test_a_memory_that_does_not_fit_is_left_out_for_budget(cli, repo):
    _project(repo)
    long = "the progress bar percentage uses the known length; " + "an unknown length renders a spinner. " * 60
    cli.json("remember", long, "--kind", "decision", "--files", "src/progress.py")
    selection = cli.json("select", TASK, "--budget", "400")
    out = [i for i in selection["left_out"] if i["kind"] == "memory"]
    assert out and out[0]["reason"] == "over the budget" and out[0]["tokens"] > 400 - selection["tokens"]
    assert not any("nothing else reaches the floor" in n for n in selection["notes"])


def test_a_small_module_whose_words_a_large_one_holds_is_not_a_copy(cli, repo):
    _project(repo)
    commit_file(repo, "src/percent.py", "def percent(bar):\n    return 100 * bar.pos // max(bar.length or 1, 1)\n",
                "Add the percent helper")
    selection = cli.json("select", "the percent of the progress bar is wrong", "--budget", "4000")
    reasons = {i["path"]: i.get("reason") for i in selection["left_out"] if i["kind"] != "memory"}
    assert not str(reasons.get("src/percent.py", "")).startswith("a copy of"), reasons


def test_a_weak_memory_stays_out_a_strong_one_goes_in(cli, repo):
    _project(repo)
    cli.json("remember", "the progress bar percentage is computed from the known length; an unknown length "
                         "renders as a spinner", "--kind", "decision", "--files", "src/progress.py")
    cli.json("remember", "release notes are written by hand before tagging", "--kind", "note")
    selection = cli.json("select", TASK, "--budget", "4000")
    chosen = [i for i in selection["chosen"] if i["kind"] == "memory"]
    assert len(chosen) == 1 and "spinner" in cli.json("show", chosen[0]["id"])["text"]
    assert all(i.get("reason") for i in selection["left_out"])


def test_the_context_reads_most_relevant_first(cli, repo, tmp_path):
    _project(repo)
    commit_file(repo, "src/aaa_widgets.py", '"""Widgets."""\n\n\ndef progress_label(bar):\n    """The label shown '
                                            'beside a progress bar."""\n    return bar.label\n', "Add widgets")
    out = tmp_path / "context.md"
    assert cli("context", TASK, "--budget", "4000", "--output", str(out))[0] == 0
    text = out.read_text(encoding="utf-8")
    assert "src/progress.py" in text and "src/aaa_widgets.py" in text
    assert text.index("src/progress.py") < text.index("src/aaa_widgets.py")


def test_relevant_files_past_the_weighed_head_say_so_not_below_the_floor(cli, repo):
    _project(repo)
    topics = ("spinner", "eta", "throughput", "label", "width", "colour", "border", "fill", "empty", "prefix",
              "suffix", "speed", "units", "columns", "rows")
    for n, topic in enumerate(topics):
        commit_file(repo, f"src/bar_{topic}.py", f'''"""The progress bar's {topic}."""


def render_progress_{topic}(bar, length=None):
    """The {topic} part of the progress bar rendering; an unknown length shows the wrong percentage."""
    percentage = 100 * bar.pos // max(length or 1, 1)
    return f"{{percentage}}% {n}"
''', f"Bar {topic}")
    selection = cli.json("select", TASK, "--budget", "12000")
    considered = {i["path"] for i in selection["chosen"] if i["kind"] != "memory"}
    past = [i["path"] for i in selection["left_out"] if i.get("reason") == "past the first 12 relevant files"]
    assert past and len(considered | {i["path"] for i in selection["left_out"] if i["kind"] == "file"
                                      and i["path"] not in past}) >= 12, selection["left_out"]
    assert not any("nothing else reaches the floor" in n for n in selection["notes"])
    code, out, _ = cli("select", TASK, "--budget", "12000")
    assert code == 0 and "past the first 12 relevant files: " in out


def test_the_selections_rows_and_its_frame_add_up_to_its_total(cli, repo):
    import re

    _project(repo)
    cli.json("remember", "The progress bar's percentage is 0 until the length is known", "--kind", "decision")
    code, out, _ = cli("select", TASK, "--budget", "12000")
    header, *rows = out.splitlines()
    total = int(re.match(r"([\d,]+) / 12,000 tokens", header).group(1).replace(",", ""))
    frame = re.search(r"; ([\d,]+) of the tokens are the document's frame", header)
    items = sum(int(row.split("\t")[2].replace(",", "")) for row in rows if row.count("\t") >= 4)
    assert code == 0 and items + (int(frame.group(1).replace(",", "")) if frame else 0) == total, out

