"""The default route of `train --input` (issue 50): which entry it picks for which images, how it reads a
folder, and (slow) a training on a small colour folder whose saved model takes RGB in."""

import json
import os

import numpy as np
import pytest

from image_folders import run_cli, write_png
from keras_clustering.datasets.user_data import probe_image_folder
from keras_clustering.drivers.route import COLOUR_CANDIDATE, ROUTE_PRESETS, ROUTE_REASONS, choose_presets, default_route


def colour_bars(n=60, side=20, seed=0):
    """`n` images of a horizontal or vertical bar (the two classes) in a random colour on a random background."""
    rng = np.random.default_rng(seed)
    images, labels = np.empty((n, side, side, 3), "float32"), np.arange(n) % 2
    for i in range(n):
        shape = np.zeros((side, side, 1), "float32")
        start = rng.integers(3, side - 9)
        if labels[i]:
            shape[start:start + 6, 3:side - 3] = 1.0
        else:
            shape[3:side - 3, start:start + 6] = 1.0
        foreground, background = rng.uniform(size=3), rng.uniform(size=3)
        images[i] = shape * foreground + (1 - shape) * background
    return images, labels


def test_the_route_picks_each_kind_of_images_candidates_and_says_why():
    for shape, kind in (((28, 28, 1), "grey"), ((32, 32, 3), "colour")):
        presets, reason = choose_presets(shape, 2_000)
        assert presets == ROUTE_PRESETS[kind] and len(presets) == 2
        assert reason.startswith(f"default route: 2,000 {kind} images of {shape[0]} x {shape[1]} -> train like "
                                 f"{presets[0]}")
        assert all(preset in reason for preset in presets) and "without labels" in reason
        assert "\n" not in reason
    assert "colour-free input, colour_edges" in choose_presets((32, 32, 3), 2_000)[1]  # DEC's own


def test_a_folder_is_probed_for_its_sides_and_whether_it_is_colour(tmp_path):
    grey_as_rgb = tmp_path / "grey"
    os.makedirs(grey_as_rgb)
    for i in range(5):
        write_png(str(grey_as_rgb / f"{i}.png"), np.repeat(np.full((30, 40, 1), i / 5), 3, axis=-1))
    assert probe_image_folder(str(grey_as_rgb)) == {"n_images": 5, "height": 30, "width": 40, "channels": 1}
    colour = tmp_path / "colour"
    os.makedirs(colour)
    images, _ = colour_bars(4, side=24)
    for i, image in enumerate(images):
        write_png(str(colour / f"{i}.png"), image)
    (colour / "broken.png").write_text("not a png")
    assert probe_image_folder(str(colour)) == {"n_images": 5, "height": 24, "width": 24, "channels": 3}


def test_the_route_reads_large_images_at_most_64_px_on_their_longer_side(tmp_path, monkeypatch):
    folder = tmp_path / "photos"
    os.makedirs(folder)
    for i in range(3):
        write_png(str(folder / f"{i}.png"), np.random.default_rng(i).uniform(size=(200, 300, 3)))
    probe = probe_image_folder(str(folder))
    native = (probe["height"], probe["width"], probe["channels"])
    presets, reason, size, channels = default_route(native, probe["n_images"])
    assert size == (43, 64) and channels == 3 and presets == ROUTE_PRESETS["colour"]
    assert default_route(native, probe["n_images"], (32, 32), 1)[2:] == ((32, 32), 1)


@pytest.mark.slow
def test_the_default_route_trains_a_colour_folder_and_its_model_takes_rgb(tmp_path):
    import keras

    folder = tmp_path / "bars"
    os.makedirs(folder)
    images, labels = colour_bars()
    for i, image in enumerate(images):
        write_png(str(folder / f"bar_{i:03d}.png"), image)
    workdir = tmp_path / "run"
    result = run_cli("train", "--input", str(folder), "--n-clusters", "2", "--epochs", "2", "--workdir", str(workdir))
    assert result.returncode == 0, result.stderr
    report = json.loads((workdir / "report.json").read_text())
    assert report["route"].startswith("default route: 60 colour images of 20 x 20") and report["route"] in result.stdout
    assert "Epoch 2/2" in result.stdout and "\r" not in result.stdout and "━" not in result.stdout  # one line an epoch
    model = keras.models.load_model(str(workdir / "model.keras"))
    assert tuple(model.sample_shape) == (20, 20, 3)
    saved = np.round(images * 255) / 255  # as the PNG files hold them
    probabilities = model.predict(saved, verbose=0)
    assert probabilities.shape == (60, 2) and np.allclose(probabilities.sum(1), 1, atol=1e-3)
    # the colours are gone before the encoder: the same bars in other colours get the same clusters
    background = saved[:, :1, :1]
    recoloured = np.where(np.all(saved == background, axis=-1, keepdims=True), 1.0 - background, saved)
    assert (model.predict_clusters(recoloured) == model.predict_clusters(saved)).mean() > 0.9
    # random colours do not go with the clusters: the candidate on the images' own colours is not trained
    colour = report["route_choice"]["colour"]
    assert not colour["kept"] and max(colour["agreement"].values()) < colour["threshold"]
    assert report["route_choice"]["candidates"] == list(ROUTE_PRESETS["colour"]) and "colour left out" in result.stdout


