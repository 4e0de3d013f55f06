"""Confinement of submission kernels: bubblewrap namespaces, a read-only view of Python, and limits."""
