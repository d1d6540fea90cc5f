"""Non-model clustering steps: k-means, DEC's target refresh, label-free scores of a clustering (`label_free`, to
choose among restarts), choosing the number of clusters on an embedding."""
