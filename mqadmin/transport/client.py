"""Typed admin requests of name servers and brokers, over the shared connection core.

``Connection`` is ``mqnamesrv.remoting.RemotingConnection`` (one reader, answers matched
by ``opaque``, pipelining, ``close()`` failing every pending call) with this side's
error types: ``failure()`` is the one place a ``RemotingError`` becomes an ``Unreachable``
or ``BadResponse`` naming the server and the request.

Requests are built the way the Java 4.9.8 client builds them (version 409, language
JAVA, JSON header, ext keys in Java ``HashMap`` order), so the frames are
byte-identical to Java's apart from ``opaque``; ``tests/cli/test_client.py`` checks
that against the golden captures.
"""

from __future__ import annotations

import logging
from typing import Any, Mapping, Self

from mqnamesrv.protocol.bodies import ClusterInfo, TopicList, TopicRouteData, decode_kv_table
from mqnamesrv.protocol.codes import RequestCode, ResponseCode
from mqnamesrv.protocol.command import RemotingCommand, request
from mqnamesrv.protocol.errors import ProtocolError
from mqnamesrv.protocol.javahash import hashmap_order
from mqnamesrv.registry.config import ConfigError as PropertiesError
from mqnamesrv.registry.config import parse_properties
from mqnamesrv.remoting import RemotingConnection, RemotingError, split_host_port

from ..errors import BadResponse, NameServerError, ServerFailure, Unreachable

log = logging.getLogger("mqadmin.transport.client")

#: seconds; what ``--timeout`` defaults to (Java: 3 s connect + 5 s per request)
DEFAULT_TIMEOUT = 3.0

__all__ = ["BrokerConnection", "Connection", "DEFAULT_TIMEOUT", "NamesrvConnection", "build_request", "failure",
           "split_host_port"]


def build_request(code: int, ext: Mapping[str, str] | None = None, body: bytes = b"") -> RemotingCommand:
    """A request as Java's ``RemotingCommand.createRequestCommand`` sends it.

    Java copies a custom header's fields into a fresh ``HashMap``; its iteration order
    is what fastjson writes, so ordering our keys the same way gives identical bytes.
    """
    ordered = None if ext is None else {k: ext[k] for k in hashmap_order(ext)}
    return request(code, ordered, body)


def failure(exc: RemotingError, request: int | None, detail: str = "") -> ServerFailure:
    """The admin side's error for a connection failure: BadResponse for bytes that are no
    frame, Unreachable (same ``kind``) for everything else."""
    if exc.kind == "protocol":
        return BadResponse(exc.addr, request, exc.reason, detail)
    return Unreachable(exc.addr, request, exc.kind, exc.reason, detail)


class Connection(RemotingConnection):
    """One connection to a RocketMQ remoting server (name server or broker)."""

    def __init__(self, addr: str = "", timeout: float = DEFAULT_TIMEOUT, **kw: Any) -> None:
        super().__init__(addr, **kw)
        self.timeout = timeout

    @classmethod
    async def connect(cls, addr: str, timeout: float = DEFAULT_TIMEOUT, **kw: Any) -> Self:
        """Open a connection; ``timeout`` bounds the connect and is each call's default.

        Raises Unreachable (``refused``, ``timeout``, ``unreachable``).
        """
        try:
            conn = await super().connect(addr, timeout, **kw)
        except RemotingError as exc:
            raise failure(exc, None) from None
        conn.timeout = timeout
        return conn

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def call(self, cmd: RemotingCommand, timeout: float | None = None, *, detail: str = "") -> RemotingCommand:
        """Send one request and wait for the response with the same ``opaque``.

        Returns the response whatever its code. Raises Unreachable when the connection is
        or gets closed, or no answer comes within ``timeout`` (default: the connection's);
        BadResponse when the server sends bytes that are no frame.
        ``detail`` (e.g. ``for topic 'orders'``) goes into error messages.
        """
        try:
            return await super().call(cmd, self.timeout if timeout is None else timeout)
        except RemotingError as exc:
            raise failure(exc, cmd.code, detail) from None
        except ServerFailure as exc:  # what ``close(reason)`` was given
            raise exc.with_request(cmd.code, detail) from None

    # ------------------------------------------------------------- helpers ----

    async def _ask(
        self, code: int, ext: Mapping[str, str] | None = None, body: bytes = b"", *, detail: str = ""
    ) -> RemotingCommand:
        """One request whose answer must be SUCCESS; raises NameServerError otherwise."""
        response = await self.call(build_request(code, ext, body), detail=detail)
        if response.code != ResponseCode.SUCCESS:
            raise NameServerError.for_code(
                response.code, addr=self.addr, request=code, remark=response.remark, detail=detail
            )
        return response

    def _bad(self, code: int, exc: Exception, detail: str = "") -> BadResponse:
        return BadResponse(self.addr, code, str(exc), detail)

    def _ext_int(self, response: RemotingCommand, code: int, key: str, detail: str = "") -> int:
        try:
            return int(response.ext_get(key) or "")
        except ValueError:
            text = f"ext field {key!r} is not a number: {response.ext_get(key)!r}"
            raise self._bad(code, ValueError(text), detail) from None


