"""A kernel client that refuses over-size messages at its sockets, and is ready as soon as the kernel has answered.

Every socket of `PromptKernelClient` is made by a ZeroMQ context whose `MAXMSGSIZE` is
`max_message_bytes`: ZeroMQ drops the connection of a peer that sends a larger message part before
any of it is handed over, so no over-size message is ever received or parsed. The connection's end
shows as a `DISCONNECTED` event on the socket's monitor; `refused_a_message()` reports it.

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

import zmq
from jupyter_client.asynchronous import AsyncKernelClient
from traitlets import Integer
from zmq.utils.monitor import parse_monitor_message

IOPUB_WAIT = 0.2  # seconds without a message on IOPub after which it is taken as not yet connected
SHELL_WAIT = 1.0  # seconds to wait for one kernel_info reply before asking again


class PromptKernelClient(AsyncKernelClient):
    """jupyter_client's AsyncKernelClient, with capped message sizes and a `wait_for_ready` that does not wait
    for silence."""

    max_message_bytes = Integer(0, help="Bytes of the largest message part accepted; 0: no limit.")

    def start_channels(self, *args, **kwargs) -> None:
        """Start the channels with sockets that refuse over-size messages, each with a monitor."""
        if self.max_message_bytes:
            self.context.setsockopt(zmq.MAXMSGSIZE, self.max_message_bytes)
        super().start_channels(*args, **kwargs)
        self._monitors = []
        if self.max_message_bytes:
            for channel in (self.shell_channel, self.iopub_channel, self.stdin_channel):
                if channel.socket is not None:
                    self._monitors.append(channel.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED))

    async def refused_a_message(self) -> bool:
        """True once the kernel's end of a socket was dropped (an over-size message, or the kernel gone)."""
        for monitor in getattr(self, "_monitors", []):
            while await monitor.poll(0):
                event = parse_monitor_message(await monitor.recv_multipart())
                if event["event"] == zmq.EVENT_DISCONNECTED:
                    return True
        return False

    def stop_channels(self) -> None:
        for monitor in getattr(self, "_monitors", []):
            monitor.close(linger=0)
        self._monitors = []
        super().stop_channels()

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
