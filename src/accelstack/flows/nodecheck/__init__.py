"""``accelstack node-check``: a node's host checks, run on the node itself."""
