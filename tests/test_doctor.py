"""`cortex doctor` on real damage: truncated data files and manifests, missing manifests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cortex_tui.core.engine import Engine
from cortex_tui.core.records import MemoryDraft


@pytest.fixture
def damaged_setup(repo):
    """A repository with an index and two memories, the second written by the newest commit of `memories`."""
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    engine.remember(MemoryDraft(text="the release runs from the tag, never from main"))
    engine.remember(MemoryDraft(text="written last: lost when its file is damaged"))
    return Path(engine.db_uri)


def newest(folder: Path, pattern: str) -> Path:
    return max(folder.glob(pattern), key=lambda p: p.stat().st_mtime_ns)


def truncate(path: Path, size: int = 10) -> None:
    with open(path, "r+b") as f:
        f.truncate(size)


def test_truncated_data_files_name_doctor_which_restores_memories_and_rebuilds_the_index(cli, damaged_setup):
    db = damaged_setup
    truncate(newest(db / "memories.lance" / "data", "*.lance"))
    truncate(newest(db / "chunks.lance" / "data", "*.lance"))
    code, _, err = cli("list")
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert "damaged" in err and "`cortex doctor`" in err

    code, out, err = cli("doctor")
    assert code == 0, err
    assert "DAMAGED  memories" in out and "DAMAGED  chunks" in out
    assert "memories: restored version" in out
    assert "code index: unreadable; rebuilt from the work tree (2 files" in out

    texts = [m.text for m in Engine(damaged_setup.parent.parent).list()]
    assert texts == ["the release runs from the tag, never from main"]
    status = Engine(damaged_setup.parent.parent).code_index().status()
    assert status.fresh and status.indexed_files == 2 and status.chunks >= 2
    code, out, _ = cli("doctor")
    assert code == 0 and "nothing to repair" in out
    hits = Engine(damaged_setup.parent.parent).search("release tag").hits
    assert any("release runs from the tag" in h.text for h in hits)


def test_damaged_and_missing_manifests_name_doctor_which_sets_them_aside(cli, damaged_setup):
    db = damaged_setup
    truncate(newest(db / "memories.lance" / "_versions", "*.manifest"), 20)
    for manifest in (db / "edges.lance" / "_versions").glob("*.manifest"):
        os.remove(manifest)
    code, _, err = cli("list")
    assert code == 1 and "`cortex doctor`" in err and len(err.strip().splitlines()) == 1
    code, _, err = cli("index")
    assert code == 1 and "`cortex doctor`" in err and len(err.strip().splitlines()) == 1

    code, out, err = cli("doctor")
    assert code == 0, err
    assert "memories: restored version" in out and "after setting 1 damaged manifest(s) aside" in out
    assert "code index: unreadable; rebuilt" in out
    assert (db / ".doctor" / "memories" / "_versions").is_dir()

    engine = Engine(damaged_setup.parent.parent)
    assert [m.text for m in engine.list()] == ["the release runs from the tag, never from main"]
    engine.remember(MemoryDraft(text="writes work again after the repair"))
    assert len(Engine(damaged_setup.parent.parent).list()) == 2
    assert Engine(damaged_setup.parent.parent).code_index().status().fresh
