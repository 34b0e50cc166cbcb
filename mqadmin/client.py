"""Async remoting client for name servers and brokers, in the manner of aiokafka's conn.py.

One ``Connection`` = one TCP stream, one reader task and a table ``opaque -> Future``.
Requests may be pipelined: any number of ``call()``s run concurrently on one
connection and answers are matched by ``opaque``, in whatever order they come.
``close()`` fails every pending future with the reason. The codec is the name
server's own (``nameserver.protocol``); nothing here looks inside a frame.

Requests are built the way the Java 4.9.8 client builds them (version 409, language
JAVA, JSON header, ext keys in Java ``HashMap`` order), so the frames are
byte-identical to Java's apart from ``opaque``; ``tests/cli/test_client.py`` checks
that against the golden captures.
"""

from __future__ import annotations

import asyncio
import errno
import logging
from typing import Mapping, TypeVar

from nameserver.protocol.bodies import ClusterInfo, TopicRouteData, TopicList, decode_kv_table
from nameserver.protocol.codes import RequestCode, ResponseCode
from nameserver.protocol.command import RemotingCommand, request
from nameserver.protocol.errors import ProtocolError
from nameserver.protocol.frame import NEED_DATA, FrameDecoder, encode
from nameserver.protocol.javahash import hashmap_order
from nameserver.registry.config import ConfigError as PropertiesError
from nameserver.registry.config import parse_properties

from .errors import BadResponse, NameServerError, ServerFailure, Unreachable

log = logging.getLogger("mqadmin.client")

#: seconds; what ``--timeout`` defaults to (Java: 3 s connect + 5 s per request)
DEFAULT_TIMEOUT = 3.0
_READ_CHUNK = 65536

C = TypeVar("C", bound="Connection")


def build_request(code: int, ext: Mapping[str, str] | None = None, body: bytes = b"") -> RemotingCommand:
    """A request as Java's ``RemotingCommand.createRequestCommand`` sends it.

    Java copies a custom header's fields into a fresh ``HashMap``; its iteration order
    is what fastjson writes, so ordering our keys the same way gives identical bytes.
    """
    ordered = None if ext is None else {k: ext[k] for k in hashmap_order(ext)}
    return request(code, ordered, body)


def split_host_port(addr: str) -> tuple[str, int]:
    host, _, port = addr.rpartition(":")
    return host.strip("[]"), int(port)


class Connection:
    """One connection to a RocketMQ remoting server (name server or broker)."""

    def __init__(
        self, addr: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, timeout: float
    ) -> None:
        self.addr = addr
        self.timeout = timeout
        self._reader = reader
        self._writer = writer
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self._closed: ServerFailure | None = None
        self._reader_task = asyncio.get_running_loop().create_task(self._read_loop())

    @classmethod
    async def connect(cls: type[C], addr: str, timeout: float = DEFAULT_TIMEOUT) -> C:
        """Open a connection; ``timeout`` bounds the connect and is each call's default.

        Raises Unreachable (``refused``, ``timeout``, ``unreachable``).
        """
        try:
            host, port = split_host_port(addr)
        except ValueError:
            raise Unreachable(addr, None, "unreachable", "not a host:port address") from None
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(host, port)
        except TimeoutError:
            raise Unreachable(addr, None, "timeout", f"connect timed out after {timeout:g} s") from None
        except ConnectionRefusedError:
            raise Unreachable(addr, None, "refused", "connection refused") from None
        except OSError as exc:
            kind = "refused" if exc.errno == errno.ECONNREFUSED else "unreachable"
            raise Unreachable(addr, None, kind, exc.strerror or str(exc) or type(exc).__name__) from None
        return cls(addr, reader, writer, timeout)

    async def __aenter__(self: C) -> C:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        return self._closed is not None

    async def call(self, cmd: RemotingCommand, timeout: float | None = None, *, detail: str = "") -> RemotingCommand:
        """Send one request and wait for the response with the same ``opaque``.

        Returns the response whatever its code. Raises Unreachable when the connection is
        or gets closed, or no answer comes within ``timeout`` (default: the connection's).
        ``detail`` (e.g. ``for topic 'orders'``) goes into error messages.
        """
        if self._closed is not None:
            raise self._closed.with_request(cmd.code, detail)
        timeout = self.timeout if timeout is None else timeout
        future: asyncio.Future[RemotingCommand] = asyncio.get_running_loop().create_future()
        self._pending[cmd.opaque] = future
        try:
            self._writer.write(encode(cmd))
            # Not ``wait_for``: on 3.11 it returns the answer when a cancellation arrives
            # with it (gh-86296), and a lost Ctrl-C leaves the CLI running.
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            raise Unreachable(self.addr, cmd.code, "timeout", f"no answer within {timeout:g} s", detail) from None
        except ServerFailure as exc:
            raise exc.with_request(cmd.code, detail) from None
        finally:
            # A late answer finds no future and is dropped, as Java drops it.
            self._pending.pop(cmd.opaque, None)

    async def _read_loop(self) -> None:
        decoder = FrameDecoder()
        reason: ServerFailure = Unreachable(self.addr, None, "closed", "connection closed by the server")
        try:
            while True:
                data = await self._reader.read(_READ_CHUNK)
                if not data:
                    break
                decoder.feed(data)
                while (cmd := decoder.next_frame()) is not NEED_DATA:
                    assert isinstance(cmd, RemotingCommand)
                    future = self._pending.get(cmd.opaque) if cmd.is_response else None
                    if future is None:
                        log.debug("%s: dropping frame code=%s opaque=%s", self.addr, cmd.code, cmd.opaque)
                    elif not future.done():
                        future.set_result(cmd)
        except ProtocolError as exc:
            reason = BadResponse(self.addr, None, str(exc))
        except OSError as exc:
            reason = Unreachable(self.addr, None, "closed", exc.strerror or str(exc))
        except asyncio.CancelledError:
            return
        self._shutdown(reason)

    def _shutdown(self, reason: ServerFailure) -> None:
        if self._closed is None:
            self._closed = reason
        for future in self._pending.values():
            if not future.done():
                future.set_exception(reason)
        self._pending.clear()
        self._writer.close()

    async def close(self, reason: ServerFailure | None = None) -> None:
        """Close the stream; pending calls fail with ``reason`` (default: closed by us).

        The FIN is on its way before the first ``await``; the waits only let the reader
        task and the transport finish. A cancellation of the caller while waiting is not
        swallowed: it is most likely the Ctrl-C that made us close.
        """
        self._shutdown(reason or Unreachable(self.addr, None, "closed", "connection closed by the client"))
        self._reader_task.cancel()
        await asyncio.wait([self._reader_task])
        try:
            await self._writer.wait_closed()
        except OSError:
            pass

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
