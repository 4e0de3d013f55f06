"""grader.sandbox.template: a template can start in the background, and only its starter waits for it."""

from __future__ import annotations

import multiprocessing

from grader.sandbox.template import TemplateError, template_for


def _wait_in_child(template, answer) -> None:
    try:
        template.wait_ready()
        answer.send("ready")
    except TemplateError as error:
        answer.send(str(error))


def test_a_starting_template_is_waited_for_only_by_the_process_that_started_it(own_templates):
    template = template_for(env={"OPENBLAS_NUM_THREADS": "1"}, tmpfs_size=0, wait=False)
    assert not template.ready
    receive, send = multiprocessing.get_context("fork").Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(target=_wait_in_child, args=(template, send))
    child.start()
    answer = receive.recv()
    child.join()
    # The child must not read the template's "ready" line: the starter, and every later fork, would miss it.
    assert answer == "the kernel template was not ready when this process was forked"
    assert template_for(env={"OPENBLAS_NUM_THREADS": "1"}, tmpfs_size=0) is template
    assert template.ready and template.alive()
