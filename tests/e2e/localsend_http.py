"""HTTP/1.1 as the test peers that play a LocalSend device read and answer it: one request at a
time from a connection (plain or TLS), bounded by its Content-Length; an answer with a JSON body."""
from urllib.parse import parse_qs, urlsplit


def read_request(conn, buffered):
    """The next request on conn after `buffered`: ((method, target, fields, body), what follows),
    or (None, b"") when the connection ends or does not speak HTTP."""
    while b"\r\n\r\n" not in buffered:
        if buffered[:1] and not buffered[:1].isalpha():
            # Not HTTP (a TLS ClientHello to a plain server): 400 at once, as the app's hyper answers.
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return None, b""
        chunk = conn.recv(65536)
        if not chunk:
            return None, b""
        buffered += chunk
    head, rest = buffered.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(fields.get("content-length", "0"))
    while len(rest) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return None, b""
        rest += chunk
    return (method, target, fields, rest[:length]), rest[length:]


def requests(conn):
    """Each request on conn until it ends, as (method, path, query, fields, body); closes conn."""
    buffered = b""
    with conn:
        while True:
            request, buffered = read_request(conn, buffered)
            if request is None:
                return
            method, target, fields, body = request
            url = urlsplit(target)
            yield method, url.path, {k: v[0] for k, v in parse_qs(url.query).items()}, fields, body


def answer(conn, status, body=b"", close=False):
    reason = {200: "OK", 204: "No Content", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 409: "Conflict",
              422: "Unprocessable Entity"}.get(status, "Status")
    conn.sendall((f"HTTP/1.1 {status} {reason}\r\nContent-Length: {len(body)}\r\nContent-Type: application/json\r\n"
                  f"Connection: {'close' if close else 'keep-alive'}\r\n\r\n").encode() + body)