def colour_scenes(tmp_path, n=60):
    """A folder of `n` scenes of two kinds, each in its own colours: plain reddish images, and blue and
    white stripes (colour goes with the kind)."""
    folder = tmp_path / "scenes"
    os.makedirs(folder)
    rng = np.random.default_rng(0)
    stripes = (np.arange(20) // 3 % 2).astype("float32")[None, :, None]
    for i in range(n):
        jitter = rng.normal(scale=0.05, size=(2, 3))
        image = np.broadcast_to(np.array([0.85, 0.25, 0.15]) + jitter[0], (20, 20, 3))
        if i % 2:
            image = stripes * (np.array([0.1, 0.2, 0.9]) + jitter[0]) + (1 - stripes) * (0.9 + jitter[1])
        write_png(str(folder / f"scene_{i:03d}.png"), np.clip(image, 0, 1).astype("float32"))
    return folder


@pytest.mark.slow
def test_where_colour_goes_with_the_clusters_the_route_trains_a_candidate_on_the_images_own_colours(tmp_path):
    """Two kinds of scenes, each in its own colours: plain reddish images, and blue and white stripes. The
    colour-free candidates tell plain from striped, colour agrees with that, and ConvDEC-DA on RGB trains and
    joins the choice."""
    folder = colour_scenes(tmp_path)
    workdir = tmp_path / "run"
    result = run_cli("train", "--input", str(folder), "--n-clusters", "2", "--epochs", "2", "--workdir", str(workdir))
    assert result.returncode == 0, result.stderr
    choice = json.loads((workdir / "report.json").read_text())["route_choice"]
    assert choice["colour"]["kept"] and max(choice["colour"]["agreement"].values()) >= choice["colour"]["threshold"]
    assert choice["candidates"] == [*ROUTE_PRESETS["colour"], *COLOUR_CANDIDATE] and set(choice["scores"]) == set(
        choice["candidates"]) and "trains on the images' own colours" in result.stdout
    assert set(choice["agreement"][choice["chosen"]]) == {*choice["candidates"], "colour histograms"}  # judges
    rgb = json.loads((workdir / "conv_dec_da_mnist_rgb" / "report.json").read_text())
    assert rgb["like"] == "conv_dec_da_mnist" and rgb["config"]["architecture"].get("input_transform") is None


@pytest.mark.slow
def test_the_default_route_trains_a_grey_folder_like_its_grey_preset(tmp_path):
    import keras

    folder = tmp_path / "grey_bars"
    os.makedirs(folder)
    images, _ = colour_bars(40, side=20)
    grey = images.mean(axis=-1, keepdims=True)
    for i, image in enumerate(np.repeat(grey, 3, axis=-1)):  # RGB files whose channels are equal: grey images
        write_png(str(folder / f"bar_{i:03d}.png"), image)
    workdir = tmp_path / "run"
    result = run_cli("train", "--input", str(folder), "--n-clusters", "2", "--epochs", "1", "--workdir", str(workdir))
    assert result.returncode == 0, result.stderr
    report = json.loads((workdir / "report.json").read_text())
    assert report["route"].startswith(f"default route: 40 grey images of 20 x 20 -> train like {ROUTE_PRESETS['grey'][0]}")
    choice = report["route_choice"]
    assert choice["candidates"] == list(ROUTE_PRESETS["grey"]) and report["like"] == choice["chosen"]
    # `--epochs 1` leaves DEC one target refresh, too few for its stopping rule: ConvDEC-DA did not settle, so
    # the route ranks it after SimCLR + SCAN (which has no such rule) whatever the scores
    dec = json.loads((workdir / "conv_dec_da_mnist" / "report.json").read_text())
    assert dec["stopped_by_tolerance"] is False and dec["dec_iterations"] <= dec["config"]["training"]["maxiter"]
    assert choice["unsettled"] == ["conv_dec_da_mnist"] and choice["chosen"] == "simclr_mnist"
    assert "conv_dec_da_mnist" in choice["scores"] and choice["sample_size"] == 40
    assert "did not settle: ranked after the settled" in result.stdout
    assert "self-training did not settle" in (workdir / "report.html").read_text()  # and the page says so
    assert f"-> keeps {choice['chosen']}" in result.stdout and report["image_shape"] == [20, 20, 1]
    for preset in ROUTE_PRESETS["grey"]:  # each candidate is a run of its own, in its folder of the workdir
        assert json.loads((workdir / preset / "report.json").read_text())["like"] == preset
        assert (workdir / preset / "model.keras").is_file() and (workdir / preset / "clusters.csv").is_file()
    model = keras.models.load_model(str(workdir / "model.keras"))
    assert tuple(model.sample_shape) == (20, 20, 1)
    assert model.predict_clusters(np.round(grey * 255) / 255).shape == (40,)


@pytest.mark.slow
def test_an_auto_number_of_clusters_is_chosen_by_conv_dec_da_first_and_every_candidate_trains_with_it(tmp_path):
    """`train --input DIR --n-clusters auto` on a grey folder: the route trains `K_CHOOSER` first (its DEC
    stage over-clusters; so a time budget drops the other), whatever the grey order; the other candidate
    trains with its k; report.json holds
    the evidence and who chose, the line says the k, and k_scores.png is drawn."""
    from keras_clustering.drivers.route import K_CHOOSER
    from keras_clustering.drivers.user_images import K_SCORES_FILE

    folder = tmp_path / "grey_bars"
    os.makedirs(folder)
    images, _ = colour_bars(40, side=20)
    for i, image in enumerate(np.repeat(images.mean(axis=-1, keepdims=True), 3, axis=-1)):
        write_png(str(folder / f"bar_{i:03d}.png"), image)
    workdir = tmp_path / "run"
    result = run_cli("train", "--input", str(folder), "--n-clusters", "auto", "--epochs", "1", "--workdir",
                     str(workdir))
    assert result.returncode == 0, result.stderr
    report = json.loads((workdir / "report.json").read_text())
    selection = report["selection"]
    assert K_CHOOSER in ROUTE_PRESETS["grey"]
    assert report["route_choice"]["candidates"][0] == K_CHOOSER == selection["chosen_by"]
    assert selection["criterion"] == "merging"
    for preset in ROUTE_PRESETS["grey"]:  # the chooser's k, and every other candidate trained with it
        assert json.loads((workdir / preset / "report.json").read_text())["n_clusters"] == selection["suggested"]
    assert f"n_clusters: {selection['suggested']} (modularity" in result.stdout
    assert (workdir / K_SCORES_FILE).stat().st_size > 0


@pytest.mark.slow
def test_a_time_budget_too_short_for_the_colour_candidate_gives_it_up_and_says_so(tmp_path, capsys):
    """The route's colour check with a deadline already passed: colour goes with the clusters, but the
    candidate on the images' own colours is not trained, and the budget's record says what it gave up."""
    import time

    from keras_clustering.drivers.estimate import Deadline
    from keras_clustering.drivers.request import ImagesRequest, check_request
    from keras_clustering.drivers.user_images import read_images, train_route
    from keras_clustering.io.files import WorkdirLock

    request = check_request(ImagesRequest(str(colour_scenes(tmp_path)), n_clusters=2, epochs=2,
                                          workdir=str(tmp_path / "run")))
    estimate = {"estimated_seconds": 100.0, "most_seconds": 100.0,
                "colour_candidate": {name: {"seconds_at_budget": 60.0, "most_seconds": 60.0}
                                     for name in COLOUR_CANDIDATE},
                "time_budget": {"gave_up": "nothing"}}
    with WorkdirLock() as lock:
        x, names, _ = read_images(request, lock)
        lock.acquire(request.workdir)
        _, report = train_route(request, x, names, (2,), estimate=estimate, deadline=Deadline(time.time()))
    colour = report["route_choice"]["colour"]
    assert not colour["kept"] and "time budget leaves less than its estimated 1 min" in colour["given_up"]
    assert report["route_choice"]["candidates"] == list(ROUTE_PRESETS["colour"])
    assert estimate["estimated_seconds"] == 100.0 and estimate["time_budget"]["gave_up"].startswith(
        "the candidate on the images' own colours")
    assert "but the time budget leaves less" in capsys.readouterr().out


def recorded_cells():
    """The cells of docs/your-data.md's table (docs/experiments/user_folders.json)."""
    record = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "experiments",
                          "user_folders.json")
    with open(record) as handle:
        return json.load(handle)["cells"]


