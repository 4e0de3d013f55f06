"""Instructor tooling for Attention from Scratch: nbgrader configuration and helpers.

`grader/nbgrader_config.py` maps nbgrader onto the course layout; `python -m grader --help`
lists the commands the Makefile runs.
"""
