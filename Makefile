# Attention from Scratch. `make lab` to learn, `make test` for the everyday checks; see README.md.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
LESSON ?=
NAME   ?=
SUBMISSIONS ?= submissions
SOURCE ?=
DIR    ?=
ROSTER ?=
REGRADE ?=
FORMAT ?=
REPLACE_EDITS ?=
STUDENT ?=
EXERCISE ?=
POINTS ?=
REASON ?=
FORCE  ?=
LESSONS ?=
REMOVE ?=
UPGRADE ?=
# Both cores: each test module, and each notebook's nbval cells, on one worker (loadscope), in the
# order tests/plugins/ordering.py gives them; the shared course and grading batch are built once for both, beside
# them (tests/integration/shared_batch.py).
PYTEST_PARALLEL ?= -n 2 --dist loadscope --no-loadscope-reorder
# pip-tools' pip-compile writes the locks: it resolves with pip itself, so it reads the same package
# indexes and configuration as the `pip install` that installs them. CUSTOM_COMPILE_COMMAND is the
# command each lock's header names.
LOCK := CUSTOM_COMPILE_COMMAND="make upgrade" $(VENV)/bin/pip-compile --quiet --strip-extras \
        --no-emit-index-url --no-emit-find-links --no-emit-trusted-host

# Kernels must draw figures inline: an exported MPLBACKEND=Agg makes plt.show() output nothing.
unexport MPLBACKEND
# The environment's scripts (jupyter, nbgrader, alembic) first, activated or not.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.DEFAULT_GOAL := help
.PHONY: help env lock upgrade torch browser scale hub hub-release hub-collect lab check submit test test-all test-fast lint release reference autograde override move-grading-data dist clean

help:  ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-11s %s\n", $$1, $$2}'

$(STAMP): requirements.txt Makefile
	$(PYTHON) -c 'import re, sys; need = tuple(map(int, re.search(r"requires-python = \">=(\d+)\.(\d+)", open("pyproject.toml").read()).groups())); sys.exit(sys.version_info[:2] < need and "Python %d.%d+ is needed (the locked numpy needs it), found %s" % (*need, sys.version.split()[0]))'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# The lock, exactly: every package at the version it names, nothing resolved anew. It leaves out
	# rfc3987-syntax, which jsonschema imports where installed, in every process that imports nbformat:
	# 2-3 s of building parsers for IRI formats no notebook schema uses (python-jsonschema/jsonschema#1428).
	$(PY) -m pip install --quiet --no-deps -r requirements.txt
	$(PY) -m pip check
	# The course's `grader` package, for plain `nbgrader` too: a path entry (compat mode), so that a
	# folder's own `grader` (a student distribution's) still comes first when run from there.
	$(PY) -m pip install --quiet --no-deps --config-settings editable_mode=compat -e .
	touch $(STAMP)

env: $(STAMP)  ## create .venv with the course's packages (done automatically by the other targets)

torch: $(STAMP)  ## install the optional PyTorch extra (Lesson 5) into .venv: a large download
	$(PY) -m pip install --quiet --no-deps -r requirements-torch.txt
	$(PY) -m pip check

browser: $(STAMP)  ## install the optional browser-test extra (Playwright; Chromium comes from apt)
	$(PY) -m pip install --quiet --no-deps -r requirements-browser.txt
	$(PY) -m pip check

scale: $(STAMP)  ## install the optional grading-at-scale extra (Dask, psycopg; the PostgreSQL server comes from apt)
	$(PY) -m pip install --quiet --no-deps -r requirements-scale.txt
	$(PY) -m pip check

# The hub extra (docs/jupyterhub.md): jupyterhub from its lock, and JupyterHub's proxy from npm, at the
# versions of grader/hub/proxy/package-lock.json, into .venv/hub (nothing installed globally).
hub: $(STAMP)  ## install the optional JupyterHub extra (jupyterhub; configurable-http-proxy from npm into .venv/hub)
	$(PY) -m pip install --quiet --no-deps -r requirements-hub.txt
	$(PY) -m pip check
	@command -v npm >/dev/null || { echo "make hub needs Node.js and npm (e.g. apt-get install nodejs npm)" >&2; exit 1; }
	mkdir -p $(VENV)/hub
	cp grader/hub/proxy/package.json grader/hub/proxy/package-lock.json $(VENV)/hub/
	npm ci --prefix $(VENV)/hub --no-audit --no-fund --loglevel=error

