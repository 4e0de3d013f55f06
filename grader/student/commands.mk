# The student commands, included by the course's Makefile and by its student distribution's, which
# ships this file as it is. The including Makefile defines STAMP (its .venv, made on first use), PY
# (that .venv's Python), LESSON, NAME and SUBMISSIONS.

lab: $(STAMP)  ## open the lessons in JupyterLab (as root too)
	$(PY) -m grader lab

check: $(STAMP)  ## students: which exercises pass their visible tests (LESSON=id for one)
	$(PY) -m grader check $(LESSON)

submit: $(STAMP)  ## students: write the file to hand in, to submissions/ (LESSON=id NAME=your_name)
	$(PY) -m grader submit $(LESSON) --name "$(NAME)" --out "$(SUBMISSIONS)"
