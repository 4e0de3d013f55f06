"""One module per LMS, each holding all the grader knows of that LMS: its download's names, its roster
exports, its ids and its grade import file (canvas, moodle, blackboard, and make_submit for the course's own
`make submit` names), behind the interface of base.py; registry.py lists them and decides a download's format.

The package sits in intake, the first stage that needs it; its import writers take plain GradeLines, so
it needs nothing of a later stage.
"""
