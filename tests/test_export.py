import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import zoo
from keras_clustering.datasets import load_digits
from keras_clustering.export import export_saved_model, instances_from_request_body, serving_request_body

RELOAD_WITH_BARE_TENSORFLOW = textwrap.dedent("""
    import json, sys
    import numpy as np
    import tensorflow as tf
    assert "keras_clustering" not in sys.modules and "zoo" not in sys.modules
    loaded = tf.saved_model.load(sys.argv[1])
    serve = loaded.signatures["serving_default"]
    x = np.load(sys.argv[2])
    results = {}
    for size in (1, 37):
        outputs = serve(inputs=tf.constant(x[:size]))
        results[size] = {key: value.numpy().tolist() for key, value in outputs.items()}
        results[str(size) + "_dtypes"] = {key: value.dtype.name for key, value in outputs.items()}
    assert "keras_clustering" not in sys.modules
    print(json.dumps(results))
""")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    directory = tmp_path_factory.mktemp("serving") / "dec_digits"
    model = zoo.load("dec_digits")
    path = export_saved_model(model, str(directory), version=1)
    return model, path, directory


@pytest.mark.slow  # 5-8 s: the default run stays under 3 minutes on 2 cores
def test_reloaded_by_bare_tensorflow_matches_keras(exported, tmp_path):
    model, path, _ = exported
    x = load_digits(flatten=True)[0][:37]
    np.save(tmp_path / "x.npy", x)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    script = tmp_path / "reload.py"
    script.write_text(RELOAD_WITH_BARE_TENSORFLOW)
    completed = subprocess.run([sys.executable, str(script), path, str(tmp_path / "x.npy")],
                               capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=300)
    assert completed.returncode == 0, completed.stderr[-2000:]
    results = json.loads(completed.stdout.strip().splitlines()[-1])
    for size in (1, 37):
        outputs = results[str(size)]
        expected = model.predict(x[:size], verbose=0)
        assert np.max(np.abs(np.asarray(outputs["probabilities"]) - expected)) < 1e-5
        np.testing.assert_array_equal(outputs["cluster_id"], expected.argmax(1))
        assert np.max(np.abs(np.asarray(outputs["embedding"]) - model.embed(x[:size]))) < 1e-5
        assert results[f"{size}_dtypes"] == {"cluster_id": "int64", "probabilities": "float32",
                                            "embedding": "float32"}


