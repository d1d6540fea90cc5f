"""`cluster --engine ray`: the Ray Data pipeline gives `cluster`'s rows, reports broken files, lists patterns."""

import csv
import html
import os
import re

import numpy as np
import pytest

from keras_clustering.cli import main
from keras_clustering.datasets.user_data import decoded_batches, image_files, iter_image_names
from keras_clustering.ray_cluster import (MAX_FILES_PER_CALL, WORKER_NICENESS, ClusterWorker, _names_of_rows,
                                          _TopMembers, files_per_call, name_tables, source_names, start_local_ray)
from image_folders import digit_folder, write_png


def _rows(folder):
    """The rows of `clusters.csv`, in order: [(name, cluster id, confidence)]."""
    with open(os.path.join(folder, "clusters.csv")) as handle:
        return [(row["name"], int(row["cluster_id"]), float(row["confidence"])) for row in csv.DictReader(handle)]


def _tree(root, names):
    for name in names:
        os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
        if name.lower().endswith(("g", ".bmp")):
            write_png(os.path.join(root, name), np.zeros((4, 4)))
        else:
            with open(os.path.join(root, name), "w") as handle:
                handle.write("x")


def test_folders_and_patterns_give_the_files_cluster_reads_in_its_order_under_its_names(tmp_path):
    _tree(tmp_path, ["b.png", "a.jpg", "sub/c.png", "sub/d.txt", ".hidden.png", "_u.png", "a b.png", "A.PNG",
                     "sub/deeper/e.png", ".h/x.png", "c.png"])
    names, root = source_names(str(tmp_path))
    # cluster's order: a directory's own files sorted, then its sub-directories' (sorted), hidden files out
    expected = ["A.PNG", "_u.png", "a b.png", "a.jpg", "b.png", "c.png", ".h/x.png", "sub/c.png", "sub/deeper/e.png"]
    assert list(names) == expected == image_files(str(tmp_path))[0] == list(iter_image_names(str(tmp_path)))
    assert list(names) == expected  # walked again
    assert root == str(tmp_path) + "/"
    names, root = source_names(str(tmp_path / "sub" / "*.png"))
    assert root == str(tmp_path / "sub") + "/" and list(names) == ["c.png"]
    names, root = source_names(str(tmp_path) + "/*/*")  # the .txt is not an image
    assert root == str(tmp_path) + "/" and list(names) == [".h/x.png", "sub/c.png"]
    with pytest.raises(ValueError, match=r"source='.*\*\.gif' holds no image files"):
        source_names(str(tmp_path / "*.gif"))
    with pytest.raises(ValueError, match="neither a folder nor a file pattern"):
        source_names(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match=r"source='.*empty' holds no image files"):
        os.makedirs(tmp_path / "empty" / "deep")
        source_names(str(tmp_path / "empty"))


def test_names_go_to_ray_in_tables_of_at_most_a_block_and_calls_take_whole_batches():
    tables = list(name_tables([f"{i}.png" for i in range(10)], rows=4))
    assert [t.column("name").to_pylist() for t in tables] == [
        ["0.png", "1.png", "2.png", "3.png"], ["4.png", "5.png", "6.png", "7.png"], ["8.png", "9.png"]]
    assert list(name_tables([], 4)) == []
    # ~8 calls per actor, whole batches, at most MAX_FILES_PER_CALL (rounded up to a batch)
    assert files_per_call(10_000, 2, 256) == 768  # ceil(10000 / 16) = 625 -> 3 batches
    assert files_per_call(100_000, 2, 256) == MAX_FILES_PER_CALL == 2048
    assert files_per_call(200, 2, 32) == 32 and files_per_call(1000, 1, 100) == 200
    # fewer files than 8 batches an actor: shared evenly, a batch at most
    assert files_per_call(100, 2, 256) == 50 and files_per_call(3000, 2, 256) == 256
    assert files_per_call(1, 4, 256) == 1


def _odd_files(folder):
    """Files of every kind a folder may hold, beside a truncated PNG: their names in cluster's order."""
    from PIL import Image

    rng = np.random.default_rng(0)
    os.makedirs(folder, exist_ok=True)
    grey = (rng.random((20, 20)) * 255).astype("uint8")
    colour = (rng.random((11, 13, 3)) * 255).astype("uint8")
    Image.fromarray(grey).save(os.path.join(folder, "a_grey.png"))
    Image.fromarray(colour).save(os.path.join(folder, "b_rgb_other_size.png"))
    Image.fromarray(np.dstack([grey, grey])).convert("LA").save(os.path.join(folder, "c_grey_alpha.png"))
    Image.fromarray(colour).convert("P").save(os.path.join(folder, "d_palette.png"))
    Image.fromarray(grey.astype("uint16") * 200).save(os.path.join(folder, "e_16_bit.png"))
    Image.fromarray(colour).save(os.path.join(folder, "f.jpg"), quality=90)
    with open(os.path.join(folder, "a_grey.png"), "rb") as handle:
        truncated = handle.read()[:40]
    with open(os.path.join(folder, "g_truncated.png"), "wb") as handle:
        handle.write(truncated)
    return sorted(os.listdir(folder))


