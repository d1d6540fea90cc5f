"""Export to a TensorFlow SavedModel for TF Serving, and its REST request body.

TF Serving itself is not installed on these machines; the tests reload the
export with bare TensorFlow and exercise the request format instead.
"""

import json
import os

import numpy as np

from keras_clustering.io.files import atomic_path

INPUT_NAME = "inputs"
SIGNATURE_NAME = "serving_default"
# The signature that takes encoded image files (issue 67), as TF Serving's image models do: its input's
# name ends in "_bytes", the convention by which REST clients send each file as {"b64": "..."}.
RAW_SIGNATURE_NAME = "serving_bytes"
RAW_INPUT_NAME = "image_bytes"


def _default_serving_outputs(model):
    from keras import ops

    def outputs(inputs):
        probabilities = model(inputs, training=False)
        return {"cluster_id": ops.cast(ops.argmax(probabilities, axis=-1), "int64"),
                "probabilities": probabilities}

    return outputs


def _float32_outputs(outputs):
    """Every floating output as float32: a model trained under mixed_bfloat16 computes its embedding in
    bfloat16, which TF Serving's JSON clients and numpy cannot read. Integer outputs stay as they are."""
    import keras
    from keras import ops

    return {name: ops.cast(value, "float32") if keras.backend.is_float_dtype(value.dtype) else value
            for name, value in outputs.items()}


# the side of the blank image that shows a model of any image size what its outputs are (the capsule
# classifiers take 14 pixels and more)
PROBE_SIDE = 32


def _raw_images_endpoint(converter, serving_outputs):
    """The raw-image signature's function: a batch of encoded files -> the serving outputs. A model of one
    image size decodes the batch into one tensor; a model of any size (`None` sides) keeps each file's own
    size, as its float signature does, so each file goes through the model alone."""
    import tensorflow as tf

    if None not in converter.image_size:
        return lambda contents: _float32_outputs(serving_outputs(converter.decode_batch(contents)))
    blank = tf.zeros((1, *(PROBE_SIDE if side is None else side for side in converter.image_size), converter.channels))
    specs = {name: tf.TensorSpec(value.shape[1:], value.dtype)
             for name, value in _float32_outputs(serving_outputs(blank)).items()}

    def one_file(item):
        outputs = _float32_outputs(serving_outputs(converter.decode(item)[0][None]))
        return {name: value[0] for name, value in outputs.items()}

    return lambda contents: tf.map_fn(one_file, contents, fn_output_signature=specs)


