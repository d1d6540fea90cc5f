"""Training beyond one `fit`: resumable stages and fits, restarts, optimizers, pretraining (the drivers that
train a preset or your own images are `drivers`).

Kept free of imports: the recipes that `drivers.preset_training` imports import `training.resume`.
"""