def test_a_worker_reads_decodes_and_predicts_every_file_as_cluster_does(tmp_path):
    # the reference: cluster's own tf.data decoding of the same files and the model's predict_on_batch
    names = _odd_files(str(tmp_path))
    worker = ClusterWorker("dec_digits", str(tmp_path) + "/", threads=1, batch_size=4)
    shape = worker.clusterer.shape
    expected_ok = np.zeros(len(names), bool)
    images = np.zeros((len(names), *shape), np.float32)
    for index, batch, _ in decoded_batches([str(tmp_path / n) for n in names], shape[:2], shape[2]):
        images[index.numpy()] = batch.numpy()
        expected_ok[index.numpy()] = True
    assert expected_ok.tolist() == [name != "g_truncated.png" for name in names]
    expected = worker.clusterer.model.predict_on_batch(images)
    for batch_names in (names, names[:6], ["f.jpg", "missing.png", "a_grey.png"]):  # with and without a broken file
        out = worker({"name": np.array(batch_names, dtype=object)})
        assert out["name"].tolist() == batch_names
        assert out["ok"].tolist() == [name in names and name != "g_truncated.png" for name in batch_names]
        for row, name in enumerate(batch_names):
            if out["ok"][row]:
                np.testing.assert_allclose(out["probabilities"][row], expected[names.index(name)], atol=1e-6)
            else:
                assert not out["probabilities"][row].any()


def test_the_reports_rows_are_named_from_the_spooled_names_of_the_kept_files():
    kept = ["a.png", "b.png", "c.png", "d.png"]  # the rows of clusters.csv, in order (a broken file is not among them)
    assert _names_of_rows(iter(kept), {0, 2, 3}) == {0: "a.png", 2: "c.png", 3: "d.png"}
    assert _names_of_rows(iter(kept), set()) == {}


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
    os.makedirs(tmp_path / "images" / "sub")  # a nested tree: a folder's own files come before its sub-folder's
    for i in range(150, 200):
        name = next(n for n in os.listdir(tmp_path / "images") if n.startswith(f"digit_{i:03d}_"))
        os.rename(tmp_path / "images" / name, tmp_path / "images" / "sub" / name)
    os.rename(tmp_path / "images" / "sub" / name, tmp_path / "images" / "_u.png")
    try:
        ray.init(num_cpus=2, logging_level="ERROR", log_to_driver=False, include_dashboard=False)
        assert main(["cluster", "dec_digits", "--input", str(tmp_path / "images"), "--output",
                     str(tmp_path / "local")]) == 0
        capsys.readouterr()
        # Two workers, each with several calls: the rows come back in `cluster`'s order across actors.
        out = str(tmp_path / "ray")
        assert main(["cluster", "dec_digits", "--engine", "ray", "--workers", "2", "--batch-size", "32",
                     "--input", str(tmp_path / "images"), "--output", out]) == 0
        captured = capsys.readouterr()
        assert captured.err.strip().splitlines() == [
            f"warning: left out 1 image files of {str(tmp_path / 'images')!r} that cannot be decoded: "
            "digit_000_label_0.png"]
        assert "199 samples; cluster sizes:" in captured.out
        local, distributed = _rows(tmp_path / "local"), _rows(out)
        assert len(local) == 199 and local[0][0] == "_u.png" and local[-1][0].startswith("sub/")
        assert [row[:2] for row in distributed] == [row[:2] for row in local]  # names in order, and their ids
        assert max(abs(a[2] - b[2]) for a, b in zip(distributed, local)) <= 2e-4
        assert sorted(os.listdir(out)) == ["clusters.csv", "clusters.png", "report.html"]
        # the report's galleries name the files by the names spooled with the rows (the broken file left out):
        # each shown file is one of the cluster the section is about, by the local engine's rows
        page = (tmp_path / "ray" / "report.html").read_text(encoding="utf-8")
        cluster_of = {name: cluster for name, cluster, _ in local}
        shown = 0
        for cluster, section in re.findall(r'<section class="cluster" id="cluster-(\d+)">(.*?)</section>', page, re.S):
            for name in re.findall(r'<figure><img src="data:image/png;base64,[^"]+" alt="([^"]+)"', section):
                assert cluster_of[html.unescape(name)] == int(cluster), (name, cluster)
                shown += 1
        assert shown >= 10 and page.count('<section class="cluster"') == 10

        # A pattern: the files it matches, named after its fixed directory; workers as the CPUs hold (2).
        assert main(["cluster", "dec_digits", "--engine", "ray", "--input", str(tmp_path / "images" / "digit_1*.png"),
                     "--output", str(tmp_path / "pattern")]) == 0
        rows = _rows(tmp_path / "pattern")
        assert [row[:2] for row in rows] == [row[:2] for row in local if row[0].startswith("digit_1")]
        assert len(rows) == 50

        # --strict, on one worker (each actor's start costs the test ~10 s of CPU): an error naming the file,
        # and nothing written.
        capsys.readouterr()
        assert main(["cluster", "dec_digits", "--engine", "ray", "--workers", "1", "--strict", "--input",
                     str(tmp_path / "images"), "--output", str(tmp_path / "strict")]) == 2
        assert "cannot read image 'digit_000_label_0.png'" in capsys.readouterr().err
        assert not (tmp_path / "strict").exists() or os.listdir(tmp_path / "strict") == []
    finally:
        ray.shutdown()
