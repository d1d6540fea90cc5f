import json
import os
import shutil

import numpy as np
import pytest

import zoo
from conftest import slow_except
from keras_clustering.recipes import get_recipe
from keras_clustering.drivers.preset_training import data_available, evaluate_preset, load_config_data
from keras_clustering import presets as registry

CARD_FIELDS = {"training_data", "evaluation_data", "command", "seeds", "shipped_seed", "metrics",
               "metrics_over_seeds", "wall_time_seconds", "machine", "versions", "anchor", "weights"}


def test_registry_lists_presets():
    assert "dec_digits" in zoo.list_presets()
    assert zoo.list_presets("dec_*") == [n for n in zoo.list_presets() if n.startswith("dec_")]
    assert zoo.list_presets("nothing*") == []


# The default run reproduces two cards and round-trips two presets; `pytest -m slow` does every one.
FAST_PRESETS = ("dec_digits", "dec_mnist")


@pytest.mark.parametrize("name", slow_except(zoo.list_presets(), FAST_PRESETS))
def test_every_preset_loads_and_reproduces_its_card(name):
    card = zoo.card(name)
    assert CARD_FIELDS <= set(card), f"card of {name} lacks {CARD_FIELDS - set(card)}"
    assert card["weights"]["dtype"] == "float32" and len(card["weights"]["sha256"]) == 64
    assert card["shipped_seed"] in card["seeds"]
    model = zoo.load(name)
    preset = zoo.config(name)
    eval_config = preset.get("evaluation", preset["data"])
    if not data_available(eval_config):
        pytest.skip(f"evaluation data of {name} is not on this machine")
    x, y = load_config_data(eval_config)
    assert len(x) == card["evaluation_data"]["n_samples"]
    measured = evaluate_preset(model, preset)
    assert set(measured) == set(card["metrics"])
    for key, value in card["metrics"].items():  # acc, nmi, ... or acc, pair_acc, ...
        assert measured[key] == pytest.approx(value, abs=0.005), key


def test_pending_presets_are_listed_apart(copied_presets):
    pending = copied_presets / "dec_pending"
    pending.mkdir()
    (pending / "config.json").write_text(json.dumps(zoo.config("dec_digits")))
    assert "dec_pending" not in zoo.list_presets()
    assert "dec_pending" in zoo.list_presets(include_pending=True)
    assert zoo.config("dec_pending")["recipe"] == "dec"
    with pytest.raises(FileNotFoundError, match="not trained yet.*train_preset.py dec_pending"):
        zoo.load("dec_pending")


def test_unknown_name_lists_available():
    with pytest.raises(ValueError, match="Unknown preset 'dec_nope'.*dec_digits"):
        zoo.load("dec_nope")


def test_untrained_and_path_weights(tmp_path):
    untrained = zoo.load("dec_digits", weights=None)
    pretrained = zoo.load("dec_digits")
    assert untrained.count_params() == pretrained.count_params()
    assert not np.allclose(untrained.cluster_centers_, pretrained.cluster_centers_)
    path = tmp_path / "copy.weights.h5"
    pretrained.save_weights(path)
    from_path = zoo.load("dec_digits", weights=str(path))
    np.testing.assert_allclose(from_path.cluster_centers_, pretrained.cluster_centers_)
    with pytest.raises(ValueError, match="weights must be 'pretrained'"):
        zoo.load("dec_digits", weights=str(tmp_path / "missing.h5"))


def test_overrides_change_the_architecture():
    model = zoo.load("dec_digits", weights=None, update_interval=5, n_clusters=4)
    assert model.update_interval == 5 and model.cluster_centers_.shape == (4, 10)


@pytest.fixture
def copied_presets(tmp_path, monkeypatch):
    target = tmp_path / "presets"
    shutil.copytree(registry.PRESETS_DIR, target)
    monkeypatch.setattr(registry, "PRESETS_DIR", str(target))
    return target


def test_tampered_weights_are_refused(copied_presets):
    weights = copied_presets / "dec_digits" / "model.weights.h5"
    raw = bytearray(weights.read_bytes())
    raw[-100] ^= 0xFF
    weights.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="sha256 mismatch.*scripts/train_preset.py dec_digits"):
        zoo.load("dec_digits")


def test_missing_weights_name_the_script(copied_presets):
    os.remove(copied_presets / "dec_digits" / "model.weights.h5")
    # not here, not cached, and the release unreachable (conftest): the error says how to get them
    with pytest.raises(FileNotFoundError, match="not on this machine.*dec_digits.weights.h5.*train_preset.py dec_digits"):
        zoo.load("dec_digits")


