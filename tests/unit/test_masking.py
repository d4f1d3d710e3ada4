"""The one masking function (dashfloat/masking.py) and the sinks that use it: the log, the
HTTP error taxonomy, the Outbox to the screen, --show-config, the history file."""

from __future__ import annotations

import io
import json
import logging

import pytest

from dashfloat import masking, storage
from dashfloat.llm import errors
from dashfloat.masking import API_KEY_LABEL, MASK, collect, mask, mask_bytes, mask_deep

KEY = "sk-live-0123456789abcdefXYZ"
SECRETS = collect(KEY, {"X-Api-Key": "hdr-secret-998877", "Authorization": "Bearer tok-abcdef123456",
                        "X-Title": "not a secret at all"})


# ---- the function ---------------------------------------------------------------------


def test_collect_takes_the_key_and_secret_looking_headers_longest_first():
    values = [v for v, _ in SECRETS]
    assert KEY in values and "hdr-secret-998877" in values
    assert "Bearer tok-abcdef123456" in values and "tok-abcdef123456" in values
    assert "not a secret at all" not in values
    assert values == sorted(values, key=len, reverse=True)
    assert dict(SECRETS)["hdr-secret-998877"] == "[redacted: X-Api-Key header]"
    # a header that is no secret does not end the search for those that are
    assert [v for v, _ in collect(None, {"X-Title": "not a secret at all", "X-Api-Key": "hdr-secret-998877"})] == [
        "hdr-secret-998877"]


def test_pairs_and_bare_values_are_normalized_longest_first_and_short_ones_dropped():
    assert masking.normalize([("abc1234", API_KEY_LABEL), ("abcd1234", "[x]")]) == (("abcd1234", "[x]"),)
    # a key registered after a prefix of it is still masked whole: no tail of it is left
    secrets = masking.normalize([KEY[:12], KEY])
    assert [v for v, _ in secrets] == [KEY, KEY[:12]]
    assert mask(f"key {KEY}", secrets) == f"key {API_KEY_LABEL}"


def test_short_values_are_never_secrets():
    assert collect("abc1234") == ()  # 7 characters: masking it would mangle innocent text
    assert mask("abc1234 and abc1234", collect("abc1234"), patterns=False) == "abc1234 and abc1234"
    assert len(collect("abcd1234")) == 1


def test_the_literal_key_is_masked_wherever_it_is():
    text = f"error: invalid key {KEY} (Authorization: Bearer {KEY})"
    out = mask(text, SECRETS)
    assert KEY not in out
    assert out == f"error: invalid key {API_KEY_LABEL} (Authorization: Bearer {API_KEY_LABEL})"


def test_a_key_cut_off_at_the_end_or_the_start_is_masked():
    assert mask(f"the body said: {KEY[:12]}…", SECRETS) == f"the body said: {API_KEY_LABEL}…"
    assert mask(f"the body said: {KEY[:12]}", SECRETS) == f"the body said: {API_KEY_LABEL}"
    assert mask(f"{KEY[-10:]} was the rest", SECRETS) == f"{API_KEY_LABEL} was the rest"
    # fewer than MIN_LENGTH characters of it are not a leak worth mangling text for
    assert mask("ends with sk-live", SECRETS) == "ends with sk-live"
    assert mask(f"the body said: {KEY[:8]}", SECRETS) == f"the body said: {API_KEY_LABEL}"  # MIN_LENGTH of it
    assert mask(f"the body said: {KEY[:-1]}", SECRETS) == f"the body said: {API_KEY_LABEL}"  # all but one
    assert mask(f"{KEY[1:]} was the rest", SECRETS) == f"{API_KEY_LABEL} was the rest"


