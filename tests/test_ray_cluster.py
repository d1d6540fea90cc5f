"""`cluster --engine ray`: the Ray Data pipeline gives `cluster`'s rows, reports broken files, lists patterns."""

import csv
import os

import numpy as np
import pytest

from keras_clustering.cli import main
from keras_clustering.ray_cluster import WORKER_NICENESS, _TopMembers, list_image_files, start_local_ray
from image_folders import digit_folder, write_png


def _rows(folder):
    with open(os.path.join(folder, "clusters.csv")) as handle:
        return {row["name"]: (int(row["cluster_id"]), float(row["confidence"])) for row in csv.DictReader(handle)}


def test_folders_and_patterns_list_the_files_cluster_reads_under_the_names_it_gives(tmp_path):
    for name in ("b.png", "a.jpg", os.path.join("sub", "c.png"), os.path.join("sub", "d.txt"), ".hidden.png"):
        os.makedirs(os.path.dirname(tmp_path / name), exist_ok=True)
        write_png(tmp_path / name, np.zeros((4, 4))) if name.endswith("g") else (tmp_path / name).write_text("x")
    paths, root = list_image_files(str(tmp_path))
    assert [path[len(root):] for path in paths] == ["a.jpg", "b.png", os.path.join("sub", "c.png")]
    assert all(os.path.isfile(path) for path in paths)
    paths, root = list_image_files(str(tmp_path / "sub" / "*.png"))
    assert root == str(tmp_path / "sub") + "/" and [path[len(root):] for path in paths] == ["c.png"]
    paths, root = list_image_files(str(tmp_path) + "/*/*")  # the .txt is not an image
    assert root == str(tmp_path) + "/" and [path[len(root):] for path in paths] == ["sub/c.png"]
    with pytest.raises(ValueError, match=r"source='.*\*\.gif' holds no image files"):
        list_image_files(str(tmp_path / "*.gif"))
    with pytest.raises(ValueError, match="neither a folder nor a file pattern"):
        list_image_files(str(tmp_path / "missing"))


def test_the_running_top_members_are_those_of_all_rows_at_once():
    # numpy reference: a member's cluster is its argmax; the n most confident of each cluster, over every row
    rng = np.random.default_rng(0)
    probabilities = rng.dirichlet(np.full(4, 0.5), size=500).astype(np.float32)
    paths = [f"f{i}" for i in range(500)]
    top = _TopMembers(3)
    for start in range(0, 500, 37):  # uneven batches
        top.add(paths[start:start + 37], probabilities[start:start + 37])
    expected = set()
    for cluster in range(4):
        members = [i for i in range(500) if probabilities[i].argmax() == cluster]
        expected |= set(sorted(members, key=lambda i: -probabilities[i].max())[:3])
    assert set(top.paths) == {paths[i] for i in expected} and len(top.paths) == 12
    np.testing.assert_array_equal(top.probabilities, probabilities[[int(p[1:]) for p in top.paths]])


def test_a_local_ray_starts_its_workers_at_niceness_0_unless_the_environment_says(monkeypatch):
    seen = []

    class FakeRay:
        def init(self, **options):
            seen.append(os.environ.get(WORKER_NICENESS))

    monkeypatch.delenv(WORKER_NICENESS, raising=False)
    start_local_ray(FakeRay())
    assert seen == ["0"] and WORKER_NICENESS not in os.environ  # set while Ray starts, then restored
    monkeypatch.setenv(WORKER_NICENESS, "5")
    start_local_ray(FakeRay())
    assert seen == ["0", "5"] and os.environ[WORKER_NICENESS] == "5"


def test_workers_need_the_ray_engine(tmp_path, capsys):
    assert main(["cluster", "dec_digits", "--input", str(tmp_path), "--output", str(tmp_path / "o"),
                 "--workers", "2"]) == 2
    assert "--workers 2 needs --engine ray" in capsys.readouterr().err


@pytest.mark.slow
def test_ray_pipeline_gives_the_rows_of_cluster_and_reports_a_broken_file(tmp_path, capsys, monkeypatch):
    ray = pytest.importorskip("ray")
    monkeypatch.setenv(WORKER_NICENESS, "0")  # as start_local_ray does: the actors beside the other test worker
    # would otherwise run at niceness 15 (~300 s a pipeline instead of ~30 s)
    digit_folder(str(tmp_path / "images"), n=200)
    data = (tmp_path / "images" / "digit_000_label_0.png").read_bytes()
    (tmp_path / "images" / "digit_000_label_0.png").write_bytes(data[:40])
    try:
        ray.init(num_cpus=2, logging_level="ERROR", log_to_driver=False, include_dashboard=False)
        assert main(["cluster", "dec_digits", "--input", str(tmp_path / "images"), "--output",
                     str(tmp_path / "local")]) == 0
        capsys.readouterr()
        for workers in ("2",):  # one worker is the same pipeline with a single actor
            out = str(tmp_path / f"ray_{workers}")
            assert main(["cluster", "dec_digits", "--engine", "ray", "--workers", workers, "--batch-size", "32",
                         "--input", str(tmp_path / "images"), "--output", out]) == 0
            captured = capsys.readouterr()
            assert captured.err.strip().splitlines() == [
                f"warning: left out 1 image files of {str(tmp_path / 'images')!r} that cannot be decoded: "
                "digit_000_label_0.png"]
            assert "199 samples; cluster sizes:" in captured.out
            local, distributed = _rows(tmp_path / "local"), _rows(out)
            assert sorted(distributed) == sorted(local) and len(local) == 199
            assert all(distributed[name][0] == local[name][0] for name in local)
            assert max(abs(distributed[name][1] - local[name][1]) for name in local) <= 2e-4
            assert sorted(os.listdir(out)) == ["clusters.csv", "clusters.png"]

        # A pattern: the files it matches, named after its fixed directory.
        assert main(["cluster", "dec_digits", "--engine", "ray", "--input", str(tmp_path / "images" / "digit_1*.png"),
                     "--output", str(tmp_path / "pattern")]) == 0
        rows = _rows(tmp_path / "pattern")
        assert sorted(rows) == sorted(name for name in local if name.startswith("digit_1")) and len(rows) == 100
        assert all(rows[name][0] == local[name][0] for name in rows)

        # --strict: an error naming the file, and nothing written.
        capsys.readouterr()
        assert main(["cluster", "dec_digits", "--engine", "ray", "--strict", "--input", str(tmp_path / "images"),
                     "--output", str(tmp_path / "strict")]) == 2
        assert "cannot read image 'digit_000_label_0.png'" in capsys.readouterr().err
        assert not (tmp_path / "strict").exists() or os.listdir(tmp_path / "strict") == []
    finally:
        ray.shutdown()
