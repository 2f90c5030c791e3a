"""Bazel's persistent-worker protocol in its protobuf form: a WorkRequest in, a WorkResponse out,
each preceded by its length as a varint (protobuf's delimited messages).

Bazel 4.2.3 speaks the JSON form only behind an experimental flag, and the two messages use four
scalar kinds of field, so they are read and written here rather than through generated protobuf
code and a pinned runtime. Fields this worker does not use (cancellation, verbosity, sandbox
directory) are skipped by wire type, as protobuf's own readers do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import BinaryIO

# Wire types of the protobuf encoding.
_VARINT, _FIXED64, _LENGTH_DELIMITED, _FIXED32 = 0, 1, 2, 5


class ProtocolError(Exception):
    """A message that is not a well-formed WorkRequest."""


@dataclass(frozen=True)
class WorkRequest:
    arguments: tuple[str, ...]
    # Each input's execroot-relative path and the digest Bazel knows for it (empty if none).
    inputs: tuple[tuple[str, bytes], ...]
    request_id: int


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise ProtocolError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ProtocolError("varint longer than 64 bits")


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) of each field of one message, in order."""
    fields: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == _VARINT:
            value, pos = _varint(data, pos)
        elif wire == _LENGTH_DELIMITED:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise ProtocolError("truncated field")
            value, pos = data[pos : pos + size], pos + size
        elif wire in (_FIXED64, _FIXED32):
            width = 8 if wire == _FIXED64 else 4
            if pos + width > len(data):
                raise ProtocolError("truncated field")
            value, pos = int.from_bytes(data[pos : pos + width], "little"), pos + width
        else:
            raise ProtocolError(f"field {number} has wire type {wire}")
        fields.append((number, value))
    return fields


def _text(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise ProtocolError("a string field holds a number")
    return value.decode("utf-8", errors="surrogateescape")


def parse_request(data: bytes) -> WorkRequest:
    """The WorkRequest encoded in ``data``."""
    arguments: list[str] = []
    inputs: list[tuple[str, bytes]] = []
    request_id = 0
    for number, value in _fields(data):
        if number == 1:
            arguments.append(_text(value))
        elif number == 2:
            if not isinstance(value, bytes):
                raise ProtocolError("an input is not a message")
            path, digest = "", b""
            for inner, inner_value in _fields(value):
                if inner == 1:
                    path = _text(inner_value)
                elif inner == 2 and isinstance(inner_value, bytes):
                    digest = inner_value
            inputs.append((path, digest))
        elif number == 3 and isinstance(value, int):
            request_id = value
    return WorkRequest(tuple(arguments), tuple(inputs), request_id)


def read_request(stream: BinaryIO) -> WorkRequest | None:
    """The next WorkRequest on ``stream``, or None at its end."""
    size = shift = 0
    while True:
        byte = stream.read(1)
        if not byte:
            if shift:
                raise ProtocolError("truncated length")
            return None
        size |= (byte[0] & 0x7F) << shift
        if not byte[0] & 0x80:
            break
        shift += 7
        if shift > 63:
            raise ProtocolError("length longer than 64 bits")
    data = stream.read(size)
    if len(data) != size:
        raise ProtocolError("truncated request")
    return parse_request(data)


def _encode_varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64  # int32 fields: negative values take ten bytes, as in protobuf
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def encode_response(request_id: int, exit_code: int, output: str) -> bytes:
    """A WorkResponse, delimited: fields exit_code (1), output (2) and request_id (3)."""
    body = bytearray()
    if exit_code:
        body += _encode_varint(1 << 3 | _VARINT) + _encode_varint(exit_code)
    if output:
        text = output.encode("utf-8", errors="replace")
        body += _encode_varint(2 << 3 | _LENGTH_DELIMITED) + _encode_varint(len(text)) + text
    if request_id:
        body += _encode_varint(3 << 3 | _VARINT) + _encode_varint(request_id)
    return _encode_varint(len(body)) + bytes(body)


def encode_request(arguments: tuple[str, ...], inputs: tuple[tuple[str, bytes], ...]) -> bytes:
    """A WorkRequest, delimited, as Bazel writes one (for the tests, which play Bazel)."""
    body = bytearray()
    for argument in arguments:
        text = argument.encode("utf-8", errors="surrogateescape")
        body += _encode_varint(1 << 3 | _LENGTH_DELIMITED) + _encode_varint(len(text)) + text
    for path, digest in inputs:
        encoded = path.encode("utf-8", errors="surrogateescape")
        inner = _encode_varint(1 << 3 | _LENGTH_DELIMITED) + _encode_varint(len(encoded)) + encoded
        inner += _encode_varint(2 << 3 | _LENGTH_DELIMITED) + _encode_varint(len(digest)) + digest
        body += _encode_varint(2 << 3 | _LENGTH_DELIMITED) + _encode_varint(len(inner)) + inner
    return _encode_varint(len(body)) + bytes(body)


def parse_response(data: bytes) -> tuple[int, int, str]:
    """(request_id, exit_code, output) of an undelimited WorkResponse (for the tests)."""
    request_id = exit_code = 0
    output = ""
    for number, value in _fields(data):
        if number == 1 and isinstance(value, int):
            exit_code = value - (1 << 64) if value >= 1 << 63 else value
        elif number == 2:
            output = _text(value)
        elif number == 3 and isinstance(value, int):
            request_id = value
    return request_id, exit_code, output
