"""The Language Server Protocol as the server needs it, on the standard library alone:
JSON-RPC framing over standard input/output, and the documents a client opens (text
documents, notebook documents and their cells) kept in step with its edits.

Plain dicts, as they come off the wire: lsprotocol's typed classes take about half a
second to import (pygls with them, about 0.8 s), longer than the first lint itself.
"""
