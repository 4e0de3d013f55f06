"""A kernel client that refuses over-size messages at its sockets.

Every socket of `CappedKernelClient` is made by a ZeroMQ context whose `MAXMSGSIZE` is
`max_message_bytes`: ZeroMQ drops the connection of a peer that sends a larger message part before
any of it is handed over, so no over-size message is ever received or parsed. The connection's end
shows as a `DISCONNECTED` event on the socket's monitor; `refused_a_message()` reports it.
"""

from __future__ import annotations

import zmq
from jupyter_client.asynchronous import AsyncKernelClient
from traitlets import Integer, List
from zmq.utils.monitor import parse_monitor_message


class CappedKernelClient(AsyncKernelClient):
    """jupyter_client's AsyncKernelClient, with capped message sizes."""

    max_message_bytes = Integer(0, help="Bytes of the largest message part accepted; 0: no limit.")
    monitors = List(help="The channels' socket monitors while they run (see refused_a_message).")

    def start_channels(self, *args, **kwargs) -> None:
        """Start the channels with sockets that refuse over-size messages, each with a monitor."""
        if self.max_message_bytes:
            self.context.setsockopt(zmq.MAXMSGSIZE, self.max_message_bytes)
        super().start_channels(*args, **kwargs)
        self.monitors = []
        if self.max_message_bytes:
            for channel in (self.shell_channel, self.iopub_channel, self.stdin_channel):
                if channel.socket is not None:
                    self.monitors.append(channel.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED))

    async def refused_a_message(self) -> bool:
        """True once the kernel's end of a socket was dropped (an over-size message, or the kernel gone)."""
        for monitor in self.monitors:
            while await monitor.poll(0):
                event = parse_monitor_message(await monitor.recv_multipart())
                if event["event"] == zmq.EVENT_DISCONNECTED:
                    return True
        return False

    def stop_channels(self) -> None:
        for monitor in self.monitors:
            monitor.close(linger=0)
        self.monitors = []
        super().stop_channels()
