"""The distribution ships the whole tool: the wheel, built from the sdist as an installer would, holds every module
and data file of the repository's package folders as the `cortex_tui` package the code imports, and nothing else."""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def package_folders() -> set[str]:
    """The top-level folders git knows that hold an `__init__.py`, the tests' aside: `cortex_tui/` and its
    subpackages."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                            check=True, capture_output=True, text=True).stdout.split("\0")
    return {path.split("/")[0] for path in listed if path.count("/") == 1 and path.endswith("/__init__.py")} - {"tests"}


def source_files() -> set[str]:
    """Where each file git knows (tracked, or new and not ignored) in the package's folders lands in a wheel:
    `cortex_tui/` as itself, every other top-level folder holding an `__init__.py` (the tests' aside) as the
    subpackage of its name. Git's list, not a walk of the folders, so that the test does not share the build's way
    of finding them."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                            check=True, capture_output=True, text=True).stdout.split("\0")
    folders = package_folders()
    wanted = set()
    for path in listed:
        top = path.split("/")[0]
        if top in folders and (ROOT / path).is_file():  # a tracked file deleted in the work tree is not source
            wanted.add(path if top == "cortex_tui" else f"cortex_tui/{path}")
    return wanted


def test_the_wheel_built_from_the_sdist_holds_every_module_and_data_file(tmp_path):
    built = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp_path), str(ROOT)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert len(list(tmp_path.glob("*.tar.gz"))) == 1
    (wheel,) = tmp_path.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = next(archive.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt"))
    package = {n for n in names if n.startswith("cortex_tui/")}
    wanted = source_files()
    assert "cortex_tui/core/anchors/anchors.py" in wanted and "cortex_tui/core/secrets/secret_rules.yml" in wanted
    missing, extra = sorted(wanted - package), sorted(package - wanted)
    assert not missing, f"missing from the wheel: {missing}"
    assert not extra, f"in the wheel but not in the source tree: {extra}"
    assert all(n.split("/")[0].endswith(".dist-info") for n in names - package), sorted(names - package)
    assert "cortex = cortex_tui.app.cli.client:run" in entry_points
    assert "cortex-tui = cortex_tui.app.tui.main:run" in entry_points


def test_the_type_check_view_links_every_package_folder():
    """mypy checks the product through `.typecheck/cortex_tui/` (pyproject's comment says why): one relative link
    per subpackage folder and per module of `cortex_tui/` itself, so a new top-level package is type-checked too,
    and a fresh clone anywhere resolves them."""
    view = ROOT / ".typecheck" / "cortex_tui"
    wanted = {folder: ROOT / folder for folder in package_folders() - {"cortex_tui"}}
    wanted |= {module.name: module for module in (ROOT / "cortex_tui").glob("*.py")}
    links = {entry.name: entry for entry in view.iterdir()}
    assert sorted(links) == sorted(wanted)
    for name, link in links.items():
        assert link.is_symlink() and not os.path.isabs(os.readlink(link)), f"{link} is not a relative link"
        assert link.resolve() == wanted[name].resolve(), f"{link} points at {link.resolve()}, not {wanted[name]}"