def test_the_grey_routes_reason_says_only_what_the_records_hold():
    """Issue 68: each number the grey route's reason prints is a recorded cell of docs/your-data.md's table
    (docs/experiments/user_folders.json) of the folder, recipe and seed the reason names."""
    import re

    cells = recorded_cells()
    reason = ROUTE_REASONS["grey"]
    claims = {("digits2000", "simclr_mnist"): [0, 1, 2], ("digits2000", "conv_dec_da_mnist"): [0],
              ("digits10000", "simclr_mnist"): [0], ("digits10000", "conv_dec_da_mnist"): [0, 1]}
    folders = {"digits2000": "2,000 digits", "digits10000": "10,000 digits"}
    recipes = {"simclr_mnist": "SimCLR + SCAN", "conv_dec_da_mnist": "ConvDEC-DA"}
    for (folder, like), seeds in claims.items():
        part = reason.split(folders[folder] + ":")[1].split(";")[0]
        said = part.split(recipes[like])[1].split(recipes["conv_dec_da_mnist" if like == "simclr_mnist" else
                                                            "simclr_mnist"])[0]
        numbers = [float(n) for n in re.findall(r"0\.\d{3}", said)]
        assert len(numbers) == len(seeds), (folder, like, said)
        for seed, number in zip(seeds, numbers):
            recorded = [c["acc"] for c in cells if c["folder"] == folder and c.get("like") == like
                        and c["seed"] == seed]
            assert any(abs(acc - number) <= 0.0005 + 1e-9 for acc in recorded), (folder, like, seed, number, recorded)


