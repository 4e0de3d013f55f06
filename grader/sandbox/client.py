"""A kernel client that is ready as soon as the kernel has answered, not 0.2 s of silence later.

jupyter_client's `wait_for_ready` ends by reading IOPub until 0.2 s pass without a message: on a
batch of single-use kernels that is 0.2 s of idle machine per submission. `PromptKernelClient`
ends at the first message on IOPub after the kernel's kernel_info reply (ipykernel welcomes each
new subscriber with one), the proof that IOPub is connected. What else is on IOPub then is left
there: nbclient reads only the messages whose parent is a request it sent.
"""

from __future__ import annotations

import math
import time
from queue import Empty

from jupyter_client.asynchronous import AsyncKernelClient

IOPUB_WAIT = 0.2  # seconds without a message on IOPub after which it is taken as not yet connected
SHELL_WAIT = 1.0  # seconds to wait for one kernel_info reply before asking again


class PromptKernelClient(AsyncKernelClient):
    """jupyter_client's AsyncKernelClient, with a `wait_for_ready` that does not wait for silence."""

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        """Return once the kernel has replied to kernel_info and a message has arrived on IOPub.

        Raises RuntimeError when the kernel dies first, or after `timeout` seconds (None: no limit).
        """
        deadline = time.monotonic() + (math.inf if timeout is None else timeout)
        while True:
            msg_id = self.kernel_info()
            try:
                reply = await self._async_recv_reply(msg_id, timeout=SHELL_WAIT)
            except TimeoutError:
                reply = None
            if reply is not None and await self._iopub_connected():
                self._handle_kernel_info_reply(reply)
                return
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:.0f} seconds")

    async def _iopub_connected(self) -> bool:
        """True once IOPub carries a message (the kernel's welcome to a new subscriber, or a status);
        False when it stays silent for IOPUB_WAIT seconds: not connected yet."""
        try:
            await self.iopub_channel.get_msg(timeout=IOPUB_WAIT)
        except Empty:
            return False
        return True
