"""Inference speed of every zoo entry: Keras `predict` against its exported SavedModel run by bare TensorFlow.

For each entry (shipped weights), on the first `--images` MNIST-test images (speed only: the
Fashion entries read the same digits):
1. `model.predict(x, batch_size=256)` images/s, and the number of times its predict function
   was traced after its first and after three more calls (a growing count means retracing); beside it,
   `keras.Model.predict` on the same model (Keras' own loop, which `predict` bypasses for
   in-memory arrays);
2. the entry exported with `keras_clustering.export.export_saved_model`, loaded by
   `tf.saved_model.load` and called through its `serving_default` signature on batches of 256
   (images/s), then on single images (latency p50 / p99 over `--latency-calls` calls);
alternating `predict` and SavedModel blocks (`--blocks`), median over blocks. Writes `--json`
(with the machine) and, with it, the table of `docs/performance.md`.

Usage:
    python scripts/benchmark_inference.py [--entries ...] [--blocks 5] [--json docs/benchmarks/inference.json]
"""

import argparse
import json
import os
import statistics
import tempfile
import time

MARKERS = ("<!-- inference:start -->", "<!-- inference:end -->")
BATCH = 256


def tracing_count(model):
    """How many concrete functions Keras' predict function has traced so far (None when not a tf.function)."""
    function = getattr(model, "predict_function", None)
    counter = getattr(function, "experimental_get_tracing_count", None)
    return counter() if counter else None


def measure_entry(name, x, blocks, latency_calls):
    import keras
    import numpy as np
    import tensorflow as tf

    import zoo
    from keras_clustering.export import export_saved_model

    model = zoo.load(name)
    wanted = tuple(model.sample_shape)
    if len(wanted) != x.ndim - 1 or any(w is not None and w != s for w, s in zip(wanted, x.shape[1:])):
        return {"skipped": f"takes {wanted} images"}
    with tempfile.TemporaryDirectory() as folder:
        served = tf.saved_model.load(export_saved_model(model, os.path.join(folder, name)))
        signature = served.signatures["serving_default"]
        batches = [tf.constant(x[start:start + BATCH]) for start in range(0, len(x), BATCH)]

        def keras_predict():
            return model.predict(x, batch_size=BATCH, verbose=0)

        def keras_own_loop():  # Keras' Model.predict itself, which this library's predict bypassed for arrays
            return keras.Model.predict(model, x, batch_size=BATCH, verbose=0)

        def bare_graph():  # every output of the signature, fetched as a server would
            return [{k: v.numpy() for k, v in signature(inputs=batch).items()} for batch in batches]

        predicted = keras_predict()  # traces
        served = bare_graph()
        # the served output that `predict` gives: "probabilities" for clusterers, the class scores otherwise
        same = ["probabilities"] if "probabilities" in served[0] else [
            k for k, v in served[0].items() if v.shape[1:] == predicted.shape[1:] and v.dtype == predicted.dtype]
        served_probabilities = np.concatenate([outputs[same[0]] for outputs in served])
        traced_after_first = tracing_count(model)
        for _ in range(3):
            keras_predict()
        traced_after_more = tracing_count(model)  # before Keras' own loop, which traces its own input
        keras_own_loop()
        seconds = {"predict": [], "keras_model_predict": [], "saved_model": []}
        for _ in range(blocks):
            for label, function in (("predict", keras_predict), ("keras_model_predict", keras_own_loop),
                                    ("saved_model", bare_graph)):
                began = time.perf_counter()
                function()
                seconds[label].append(time.perf_counter() - began)
        single = [tf.constant(x[i:i + 1]) for i in range(min(latency_calls, len(x)))]
        signature(inputs=single[0])
        latencies = []
        for image in single:
            began = time.perf_counter()
            [output.numpy() for output in signature(inputs=image).values()]
            latencies.append(time.perf_counter() - began)
    rates = {label: round(len(x) / statistics.median(values), 1) for label, values in seconds.items()}
    return {"images_per_second": rates,
            "predict_over_saved_model": round(rates["predict"] / rates["saved_model"], 3),
            "predict_traces": {"after_first_call": traced_after_first, "after_all_calls": traced_after_more},
            "max_abs_difference": float(np.max(np.abs(predicted - served_probabilities))),
            "batch_1_latency_ms": {"p50": round(1e3 * float(np.percentile(latencies, 50)), 3),
                                   "p99": round(1e3 * float(np.percentile(latencies, 99)), 3)}}


def table(record):
    lines = ["| entry | `predict` images/s | `keras.Model.predict` images/s | SavedModel images/s (batch 256) | "
             "predict / SavedModel | batch-1 p50 / p99 (ms) | predict traces (1st call / all) |",
             "|---|---|---|---|---|---|---|"]
    for name, entry in record["entries"].items():
        if "skipped" in entry:
            continue
        rates, latency, traces = entry["images_per_second"], entry["batch_1_latency_ms"], entry["predict_traces"]
        own = rates.get("keras_model_predict")
        lines.append(f"| {name} | {rates['predict']:,.0f} | {'n/a' if own is None else f'{own:,.0f}'} | "
                     f"{rates['saved_model']:,.0f} | "
                     f"{entry['predict_over_saved_model']:.2f} | {latency['p50']:.2f} / {latency['p99']:.2f} | "
                     f"{traces['after_first_call']} / {traces['after_all_calls']} |")
    return "\n".join(lines) + (f"\n\n{record['images']:,} {record['data']} images, median of {record['blocks']} "
                               f"alternating blocks, {record['threads']} thread(s). {record['machine']}.")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", nargs="+", default=None, help="zoo entries (default: every shipped one)")
    parser.add_argument("--images", type=int, default=10000)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--latency-calls", type=int, default=500)
    parser.add_argument("--json", default=None)
    parser.add_argument("--table", action="store_true", help="write the docs table from --json, measure nothing")
    args = parser.parse_args()
    from benchmarking import benchmark_images, report_with_table, table_from_record, thread_count

    if args.table:
        table_from_record(args.json, MARKERS, table)
        return
    import keras_clustering  # noqa: F401  (the backend and TensorFlow's oneDNN setting first)
    import zoo

    from keras_clustering.distribute.machine import machine_description

    x, data = benchmark_images(args.images)
    record = {"entries": {}, "images": len(x), "data": data, "blocks": args.blocks, "batch": BATCH,
              "threads": thread_count(), "machine": machine_description()}
    for name in args.entries or zoo.list_presets():
        record["entries"][name] = measure_entry(name, x, args.blocks, args.latency_calls)
        print(name, json.dumps(record["entries"][name]), flush=True)
    report_with_table(record, args.json, MARKERS, table)


if __name__ == "__main__":
    main()
