"""One asyncio Protocol per client connection: bytes to the decoder, frames to the
processor, responses back. Everything else lives in the processor and the registry."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from ..protocol.codes import RequestCode, ResponseCode, code_name
from ..protocol.command import RemotingCommand
from ..protocol.errors import ProtocolError
from ..protocol.frame import NEED_DATA, FrameDecoder, decode_payload, decode_reply, encode
from ..registry.routes import StagedTopics
from .dispatch import STAGE_SLICE_TOPICS, OffLoop, OffLoopJob, RegisterParts, RegisterWalk
from .route_answers import Cut, cut_opaque

if TYPE_CHECKING:
    from .app import NameServer

log = logging.getLogger("nameserver.connection")

#: Bytes of answers joined into one write: large enough that a pipelining client costs
#: few system calls, small enough that the join's copy adds little to the buffer.
WRITE_BATCH = 256 * 1024


#: What one read from a socket may bring, at most, outside a big frame (uvloop's own
#: read size). One buffer serves every connection of a server: the loop calls
#: ``get_buffer``, reads into it and calls ``buffer_updated`` in one go, which copies it out.
READ_SIZE = 256 * 1024


class Connection(asyncio.BufferedProtocol):
    """Also the opaque token the registry stores for brokers registered on it.

    A BufferedProtocol: the bytes of a big frame (a fleet broker's 1.5 MB registration)
    go from the socket straight into that frame's own buffer (``FrameDecoder.big_buffer``),
    everything else through the server's read buffer into the decoder."""

    def __init__(self, server: NameServer) -> None:
        self.server = server
        self.decoder = FrameDecoder(max_frame=server.max_frame, max_header=server.max_header)
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.peer_host: str | None = None
        self.last_activity = time.monotonic()
        #: when the frame now partly buffered began to arrive (see data_received)
        self.frame_started = self.last_activity
        self.closing = False
        #: unsent output is past the limit: frames wait in the decoder (see _serve)
        self.output_full = False
        #: a request whose body a worker thread is parsing: later frames of this
        #: connection wait (answers stay in order) and reading pauses meanwhile
        self.deferred = False
        #: the task applying a big registration in slices (kept so it is not collected)
        self._staging: asyncio.Future[None] | None = None
        #: get_buffer handed out the decoder's big frame (else the server's read buffer)
        self._reading_big = False

    def __repr__(self) -> str:
        return f"<Connection {self.peer}>"

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transport is no asyncio.Transport subclass, so no isinstance check here.
        tcp: asyncio.Transport = transport  # type: ignore[assignment]
        self.transport = tcp
        peer = tcp.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.peer_host = peer[0] if isinstance(peer, tuple) else None
        limit = self.server.config["maxConnections"]
        if limit and len(self.server.connections) >= limit:
            log.warning("refusing connection from %s: %d connections open (maxConnections)",
                        self.peer, len(self.server.connections))
            self.close()
            return
        self.server.connections.add(self)
        # Large pipelined bursts must not buffer unboundedly: pause reading instead.
        tcp.set_write_buffer_limits(high=self.server.write_limit)

    def get_buffer(self, sizehint: int) -> memoryview:
        big = self.decoder.big_buffer()
        self._reading_big = big is not None
        return self.server.read_buffer if big is None else big

    def buffer_updated(self, nbytes: int) -> None:
        self.last_activity = time.monotonic()
        decoder = self.decoder
        continuing = decoder.in_frame
        if self._reading_big:
            decoder.big_filled(nbytes)
        elif continuing:
            decoder.feed(self.server.read_buffer[:nbytes])
        else:
            # Nothing buffered before this read: the route queries at its head that need
            # no decode are answered from the read buffer itself (most reads hold nothing
            # else), and only what follows them is buffered and served the plain way.
            used = self._answer_read(nbytes)
            if used == nbytes:
                return
            decoder.feed(self.server.read_buffer[max(used, 0):nbytes])
            if used >= 0 and not self.deferred:
                self._serve(continuing, ran=True)  # the run stopped at the frame now first
                return
        if not self.deferred:
            self._serve(continuing)

    def _answer_read(self, nbytes: int) -> int:
        """Answer the route queries at the head of the server's read buffer (its first
        ``nbytes`` are this read) that need no decode, as ``_serve``'s run does; returns
        how many bytes they took, or -1: not tried (``_serve`` runs it)."""
        transport = self.transport
        if self.deferred or self.output_full or self.closing or transport is None or log.isEnabledFor(logging.DEBUG):
            return -1
        server = self.server
        unsent = transport.get_write_buffer_size()
        limit = server.write_limit
        if unsent > limit:
            return -1
        frames, _, used = self._kept_run(server.read_bytes, min(limit + 1, unsent + WRITE_BATCH) - unsent, nbytes)
        if frames:
            transport.write(frames[0] if len(frames) == 1 else b"".join(frames))
        return used

    def _kept_run(self, buf: bytearray, room: int, size: int | None = None) -> tuple[list[bytes], int, int]:
        """``Processor.kept_run`` within the server's bounds, counted by the metrics (a
        run's queries in one update, each taking its share of its time): (answer frames,
        their bytes, bytes of ``buf`` answered)."""
        server = self.server
        metrics = server.metrics
        started = time.perf_counter() if metrics is not None else 0.0
        frames, size, used, not_found = server.processor.kept_run(buf, room, server.max_frame, server.max_header, size)
        if metrics is not None:
            metrics.observe_routes(len(frames) - not_found, not_found, time.perf_counter() - started)
        return frames, size, used

    def data_received(self, data: bytes) -> None:
        """The same for bytes handed over whole (a transport without buffered reads)."""
        self.last_activity = time.monotonic()
        continuing = self.decoder.in_frame
        self.decoder.feed(data)
        if not self.deferred:
            self._serve(continuing)

    def _serve(self, continuing: bool = True, ran: bool = False) -> None:
        """Answer the buffered frames while this connection's unsent output is within
        its limit (``writeBufferLimit``). Past it, the rest stays unread in the decoder
        and the socket until the client has read enough (``resume_writing``): answers
        are built only as fast as the client takes them, so a client that sends and never
        reads costs about one limit of memory, not a whole read's worth of answers.
        ``ran``: a run has just stopped at the first frame buffered (``_answer_read``),
        which goes the plain way (a run would only stop there again)."""
        limit = self.server.write_limit
        while not self.closing and not self.output_full and not self.deferred and self.transport is not None:
            # All answers to one batch go out in one write: a write per answer costs a
            # system call each and was most of the time of a busy connection.
            answers: list[bytes] = []
            unsent = self.transport.get_write_buffer_size()
            batch_end = unsent + WRITE_BATCH  # the join below copies a batch: keep it small
            error: ProtocolError | None = None
            deferred: tuple[RemotingCommand, OffLoopJob | RegisterWalk] | None = None
            drained = False
            fast = not log.isEnabledFor(logging.DEBUG)  # debug logs every request: the plain way
            processor = self.server.processor
            decoder = self.decoder
            # Route queries answerable undecoded are answered a run at a time, cut in the
            # decoder's buffer (_kept_run); the frame a run stops at goes the plain way.
            run, ran = fast and not ran, False
            while unsent <= limit and unsent < batch_end:
                if run:
                    run = False  # until a frame has gone the plain way
                    buf = decoder.small_frames()
                    if buf is not None and len(buf) >= 8:
                        frames, size, used = self._kept_run(buf, min(limit + 1, batch_end) - unsent)
                        if used:
                            decoder.consume(used)
                            continuing = False
                            answers += frames
                            unsent += size
                            if not buf:  # all of it answered: what next_payload would find
                                drained = True
                                break
                            continue
                try:
                    payload = decoder.next_payload()
                    if payload is NEED_DATA:
                        if not continuing:  # a new partial frame started in this chunk
                            self.frame_started = self.last_activity
                        drained = True
                        break
                    continuing = False
                    assert isinstance(payload, (bytes, bytearray))
                    # Decoded: the run (when on) has just declined this frame, so no kept
                    # answer or known form answers it. Cut once, to keep its answer by (a big
                    # frame is no route query).
                    cut = cut_opaque(payload) if type(payload) is bytes else None
                    # (decode_reply: decode_payload's result, faster for a plain JSON header)
                    cmd = decode_payload(payload) if cut is None else decode_reply(payload)
                except ProtocolError as exc:
                    error = exc
                    break
                job = processor.decode_off_loop(cmd, self.peer_host)
                if job is not None:
                    deferred = (cmd, job)
                    break
                answer = self._answer(cmd, cut=cut)
                if answer is not None:
                    answers.append(answer)
                    unsent += len(answer)
                run = fast
            if answers:
                # Past the transport's high-water mark (the same limit) this calls
                # pause_writing, which ends the loop until the client reads.
                self.transport.write(answers[0] if len(answers) == 1 else b"".join(answers))
            if error is not None:
                # Like Java's NettyDecoder: no answer to the bad frame, log with the peer, close.
                log.warning("closing connection from %s: undecodable frame: %s", self.peer, error)
                self.close()
            if deferred is not None:
                self._defer(*deferred)
            if drained or error is not None or deferred is not None:
                return

    def _defer(self, cmd: RemotingCommand, job: OffLoopJob | RegisterWalk) -> None:
        """Parse ``cmd``'s body on a worker thread, then answer it (and go on with this
        connection's frames) back on the loop. Only the parse leaves the loop: the
        registration is applied there (a big one in slices on a copy, published in one
        swap), so no reader sees half of it. A ``RegisterWalk`` is walked on the loop a
        slice a turn instead (``_walk``)."""
        self.deferred = True
        if self.transport is not None:
            self.transport.pause_reading()
        if isinstance(job, RegisterWalk):
            self._walk(cmd, job)
        else:
            self._off_loop(cmd, job)

    def _off_loop(self, cmd: RemotingCommand, job: OffLoopJob) -> None:
        future = asyncio.get_running_loop().run_in_executor(None, job)
        future.add_done_callback(lambda done: self._decoded(cmd, done.result()))

    def _walk(self, cmd: RemotingCommand, walk: RegisterWalk) -> None:
        """A slice of ``walk``, then, at the loop's next turn, the next slice or the
        registration's apply; or, past the walk's bound, the worker's job."""
        if self.closing:
            self.deferred = False
            return  # the connection went meanwhile; as if the request had not arrived
        done = walk.step()
        if done is None:
            asyncio.get_running_loop().call_soon(self._walk, cmd, walk)
        elif isinstance(done, RegisterParts):
            asyncio.get_running_loop().call_soon(self._decoded, cmd, done)
        else:
            self._off_loop(cmd, done)

    def _decoded(self, cmd: RemotingCommand, decoded: OffLoop) -> None:
        if self.closing:
            self.deferred = False
            return  # the connection went meanwhile; as if the request had not arrived
        staged = self.server.processor.stage_register(cmd, decoded)
        if staged is None:
            self._finish(cmd, decoded)
        else:
            self._staging = asyncio.ensure_future(self._apply_in_slices(cmd, decoded, staged))

    async def _apply_in_slices(self, cmd: RemotingCommand, decoded: OffLoop,
                               staged: StagedTopics) -> None:
        """Build a big registration's new topic table a slice at a time, letting every
        other connection be served between slices, then publish it in one piece. However
        this ends (published, connection gone, a bug), the staging stops recording the
        live table's writes (``with``)."""
        with staged:
            try:
                while not staged.step(STAGE_SLICE_TOPICS):
                    await asyncio.sleep(0)
                    if self.closing:
                        self.deferred = False
                        return  # as if the request had not arrived
            except Exception:  # a bug: say so, and apply the registration the plain way
                log.exception("staging the registration of %s from %s failed", cmd.ext_get("brokerName"), self.peer)
                self._finish(cmd, decoded)
                return
            self._finish(cmd, decoded, staged)

    def _finish(self, cmd: RemotingCommand, decoded: OffLoop,
                staged: StagedTopics | None = None) -> None:
        """Answer the deferred request, then go on with this connection's frames."""
        self.deferred = False
        answer = self._answer(cmd, decoded, staged)
        if staged is not None:
            self._log_staging(cmd, staged)
        if answer is not None and self.transport is not None:
            self.transport.write(answer)
        self._serve(self.decoder.in_frame)
        if self.transport is not None and not self.output_full and not self.closing and not self.deferred:
            self.transport.resume_reading()

    def _log_staging(self, cmd: RemotingCommand, staged: StagedTopics) -> None:
        """Say what became of a staged registration: published, or handled in one piece
        because the table it was built on changed under it (or it was refused)."""
        name, count = cmd.ext_get("brokerName"), len(staged.diff.changed)
        if staged.published:
            log.info("registration of %s from %s: %d topics applied in %d slices", name, self.peer, count, staged.slices)
        else:
            log.info("registration of %s from %s: %d topics staged in %d slices went stale; handled in one piece "
                     "instead", name, self.peer, count, staged.slices)

    def _answer(self, cmd: RemotingCommand, decoded: OffLoop | None = None,
                staged: StagedTopics | None = None, cut: Cut | None = None) -> bytes | None:
        """The encoded answer to ``cmd`` (None: none to send); ``cut``, its frame cut at
        the opaque (``cut_opaque``), lets a route answer be kept for the same request again."""
        metrics = self.server.metrics
        debug = log.isEnabledFor(logging.DEBUG)
        if cut is not None and not debug:  # a route query: its frame without an answer command
            started = time.perf_counter() if metrics is not None else 0.0
            frame = self.server.processor.route_frame(cmd, cut)
            if frame is not None:
                if metrics is not None:
                    metrics.route_latency.observe(time.perf_counter() - started)
                    metrics.observe(cmd.code, ResponseCode.SUCCESS)
                return frame
        if metrics is None and not debug:
            response = self.server.processor.handle(cmd, self, self.peer_host, decoded=decoded,
                                                    staged=staged)
        else:
            started = time.perf_counter()
            response = self.server.processor.handle(cmd, self, self.peer_host, decoded=decoded,
                                                    staged=staged)
            elapsed = time.perf_counter() - started
            if metrics is not None:
                if cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
                    metrics.route_latency.observe(elapsed)
                metrics.observe(cmd.code, None if response is None else response.code)
            if debug:
                log.debug("request from %s: %s (%d) -> %s in %.3f ms", self.peer, code_name(cmd.code), cmd.code,
                          "no answer" if response is None
                          else f"{code_name(response.code, response=True)} ({response.code})", elapsed * 1000)
        if response is None:
            return None
        try:
            frame = encode(response)
        except (ProtocolError, UnicodeError) as exc:
            log.error("cannot encode the answer to %s from %s: %s", code_name(cmd.code), self.peer, exc)
            return None
        if cut is not None and cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            self.server.processor.remember_answer(cut, cmd, response, frame)
        return frame

    def pause_writing(self) -> None:
        """Unsent output passed the limit: stop answering and reading this client."""
        self.output_full = True
        if self.transport is not None and not self.closing:
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        """The client read down to the low-water mark: answer what is buffered, then read on."""
        self.output_full = False
        if self.transport is not None and not self.closing and not self.deferred:
            self.last_activity = time.monotonic()  # the client reads: it is not idle
            self._serve(continuing=False)  # a partial frame left buffered is timed from now
            if not self.output_full and not self.closing:
                self.transport.resume_reading()

    def close(self) -> None:
        self.closing = True
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        self.server.connection_closed(self)