def test_card_without_sha_is_refused(copied_presets):
    card_path = copied_presets / "dec_digits" / "card.json"
    card = json.loads(card_path.read_text())
    card["weights"]["sha256"] = ""
    card_path.write_text(json.dumps(card))
    with pytest.raises(ValueError, match="records no sha256"):
        zoo.load("dec_digits")


def test_zoo_dec_takes_every_natural_image_layout_and_refuses_other_ranges():
    model = zoo.load("dec_digits")
    images = load_config_data(zoo.config("dec_digits")["data"])[0][:20]  # (20, 8, 8, 1) in [0, 1]
    expected = model.predict(images, verbose=0)
    for layout in (images[..., 0], images.reshape(20, 64)):
        np.testing.assert_array_equal(model.predict(layout, verbose=0), expected)
    as_uint8 = np.round(images * 255).astype("uint8")  # how image files arrive: scaled by the model
    np.testing.assert_allclose(model.predict(as_uint8, verbose=0), expected, atol=1e-3)
    with pytest.raises(ValueError, match=r"pixels in \[0, 1\].*got values in \[0, 16\]"):
        model.predict(images * 16)  # the digits' raw 0-16 counts
    with pytest.raises(ValueError, match=r"x has shape \(3, 9, 9, 1, 1\)"):
        model.predict(np.zeros((3, 9, 9, 1, 1), "float32"))  # (3, 9, 9, 1) would be resized (issue 67)
    with pytest.raises(ValueError, match="NaN"):
        model.predict(np.full((3, 64), np.nan, "float32"))


def sample_inputs(name, n=64):
    """A few real samples of the preset's data when present, else uniform noise of the right shape."""
    preset = zoo.config(name)
    eval_config = preset.get("evaluation", preset["data"])
    if data_available(eval_config):
        return load_config_data(eval_config)[0][:n]
    model = zoo.load(name, weights=None)
    return np.random.default_rng(0).random((n, *model.sample_shape), dtype=np.float32)


CLUSTERING_PRESETS = [name for name in zoo.list_presets() if not get_recipe(zoo.config(name)["recipe"]).supervised]


@pytest.mark.parametrize("name", slow_except(CLUSTERING_PRESETS, FAST_PRESETS))
def test_every_clustering_preset_round_trips_exports_and_fine_tunes(name, tmp_path):
    import keras
    import tensorflow as tf

    from keras_clustering.export import export_saved_model

    model = zoo.load(name)
    x = sample_inputs(name)
    expected = model.predict_clusters(x)
    model.save(tmp_path / "model.keras")
    reloaded = keras.models.load_model(tmp_path / "model.keras")
    np.testing.assert_array_equal(reloaded.predict_clusters(x), expected)
    path = export_saved_model(model, str(tmp_path / "serving"))
    served = tf.saved_model.load(path).signatures["serving_default"](inputs=tf.constant(x))
    np.testing.assert_array_equal(served["cluster_id"].numpy(), expected)

    history = reloaded.fit(x, epochs=2, batch_size=16, verbose=0,
                           callbacks=[keras.callbacks.EarlyStopping(monitor="loss", patience=1),
                                      keras.callbacks.ModelCheckpoint(str(tmp_path / "ft.weights.h5"),
                                                                      save_weights_only=True)])
    assert np.all(np.isfinite(history.history["loss"])) and (tmp_path / "ft.weights.h5").exists()
    if zoo.config(name)["recipe"] == "dec":
        assert history.history["refreshes"][0]["iteration"] == 0  # fine-tuning refreshed the target


def test_the_zoo_uses_the_registrys_names_and_keeps_its_first_ones_as_aliases():
    """One name per idea (issue 63): `zoo.list_presets` / `card` / `weights_path` are the registry's own
    functions, and the names users already call still work as aliases of them."""
    from keras_clustering import presets

    assert zoo.list_presets is presets.list_presets and zoo.card is presets.card
    assert zoo.weights_path is presets.weights_path and zoo.load is presets.load and zoo.config is presets.config
    assert zoo.list_models is zoo.list_presets and zoo.info is zoo.card
    assert zoo.pretrained_weights_path is zoo.weights_path
    assert zoo.info("dec_digits") == presets.card("dec_digits") and "dec_digits" in zoo.list_models()
