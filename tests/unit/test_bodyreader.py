"""bodyreader: the chunked decoder (pure, fed at every split offset) and the readers over
a socket file (fakes, plus the choice of reader on real responses from the fake server)."""

from __future__ import annotations

import pytest
import requests

from dashfloat.llm import bodyreader
from dashfloat.llm.bodyreader import BodyError, ChunkedDecoder, plain_reader
from tests.fakeserver import Reply, sse_chunks, sse_reply

# Two chunks (one with extensions, upper-case hex and leading zeros), the last chunk with
# an extension, two trailer fields, the final CRLF.
BODY = (
    b"5\r\nhello\r\n"
    b"00A;name=value;flag \r\n world, hi\r\n"
    b"0;last\r\n"
    b"Expires: never\r\nX-Trailer: 1\r\n"
    b"\r\n"
)
PAYLOAD = b"hello world, hi"


def decode(*parts: bytes) -> tuple[bytes, ChunkedDecoder]:
    dec = ChunkedDecoder()
    out = b"".join(dec.feed(p) for p in parts)
    return out, dec


def test_whole_body_at_once():
    out, dec = decode(BODY)
    assert out == PAYLOAD and dec.done


@pytest.mark.parametrize("cut", range(len(BODY) + 1))
def test_split_at_every_offset(cut):
    out, dec = decode(BODY[:cut], BODY[cut:])
    assert out == PAYLOAD and dec.done


def test_split_at_every_pair_of_offsets():
    for a in range(len(BODY) + 1):
        for b in range(a, len(BODY) + 1):
            out, dec = decode(BODY[:a], BODY[a:b], BODY[b:])
            assert (out, dec.done) == (PAYLOAD, True), (a, b)


def test_one_byte_at_a_time():
    out, dec = decode(*(BODY[i : i + 1] for i in range(len(BODY))))
    assert out == PAYLOAD and dec.done


def test_not_done_until_the_final_crlf():
    dec = ChunkedDecoder()
    assert dec.feed(BODY[:-2]) == PAYLOAD
    assert not dec.done
    assert dec.feed(b"\r") == b"" and not dec.done
    assert dec.feed(b"\n") == b"" and dec.done


def test_empty_body_and_empty_feeds():
    dec = ChunkedDecoder()
    assert dec.feed(b"") == b"" and not dec.done
    assert dec.feed(b"0\r\n\r\n") == b"" and dec.done


def test_bytes_after_the_end_are_ignored():
    out, dec = decode(BODY + b"HTTP/1.1 200 OK\r\n")
    assert out == PAYLOAD and dec.done
    assert dec.feed(b"more") == b""


def test_bare_lf_and_whitespace_are_tolerated_like_http_client():
    out, dec = decode(b"3 \nabc\n 2\t;x\r\nde\r\n0\n\n")
    assert out == b"abcde" and dec.done


def test_many_small_chunks_in_one_feed():
    events = [b"data: %d\n\n" % i for i in range(200)]
    body = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events) + b"0\r\n\r\n"
    out, dec = decode(body)
    assert out == b"".join(events) and dec.done


@pytest.mark.parametrize(
    "body",
    [
        b"zz\r\nhello\r\n",  # not hex
        b"0x5\r\nhello\r\n",  # a prefix int() would accept
        b"+5\r\nhello\r\n",
        b"-1\r\n",
        b"\r\n",  # no size at all
        b";ext\r\n",
        b"1_0\r\n",
        b"12345678901234567\r\n",  # more than 16 hex digits
        b"5\r\nhelloXY\r\n",  # no CRLF after the data
        b"5\r\nhello\r\r\n",
    ],
)
def test_bad_framing_is_an_error(body):
    with pytest.raises(BodyError):
        decode(body)


@pytest.mark.parametrize("body", [b"5\r\nhelloXY\r\n", b"zz\r\n"])
def test_bad_framing_split_anywhere_is_an_error(body):
    for cut in range(len(body) + 1):
        with pytest.raises(BodyError):
            decode(body[:cut], body[cut:])


def test_an_error_is_sticky():
    dec = ChunkedDecoder()
    with pytest.raises(BodyError, match="chunk-size"):
        dec.feed(b"nothex\r\n")
    with pytest.raises(BodyError):
        dec.feed(b"0\r\n\r\n")


def test_overlong_framing_lines_are_refused():
    dec = ChunkedDecoder()
    with pytest.raises(BodyError, match="longer than"):
        for _ in range(100):
            dec.feed(b"1;" + b"x" * 1024)  # a size line that never ends
    with pytest.raises(BodyError, match="longer than"):
        decode(b"0\r\nX: " + b"y" * (bodyreader.MAX_LINE + 10) + b"\r\n\r\n")


def test_the_error_names_the_bad_line_briefly():
    with pytest.raises(BodyError) as info:
        decode(b"data: " + b"x" * 500 + b"\r\n")
    assert "data: " in str(info.value) and len(str(info.value)) < 120


def test_body_error_is_an_http_exception():
    # the client treats http.client.HTTPException as "the connection broke mid-stream"
    import http.client

    assert issubclass(BodyError, http.client.HTTPException)


# ---- readers over a socket file --------------------------------------------------------


class FakeFile:
    """read1() hands out scripted pieces, then EOF (b"")."""

    def __init__(self, *pieces: bytes):
        self.pieces = list(pieces)
        self.sizes: list[int] = []

    def read1(self, n: int) -> bytes:
        self.sizes.append(n)
        return self.pieces.pop(0)[:n] if self.pieces else b""


