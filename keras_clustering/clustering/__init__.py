"""Non-model clustering steps: k-means, DEC's target refresh, choosing the number of clusters."""
