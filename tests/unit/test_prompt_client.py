"""grader.sandbox.client.PromptKernelClient: ready at the first IOPub message, without waiting for silence."""

from __future__ import annotations

import asyncio
from queue import Empty

import pytest

from grader.sandbox import client as client_module
from grader.sandbox.client import PromptKernelClient


class FakeIOPub:
    """An IOPub channel that hands out `messages`, then is silent; records each read's timeout."""

    def __init__(self, messages):
        self.messages, self.reads = list(messages), []

    async def get_msg(self, timeout=None):
        self.reads.append(timeout)
        if not self.messages:
            raise Empty
        return self.messages.pop(0)


class FakeKernel(PromptKernelClient):
    """A client whose kernel answers kernel_info `replies` times out of the requests it is sent."""

    def __init__(self, iopub, *, answers=(True,), alive=True):
        super().__init__()
        self._iopub_channel = iopub
        self.requests, self._answers, self._alive = [], list(answers), alive

    def kernel_info(self):
        self.requests.append(f"request-{len(self.requests)}")
        return self.requests[-1]

    async def _async_recv_reply(self, msg_id, timeout=None, channel="shell"):
        if self._answers and self._answers.pop(0):
            return {"msg_type": "kernel_info_reply", "parent_header": {"msg_id": msg_id},
                    "content": {"protocol_version": "5.4"}}
        raise TimeoutError

    async def _async_is_alive(self):
        return self._alive


def status(state, parent):
    return {"msg_type": "status", "parent_header": {"msg_id": parent}, "content": {"execution_state": state}}


def test_ready_at_the_first_iopub_message_and_leaves_the_rest():
    welcome = {"msg_type": "iopub_welcome", "parent_header": {}, "content": {}}
    iopub = FakeIOPub([welcome, status("busy", "request-0"), status("idle", "request-0")])
    kernel = FakeKernel(iopub)
    asyncio.run(kernel.wait_for_ready(timeout=10))
    assert kernel.requests == ["request-0"]
    # One read: jupyter_client's own client reads on until IOPub is silent for 0.2 s.
    assert iopub.reads == [client_module.IOPUB_WAIT]
    assert len(iopub.messages) == 2


def test_asks_again_while_iopub_is_not_connected():
    iopub = FakeIOPub([])
    kernel = FakeKernel(iopub, answers=(True, True))
    original = iopub.get_msg

    async def connected_after_first_request(timeout=None):
        if len(kernel.requests) == 2 and len(iopub.reads) == 1:  # request-0's statuses went to nobody
            iopub.messages.append(status("idle", "request-1"))
        return await original(timeout)

    iopub.get_msg = connected_after_first_request
    asyncio.run(kernel.wait_for_ready(timeout=10))
    assert kernel.requests == ["request-0", "request-1"]


def test_a_dead_kernel_is_an_error():
    kernel = FakeKernel(FakeIOPub([]), answers=(False,), alive=False)
    with pytest.raises(RuntimeError, match="died"):
        asyncio.run(kernel.wait_for_ready(timeout=10))


def test_a_silent_kernel_times_out():
    kernel = FakeKernel(FakeIOPub([]), answers=())
    with pytest.raises(RuntimeError, match="didn't respond in 0 seconds"):
        asyncio.run(kernel.wait_for_ready(timeout=0))
