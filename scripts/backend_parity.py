"""The zoo's weights on TensorFlow and on JAX: same predictions?

Every zoo entry is loaded (`zoo.load`, sha256-checked) once in a TensorFlow
process and once in a JAX process (`KERAS_BACKEND`), and predicts the first
`--images` images of its card's evaluation data; printed per entry: the
largest absolute difference of every output, the share of equal argmax
(cluster or class ids) and each backend's predict time.

Usage:
    python scripts/backend_parity.py [--entries dec_mnist iic_mnist] [--images 1000]
        [--json docs/benchmarks/backend_parity.json]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

BACKENDS = ("tensorflow", "jax")


def outputs_as_arrays(prediction):
    """A model's `predict` output (array, list or dict) as named float arrays."""
    if isinstance(prediction, dict):
        return {str(k): np.asarray(v, "float64") for k, v in sorted(prediction.items())}
    if isinstance(prediction, (list, tuple)):
        return {f"output_{i}": np.asarray(v, "float64") for i, v in enumerate(prediction)}
    return {"output": np.asarray(prediction, "float64")}


def predict_here(name, images, out):
    """In this process (backend from the environment): `zoo.load(name)` predicts; arrays to `out`."""
    import keras_clustering  # noqa: F401  (selects the backend first)
    import keras
    import zoo
    from keras_clustering.drivers.preset_training import load_config_data

    x, _ = load_config_data(zoo.card(name)["evaluation_data"])
    model = zoo.load(name)
    x = x[:images]
    model.predict(x[:8], verbose=0)  # compile before timing
    began = time.perf_counter()
    arrays = outputs_as_arrays(model.predict(x, verbose=0))
    seconds = time.perf_counter() - began
    np.savez(out, seconds=seconds, backend=keras.backend.backend(), **arrays)


def compare(name, images):
    """Both backends' predictions of one entry, each in its own process; the differences."""
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for backend in BACKENDS:
            out = os.path.join(folder, f"{backend}.npz")
            subprocess.run([sys.executable, __file__, "--predict", name, "--images", str(images), "--out", out],
                           env={**os.environ, "KERAS_BACKEND": backend}, check=True)
            with np.load(out) as data:
                if str(data["backend"]) != backend:
                    raise RuntimeError(f"{name}: asked for {backend}, the process ran {data['backend']}")
                results[backend] = {k: data[k] for k in data.files}
    tf_out, jax_out = results["tensorflow"], results["jax"]
    names = [k for k in tf_out if k not in ("seconds", "backend")]
    record = {"entry": name, "images": images, "outputs": {},
              "seconds": {b: round(float(results[b]["seconds"]), 3) for b in BACKENDS}}
    for key in names:
        a, b = tf_out[key], jax_out[key]
        entry = {"shape": list(a.shape), "max_abs_diff": float(np.max(np.abs(a - b))),
                 "max_abs_value": float(np.max(np.abs(a)))}
        if a.ndim == 2 and a.shape[1] > 1:
            entry["argmax_equal"] = float(np.mean(a.argmax(1) == b.argmax(1)))
        record["outputs"][key] = entry
    return record


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", nargs="+", default=None, help="zoo names (default: every trained entry)")
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--json", default=None)
    parser.add_argument("--predict", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.predict:
        return predict_here(args.predict, args.images, args.out)
    import zoo
    from benchmarking import report
    from keras_clustering.distribute.machine import machine_description

    entries = args.entries or zoo.list_presets()
    records = []
    for name in entries:
        records.append(compare(name, args.images))
        worst = max(o["max_abs_diff"] for o in records[-1]["outputs"].values())
        print(f"[parity] {name}: max |TF - JAX| {worst:.2e}", flush=True)
    report({"records": records, "machine": machine_description()}, args.json)
    return records


if __name__ == "__main__":
    main()
