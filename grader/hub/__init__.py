"""The course on JupyterHub with nbgrader's exchange (docs/jupyterhub.md).

jupyterhub_config.py configures the hub; student/ and instructor/ are the Jupyter configuration
folders of each role's server. The instructor's commands: `python -m grader hub-release` publishes
what every student's server reads and releases lessons to the exchange; `python -m grader
hub-collect` collects the submissions whose owner is the student they name, as regular files only,
into nbgrader's submitted folder, where `python -m grader autograde` grades them.
"""
