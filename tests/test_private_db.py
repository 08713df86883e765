"""`.cortex` is readable by its owner only: the directory 0700 and every file in it 0600 from creation, including
the files LanceDB writes later (new versions, data files, full-text indexes, compaction), and another local user
cannot read it even in a world-readable checkout (the suite runs as root in CI: a user is made with useradd)."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest
from cortex_tui.core.engine import Engine
from cortex_tui.core.records import MemoryDraft
from cortex_tui.core.store.database import Database

from .conftest import git
from .test_serve import runtime  # noqa: F401  (a fixture)

OTHER_USER = "cortex-test-other"


def loose(directory: Path) -> list[str]:
    """Everything under `directory` (and itself) that someone other than its owner could read or enter."""
    return [f"{oct(stat.S_IMODE(p.lstat().st_mode))} {p}" for p in (directory, *directory.rglob("*"))
            if stat.S_IMODE(p.lstat().st_mode) & 0o077]


@pytest.fixture
def open_checkout():
    """A world-readable checkout (0755 all the way down), as on a shared machine."""
    base = Path(tempfile.mkdtemp(prefix="cortex-shared-"))
    os.chmod(base, 0o755)
    repo = base / "repo"
    repo.mkdir(mode=0o755)
    os.chmod(repo, 0o755)
    git(repo, "init", "-q", "-b", "main")
    (repo / "app.py").write_text("def main():\n    return 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Add the app")
    yield repo
    shutil.rmtree(base, ignore_errors=True)


def test_the_database_is_private_from_creation_and_stays_so(open_checkout):
    repo = open_checkout
    engine = Engine(repo)
    for i in range(30):  # enough versions for a compaction, which writes new files and deletes old ones
        engine.remember(MemoryDraft(f"Decision {i}: prices are cached per region for five minutes"))
    engine.code_index(create=True).update(embed=True)
    engine.search("prices cached")
    assert (repo / ".cortex" / "db").is_dir()
    assert loose(repo / ".cortex") == []


def test_a_database_made_before_is_made_private_when_opened(tmp_path):
    uri = tmp_path / ".cortex" / "db"
    Database(str(uri), create=True)
    for path in (uri.parent, *uri.parent.rglob("*")):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    Database(str(uri), create=False)
    assert loose(uri.parent) == []


@pytest.fixture
def other_user():
    if os.geteuid() != 0 or not shutil.which("useradd"):
        pytest.skip("needs root and useradd to make a second local user")
    try:
        pwd.getpwnam(OTHER_USER)
    except KeyError:
        made = subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", OTHER_USER],
                              capture_output=True, text=True)
        if made.returncode != 0:
            pytest.skip(f"useradd could not make a user: {made.stderr.strip()}")
    yield pwd.getpwnam(OTHER_USER)
    subprocess.run(["userdel", OTHER_USER], capture_output=True)


def test_another_local_user_cannot_read_the_database(open_checkout, other_user):
    repo = open_checkout
    Engine(repo).remember(MemoryDraft("The staging database moved to the orders-eu cluster"))
    files = [p for p in (repo / ".cortex").rglob("*") if p.is_file()]
    assert files
    # The other user reads the checkout itself (it is world-readable) but nothing of `.cortex`, with `cat`, `ls`
    # and `strings`-like reads alike.
    probe = ('cat "$1" > /dev/null || echo "cannot read the checkout"; shift\n'
             'ls "$(dirname "$1")" > /dev/null 2>&1 && echo "listed $(dirname "$1")"\n'
             'for f in "$@"; do cat "$f" > /dev/null 2>&1 && echo "read $f"; done; exit 0\n')
    run = subprocess.run(["/bin/sh", "-c", probe, "probe", str(repo / "app.py"), *map(str, files)],
                         user=other_user.pw_uid, group=other_user.pw_gid, extra_groups=[], capture_output=True,
                         text=True, cwd="/")
    assert run.returncode == 0, run.stderr
    assert run.stdout == ""


def test_a_database_its_owner_made_read_only_is_read_and_never_made_writable(repo, runtime):
    """`chmod -R a-w .cortex/db`: the tightening chmod-ed the tree back to 0700/0600, and root (which ignores
    permissions) then wrote into it. Now it is read with a one-line note, a write is refused in one line, and
    nothing in it changes, modes included."""
    from .test_serve import cortex

    assert cortex(repo, "remember", "Prices are cached per region", served=False).returncode == 0
    db = repo / ".cortex" / "db"
    subprocess.run(["chmod", "-R", "a-w", str(db)], check=True)
    before = {p: (p.stat().st_mode, p.stat().st_mtime_ns) for p in (db, *db.rglob("*"))}
    note = f"the database at {db} is read-only (its write permission was removed)"
    for served in (True, False):
        listed = cortex(repo, "list", served=served)
        assert listed.returncode == 0 and b"Prices are cached per region" in listed.stdout, listed.stderr
        assert listed.stderr.decode() == f"cortex: note: {note}; reading only\n"
        refused = cortex(repo, "remember", "Another note", served=served)
        assert refused.returncode == 1 and refused.stderr.decode() == f"cortex: error: {note}; nothing was written\n"
    assert cortex(repo, "doctor").returncode == 0
    assert cortex(repo, "ss", "prices").returncode == 0
    after = {p: (p.stat().st_mode, p.stat().st_mtime_ns) for p in (db, *db.rglob("*"))}
    assert after == before
    assert not stat.S_IMODE(db.stat().st_mode) & 0o222
