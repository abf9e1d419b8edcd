"""Flows: the multi-step runs the tasks call (the nightly fleet check, node-check, support bundles), each in a
folder of its own, above every layer they use."""
