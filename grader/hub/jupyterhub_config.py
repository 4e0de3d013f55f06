"""JupyterHub configuration of the course: one hub, one course, one instructor's server that grades.

Run as root, from the environment that has the course's packages and the hub extra (`make hub`):

    ATTENTION_INSTRUCTORS=hopper ATTENTION_STUDENTS=ada,grace \
    ATTENTION_COURSE=/home/hopper/attention \
    .venv/bin/jupyterhub -f grader/hub/jupyterhub_config.py

Every setting a deployment changes is an environment variable read below (docs/jupyterhub.md):

- ATTENTION_INSTRUCTORS, ATTENTION_STUDENTS: hub (= system) user names, comma-separated;
- ATTENTION_COURSE: the instructor's course repository, private to the instructor;
- ATTENTION_COURSE_ID: nbgrader's course id, the exchange's folder (default `attention`);
- ATTENTION_EXCHANGE: nbgrader's exchange root, a folder every user can write to (mode 1777;
  default /srv/nbgrader/exchange);
- ATTENTION_SHARED: a folder every user can read, with lesson_helpers.py and the students' Jupyter
  configuration, written by `python -m grader hub-release` (default /srv/attention/shared);
- ATTENTION_HUB_STATE: the hub's own database and cookie secret, root's only (default /srv/jupyterhub);
- ATTENTION_HUB_URL: where the hub listens (default http://127.0.0.1:8000);
- ATTENTION_PROXY: the configurable-http-proxy program (default: the one `make hub` installs into .venv/hub);
- ATTENTION_AUTHENTICATOR: JupyterHub's authenticator (default `pam`: the users' system passwords).

The single-user servers run in the environment the hub runs in; students must be able to read it
(not the instructor's private repository's .venv: see docs/jupyterhub.md).

Who may log in is the two lists; each user is a real system account (LocalProcessSpawner starts
the server as that user, in their home folder), and the hub's name is nbgrader's student id, so it
must be a valid course student id: lowercase ASCII letters, digits and underscores.

Roles, as nbgrader 0.9's "one class, one grader" setup: each group gets its own Jupyter
configuration folder on JUPYTER_CONFIG_PATH. Students (group `students`): the Assignments panel
(fetch, submit, fetch feedback) and the Validate button; nbgrader's instructor tools are switched
off in their server and their JupyterLab. Instructors (group `instructors`): nbgrader's full
interface, Formgrader included, over the course repository ATTENTION_COURSE; their terminal has
the course's commands (`make -C $ATTENTION_COURSE hub-release LESSON=...`, docs/jupyterhub.md).
"""

import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (provided by traitlets when JupyterHub loads this file)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def _names(variable: str) -> list[str]:
    return [name.strip() for name in os.environ.get(variable, "").split(",") if name.strip()]


INSTRUCTORS = _names("ATTENTION_INSTRUCTORS")
STUDENTS = _names("ATTENTION_STUDENTS")
COURSE = os.environ.get("ATTENTION_COURSE", "")
COURSE_ID = os.environ.get("ATTENTION_COURSE_ID", "attention")
EXCHANGE = os.environ.get("ATTENTION_EXCHANGE", "/srv/nbgrader/exchange")
SHARED = os.environ.get("ATTENTION_SHARED", "/srv/attention/shared")
STATE = Path(os.environ.get("ATTENTION_HUB_STATE", "/srv/jupyterhub"))
# The single-user servers run in the environment this hub runs in (the course's packages, nbgrader
# and jupyterhub-singleuser); a deployment may give students a copy of it elsewhere.
SINGLEUSER = str(Path(sys.executable).parent / "jupyterhub-singleuser")

# ---- the hub
c.JupyterHub.bind_url = os.environ.get("ATTENTION_HUB_URL", "http://127.0.0.1:8000")
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.command = [os.environ.get(
    "ATTENTION_PROXY", str(REPO / ".venv" / "hub" / "node_modules" / ".bin" / "configurable-http-proxy"))]
c.ConfigurableHTTPProxy.pid_file = str(STATE / "jupyterhub-proxy.pid")

# ---- who logs in: real system users, by PAM (their own passwords)
c.JupyterHub.authenticator_class = os.environ.get("ATTENTION_AUTHENTICATOR", "pam")
c.Authenticator.allowed_users = set(INSTRUCTORS + STUDENTS)
c.Authenticator.admin_users = set(INSTRUCTORS)
c.JupyterHub.load_groups = {"instructors": {"users": INSTRUCTORS}, "students": {"users": STUDENTS}}

# ---- their servers: each as its own system user, in their home folder, JupyterLab
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [SINGLEUSER]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.http_timeout = 120
c.Spawner.start_timeout = 120
# What every server has: the exchange and course id (read by the role's nbgrader_config.py), and
# lesson_helpers.py on PYTHONPATH, so that every fetched lesson can `import lesson_helpers`.
c.Spawner.environment = {
    "ATTENTION_COURSE_ID": COURSE_ID,
    "ATTENTION_EXCHANGE": EXCHANGE,
    "ATTENTION_SHARED": SHARED,
    "PYTHONPATH": SHARED,
}


def per_role(spawner) -> None:
    """The role's Jupyter configuration: a student's or an instructor's nbgrader interface."""
    groups = {group.name for group in spawner.user.groups}
    if "instructors" in groups:
        spawner.environment = {**spawner.environment, "ATTENTION_COURSE": COURSE,
                               "JUPYTER_CONFIG_PATH": str(HERE / "instructor"),
                               # the course's config imports the course's `grader` package
                               "PYTHONPATH": os.pathsep.join(filter(None, [COURSE, SHARED])),
                               "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"}
    elif "students" in groups:
        student_config = Path(SHARED) / "jupyter"
        if not (student_config / "labconfig" / "page_config.json").is_file():
            # Without it a student's server would show nbgrader's instructor tools and no exchange.
            raise RuntimeError(f"the course's shared folder {SHARED} is not published yet: the instructor runs "
                               "`make hub-release` in the course repository first")
        spawner.environment = {**spawner.environment, "JUPYTER_CONFIG_PATH": str(student_config)}
    else:
        raise PermissionError(f"{spawner.user.name} is neither an instructor nor a student of this course")


c.Spawner.pre_spawn_hook = per_role
