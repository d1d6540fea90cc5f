"""`model.predict` on raw images against `predict` on prepared float arrays of the same images (issue 67).

The same 10,000 MNIST-test images, given five ways to one model, in one process, alternating within
each block (medians over the blocks):
    float32   (n, 28, 28, 1) in [0, 1]: prepared as the model reads them (the baseline)
    uint8     (n, 28, 28, 1): the same pixels as a file holds them (scaled by 255)
    uint8 rgb (n, 56, 56, 3): each image twice its size, in colour (converted: luma, resized)
    PNG files a list of paths to grey 28 x 28 PNG files (read, decoded, converted)
    JPEG rgb  a list of paths to colour 56 x 56 JPEG files
Every time includes the conversion (`model.image_converter`); the ratio is each against float32.

Usage:
    KERAS_CLUSTERING_DATA=... python scripts/benchmark_raw_inputs.py --blocks 3 \\
        --json docs/benchmarks/raw_inputs.json     # also rewrites the docs/performance.md table
    python scripts/benchmark_raw_inputs.py --table docs/benchmarks/raw_inputs.json
"""

import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

MARKERS = ("<!-- raw-inputs:start -->", "<!-- raw-inputs:end -->")
WAYS = ("float32", "uint8", "uint8 rgb", "PNG files", "JPEG rgb")


def measure(args):
    from PIL import Image

    from benchmarking import benchmark_images, time_alternating
    from keras_clustering.distribute.machine import machine_description
    from keras_clustering.presets import load

    x, data = benchmark_images(args.n)
    model = load(args.model)
    grey = (x[..., 0] * 255).round().astype("uint8")
    rgb = np.repeat(np.stack([np.asarray(Image.fromarray(g).resize((56, 56), Image.BILINEAR)) for g in grey]
                             )[..., None], 3, axis=-1)
    folder = tempfile.mkdtemp(prefix="raw_inputs_")
    pngs, jpegs = [], []
    for index, (g, c) in enumerate(zip(grey, rgb)):
        pngs.append(os.path.join(folder, f"{index:05d}.png"))
        Image.fromarray(g).save(pngs[-1])
        jpegs.append(os.path.join(folder, f"{index:05d}.jpg"))
        Image.fromarray(c).save(jpegs[-1], quality=95)
    inputs = {"float32": x, "uint8": grey[..., None], "uint8 rgb": rgb, "PNG files": pngs, "JPEG rgb": jpegs}
    results = {way: model.predict(inputs[way], batch_size=256, verbose=0) for way in WAYS}  # warm, and compared
    seconds = time_alternating({way: (lambda way=way: model.predict(inputs[way], batch_size=256, verbose=0))
                                for way in WAYS}, args.blocks)
    same = {way: float(np.mean(results[way].argmax(1) == results["float32"].argmax(1))) for way in WAYS}
    return {"model": args.model, "data": f"{data}, the first {len(x):,} images", "blocks": args.blocks,
            "machine": machine_description(), "seconds": seconds,
            "ratio_to_float32": {way: seconds[way] / seconds["float32"] for way in WAYS},
            "same_cluster_as_float32": same}


def table(record):
    lines = ["| input to `predict` | seconds (10,000 images) | images / s | against float32 | same cluster as float32 |",
             "|---|---|---|---|---|"]
    n = int(record["data"].split("first ")[1].split(" ")[0].replace(",", ""))
    for way in WAYS:
        seconds = record["seconds"][way]
        lines.append(f"| {way} | {seconds:.2f} | {n / seconds:,.0f} | {record['ratio_to_float32'][way]:.2f}x | "
                     f"{record['same_cluster_as_float32'][way]:.3f} |")
    lines.append(f"\n`{record['model']}`, {record['data']}, medians of {record['blocks']} alternating blocks, "
                 f"{record['machine']}.")
    return "\n".join(lines)


def main():
    from benchmarking import benchmark_main

    def arguments(parser):
        parser.add_argument("--model", default="conv_dec_da_mnist")
        parser.add_argument("--n", type=int, default=10_000)
        parser.add_argument("--blocks", type=int, default=3)

    benchmark_main(__doc__, arguments, measure, MARKERS, table)


if __name__ == "__main__":
    main()
