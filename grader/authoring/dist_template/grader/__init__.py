"""The student commands of Attention from Scratch: `make lab`, `make check`, `make submit`.

A copy of the course's own student code, written by its `make dist`; `python -m grader --help`
lists the commands.
"""
