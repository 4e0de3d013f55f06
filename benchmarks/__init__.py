"""Performance measurements of the course tooling, run by hand (see docs/benchmarks.md)."""
