# nbgrader configuration of an instructor's server on the course's hub (grader/hub/jupyterhub_config.py):
# the course repository's own configuration (Formgrader and the terminal's `nbgrader` commands grade
# with the course's pipeline and sandbox), the course id and the exchange students submit to.
import os

c = get_config()  # noqa: F821
course = os.environ.get("ATTENTION_COURSE", "")
if course:
    load_subconfig(os.path.join(course, "nbgrader_config.py"))  # noqa: F821
c.CourseDirectory.course_id = os.environ.get("ATTENTION_COURSE_ID", "attention")
c.Exchange.root = os.environ.get("ATTENTION_EXCHANGE", "/srv/nbgrader/exchange")
