"""Intake: the LMS download and its names, ids and times, the roster, the people of the term, enrolment."""
