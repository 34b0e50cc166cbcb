"""KV config: ``getKvConfig``, ``updateKvConfig``, ``deleteKvConfig``, ``updateOrderConf``."""

from __future__ import annotations

import re
from enum import Enum
from typing import Annotated, Optional

import typer

from mqnamesrv.protocol.codes import ORDER_TOPIC_CONFIG
from mqnamesrv.protocol.codes import RequestCode as R

from ..render import answers
from ..core import (Common, NamesrvOpt, OutputOpt, ProfileOpt, TimeoutOpt, TracebackOpt, read_command, required,
                    write_command)

NamespaceOpt = Annotated[str, typer.Option("-s", "--namespace", help="KV namespace.", show_default=False)]
KeyOpt = Annotated[str, typer.Option("-k", "--key", help="Key.", show_default=False)]
ValueOpt = Annotated[str, typer.Option("-v", "--value", help="Value.", show_default=False)]
_ORDER_CONF = re.compile(r"^[^:;\s]+:\d+(;[^:;\s]+:\d+)*;?$")


def get_kv_config(
    namespace: NamespaceOpt,
    key: Annotated[Optional[str], typer.Option("-k", "--key", help="Key; all keys of the namespace when left out.",
                                               show_default=False)] = None,
    namesrv: NamesrvOpt = None, output: OutputOpt = None, timeout: TimeoutOpt = None,
    profile: ProfileOpt = None, traceback: TracebackOpt = False,
) -> None:
    """A KV config value, or a whole namespace, as every name server holds it."""
    common, namespace = Common(namesrv, output, timeout, profile, traceback), required(namespace, "-s")
    if key is None:
        read_command(common, "getKvConfig", {"namespace": namespace, "key": None}, R.GET_KVLIST_BY_NAMESPACE,
                     lambda c: c.get_kvlist(namespace), answers.KV_TABLE,
                     to_data=lambda t: {"table": answers.sorted_map(t)}, detail=f"for namespace {namespace!r}")
    key = required(key, "-k")
    read_command(common, "getKvConfig", {"namespace": namespace, "key": key}, R.GET_KV_CONFIG,
                 lambda c: c.get_kv(namespace, key), answers.KV_VALUE,
                 to_data=lambda v: {"value": v}, detail=f"for key {namespace}/{key}")


def update_kv_config(
    namespace: NamespaceOpt, key: KeyOpt, value: ValueOpt,
    namesrv: NamesrvOpt = None, output: OutputOpt = None, timeout: TimeoutOpt = None,
    profile: ProfileOpt = None, traceback: TracebackOpt = False,
) -> None:
    """Create or update a KV config entry on every name server."""
    namespace, key, value = required(namespace, "-s"), required(key, "-k"), value.strip()
    write_command(Common(namesrv, output, timeout, profile, traceback), "updateKvConfig",
                  {"namespace": namespace, "key": key, "value": value}, R.PUT_KV_CONFIG,
                  lambda c: c.put_kv(namespace, key, value), answers.PLAIN, detail=f"for key {namespace}/{key}")


def delete_kv_config(
    namespace: NamespaceOpt, key: KeyOpt,
    namesrv: NamesrvOpt = None, output: OutputOpt = None, timeout: TimeoutOpt = None,
    profile: ProfileOpt = None, traceback: TracebackOpt = False,
) -> None:
    """Delete a KV config entry on every name server."""
    namespace, key = required(namespace, "-s"), required(key, "-k")
    write_command(Common(namesrv, output, timeout, profile, traceback), "deleteKvConfig",
                  {"namespace": namespace, "key": key}, R.DELETE_KV_CONFIG,
                  lambda c: c.delete_kv(namespace, key), answers.PLAIN, detail=f"for key {namespace}/{key}")


class Method(str, Enum):
    get = "get"
    put = "put"
    delete = "delete"


def update_order_conf(
    topic: Annotated[str, typer.Option("-t", "--topic", help="Topic.", show_default=False)],
    method: Annotated[Method, typer.Option("-m", "--method", help="get, put or delete.", show_default=False)],
    order_conf: Annotated[Optional[str], typer.Option(
        "-v", "--orderConf", help="With put: 'brokerName:queueCount;brokerName:queueCount'.", show_default=False)] = None,
    namesrv: NamesrvOpt = None, output: OutputOpt = None, timeout: TimeoutOpt = None,
    profile: ProfileOpt = None, traceback: TracebackOpt = False,
) -> None:
    """Read, set or remove a topic's order conf (KV namespace ORDER_TOPIC_CONFIG) on every name server."""
    common, topic, ns = Common(namesrv, output, timeout, profile, traceback), required(topic, "-t"), ORDER_TOPIC_CONFIG
    args = {"topic": topic, "method": method.value, "order_conf": order_conf}
    detail = f"for key {ns}/{topic}"
    if method is Method.get:
        read_command(common, "updateOrderConf", args, R.GET_KV_CONFIG, lambda c: c.get_kv(ns, topic),
                     answers.ORDER_CONF, to_data=lambda v: {"value": v}, detail=detail)
    if method is Method.delete:
        write_command(common, "updateOrderConf", args, R.DELETE_KV_CONFIG, lambda c: c.delete_kv(ns, topic),
                      answers.PLAIN, detail=detail)
    conf = (order_conf or "").strip()
    if not _ORDER_CONF.match(conf):
        raise typer.BadParameter("put needs 'brokerName:queueCount;brokerName:queueCount'", param_hint="'-v'")
    args["order_conf"] = conf
    write_command(common, "updateOrderConf", args, R.PUT_KV_CONFIG, lambda c: c.put_kv(ns, topic, conf),
                  answers.PLAIN, detail=detail)