@pytest.mark.parametrize("secret, text, expected", [
    # the start of the key shows twice near the end: only the one that ends the text is the cut key
    (KEY, f"x {KEY[:8]}, {KEY[:14]}", f"x {KEY[:8]}, {API_KEY_LABEL}"),
    (KEY, f"{KEY[:8]}, {KEY[:8]}", f"{KEY[:8]}, {API_KEY_LABEL}"),
    (KEY, f"{KEY[:8]}, and {KEY[:7]}", f"{KEY[:8]}, and {KEY[:7]}"),  # 7 characters: no leak
    # a key whose characters repeat: the cut starts one character after the first candidate
    ("aaaaaaaab-secret-123", "note: aaaaaaaaab-secret", f"note: a{API_KEY_LABEL}"),
    ("key-aaaaaaaaaab", "aaaaaaaaab rest", f"{API_KEY_LABEL} rest"),
])
def test_a_cut_key_is_found_among_lookalikes(secret, text, expected):
    assert mask(text, collect(secret), patterns=False) == expected


def test_url_encoded_key_is_masked():
    out = mask("https://h/v1?x=1&k=" + "sk%2Blive%2F0123456789", collect("sk+live/0123456789"))
    assert "0123456789" not in out


@pytest.mark.parametrize("text, kept, gone", [
    ("GET https://api.example.com/v1/models?key=AIzaSyD-secret-value&alt=json", "alt=json", "AIzaSyD"),
    ("redirect to https://x.test/v1?api_key=abc123def456", "https://x.test/v1?api_key=", "abc123def456"),
    ("https://x.test/a?foo=1&access_token=ya29.tokenvalue", "foo=1", "ya29.tokenvalue"),
    ("https://x.test/a?X-Amz-Signature=deadbeefcafe&X-Amz-Date=1", "X-Amz-Date=1", "deadbeefcafe"),
    ("proxy http://bob:hunter2pass@proxy.local:3128 failed", "http://bob:", "hunter2pass"),
    ("sent Authorization: Bearer abcdefghijklmnop", "Authorization: Bearer ", "abcdefghijklmnop"),
])
def test_credentials_in_urls_and_bearer_tokens_need_no_configuration(text, kept, gone):
    out = mask(text, ())
    assert gone not in out and kept in out and MASK in out


def test_a_configured_key_in_a_url_query_keeps_its_label():
    assert mask(f"https://h/v1?key={KEY}&x=1", SECRETS) == f"https://h/v1?key={API_KEY_LABEL}&x=1"


def test_patterns_are_off_for_what_the_model_reads():
    text = "https://x.test/a?token=keepme1234"
    assert mask(text, (), patterns=False) == text


def test_innocent_text_is_untouched():
    for text in ("a = b", "x@y.z", "monkey=1", "?sort=asc&page=2", "the bearer of news", ""):
        assert mask(text, SECRETS) == text
    for value in (None, 42, b"bytes"):  # not text: passed through as it is
        assert mask(value, SECRETS) == value


def test_mask_deep_keeps_the_shape():
    msg = ("tool_result", {"id": "c1", "text": KEY, "lines": [("add", f"+{KEY}")], "n": 3})
    out = mask_deep(msg, SECRETS)
    assert out == ("tool_result", {"id": "c1", "text": API_KEY_LABEL, "lines": [("add", f"+{API_KEY_LABEL}")],
                                   "n": 3})
    # the patterns too, unless told otherwise
    assert mask_deep(["https://x.test/?token=abcdef123"], ()) == [f"https://x.test/?token={MASK}"]
    assert mask_deep(["https://x.test/?token=abcdef123"], (), patterns=False) == ["https://x.test/?token=abcdef123"]


def test_mask_bytes():
    assert mask_bytes(b'{"error": "bad key ' + KEY.encode() + b'"}', SECRETS) == (
        b'{"error": "bad key ' + API_KEY_LABEL.encode() + b'"}')


def test_registered_secrets_are_the_default():
    assert mask(KEY) == KEY
    masking.register(SECRETS)
    assert mask(KEY) == API_KEY_LABEL
    masking.register(["another-secret-value"])  # a bare value is an API key
    assert mask("another-secret-value and " + KEY) == f"{API_KEY_LABEL} and {API_KEY_LABEL}"
    assert dict(masking.registered()) == {**dict(SECRETS), "another-secret-value": API_KEY_LABEL}


# ---- the sinks ------------------------------------------------------------------------


