"""Grading a class: collect the submissions, triage them, grade each in a worker, report the batch."""