class NamesrvConnection(Connection):
    """Typed requests of a name server; each raises NameServerError / Unreachable / BadResponse."""

    async def get_route(self, topic: str) -> TopicRouteData:
        """105. A topic the server does not know raises TopicNotExist."""
        code, detail = RequestCode.GET_ROUTEINFO_BY_TOPIC, f"for topic {topic!r}"
        response = await self._ask(code, {"topic": topic}, detail=detail)
        try:
            return TopicRouteData.decode(response.body)
        except ProtocolError as exc:
            raise self._bad(code, exc, detail) from None

    async def get_cluster_info(self) -> ClusterInfo:
        """106; the body is always in fastjson's unquoted-key dialect."""
        response = await self._ask(RequestCode.GET_BROKER_CLUSTER_INFO)
        try:
            return ClusterInfo.decode(response.body)
        except ProtocolError as exc:
            raise self._bad(RequestCode.GET_BROKER_CLUSTER_INFO, exc) from None

    async def _topic_list(self, code: int, ext: Mapping[str, str] | None = None, detail: str = "") -> list[str]:
        response = await self._ask(code, ext, detail=detail)
        try:
            return list(TopicList.decode(response.body).topics)
        except ProtocolError as exc:
            raise self._bad(code, exc, detail) from None

    async def get_all_topics(self) -> list[str]:
        """206: every topic the server has a route for, system topics included."""
        return await self._topic_list(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)

    async def get_topics_by_cluster(self, cluster: str) -> list[str]:
        """224: topics with queues on a broker of ``cluster`` (empty for an unknown cluster)."""
        return await self._topic_list(RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": cluster}, f"for cluster {cluster!r}")

    async def get_kv(self, namespace: str, key: str) -> str:
        """101. A missing key raises QueryNotFound."""
        detail = f"for key {namespace}/{key}"
        response = await self._ask(RequestCode.GET_KV_CONFIG, {"namespace": namespace, "key": key}, detail=detail)
        value = response.ext_get("value")
        if value is None:
            raise self._bad(RequestCode.GET_KV_CONFIG, ValueError("SUCCESS without a 'value' ext field"), detail)
        return value

    async def get_kvlist(self, namespace: str) -> dict[str, str]:
        """219. A namespace the server never saw raises QueryNotFound."""
        code, detail = RequestCode.GET_KVLIST_BY_NAMESPACE, f"for namespace {namespace!r}"
        response = await self._ask(code, {"namespace": namespace}, detail=detail)
        try:
            return decode_kv_table(response.body)
        except ProtocolError as exc:
            raise self._bad(code, exc, detail) from None

    async def put_kv(self, namespace: str, key: str, value: str) -> None:
        await self._ask(
            RequestCode.PUT_KV_CONFIG, {"namespace": namespace, "key": key, "value": value},
            detail=f"for key {namespace}/{key}",
        )

    async def delete_kv(self, namespace: str, key: str) -> None:
        await self._ask(RequestCode.DELETE_KV_CONFIG, {"namespace": namespace, "key": key}, detail=f"for key {namespace}/{key}")

    async def wipe_write_perm(self, broker_name: str) -> int:
        """205; returns ``wipeTopicCount`` (topics of that broker visited, 0 for an unknown name)."""
        code, detail = RequestCode.WIPE_WRITE_PERM_OF_BROKER, f"for broker {broker_name!r}"
        response = await self._ask(code, {"brokerName": broker_name}, detail=detail)
        return self._ext_int(response, code, "wipeTopicCount", detail)

    async def add_write_perm(self, broker_name: str) -> int:
        """327; returns ``addTopicCount``."""
        code, detail = RequestCode.ADD_WRITE_PERM_OF_BROKER, f"for broker {broker_name!r}"
        response = await self._ask(code, {"brokerName": broker_name}, detail=detail)
        return self._ext_int(response, code, "addTopicCount", detail)

    async def get_config(self) -> dict[str, str]:
        """319: the server's configuration, parsed as a Java properties text."""
        response = await self._ask(RequestCode.GET_NAMESRV_CONFIG)
        try:
            return parse_properties(response.body.decode("utf-8"))
        except (UnicodeDecodeError, PropertiesError) as exc:
            raise self._bad(RequestCode.GET_NAMESRV_CONFIG, exc) from None

    async def update_config(self, properties: Mapping[str, str]) -> None:
        """318 with ``key=value`` lines, written raw as Java's ``MixAll.properties2String`` does."""
        body = "".join(f"{k}={v}\n" for k, v in properties.items()).encode("utf-8")
        await self._ask(RequestCode.UPDATE_NAMESRV_CONFIG, body=body, detail="for " + ", ".join(properties))

    async def delete_topic_in_namesrv(self, topic: str, cluster: str | None = None) -> None:
        """216; with ``cluster`` only that cluster's queues go (what mqadmin deleteTopic sends)."""
        ext = {"topic": topic} if cluster is None else {"topic": topic, "clusterName": cluster}
        await self._ask(RequestCode.DELETE_TOPIC_IN_NAMESRV, ext, detail=f"for topic {topic!r}")


class BrokerConnection(Connection):
    """The two broker requests the admin commands need."""

    async def delete_topic_in_broker(self, topic: str) -> None:
        """215 DELETE_TOPIC_IN_BROKER, ext ``topic``."""
        await self._ask(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": topic}, detail=f"for topic {topic!r}")

    async def get_runtime_info(self) -> dict[str, str]:
        """28 GET_BROKER_RUNTIME_INFO: the broker's runtime key/value table."""
        response = await self._ask(RequestCode.GET_BROKER_RUNTIME_INFO)
        try:
            return decode_kv_table(response.body)
        except ProtocolError as exc:
            raise self._bad(RequestCode.GET_BROKER_RUNTIME_INFO, exc) from None
