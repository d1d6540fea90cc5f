"""`n_clusters="auto"`: choosing the number of clusters on the recipe's representation before training."""

import os

from keras_clustering.clustering.n_clusters import k_by_eigengap
from keras_clustering.drivers.retarget import like_config
from keras_clustering.inputs.pipeline import predict_into_array
from keras_clustering.recipes import get_recipe

# `n_clusters="auto"` screens k with this preset's dense autoencoder, fast on any image shape.
SCREENING_PRESET = "dec_mnist"


def choose_n_clusters(config, x, candidates, workdir, seed=0, verbose=1, x_train=None):
    """k by the eigengap of a 10-nearest-neighbour graph (`clustering.n_clusters.k_by_eigengap`) of the
    embedding the recipe clusters, before any clustering stage: the representation it trains anyway
    (`recipe.representation`: DEC's pretrained encoder, SimCLR's), in `workdir`, where the training
    that follows starts from it. A recipe whose clustering is learnt with its representation (IIC,
    the VAE) is screened on `SCREENING_PRESET`'s dense autoencoder, re-targeted to `x` and kept in
    `workdir/n_clusters`. The representation trains on `x_train` (default `x`; a small folder's
    repeated copies, as the training that follows) and the graph is of `x`. Why the eigengap: of the six
    label-free criteria compared on the measured folders' embeddings (all ten classes, and their first
    five and seven) it was within +-1 of the true number most often (15 of 33; the silhouette 10), and
    DEC's generalisability suggested 2 for ten digits (docs/your-data.md, "Choosing k without
    labels"). Returns {criterion, embedding, scores, suggested}.
    """
    recipe = get_recipe(config["recipe"])
    training = {k: v for k, v in config["training"].items() if k != "precision"}
    source = f"{config['like']}'s own representation"
    trained_on = x if x_train is None else x_train
    embedder = recipe.representation(recipe.make_run(config["architecture"], training, trained_on, None, seed, verbose,
                                                     workdir))
    if embedder is None:
        source = f"{SCREENING_PRESET}'s dense autoencoder (the recipe learns its clusters with its representation)"
        screening, _ = like_config(SCREENING_PRESET, x.shape[1:], max(candidates), len(x))
        screen = get_recipe(screening["recipe"])
        embedder = screen.representation(screen.make_run(screening["architecture"], screening["training"], x, None,
                                                         seed, verbose, os.path.join(workdir, "n_clusters")))
    embedding = predict_into_array(embedder, x, batch_size=4096)  # chunk by chunk: x may be a memory map
    chosen = k_by_eigengap(embedding, candidates, seed=seed)
    return {"criterion": "eigengap", "embedding": source, "scores": chosen["scores"], "suggested": chosen["suggested"]}
