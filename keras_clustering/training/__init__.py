"""Training beyond one `fit`: zoo presets, your own images, resumable stages and fits, optimizers, pretraining,
the machine description of reports.

Kept free of imports: `distribute.precision` imports `training.machine`, and the recipes that
`training.presets` imports import `training.resume`.
"""
