"""Bazel's persistent-worker protocol as `atengen compile-kernel` reads and writes it: requests
round-trip, responses carry what protobuf's encoding says, and any bytes read as a request are a
request or one ProtocolError."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st

from atengen.kernel_compile.worker_protocol import (
    ProtocolError,
    WorkRequest,
    encode_request,
    encode_response,
    parse_request,
    parse_response,
    read_request,
)

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@given(
    st.lists(TEXT, max_size=8),
    st.lists(st.tuples(TEXT, st.binary(max_size=40)), max_size=8),
)
def test_requests_round_trip(arguments: list[str], inputs: list[tuple[str, bytes]]) -> None:
    stream = io.BytesIO(encode_request(tuple(arguments), tuple(inputs)) * 2)
    for _ in range(2):
        assert read_request(stream) == WorkRequest(tuple(arguments), tuple(inputs), 0)
    assert read_request(stream) is None


def test_a_request_as_bazel_writes_it() -> None:
    # WorkRequest{arguments: "-c", inputs: {path: "a.h", digest: 0x01 0x02}, request_id: 300},
    # written out by hand from protobuf's encoding rules.
    data = b"\x0a\x02-c" + b"\x12\x09\x0a\x03a.h\x12\x02\x01\x02" + b"\x18\xac\x02"
    assert parse_request(data) == WorkRequest(("-c",), (("a.h", b"\x01\x02"),), 300)
    # Fields it does not use are skipped: cancel (4, varint), verbosity (5), sandbox_dir (6).
    extra = b"\x20\x01\x28\x0a\x32\x03dir"
    assert parse_request(data + extra) == parse_request(data)


@given(st.integers(-(2**31), 2**31 - 1), st.integers(0, 2**31 - 1), TEXT)
def test_responses_round_trip(exit_code: int, request_id: int, output: str) -> None:
    delimited = encode_response(request_id, exit_code, output)
    stream = io.BytesIO(delimited)
    size = read_varint_length(stream)
    assert parse_response(stream.read(size)) == (request_id, exit_code, output)


def test_a_response_as_protobuf_encodes_it() -> None:
    assert encode_response(7, 1, "no") == b"\x08\x08\x01\x12\x02no\x18\x07"
    assert encode_response(0, 0, "") == b"\x00"


def read_varint_length(stream: io.BytesIO) -> int:
    size = shift = 0
    while True:
        byte = stream.read(1)[0]
        size |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return size
        shift += 7


@given(st.binary(max_size=200))
def test_any_bytes_are_a_request_or_a_protocol_error(data: bytes) -> None:
    try:
        request = read_request(io.BytesIO(data))
    except ProtocolError:
        return
    assert request is None or isinstance(request, WorkRequest)