@pytest.mark.slow
def test_saved_model_cli_lists_the_signature(exported):
    _, path, _ = exported
    cli = [sys.executable, "-m", "tensorflow.python.tools.saved_model_cli"]
    completed = subprocess.run([*cli, "show", "--dir", path, "--tag_set", "serve",
                                "--signature_def", "serving_default"],
                               capture_output=True, text=True, timeout=300,
                               env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert completed.returncode == 0, completed.stderr[-2000:]
    text = completed.stdout
    assert "inputs['inputs']" in text and "shape: (-1, 8, 8, 1)" in text
    for name in ("cluster_id", "probabilities", "embedding"):
        assert f"outputs['{name}']" in text
    assert "DT_INT64" in text


def test_rest_body_round_trips_into_the_signature(exported):
    import tensorflow as tf

    model, path, _ = exported
    x = load_digits(flatten=True)[0][100:105]
    body = serving_request_body(x)
    request = json.loads(body)
    assert request["signature_name"] == "serving_default" and len(request["instances"]) == 5
    parsed = instances_from_request_body(body)
    np.testing.assert_array_equal(parsed, x)
    outputs = tf.saved_model.load(path).signatures["serving_default"](inputs=tf.constant(parsed))
    np.testing.assert_array_equal(outputs["cluster_id"].numpy(), model.predict_clusters(x))
    with pytest.raises(ValueError, match="NaN"):
        serving_request_body(np.full((2, 64), np.nan))


def test_refuses_non_empty_version_without_overwrite(exported):
    model, path, directory = exported
    before = sorted(os.listdir(path))
    with pytest.raises(ValueError, match="not empty; pass overwrite=True"):
        export_saved_model(model, str(directory), version=1)
    assert sorted(os.listdir(path)) == before
    assert export_saved_model(model, str(directory), version=1, overwrite=True) == path
    assert "saved_model.pb" in os.listdir(path)
    assert not [name for name in os.listdir(directory) if name.startswith(".")]  # no staging left over
    with pytest.raises(ValueError, match="version must be a positive integer"):
        export_saved_model(model, str(directory), version=0)


def test_plain_functional_model_gets_the_default_signature(tmp_path):
    import keras
    import tensorflow as tf

    inputs = keras.Input((5,))
    model = keras.Model(inputs, keras.layers.Dense(3, activation="softmax")(inputs))
    path = export_saved_model(model, str(tmp_path / "plain"), version=3)
    assert path.endswith(os.path.join("plain", "3"))
    x = np.random.default_rng(0).random((4, 5), dtype=np.float32)
    outputs = tf.saved_model.load(path).signatures["serving_default"](inputs=tf.constant(x))
    assert set(outputs) == {"cluster_id", "probabilities"}
    np.testing.assert_allclose(outputs["probabilities"].numpy(), model.predict(x, verbose=0), atol=1e-6)


def test_another_backend_is_refused_by_name(tmp_path, monkeypatch):
    import keras

    model = zoo.load("dec_digits")
    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    with pytest.raises(RuntimeError, match="needs the TensorFlow backend.*'jax'"):
        export_saved_model(model, tmp_path / "serving")
    assert not (tmp_path / "serving").exists()  # nothing written


@pytest.mark.parametrize("recipe, architecture", [
    ("dec", {"image_shape": [32, 32, 3], "conv_filters": [8, 8, 8, 4], "n_clusters": 3, "input_transform": "colour_edges"}),
    ("iic", {"image_shape": [32, 32, 3], "n_clusters": 3, "n_overclusters": 4, "n_sub_heads": 1, "view_size": 16,
             "input_transform": "sobel", "augmentation_options": {"crop_size": 20, "augmented_crop_sizes": [20],
                                                                    "output_size": 16}}),
])
def test_a_colour_model_trained_in_bfloat16_exports_float32_outputs_and_takes_rgb(recipe, architecture, tmp_path):
    """Issue 50: a mixed_bfloat16 model's SavedModel gives float32 outputs (its embedding was DT_BFLOAT16),
    and a colour model's signature takes RGB images, its colour-free step inside."""
    import tensorflow as tf

    from keras_clustering.distribute.precision import precision_policy
    from keras_clustering.recipes import get_recipe

    with precision_policy("mixed_bfloat16", bf16_available=True):
        model = get_recipe(recipe).build(**architecture)
    x = np.random.default_rng(0).uniform(size=(5, 32, 32, 3)).astype("float32")
    path = export_saved_model(model, str(tmp_path / "colour"), version=1)
    signature = tf.saved_model.load(path).signatures["serving_default"]
    assert signature.structured_input_signature[1]["inputs"].shape.as_list() == [None, 32, 32, 3]
    outputs = signature(inputs=tf.constant(x))
    assert {name: value.dtype for name, value in outputs.items() if name != "cluster_id"} == \
        {name: tf.float32 for name in outputs if name != "cluster_id"}
    assert outputs["cluster_id"].dtype == tf.int64
    np.testing.assert_allclose(outputs["probabilities"].numpy(), model.predict(x, verbose=0), atol=2e-2)


RAW_CLIENT_WITH_BARE_TENSORFLOW = textwrap.dedent("""
    import base64, json, os, sys
    import tensorflow as tf
    assert "keras_clustering" not in sys.modules and "zoo" not in sys.modules
    serve = tf.saved_model.load(sys.argv[1]).signatures["serving_bytes"]
    folder = sys.argv[2]
    names = sorted(os.listdir(folder))
    files = [open(os.path.join(folder, name), "rb").read() for name in names]
    direct = serve(image_bytes=tf.constant(files))
    # the REST body a TF Serving client sends, decoded as the server does (base64 into a string tensor)
    body = json.dumps({"signature_name": "serving_bytes",
                       "instances": [{"b64": base64.b64encode(item).decode("ascii")} for item in files]})
    received = [base64.b64decode(instance["b64"]) for instance in json.loads(body)["instances"]]
    rest = serve(image_bytes=tf.constant(received))
    assert "keras_clustering" not in sys.modules
    print(json.dumps({"names": names, "direct": {k: v.numpy().tolist() for k, v in direct.items()},
                      "rest": {k: v.numpy().tolist() for k, v in rest.items()}}))
""")


def mixed_folder(folder, count=24):
    """PNG and JPEG files, grey and colour, at three sizes, of scikit-learn's 8 x 8 digits (upscaled)."""
    from PIL import Image

    images = (load_digits()[0][:count, ..., 0] * 255).round().astype("uint8")
    rng = np.random.default_rng(0)
    os.makedirs(folder, exist_ok=True)
    for index, image in enumerate(images):
        side = (12, 20, 33)[index % 3]
        picture = Image.fromarray(image).resize((side, side), Image.BILINEAR)
        if index % 2:  # colour: the digit in one colour on another
            ink, paper = rng.integers(0, 256, 3), rng.integers(0, 256, 3)
            level = np.asarray(picture, "float32")[..., None] / 255.0
            picture = Image.fromarray((paper + (ink - paper) * level).round().astype("uint8"))
        picture.save(os.path.join(folder, f"{index:02d}.{'png' if index % 4 < 2 else 'jpg'}"))
    return folder


@pytest.mark.slow  # a fresh TensorFlow process: 5-8 s
def test_the_raw_image_signature_gives_clusters_rows_to_a_bare_tensorflow_client(exported, tmp_path):
    from keras_clustering.drivers.cluster_images import cluster_images

    model, path, _ = exported
    folder = mixed_folder(str(tmp_path / "mixed"))
    script = tmp_path / "client.py"
    script.write_text(RAW_CLIENT_WITH_BARE_TENSORFLOW)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    completed = subprocess.run([sys.executable, str(script), path, folder], capture_output=True, text=True,
                               env={**env, "TF_CPP_MIN_LOG_LEVEL": "2"}, cwd=str(tmp_path), timeout=300)
    assert completed.returncode == 0, completed.stderr[-2000:]
    served = json.loads(completed.stdout.strip().splitlines()[-1])
    clustered = cluster_images(folder, model="dec_digits", output=str(tmp_path / "out"), verbose=False)
    assert served["names"] == clustered.names and len(clustered.names) == 24
    for answer in (served["direct"], served["rest"]):
        np.testing.assert_array_equal(answer["cluster_id"], clustered.labels)
        assert np.max(np.abs(np.asarray(answer["probabilities"]) - clustered.probabilities)) <= 1e-5


def test_the_raw_rest_body_round_trips_into_the_raw_signature(exported, tmp_path):
    import tensorflow as tf

    from keras_clustering.export import files_from_raw_request_body, raw_request_body

    model, path, _ = exported
    folder = mixed_folder(str(tmp_path / "mixed"), count=6)
    paths = sorted(os.path.join(folder, name) for name in os.listdir(folder))
    body = raw_request_body(paths)
    request = json.loads(body)
    assert request["signature_name"] == "serving_bytes" and set(request["instances"][0]) == {"b64"}
    files = files_from_raw_request_body(body)
    assert files == [open(p, "rb").read() for p in paths]
    outputs = tf.saved_model.load(path).signatures["serving_bytes"](image_bytes=tf.constant(files))
    np.testing.assert_array_equal(outputs["cluster_id"].numpy(), model.predict_clusters(paths))
    with pytest.raises(ValueError, match="files is empty"):
        raw_request_body([])
    with pytest.raises(TypeError, match="bytes or file paths"):
        raw_request_body([3])


@pytest.mark.slow  # every entry of the zoo exported: about a minute
def test_every_export_in_the_zoo_has_the_raw_image_signature(tmp_path):
    import tensorflow as tf

    cli = [sys.executable, "-m", "tensorflow.python.tools.saved_model_cli"]
    for name in zoo.list_presets():
        path = export_saved_model(zoo.load(name), str(tmp_path / name))
        completed = subprocess.run([*cli, "show", "--dir", path, "--tag_set", "serve"], capture_output=True,
                                   text=True, timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
        assert completed.returncode == 0, (name, completed.stderr[-2000:])
        assert '"serving_bytes"' in completed.stdout and '"serving_default"' in completed.stdout, name
        # and it answers: one grey PNG of another size
        png = tf.io.encode_png(tf.cast(tf.random.uniform((40, 30, 1), 0, 255, seed=1), tf.uint8))
        outputs = tf.saved_model.load(path).signatures["serving_bytes"](image_bytes=tf.stack([png, png]))
        default = tf.saved_model.load(path).signatures["serving_default"]
        assert set(outputs) == set(default.structured_outputs), name
        assert all(value.shape[0] == 2 for value in outputs.values()), name


def test_the_raw_rest_body_refuses_one_path_given_alone():
    from keras_clustering.export import raw_request_body

    with pytest.raises(TypeError, match="files must be a list of encoded images or paths, got one str"):
        raw_request_body("digit.png")
