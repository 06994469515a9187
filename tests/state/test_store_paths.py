"""The store given a string, as ``tray run`` gives it, or a Path, as the app and commands do;
and a prune that takes this process's own files as it wrote them."""

from __future__ import annotations

import json
import os
from pathlib import Path, PurePosixPath

import pytest
from helpers.sessions import make_session

from tray.state.store import StateStore

NOW = 1_764_470_000.0


@pytest.mark.parametrize("given_as", [str, Path], ids=["str", "Path"])
def test_a_string_and_a_path_make_the_same_store(
    tmp_path: Path, given_as: type[str] | type[Path]
) -> None:
    directory = tmp_path / "state"
    store = StateStore(given_as(directory))
    store.ensure()
    store.write(make_session("s1", NOW))
    assert store.directory == directory
    assert isinstance(store.directory, Path)
    assert store.path_for("s1") == directory / "s1.json"
    assert store.read(store.path_for("s1")) == store.read(str(directory / "s1.json"))
    (directory / "bad.json").write_text("{")
    sessions, problems = store.read_all(NOW)
    assert [s.id for s in sessions] == ["s1"]
    assert [type(p.path) for p in problems] == [type(directory)]
    assert [p.path for p in problems] == [directory / "bad.json"]
    assert store.remove("s1")
    assert not store.remove("s1")


@pytest.mark.parametrize(
    "written", ["state/", "state//", "./state/.", "state/./", "/tmp//state", "//net/state", "."]
)
def test_a_string_reads_as_its_path_does(written: str) -> None:
    # Messages name the directory as a Path prints it.
    assert str(StateStore(written).directory) == str(PurePosixPath(written))
    assert StateStore(written).path_for("s1") == Path(written, "s1.json")


def test_a_file_in_the_way_is_named_as_a_path_would_name_it(tmp_path: Path) -> None:
    (tmp_path / "state").write_text("")
    with pytest.raises(FileExistsError):
        StateStore(f"{tmp_path}/state/").ensure()


def test_a_prune_reads_a_file_another_writer_changed(tmp_path: Path) -> None:
    # This store wrote the session running; another process ended it long ago since.
    store = StateStore(str(tmp_path))
    running = make_session("s1", NOW - 7200)
    store.write(running)
    document = running.ended(0, NOW - 7200).to_file()
    (tmp_path / "s1.json").write_text(json.dumps(document))
    assert store.prune(NOW, 3600) == 1
    assert os.listdir(tmp_path) == []


def test_a_prune_takes_its_own_ended_session_as_written(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path))
    store.write(make_session("old", NOW - 7200).ended(0, NOW - 7200))
    store.write(make_session("new", NOW - 60).ended(0, NOW - 60))
    store.write(make_session("running", NOW - 7200))
    assert store.prune(NOW, 3600) == 1
    assert sorted(os.listdir(tmp_path)) == ["new.json", "running.json"]


def test_a_file_removed_by_another_is_not_counted(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path))
    store.write(make_session("old", NOW - 7200).ended(0, NOW - 7200))
    StateStore(tmp_path).remove("old")
    assert store.prune(NOW, 3600) == 0
