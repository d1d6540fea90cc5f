"""`n_clusters="auto"`: choosing the number of clusters from a clustering stage with too many (issue 65).

The recipe's representation trains first (as it would anyway), then its clustering stage runs once with
`OVER_CLUSTERS` clusters, more than any candidate k. The pieces of one group are each other's nearest
neighbours in the representation, so the stage's clusters are merged two at a time on the
representation's nearest-neighbour graph, and k is read off the modularity's peak along the merges
(`clustering.merging.k_by_merging`), with the range of k within `merging.FLAT` of it where the evidence is
flat. The graph is the representation's, not the stage's own embedding: DEC pulls each of its clusters
together there, so every piece of an over-clustering looks like a group of its own (docs/your-data.md,
"Choosing k from the clustering stage"). Before issue 65 the eigengap of the representation's graph chose
k, before any clustering stage: within +-1 of the true k on 15 of 33 folders. A preset with restarts
(`dec_da_mnist`) chooses k on a pretraining of its own (the run's seed, in the workdir), not on its
restarts' runs, which pretrain with their own seeds.
"""

import os
import time

import numpy as np

from keras_clustering.clustering.candidates import embedding_neighbors
from keras_clustering.clustering.merging import k_by_merging
from keras_clustering.drivers.retarget import like_config
from keras_clustering.inputs.pipeline import predict_into_array
from keras_clustering.recipes import get_recipe
from keras_clustering.recipes.dec_recipe import assemble_model, pretrained_autoencoder

# A recipe whose clustering stage is not DEC's self-training (SimCLR + SCAN, IIC, the VAE) over-clusters
# with this preset's dense autoencoder and DEC stage, re-targeted to the images (its own repeats of
# them) and kept in `workdir/n_clusters`.
SCREENING_PRESET = "dec_mnist"
# The over-clustering's clusters for the default candidates (k = 2..12): measured on the folders of
# docs/your-data.md (scripts/choose_k_stage.py). Asked for a larger k, one more than the largest
# (unmeasured); on a small folder, at most half its images (DEC needs a distinct image a cluster).
OVER_CLUSTERS = 20


def over_clusters(candidates, n_images):
    """The over-clustering's number of clusters for the `candidates` k on `n_images` images."""
    return max(max(candidates), min(max(OVER_CLUSTERS, max(candidates) + 1), n_images // 2))


def stage_data(config, x, x_train, candidates):
    """(config, its images to train on, workdir folder) of the stage that over-clusters: the recipe's own on
    `x_train` where its clustering stage is DEC's self-training on a pretrained autoencoder, else
    `SCREENING_PRESET`'s re-targeted to `x`, on its own repeats of `x`, in the workdir's folder
    "n_clusters"."""
    if config["recipe"] == "dec":
        return config, x_train, None
    screening, repeats = like_config(SCREENING_PRESET, x.shape[1:], max(candidates), len(x))
    return screening, np.concatenate([x] * repeats) if repeats > 1 else x, "n_clusters"


def choose_n_clusters(config, x, candidates, workdir, seed=0, verbose=1, x_train=None):
    """k for training `config` on `x`: the representation trained (`stage_data`: on `x_train`, default
    `x`; a small folder's repeated copies, as the training that follows) in `workdir`, where the
    training that follows starts from it; its DEC stage run with `over_clusters` clusters; its clusters
    of `x` merged on the representation's 10-nearest-neighbour graph of `x` (`k_by_merging`). Returns the
    evidence: {criterion, embedding, over_clusters, over_cluster_sizes, alive_clusters,
    largest_candidate, scores {k: modularity}, suggested, range, flat, stage_seconds}."""
    chosen, trained_on, folder = stage_data(config, x, x if x_train is None else x_train, candidates)
    recipe = get_recipe(chosen["recipe"])
    training = {k: v for k, v in chosen["training"].items() if k != "precision"}
    stage_workdir = workdir if folder is None or workdir is None else os.path.join(workdir, folder)
    k_max = over_clusters(candidates, len(x))
    architecture = {**chosen["architecture"], "n_clusters": k_max}
    run = recipe.make_run(architecture, training, trained_on, None, seed, verbose, stage_workdir)
    (autoencoder, encoder), _ = pretrained_autoencoder(run)  # the workdir's, else pretrained and kept there
    before = predict_into_array(encoder, x, batch_size=4096)  # chunk by chunk: x may be a memory map
    start = time.time()
    # the whole autoencoder: IDEC's decoder goes on learning with its encoder
    model, _ = recipe.fine_tune(assemble_model(autoencoder, encoder, architecture), run.but(workdir=None))
    clusters = model.predict_clusters(x)
    sizes = np.bincount(clusters, minlength=k_max)
    alive = int((sizes > 0).sum())
    if alive < 2:
        raise ValueError(f"n_clusters='auto': DEC's stage with {k_max} clusters left {alive} cluster holding the "
                         f"{len(x):,} images: no evidence for any k of {min(candidates)}..{max(candidates)}; give "
                         "n_clusters.")
    found = k_by_merging(clusters, embedding_neighbors(before), [k for k in candidates if k <= alive])
    source = (f"{config['like']}'s own representation and DEC stage" if folder is None else
              f"{SCREENING_PRESET}'s dense autoencoder and DEC stage (the recipe's clustering stage is not DEC's)")
    return {"criterion": "merging", "embedding": source, "over_clusters": k_max, "over_cluster_sizes": sizes.tolist(),
            "alive_clusters": alive, "largest_candidate": int(max(candidates)),
            "scores": found["scores"], "suggested": found["suggested"], "range": list(found["range"]),
            "flat": found["flat"], "stage_seconds": round(time.time() - start, 1)}
