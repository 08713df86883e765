"""The `cortex_tui` package is laid out over the repository's top-level folders: `cortex_tui/` is the package itself
and every other top-level folder holding an `__init__.py` (`core/`, `app/`, `widgets/`, `themes/`; not `tests/`) is
its subpackage of the same name. Packages and data files are found here by walking those folders, because lists
kept by hand once left a package (`core/anchors`) out of the wheel. Everything else is in `pyproject.toml`."""

import os
from pathlib import Path

from setuptools import setup

PACKAGE = "cortex_tui"
NOT_SHIPPED = {"tests", "__pycache__"}
MODULE_SUFFIXES = {".py", ".pyc"}  # a package's modules go in as modules, not data; bytecode is made at install


def shipped(name: str) -> bool:
    return name not in NOT_SHIPPED and not name.startswith(".")


def top_folders() -> dict[str, str]:
    """Each top-level package and its folder (relative: setuptools refuses absolute package dirs)."""
    found = {PACKAGE: PACKAGE}
    for folder in sorted(Path().iterdir()):
        if shipped(folder.name) and folder.name != PACKAGE and (folder / "__init__.py").is_file():
            found[f"{PACKAGE}.{folder.name}"] = folder.name
    return found


def files_below(folder: Path, package_folder: Path) -> list[str]:
    """Every file below a folder that is not a package (the model's files), relative to its package's folder."""
    found = []
    for top, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if shipped(d))
        found.extend(str((Path(top) / f).relative_to(package_folder)) for f in sorted(files) if shipped(f))
    return found


def walk(name: str, folder: Path, packages: list[str], data: dict[str, list[str]]) -> None:
    """`folder` as the package `name`, its subpackages, and every other file below it as the package's data."""
    packages.append(name)
    files = []
    for entry in sorted(e for e in folder.iterdir() if shipped(e.name)):
        if entry.is_dir() and (entry / "__init__.py").is_file():
            walk(f"{name}.{entry.name}", entry, packages, data)
        elif entry.is_dir():
            files.extend(files_below(entry, folder))
        elif entry.suffix not in MODULE_SUFFIXES:
            files.append(entry.name)
    if files:
        data[name] = files


packages: list[str] = []
package_data: dict[str, list[str]] = {}
package_dir = top_folders()
for name, folder in package_dir.items():
    walk(name, Path(folder), packages, package_data)
# Every data file is in `package_data`. With `include_package_data` (pyproject's default) setuptools also reads the
# model's data folder as a package missing from `packages`, and prints a page of warning about it on every build.
setup(packages=packages, package_dir=package_dir, package_data=package_data, include_package_data=False)
