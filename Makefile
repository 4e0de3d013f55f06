# Attention from Scratch. `make lab` to learn, `make test` to check everything; see README.md.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
LESSON ?=
NAME   ?=
SUBMISSIONS ?= submissions
SOURCE ?=

# Kernels must draw figures inline: an exported MPLBACKEND=Agg makes plt.show() output nothing.
unexport MPLBACKEND
# The environment's scripts (jupyter, nbgrader, alembic) first, activated or not.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.DEFAULT_GOAL := help
.PHONY: help env torch lab check submit test lint release reference autograde clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-11s %s\n", $$1, $$2}'

$(STAMP): requirements.txt
	$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] < (3, 10) and "Python 3.10+ is needed, found " + sys.version.split()[0])'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $(STAMP)

env: $(STAMP)  ## create .venv with the course's packages (done automatically by the other targets)

torch: $(STAMP)  ## install the optional PyTorch extra (Lesson 5) into .venv: a large download
	$(PY) -m pip install --quiet -r requirements-torch.txt

lab: $(STAMP)  ## open the lessons in JupyterLab
	$(PY) -m grader lab

check: $(STAMP)  ## students: which exercises pass their visible tests (LESSON=id for one)
	$(PY) -m grader check $(LESSON)

submit: $(STAMP)  ## students: write the file to hand in, to submissions/ (LESSON=id NAME=your_name)
	$(PY) -m grader submit $(LESSON) --name "$(NAME)" --out "$(SUBMISSIONS)"

test: $(STAMP)  ## run every check: lint, notebook re-execution (nbval), release and grading tests
	$(PY) -m ruff check .
	$(PY) -m pytest

lint: $(STAMP)  ## ruff over the course's Python code
	$(PY) -m ruff check .

release: $(STAMP)  ## regenerate the student notebooks in lessons/ from solutions/ (LESSON=id for one)
	$(PY) -m grader release $(LESSON)

reference: $(STAMP)  ## re-execute the reference notebooks in solutions/ in place (LESSON=id for one)
	$(PY) -m grader reference $(LESSON)

autograde: $(STAMP)  ## instructors: grade a lesson's submissions (LESSON=id; SOURCE=LMS download folder or .zip)
	$(PY) -m grader autograde $(LESSON) $(if $(SOURCE),--source "$(SOURCE)")

clean:  ## remove the environment, caches and grading state (never lessons/ or solutions/)
	rm -rf $(VENV) grader/state .pytest_cache .ruff_cache artifacts
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
