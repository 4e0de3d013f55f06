# Plain `nbgrader ...` commands run from the repository root read this file; the course's
# nbgrader configuration lives in grader/nbgrader_config.py (`make env` installs the `grader`
# package into .venv, so it imports from anywhere).
import os

c = get_config()  # noqa: F821
load_subconfig(os.path.join(os.path.dirname(os.path.abspath(__file__)), "grader", "nbgrader_config.py"))  # noqa: F821
