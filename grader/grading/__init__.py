"""Grading a lesson, stage by stage; `autograde` (the `make autograde` command) runs them in order.

- intake: what comes in (the LMS's download and its file names, the ids and times they carry, the
  roster, the people registry of the term, and the students put into the gradebook);
- running: grading each submission (checks before the batch, the jobs, the grading processes, one
  submission's autograde and feedback, what went wrong with it);
- policy: what the facts are worth (the late policy, the instructor's overrides, one row of grades
  per student);
- outputs: what a run writes (the grades CSV and plot, the LMS import files, the overview and
  similarity pages, the feedback bundle, the grading log).
"""