include grader/student/commands.mk

test: $(STAMP)  ## the everyday suite: lint, unit, every lesson and every grading stage once (about 4 min on 2 cores)
	$(PY) -m ruff check .
	$(PY) -m pytest $(PYTEST_PARALLEL) -m "not exhaustive"

test-all: $(STAMP)  ## everything: make test, plus every fixture, cheat and attack, other routes to a verdict, the browser
	$(PY) -m ruff check .
	$(PY) -m pytest $(PYTEST_PARALLEL)

test-fast: $(STAMP)  ## lint, the unit and the policy tests only (no kernel, no browser): the edit-run loop
	$(PY) -m ruff check .
	$(PY) -m pytest $(PYTEST_PARALLEL) tests/unit tests/policy

lock: $(STAMP)  ## after an edit of requirements*.in: re-resolve the locks, keeping every pin that still fits
	$(LOCK) $(UPGRADE) --unsafe-package rfc3987-syntax --output-file requirements.txt requirements.in
	for extra in torch browser scale; do $(LOCK) $(UPGRADE) --output-file requirements-$$extra.txt requirements-$$extra.in; done
	$(LOCK) $(UPGRADE) --unsafe-package rfc3987-syntax --output-file requirements-hub.txt requirements-hub.in

upgrade: $(STAMP)  ## re-resolve the locks from requirements*.in to the newest releases (before a term; then make test-all)
	$(MAKE) lock UPGRADE=--upgrade
	rm -rf $(VENV)
	$(MAKE) env

lint: $(STAMP)  ## ruff over the course's Python code
	$(PY) -m ruff check .

release: $(STAMP)  ## regenerate the student notebooks in lessons/ from solutions/ (LESSON=id for one; FORCE=1 replaces notebooks someone worked in, after a dated backup)
	$(PY) -m grader release $(LESSON) $(if $(FORCE),--force)

reference: $(STAMP)  ## re-execute the reference notebooks in solutions/ in place (LESSON=id for one)
	$(PY) -m grader reference $(LESSON)

autograde: $(STAMP)  ## instructors: grade a lesson and rebuild its grades (LESSON=id; SOURCE=LMS download; ROSTER=LMS roster export, remembered; REGRADE=1 re-runs every kernel)
	$(PY) -m grader autograde $(LESSON) $(if $(SOURCE),--source "$(SOURCE)") $(if $(ROSTER),--roster "$(ROSTER)") $(if $(REGRADE),--regrade) $(if $(FORMAT),--format "$(FORMAT)") $(if $(REPLACE_EDITS),--replace-edits)

override: $(STAMP)  ## instructors: set a student's points by hand (LESSON= STUDENT= EXERCISE=grade_id|total POINTS= REASON=; REMOVE=1 takes it back; no STUDENT lists them)
	$(PY) -m grader override $(LESSON) $(STUDENT) $(EXERCISE) $(POINTS) $(if $(REASON),--reason "$(REASON)") $(if $(REMOVE),--remove)

move-grading-data: $(STAMP)  ## instructors: move grading data from grader/state/, where earlier versions kept it, to the course's root
	$(PY) -m grader move-grading-data

hub-release: $(STAMP)  ## instructors on a hub: release lessons to nbgrader's exchange (LESSON=id; docs/jupyterhub.md)
	$(PY) -m grader hub-release $(LESSON)

hub-collect: $(STAMP)  ## instructors on a hub: collect a lesson's submissions from the exchange (LESSON=id), then make autograde
	$(PY) -m grader hub-collect $(LESSON)

dist: $(STAMP)  ## instructors: write the student distribution to DIR (outside the repository; LESSONS=01-03 for the lessons opened so far)
	$(if $(DIR),,$(error give the folder to write to, e.g. `make dist DIR=../attention-student`))
	$(PY) -m grader dist --out "$(DIR)" $(if $(LESSONS),--lessons "$(LESSONS)")

clean:  ## remove the environment, caches and grading data (never lessons/ or solutions/)
	rm -rf $(VENV) .pytest_cache .ruff_cache artifacts *.egg-info
	rm -rf gradebook.db gradebook.db-journal submitted autograded feedback grades grading-logs term
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
