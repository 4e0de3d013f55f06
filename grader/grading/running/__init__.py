"""Running: checks before a batch, the jobs, the grading processes, and grading one submission."""
