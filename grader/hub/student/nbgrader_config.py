# nbgrader configuration of a student's server on the course's hub (grader/hub/jupyterhub_config.py):
# the course and the exchange its Assignments panel fetches from and submits to. `python -m grader
# hub-release` copies this folder to the shared folder students read ($ATTENTION_SHARED/jupyter/).
import os

c = get_config()  # noqa: F821
c.CourseDirectory.course_id = os.environ.get("ATTENTION_COURSE_ID", "attention")
c.Exchange.root = os.environ.get("ATTENTION_EXCHANGE", "/srv/nbgrader/exchange")
