"""What one client may hold of the service: uvicorn's HTTP/1.1 protocol (h11) with three limits.

    max_connections   connections open at once; one more is answered 503 and closed at once
    header_timeout    seconds from a connection's opening (or a new request's first byte) to the
                      end of the request's headers; after that: 408 and closed
    body_timeout      seconds from the end of the headers to the end of the body (an upload);
                      after that the connection is closed (the route sees the client gone); and
                      seconds an answer may wait for a client that does not read it

A request that has arrived whole is the app's: these limits never cut an answer the grader is
still writing.  Idle connections between requests close after uvicorn's keep-alive (5 s).
Every answer made here carries the app's security headers.  The defaults are `serve`'s
(--max-connections, --header-timeout, --body-timeout; docs/service.md).
"""

import json

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'"
)
# on every answer, the app's and these, refusals included: everything the service answers is
# somebody's (no-store)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
MAX_CONNECTIONS = 200
HEADER_TIMEOUT = 10.0
BODY_TIMEOUT = 120.0


def _answer(status, reason, code, zh, en):
    body = json.dumps({"error": code, "message": f"{zh} / {en}"}, ensure_ascii=False).encode()
    head = [
        f"HTTP/1.1 {status} {reason}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        "Connection: close",
        *(f"{k}: {v}" for k, v in SECURITY_HEADERS.items()),
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


BUSY = _answer(
    503,
    "Service Unavailable",
    "busy",
    "服务此刻的连接太多：请稍后再试。",
    "The service has too many connections just now: try again in a moment.",
)
TOO_SLOW = _answer(
    408,
    "Request Timeout",
    "too_slow",
    "请求到得太慢，连接已关闭：请再试一次。",
    "The request took too long to arrive, and the connection was closed: send it again.",
)
BAD_REQUEST = _answer(
    400,
    "Bad Request",
    "bad_http",
    "这不是一个可以读懂的 HTTP 请求。",
    "This is not an HTTP request the service can read.",
)


def guarded(max_connections=MAX_CONNECTIONS, header_timeout=HEADER_TIMEOUT, body_timeout=BODY_TIMEOUT):
    """uvicorn's `http` protocol class with these limits (uvicorn.Config(http=...))."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Guarded(H11Protocol):
        def connection_made(self, transport):
            super().connection_made(transport)
            self._timer, self._phase, self._stalled = None, None, None
            if len(self.connections) > max_connections:
                transport.write(BUSY)
                transport.close()
                return
            self._arm("headers")

        def data_received(self, data):
            super().data_received(data)
            self._follow()

        def on_response_complete(self):
            super().on_response_complete()
            self._cancel()  # idle now: uvicorn's keep-alive timer runs until the next request's first byte

        def connection_lost(self, exc):
            self._cancel()
            if self._stalled is not None:
                self._stalled.cancel()
            super().connection_lost(exc)

        def pause_writing(self):  # the client does not read what it asked for
            super().pause_writing()
            if self._stalled is None:
                self._stalled = self.loop.call_later(body_timeout, self.transport.abort)  # its unread answers dropped

        def resume_writing(self):
            super().resume_writing()
            if self._stalled is not None:
                self._stalled.cancel()
                self._stalled = None

        def send_400_response(self, msg):
            self._cancel()
            if not self.transport.is_closing():
                self.transport.write(BAD_REQUEST)
                self.transport.close()

        def _follow(self):
            """Which part of a request we wait for, after the bytes that just came."""
            if self.transport.is_closing():
                return self._cancel()
            state = self.conn.their_state
            if state is h11.IDLE:  # part of a request's headers
                if self._phase != "headers":
                    self._arm("headers")
            elif state is h11.SEND_BODY:
                if self._phase != "body":
                    self._arm("body")
            else:  # the whole request is in (or the connection is ending): the app's time
                self._cancel()

        def _arm(self, phase):
            self._cancel()
            self._phase = phase
            self._timer = self.loop.call_later(header_timeout if phase == "headers" else body_timeout, self._too_slow)

        def _cancel(self):
            if self._timer is not None:
                self._timer.cancel()
            self._timer, self._phase = None, None

        def _too_slow(self):
            phase = self._phase
            self._timer, self._phase = None, None
            if self.transport.is_closing():
                return
            if phase == "headers" and (self.cycle is None or self.cycle.response_complete):
                self.transport.write(TOO_SLOW)
            self.transport.close()

    return Guarded
