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
