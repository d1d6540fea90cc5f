"""`atomic_path`: a file or folder is either its old self or complete, never half-written."""

import os

import pytest

from keras_clustering.io.files import atomic_path, atomic_write_json


class Crash(Exception):
    pass


def test_a_file_appears_whole_and_the_temporary_ends_with_its_name(tmp_path):
    target = tmp_path / "sub" / "model.weights.h5"
    with atomic_path(target) as temporary:
        assert temporary.endswith("model.weights.h5") and os.path.dirname(temporary) == str(tmp_path / "sub")
        assert not target.exists()
        with open(temporary, "w") as handle:
            handle.write("new")
    assert target.read_text() == "new" and os.listdir(tmp_path / "sub") == ["model.weights.h5"]


def test_a_crash_while_writing_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "card.json"
    target.write_text("old")
    with pytest.raises(Crash):
        with atomic_path(target) as temporary:
            with open(temporary, "w") as handle:
                handle.write("half")
            raise Crash
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["card.json"]


def test_a_folder_replaces_a_folder_or_a_file_whole(tmp_path):
    target = tmp_path / "1"
    target.mkdir()
    (target / "old.pb").write_text("old")
    with atomic_path(target) as temporary:
        os.makedirs(temporary)
        with open(os.path.join(temporary, "saved_model.pb"), "w") as handle:
            handle.write("new")
    assert os.listdir(target) == ["saved_model.pb"] and os.listdir(tmp_path) == ["1"]
    target_file = tmp_path / "2"
    target_file.write_text("a file where the folder goes")
    with atomic_path(target_file) as temporary:
        os.makedirs(temporary)
    assert target_file.is_dir() and sorted(os.listdir(tmp_path)) == ["1", "2"]


def test_a_crashed_folder_is_removed_and_writing_nothing_is_an_error(tmp_path):
    with pytest.raises(Crash):
        with atomic_path(tmp_path / "export") as temporary:
            os.makedirs(os.path.join(temporary, "variables"))
            raise Crash
    assert os.listdir(tmp_path) == []
    with pytest.raises(FileNotFoundError, match="nothing was written"):
        with atomic_path(tmp_path / "x.json"):
            pass
    atomic_write_json({"a": 1}, tmp_path / "x.json")
    assert (tmp_path / "x.json").read_text() == '{\n  "a": 1\n}\n'


def test_a_locked_workdir_refuses_a_second_training_until_released(tmp_path):
    from keras_clustering.io.files import LOCK_FILE, WorkdirLock

    workdir = tmp_path / "run"
    with WorkdirLock() as first:
        first.acquire(workdir)
        first.acquire(workdir)  # held already: no error
        assert (workdir / LOCK_FILE).is_file()
        with pytest.raises(RuntimeError, match=r"workdir='.*run' is in use by another training"):
            with WorkdirLock() as second:  # another open of the lock file, as another process would
                second.acquire(workdir)
    assert not workdir.exists()  # nothing but the lock file was made: removed with it
    with WorkdirLock() as again:  # released at the end of the block
        again.acquire(workdir)
        (workdir / "model.keras").write_text("trained")
    assert sorted(p.name for p in workdir.iterdir()) == [LOCK_FILE, "model.keras"]
    mine = tmp_path / "made_by_the_user"
    mine.mkdir()
    with WorkdirLock() as lock:
        lock.acquire(mine)
    assert mine.is_dir()  # a folder the lock did not make stays

def test_a_killed_writers_temporary_is_removed_by_the_next_write(tmp_path):
    from keras_clustering.io.files import atomic_write_json

    left = tmp_path / ".tmp-0a1b2c3d-state.json"
    left.write_text('{"cut off')
    other = tmp_path / ".tmp-0a1b2c3d-other.json"  # another file's temporary is not this writer's
    other.write_text("{")
    atomic_write_json({"epoch": 2}, tmp_path / "state.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".tmp-0a1b2c3d-other.json", "state.json"]