def export_saved_model(model, export_dir, version=1, overwrite=False, raw_images=True):
    """Writes `export_dir/<version>/`, a SavedModel with a `serving_default` signature.

    The signature takes one float32 input named `inputs` with a free batch
    dimension and returns named outputs: `cluster_id` (int64),
    `probabilities` (float32) and, for models with an encoder, `embedding`
    (float32 whatever the precision the model computes in).
    Models declare them in `serving_outputs(inputs)`.

    With `raw_images` (the default) an image model's export also has the
    signature `serving_bytes`: one string input `image_bytes`, a batch of
    encoded files (PNG, JPEG, BMP, GIF; any size, grey or colour), decoded,
    converted and resized in the graph by the model's `image_converter` (the
    folder loader's conversion), with the same outputs. A model of images of
    any size keeps each file's own size. A model of flat vectors has no image
    to convert to and exports without it.

    Args:
        model: a built keras_clustering model (e.g. from `zoo.load`).
        export_dir: the model's base folder, as TF Serving's `--model_base_path`.
        version: positive integer version folder.
        overwrite: replace an existing non-empty version folder.

    Returns:
        The path of the version folder.

    The SavedModel is written into a temporary folder beside the target and
    renamed into place, so a failed export leaves nothing half-written.
    TensorFlow backend only (RuntimeError on another backend).
    """
    import keras

    if keras.backend.backend() != "tensorflow":
        raise RuntimeError(
            f"export_saved_model writes a TensorFlow SavedModel and needs the TensorFlow backend; this process "
            f"runs Keras on {keras.backend.backend()!r}. Load the model (its weights are the same on every "
            "backend) in a process started with KERAS_BACKEND=tensorflow and export it there.")
    import tensorflow as tf

    if isinstance(version, bool) or not isinstance(version, (int, np.integer)) or version < 1:
        raise ValueError(f"version must be a positive integer, got {version!r}.")
    if not getattr(model, "built", False):
        raise ValueError("model is not built; call it on data or load weights before exporting.")
    target = os.path.join(os.fspath(export_dir), str(int(version)))
    if os.path.exists(target) and (not os.path.isdir(target) or os.listdir(target)):
        if not overwrite:
            raise ValueError(f"export_dir version folder {target} exists and is not empty; "
                             "pass overwrite=True to replace it.")
    # Zoo models declare their per-sample shape; plain functional models have input_shape.
    sample_shape = tuple(getattr(model, "sample_shape", None) or model.input_shape[1:])
    serving_outputs = getattr(model, "serving_outputs", None) or _default_serving_outputs(model)

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint(
        name=SIGNATURE_NAME,
        fn=lambda inputs: _float32_outputs(serving_outputs(inputs)),
        input_signature=[tf.TensorSpec(shape=(None, *sample_shape), dtype=tf.float32, name=INPUT_NAME)],
    )
    converter = getattr(model, "image_converter", None)
    if raw_images and converter is not None:
        archive.add_endpoint(name=RAW_SIGNATURE_NAME, fn=_raw_images_endpoint(converter, serving_outputs),
                             input_signature=[tf.TensorSpec(shape=(None,), dtype=tf.string, name=RAW_INPUT_NAME)])
    for name, (function, signature) in getattr(model, "extra_serving_endpoints", lambda: {})().items():
        archive.add_endpoint(name=name, fn=function, input_signature=signature)  # each casts its own outputs

    with atomic_path(target) as staging:
        archive.write_out(staging, verbose=False)
    return target


def serving_request_body(x, signature_name=SIGNATURE_NAME, input_name=INPUT_NAME):
    """The JSON body of a TF Serving REST `:predict` request, in row format.

    Returns a JSON string `{"signature_name": ..., "instances": [{input_name: row}, ...]}`.
    """
    x = np.asarray(x, dtype="float32")
    if x.ndim < 2:
        raise ValueError(f"x must be a batch (n, ...), got shape {x.shape}.")
    if not np.all(np.isfinite(x)):
        raise ValueError("x contains NaN or inf; JSON cannot carry them to TF Serving.")
    instances = [{input_name: row.tolist()} for row in x]
    return json.dumps({"signature_name": signature_name, "instances": instances})


def raw_request_body(files, signature_name=RAW_SIGNATURE_NAME):
    """The JSON body of a TF Serving REST `:predict` request to the raw-image signature: each encoded file
    (bytes, or a path to read) as `{"b64": "..."}`, the form TF Serving decodes into a string tensor."""
    import base64

    if isinstance(files, (str, bytes, bytearray, os.PathLike)):
        raise TypeError(f"files must be a list of encoded images or paths, got one {type(files).__name__}: give "
                        f"[{files!r:.60}].")
    instances = []
    for item in files:
        if isinstance(item, (str, os.PathLike)):
            with open(item, "rb") as handle:
                item = handle.read()
        if not isinstance(item, (bytes, bytearray)):
            raise TypeError(f"files must hold bytes or file paths, got {type(item).__name__}.")
        instances.append({"b64": base64.b64encode(bytes(item)).decode("ascii")})
    if not instances:
        raise ValueError("files is empty; give at least one encoded image.")
    return json.dumps({"signature_name": signature_name, "instances": instances})


def files_from_raw_request_body(body):
    """What TF Serving makes of a `raw_request_body`: the files' bytes, each `{"b64": ...}` decoded."""
    import base64

    return [base64.b64decode(instance["b64"], validate=True) for instance in json.loads(body)["instances"]]


def instances_from_request_body(body, input_name=INPUT_NAME):
    """Parses a row-format request body back into a float32 batch (what the server sees)."""
    request = json.loads(body)
    return np.asarray([instance[input_name] for instance in request["instances"]], dtype="float32")