def test_provider_error_bodies_that_echo_the_key_are_masked_before_they_are_cut():
    masking.register(collect(KEY))
    body = json.dumps({"error": {"message": "x" * 290 + f" Incorrect API key provided: {KEY}."}}).encode()
    err = errors.classify_http(401, {"content-type": "application/json"}, body, base_url="https://h/v1",
                               model="m", api_key_env="OPENAI_API_KEY", key_set=True,
                               default_endpoint=False)
    assert err.kind == "auth"
    text = str(err) + json.dumps(err.as_dict())
    assert KEY[:8] not in text, text  # the start of the key, left where the text was cut


def test_a_redirect_to_a_url_with_a_key_in_its_query_is_masked():
    masking.register(collect(KEY))
    err = errors.classify_http(302, {"location": f"https://h/v1/chat?key={KEY}&x=1"}, b"",
                               base_url="https://h/v1", model="m", api_key_env="OPENAI_API_KEY",
                               key_set=True, default_endpoint=False)
    assert KEY not in str(err) and "redirect" in str(err)


def test_an_exception_text_with_the_key_is_masked():
    masking.register(collect(KEY))
    exc = ValueError(f"Invalid header value b'Bearer {KEY}'")
    err = errors.classify_exception(exc, base_url="https://h/v1", default_endpoint=False, phase="connect")
    assert KEY not in str(err) and KEY not in repr(err.as_dict())


def test_the_log_formatter_masks_messages_arguments_and_tracebacks():
    masking.register(collect(KEY))
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(storage.MaskingFormatter("%(levelname)s %(message)s"))
    log = logging.getLogger("test.masking")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.warning("key %s in a url https://h/?api_key=%s", KEY, "zzz-token-123")
        try:
            raise RuntimeError(f"boom with {KEY}")
        except RuntimeError:
            log.exception("crashed")
        log.error("stack", stack_info=True, extra={"k": KEY})
    finally:
        log.removeHandler(handler)
    text = stream.getvalue()
    assert "RuntimeError: boom with [redacted: API key]" in text
    assert KEY not in text and "zzz-token-123" not in text


def test_the_outbox_masks_everything_it_carries():
    from dashfloat.ui.bridge import Outbox

    box = Outbox(secrets=SECRETS)
    box.post(("system", "error", f"the server said {KEY}"))
    box.post(("token", KEY[:14]))
    box.post(("tool_result", {"id": "c", "text": f"https://h/?token=abcdef&k={KEY}", "excerpt": [KEY]}))
    msgs, _ = box.drain()
    assert KEY[:10] not in json.dumps(msgs)
    assert msgs[0] == ("system", "error", f"the server said {API_KEY_LABEL}")


def test_stderr_while_the_ui_runs_is_masked():
    masking.register(collect(KEY))
    out = io.StringIO()
    stream = masking.MaskingStream(out)
    text = f"Exception ignored in: {KEY}\n"
    assert stream.write(text) == len(text)  # what was asked to be written
    assert out.getvalue() == f"Exception ignored in: {API_KEY_LABEL}\n"
    assert stream.isatty() is False and stream.getvalue() == out.getvalue()  # the rest is the stream's


def test_the_history_file_never_holds_the_configured_key(tmp_path):
    from dashfloat.history import History

    h = History(tmp_path / "history", secrets=SECRETS)
    h.add(f"use the key {KEY} please")
    h.add("fetch https://x.test/?token=abcdef123")  # a token typed on purpose is kept
    data = (tmp_path / "history").read_text()
    assert KEY not in data and API_KEY_LABEL in data
    assert "token=abcdef123" in data


def test_show_config_and_policy_output_never_print_the_key(tmp_path, monkeypatch, capsys):
    from dashfloat import cli

    home = tmp_path / "home"
    cfg = home / ".config" / "dashfloat" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(f'[hooks]\npre_tool_use = ["check --token {KEY}"]\n')
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["--show-config"]) == 0
    assert cli.main(["--deny", f"execute_command(curl -H {KEY})", "policy", "list"]) == 0
    assert cli.main(["policy", "check", f"execute_command(echo {KEY})"]) == 0
    out, err = capsys.readouterr()
    assert "pre_tool_use" in out and "curl -H" in out and "echo" in out
    assert KEY not in out + err and API_KEY_LABEL in out
