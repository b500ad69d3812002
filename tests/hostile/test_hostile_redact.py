"""URL redaction under hostile URLs: the user:pass rule against urllib.parse.urlsplit, and query keys.

``redact_url`` reads the user info as libavformat's av_url_split does (up to the last ``@`` before
the path); Python's urlsplit reads it the same way, so wherever urlsplit sees a password the
redacted URL has ``***`` there, the same user, host, port and path, and never the password.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from hostile_util import HOSTILE
from hypothesis import assume, example, given
from hypothesis import strategies as st

from avdnn._util.redact import MASK, is_secret_name, redact_text, redact_url

#: what urlsplit keeps as it is (it drops tabs and newlines, and brackets are IPv6 syntax)
_CHARS = st.characters(exclude_characters="\t\r\n\x00[]", exclude_categories=["Cs", "Zs", "Cc"], max_codepoint=0x2FF)
_user = st.text(_CHARS.filter(lambda c: c not in ":@/?#"), max_size=8)
_password = st.text(_CHARS.filter(lambda c: c not in "/?#"), min_size=1, max_size=12)
_host = st.text(st.sampled_from("abcxyz0123456789.-"), min_size=1, max_size=12)
_scheme = st.sampled_from(["rtsp", "rtmp", "http", "https", "srt", "tcp", "udp", "rtmps", "git+ssh"])
_tail = st.text(_CHARS.filter(lambda c: c not in "?#"), max_size=12).map(lambda t: "/" + t if t else "")


def _parts(url: str) -> tuple[str | None, str | None, str | None, str]:
    s = urlsplit(url)
    return s.username, s.password, s.hostname, s.path


@HOSTILE
@given(_scheme, _user, _password, _host, st.one_of(st.none(), st.integers(1, 65535)), _tail)
@example("rtsp", "admin", "p@ss:w@rd", "cam", 554, "/h264")  # '@' and ':' in the password: the last '@' ends it
@example("rtmp", "eve", "pw", "127.0.0.1", 1, "/y")
def test_the_password_urlsplit_sees_is_masked(
    scheme: str, user: str, password: str, host: str, port: int | None, tail: str
) -> None:
    url = f"{scheme}://{user}:{password}@{host}{'' if port is None else f':{port}'}{tail}"
    username, given_password, hostname, path = _parts(url)
    assert given_password == password  # the URL says what we meant it to
    shown = redact_url(url)
    assert _parts(shown) == (username, MASK, hostname, path)
    assert urlsplit(shown).netloc.rpartition("@")[0] == f"{user}:{MASK}"
    assert redact_text(f"[tcp @ 0x5] Connection to {url} failed") == f"[tcp @ 0x5] Connection to {shown} failed"


@HOSTILE
@given(_scheme, st.text(_CHARS.filter(lambda c: c not in ":@/?#"), min_size=1, max_size=12), _host, _tail)
def test_a_user_name_alone_is_masked_too(scheme: str, token: str, host: str, tail: str) -> None:
    """``https://TOKEN@host/``: a user name alone is often the credential."""
    shown = redact_url(f"{scheme}://{token}@{host}{tail}")
    assert _parts(shown)[:3] == (MASK, None, host.lower() or None)


_wild = st.text(st.sampled_from("ab1:@/?#.%'\"<>=&;!$ ") | _CHARS, max_size=10)


@HOSTILE
@given(_wild, _wild, _wild)
def test_any_url_urlsplit_reads_with_a_password_loses_it(a: str, b: str, c: str) -> None:
    """Hostile pieces around a ':' and an '@': whatever urlsplit takes for the password is gone."""
    url = f"rtsp://{a}:{b}@{c}"
    try:
        password = urlsplit(url).password
    except ValueError:  # not a URL urlsplit can read (an unbalanced bracket)
        password = None
    assume(password)
    assert password is not None
    shown = redact_url(url)
    user = urlsplit(url).username
    assert urlsplit(shown).password == MASK and urlsplit(shown).netloc.rpartition("@")[0] == f"{user}:{MASK}"


_SECRETS = ["token", "passphrase", "sig", "signature", "auth_key", "access_key", "X-Amz-Signature", "X-Amz-Credential"]
_name = st.sampled_from([*_SECRETS, "channel", "pkt_size", "mode", "latency", "n"])
_value = st.text(_CHARS.filter(lambda c: c not in "&=#"), min_size=1, max_size=10)


@HOSTILE
@given(_host, st.lists(st.tuples(_name, _value), min_size=1, max_size=5))
def test_secret_query_values_are_masked_and_the_rest_kept(host: str, params: list[tuple[str, str]]) -> None:
    query = "&".join(f"{k}={v}" for k, v in params)
    shown = redact_url(f"https://{host}/a.m3u8?{query}")
    got = [tuple(p.split("=", 1)) for p in shown.split("?", 1)[1].split("&")]
    assert got == [(k, MASK if is_secret_name(k) else v) for k, v in params]


@HOSTILE
@given(st.text(st.characters(exclude_categories=["Cs"]), max_size=60))
def test_redaction_is_total_and_idempotent(text: str) -> None:
    once = redact_text(text)
    assert redact_text(once) == once
    assert redact_url(redact_url(text)) == redact_url(text)