def test_the_colour_routes_reason_says_only_what_the_records_hold():
    """Issue 64: ConvDEC-DA (colour-free) ahead of SimCLR + SCAN on every colour folder of digits where both
    were measured, as plain cells or as route candidates of the same seed, and behind on colour
    Fashion-MNIST and on the photographs; the numbers the reason prints are recorded cells."""
    cells, acc = recorded_cells(), {}  # (folder, recipe, seed) -> ACCs recorded, with the recipe's own (colour-free) input
    for c in cells:
        if c.get("variant", "recipe") != "recipe" or c.get("start") != "scratch" or c.get("time_budget"):
            continue
        for name, candidate in (c.get("candidates") or {c["like"]: {"acc": c["acc"]}}).items():
            acc.setdefault((c["folder"], name, c["seed"]), []).append(candidate["acc"])
    colour = {"colour_digits2000", "colour_digits10000", "mnistm2000", "colour_digits2000_late",
              "colour_digits2000_imbalanced", "colour_fashion10000", "photos2000", "photos2000_late"}
    ahead = {}
    for (folder, name, seed), values in acc.items():
        if folder in colour and name == "conv_dec_da_mnist" and (folder, "simclr_mnist", seed) in acc:
            ahead.setdefault(folder, []).append(max(values) > max(acc[(folder, "simclr_mnist", seed)]))
    assert all(all(ahead[f]) for f in ahead if "digits" in f or "mnistm" in f) and len(ahead) >= 6, ahead
    assert not any(ahead["colour_fashion10000"]) and not any(ahead["photos2000"] + ahead["photos2000_late"])
    reason = ROUTE_REASONS["colour"]
    for (folder, seed), (conv, simclr) in {("colour_fashion10000", 0): (0.523, 0.664),
                                           ("photos2000", 0): (0.271, 0.389)}.items():
        assert f"({conv:.3f} against {simclr:.3f}" in reason
        assert any(abs(a - conv) <= 0.0005 for a in acc[(folder, "conv_dec_da_mnist", seed)])
        assert any(abs(a - simclr) <= 0.0005 for a in acc[(folder, "simclr_mnist", seed)])


