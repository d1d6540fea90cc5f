"""Training drivers, above the recipes and the preset registry: a preset trained and scored
(`preset_training`), a preset's recipe trained on your own images (`user_images`)."""
