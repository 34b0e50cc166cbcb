"""The compressed RegisterBrokerBody (header ``compressed=true``, spec 5.5.3).

A zlib stream of length-prefixed parts; each topic is a space-separated text line,
which is why ``topicSysFlag`` and ``order`` do not survive this path.
"""

from __future__ import annotations

import json
import struct
import zlib

from .bodies import DataVersion, RegisterBrokerBody, TopicConfig, TopicQueueMappingInfo
from .errors import BodyDecodeError
from .fastjson import lenient_loads

_I32 = struct.Struct(">i")
#: Inflated size we accept by default: the frame limit, so that a compressed body can
#: carry no more than the same registration sent uncompressed. Deflate reaches ~1000:1,
#: and a 1 MB stream of zeros once cost 500 MB here before it was refused.
MAX_INFLATED = 16 * 1024 * 1024
#: Topics one registration may carry by default (``maxTopicsPerRegistration``).
MAX_TOPICS = 100_000


def encode_compressed(body: RegisterBrokerBody) -> bytes:
    """What a 4.9.8 broker sends with ``compressed=true`` (5 parts per topic line)."""
    out = bytearray()

    def part(data: bytes) -> None:
        out.extend(_I32.pack(len(data)))
        out.extend(data)

    part(body.data_version.encode())
    out.extend(_I32.pack(len(body.topic_configs)))
    for tc in body.topic_configs.values():
        part(f"{tc.topic_name} {tc.read_queue_nums} {tc.write_queue_nums} {tc.perm} {tc.topic_filter_type}".encode())
    part(json.dumps(list(body.filter_server_list), separators=(",", ":")).encode())
    return zlib.compress(bytes(out), 9)


def decode_compressed(data: bytes, *, max_inflated: int = MAX_INFLATED,
                      max_topics: int = MAX_TOPICS) -> RegisterBrokerBody:
    """Inflate and parse. A 6-part topic line (5.x writers add attributes) is accepted;
    4.9.8 would refuse it, but being lenient costs nothing here.

    Raises BodyDecodeError for a body that inflates beyond ``max_inflated`` bytes
    (checked while inflating: no more than that is ever held) or announces more than
    ``max_topics`` topics (checked before any is parsed).
    """
    try:
        d = zlib.decompressobj()
        raw = d.decompress(data, max_inflated)
        if d.unconsumed_tail:
            raise BodyDecodeError(f"compressed body inflates beyond {max_inflated} bytes")
    except zlib.error as exc:
        raise BodyDecodeError(f"compressed body is not a zlib stream: {exc}") from None
    pos = 0

    def take_int(what: str) -> int:
        nonlocal pos
        if len(raw) - pos < 4:
            raise BodyDecodeError(f"compressed body truncated before {what}")
        (n,) = _I32.unpack_from(raw, pos)
        pos += 4
        return n

    def take_bytes(what: str) -> bytes:
        nonlocal pos
        n = take_int(what)
        if n < 0 or n > len(raw) - pos:
            raise BodyDecodeError(f"compressed body: {what} length {n} exceeds the data")
        chunk = raw[pos:pos + n]
        pos += n
        return chunk

    try:
        dv = DataVersion.from_obj(lenient_loads(take_bytes("data version")))
        count = take_int("topic count")
        if count < 0:
            raise BodyDecodeError(f"compressed body: negative topic count {count}")
        if count > max_topics:
            raise BodyDecodeError(f"compressed body: {count} topics exceed the limit of {max_topics}")
        topics: dict[str, TopicConfig] = {}
        for _ in range(count):
            fields = take_bytes("topic").decode("utf-8").split(" ")
            if len(fields) < 5:
                raise BodyDecodeError(f"compressed body: topic line has {len(fields)} parts, expected 5")
            name, read, write, perm, filter_type = fields[:5]
            topics[name] = TopicConfig(
                topic_name=name, read_queue_nums=int(read), write_queue_nums=int(write),
                perm=int(perm), topic_filter_type=filter_type,
            )
        # 4.9.8 always reads this part; a body that ends before it is refused there too.
        filters = lenient_loads(take_bytes("filter servers"))
        # 5.x appends its static-topic mappings (count, then one JSON each, keyed by the
        # info's own topic); 4.x bodies end here.
        mappings: dict[str, TopicQueueMappingInfo] = {}
        if pos < len(raw):
            for _ in range(max(take_int("mapping count"), 0)):
                info = TopicQueueMappingInfo.from_obj(lenient_loads(take_bytes("topic queue mapping")))
                mappings[str(info.topic)] = info
    except (ValueError, UnicodeDecodeError) as exc:
        raise BodyDecodeError(f"compressed body: {exc}") from None
    if not isinstance(filters, list):
        raise BodyDecodeError("compressed body: filter server list is not an array")
    return RegisterBrokerBody(data_version=dv, topic_configs=topics, filter_server_list=tuple(map(str, filters)),
                              topic_queue_mapping_info=mappings)