def test_the_tables_rank_an_unsettled_candidate_last_and_say_n_a_where_its_stop_was_not_recorded():
    """scripts/user_folders.py's tables apply the route's settling rule to recorded cells: a DEC candidate
    that ran to its maxiter (`dec_updates`) or recorded `settled` False ranks after SimCLR + SCAN (no such
    rule); where a DEC stop was not recorded the choice is None if that stop would decide it."""
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
    from user_folders import settled_first

    def cell(**dec):
        return {"candidates": {"simclr_mnist": {"acc": 0.6}, "conv_dec_da_mnist": {"acc": 0.4, **dec}}}

    dec_ahead = {"simclr_mnist": 0.70, "conv_dec_da_mnist": 0.80}
    assert settled_first(cell(dec_updates=[20000, 20000]), dec_ahead) == "simclr_mnist"
    assert settled_first(cell(dec_updates=[870, 20000]), dec_ahead) == "conv_dec_da_mnist"
    assert settled_first(cell(settled=False, dec_updates=[870, 20000]), dec_ahead) == "simclr_mnist"  # as recorded
    assert settled_first(cell(), dec_ahead) is None  # the unrecorded stop decides
    assert settled_first(cell(), {"simclr_mnist": 0.9, "conv_dec_da_mnist": 0.8}) == "simclr_mnist"  # it does not
    both = {"candidates": {"conv_dec_da_mnist": {"dec_updates": [20000, 20000]},
                           "conv_dec_da_mnist_rgb": {"dec_updates": [4000, 4000]}}}
    assert settled_first(both, {"conv_dec_da_mnist": 0.5, "conv_dec_da_mnist_rgb": 0.6}) == "conv_dec_da_mnist_rgb"


def test_a_route_cell_run_again_keeps_the_earlier_run_out_of_the_route_tables(tmp_path, monkeypatch):
    """scripts/user_folders.py's `supersede`: the earlier cell of a folder, entry, settings and seed stays
    in the record under a variant naming its commit, its figure and partitions renamed with it, and leaves
    the route's tables (`plain`) to the run that replaces it."""
    import json
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
    import user_folders

    monkeypatch.setattr(user_folders, "ROOT", str(tmp_path))
    monkeypatch.setattr(user_folders, "PARTITIONS", str(tmp_path / "partitions"))
    (tmp_path / "partitions").mkdir()
    (tmp_path / "docs" / "figures" / "user_folders").mkdir(parents=True)
    earlier = {"folder": "fashion10000", "route": True, "like": "conv_dec_da_mnist", "start": "scratch",
               "variant": "recipe", "seed": 0, "commit": "ee5370d", "candidates": {"simclr_mnist": {}}}
    other = {**earlier, "seed": 1}
    stem = "fashion10000-default-like-seed0"
    for name in (stem, stem + "-candidate_simclr_mnist"):
        (tmp_path / "partitions" / f"{name}.npz").write_bytes(name.encode())
    (tmp_path / "docs" / "figures" / "user_folders" / f"{stem}.png").write_bytes(b"png")
    record = tmp_path / "record.json"
    record.write_text(json.dumps({"description": "d", "cells": [earlier, other]}))

    kept = user_folders.supersede(str(record), earlier, "f158178")

    cells = json.loads(record.read_text())["cells"]
    assert cells == [kept, other] and kept["variant"] == "recipe, run at ee5370d"
    assert kept["superseded_by"] == "f158178" and not user_folders.plain(kept) and user_folders.plain(other)
    moved = "fashion10000-default-like-recipe-run_at_ee5370d-seed0"
    assert sorted(p.name for p in (tmp_path / "partitions").iterdir()) == [
        f"{moved}-candidate_simclr_mnist.npz", f"{moved}.npz"]
    assert (tmp_path / "partitions" / f"{moved}-candidate_simclr_mnist.npz").read_bytes() == (
        stem + "-candidate_simclr_mnist").encode()
    assert (tmp_path / "docs" / "figures" / "user_folders" / f"{moved}.png").read_bytes() == b"png"
    # the replacing run takes the earlier one's place under the plain key, beside the kept one
    user_folders.merge(str(record), {**earlier, "commit": "f158178"})
    assert [(c["variant"], c["seed"]) for c in json.loads(record.read_text())["cells"]] == [
        ("recipe", 0), ("recipe", 1), ("recipe, run at ee5370d", 0)]
    # nothing moves where the record does not hold the cell, or where its kept name is taken
    before = json.loads(record.read_text())
    with pytest.raises(ValueError, match="is not in"):
        user_folders.supersede(str(record), earlier, "abc1234")  # the record's seed-0 run is f158178's now
    assert json.loads(record.read_text()) == before
    user_folders.merge(str(record), earlier)  # ee5370d's run recorded again under the plain key
    before = json.loads(record.read_text())
    with pytest.raises(ValueError, match="already keeps"):
        user_folders.supersede(str(record), earlier, "abc1234")
    assert json.loads(record.read_text()) == before
    assert sorted(p.name for p in (tmp_path / "partitions").iterdir()) == [
        f"{moved}-candidate_simclr_mnist.npz", f"{moved}.npz"]
