"""JSON-RPC 2.0 over a byte stream with LSP's `Content-Length` headers: reading
messages, writing them from any thread, and the protocol's error codes."""

from __future__ import annotations

import json
import threading
from typing import Any, BinaryIO, Optional

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class ResponseError(Exception):
    """An error to answer a request with."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Connection:
    """One client over two byte streams (the server's standard input and output)."""

    def __init__(self, reader: BinaryIO, writer: BinaryIO) -> None:
        self.reader = reader
        self.writer = writer
        self._write_lock = threading.Lock()

    def read(self) -> Optional[Any]:
        """The next message, parsed; None once the stream ends. A body that is not JSON
        raises ValueError (the headers of the next message are still found)."""
        length: Optional[int] = None
        while True:
            line = self.reader.readline()
            if not line:
                return None
            if not line.strip():
                if length is not None:
                    break
                continue  # a stray blank line between messages
            name, _, value = line.decode("ascii", "replace").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        body = self.reader.read(length)
        if len(body) < length:
            return None
        return json.loads(body)

    def send(self, message: dict) -> None:
        # ASCII escapes: a text with a lone surrogate (it happens in buffers) still makes valid JSON.
        body = json.dumps(message, separators=(",", ":")).encode("ascii")
        with self._write_lock:
            self.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.writer.flush()

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def respond(self, request_id: Any, result: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def respond_error(self, request_id: Any, code: int, message: str) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})
