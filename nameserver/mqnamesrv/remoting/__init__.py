"""The asyncio connection core every client of ours shares, as Java's rocketmq-remoting is
shared by the broker, the clients and the admin tools: the admin client, the route pump,
the bench load generator and the broker simulator all talk through ``RemotingConnection``.

It sits beside the sans-IO codec (``mqnamesrv.protocol``) and uses nothing else; the
name server's own accept side stays in ``mqnamesrv.server`` (back-pressure, idle
timeouts and Java's close-on-bad-frame are a server's business).
"""

from .connection import Handler, RemotingConnection, RemotingError, Waiter, split_host_port

__all__ = ["Handler", "RemotingConnection", "RemotingError", "Waiter", "split_host_port"]
