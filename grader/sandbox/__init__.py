"""Confinement of submission kernels: bubblewrap namespaces, a host uid and a cgroup of their own, and limits."""