def test_chunked_reader_returns_everything_that_arrived_and_skips_framing_only_reads():
    fp = FakeFile(b"5\r\nhel", b"lo\r\n", b"3\r\n", b"abc\r\n6\r\n world\r\n0\r\n", b"\r\n")
    read = bodyreader._Chunked(fp, 1024)
    assert read() == b"hel"
    assert read() == b"lo"
    assert read() == b"abc world"  # "3\r\n" alone gave no payload: read on
    assert read() == b""
    assert read() == b""
    assert fp.sizes == [1024] * 5


def test_chunked_reader_eof_before_the_last_chunk_is_an_error():
    read = bodyreader._Chunked(FakeFile(b"5\r\nhello\r\n"), 1024)
    assert read() == b"hello"
    with pytest.raises(BodyError, match="before its last chunk"):
        read()


def test_length_reader_stops_at_the_length_and_reports_a_short_body():
    fp = FakeFile(b"abcd", b"efgh", b"never read")
    read = bodyreader._Length(fp, 6, 8)
    assert read() == b"abcd"
    assert read() == b"efgh"
    assert read() == b""
    assert fp.sizes == [6, 4]  # never asks for more than the length
    short = bodyreader._Length(FakeFile(b"abc"), 64, 10)
    assert short() == b"abc"
    with pytest.raises(BodyError, match="3 of the 10 bytes"):
        short()


# ---- which reader a real response gets ---------------------------------------------------


def _open(server, reply: Reply) -> requests.Response:
    server.push(reply)
    return requests.post(server.url + "/chat/completions", json={}, stream=True, timeout=5)


def _read_all(read) -> bytes:
    out = bytearray()
    while data := read():
        out += data
    return bytes(out)


@pytest.mark.parametrize(
    "framing, kind",
    [({"chunked": True}, bodyreader._Chunked), ({"length": True}, bodyreader._Length), ({"chunked": False}, None)],
    ids=["chunked", "content-length", "connection-close"],
)
def test_plain_bodies_are_read_from_the_socket_file(fake_server, framing, kind):
    chunks = sse_chunks(["a", "b", "c"])
    resp = _open(fake_server, Reply(chunks=chunks, **framing))
    try:
        read = plain_reader(resp, 1 << 16)
        assert read is not None
        if kind is not None:
            assert isinstance(read, kind)
        assert _read_all(read) == b"".join(chunks)
    finally:
        resp.close()


def test_gzip_bodies_are_left_to_urllib3(fake_server):
    resp = _open(fake_server, sse_reply(["a"], gzip=True))
    try:
        assert plain_reader(resp, 1 << 16) is None
    finally:
        resp.close()


def test_a_touched_body_or_unknown_internals_are_left_to_urllib3(fake_server):
    resp = _open(fake_server, sse_reply(["a", "b"]))
    try:
        resp.raw.read1(10)  # urllib3 has read part of the body
        assert plain_reader(resp, 1 << 16) is None
    finally:
        resp.close()

    class NoInternals:
        raw = object()
        headers: dict = {}

    assert plain_reader(NoInternals(), 1 << 16) is None


# ---- edges (found by `make mutation`) ------------------------------------------------------


def test_max_line_is_http_clients():
    import http.client

    assert bodyreader.MAX_LINE == http.client._MAXLINE


def test_a_framing_line_may_be_exactly_max_line_long():
    ext = b";" + b"x" * (bodyreader.MAX_LINE - 2)   # "5" + this: exactly MAX_LINE bytes
    out, dec = decode(b"5" + ext + b"\r\nhello\r\n0\r\n\r\n")
    assert out == b"hello" and dec.done
    with pytest.raises(BodyError, match="longer than 64 KiB"):
        decode(b"5" + ext + b"x\r\nhello\r\n0\r\n\r\n")


def test_an_unfinished_framing_line_may_hold_max_line_and_its_cr():
    ChunkedDecoder().feed(b"5" + b";" * bodyreader.MAX_LINE)   # MAX_LINE + 1 bytes, no LF yet
    with pytest.raises(BodyError, match="longer than 64 KiB"):
        ChunkedDecoder().feed(b"5" + b";" * (bodyreader.MAX_LINE + 1))


def test_a_bad_line_is_shown_up_to_40_bytes():
    assert bodyreader._show(b"a" * 40) == repr(b"a" * 40)
    assert bodyreader._show(b"a" * 41) == repr(b"a" * 40) + "..."


def test_the_length_reader_reads_the_last_byte():
    read = bodyreader._Length(FakeFile(b"abcd", b"e"), 64, 5)
    assert read() == b"abcd" and read() == b"e" and read() == b""


@pytest.mark.parametrize("tamper", ["foreign response", "chunked not a bool", "consumed unknown", "closed unknown"])
def test_internals_that_do_not_look_as_expected_are_left_to_urllib3(fake_server, tamper):
    resp = _open(fake_server, sse_reply(["a", "b"]))
    hr = resp.raw._fp
    saved = (hr.fp, hr.chunked, resp._content_consumed)
    try:
        assert plain_reader(resp, 1 << 16) is not None   # as it comes, it is taken
        if tamper == "foreign response":
            class Wrapper:   # everything an http.client response has, but not one
                fp = hr.fp
                chunked, length, chunk_left = hr.chunked, hr.length, hr.chunk_left

            resp.raw._fp = Wrapper()
        elif tamper == "chunked not a bool":
            hr.chunked = None
        elif tamper == "consumed unknown":
            del resp._content_consumed
        else:
            class NoClosed:
                read1 = hr.fp.read1

            hr.fp = NoClosed()
        assert plain_reader(resp, 1 << 16) is None
    finally:
        resp.raw._fp = hr
        hr.fp, hr.chunked, resp._content_consumed = saved
        resp.close()
