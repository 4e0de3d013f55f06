"""grader.gradebook: a gradebook the batch holds open while it forks its grading processes stays its own."""

from __future__ import annotations

import os

from grader.gradebook import open_gradebook


def test_a_forked_process_leaves_the_open_gradebooks_connections_to_its_parent(gradebook_url):
    with open_gradebook(gradebook_url, "") as gradebook:
        gradebook.add_student("ada")  # a connection used, and back in the engine's pool
        assert gradebook.engine.pool.checkedin() >= 1
        child = os.fork()
        if child == 0:  # the child: the pool it inherited is a fresh one, without the parent's connections
            os._exit(0 if gradebook.engine.pool.checkedin() == 0 else 1)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert gradebook.find_student("ada").id == "ada"  # and the parent's still works
