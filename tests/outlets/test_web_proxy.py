"""Which proxy a request goes through, from the standard variables read as requests reads
them; and a setting that cannot be used, said without its password."""

from __future__ import annotations

import base64

import pytest

from tray.outlets.web_proxy import (
    Proxy,
    ProxySettingError,
    bypassed,
    parse_proxy,
    proxy_for,
    proxy_variables,
)

SECRET = "pa55-Wd9x"  # noqa: S105 - a made-up password the test hunts for


def test_the_scheme_s_variable_then_all_proxy() -> None:
    environ = {"HTTPS_PROXY": "http://secure:3128", "HTTP_PROXY": "plain:8080"}
    assert proxy_for(True, "ntfy.sh", 443, environ) == Proxy("secure", 3128, None)
    assert proxy_for(False, "ntfy.sh", 80, environ) == Proxy("plain", 8080, None)
    assert proxy_for(True, "ntfy.sh", 443, {"ALL_PROXY": "every:1"}) == Proxy("every", 1, None)
    assert proxy_for(False, "ntfy.sh", 80, {"HTTPS_PROXY": "secure:3128"}) is None
    assert proxy_for(True, "ntfy.sh", 443, {}) is None


def test_lower_case_wins_and_an_empty_one_unsets() -> None:
    both = {"HTTPS_PROXY": "upper:1", "https_proxy": "lower:2"}
    assert proxy_variables(both) == {"https": "lower:2"}
    assert proxy_variables({"HTTPS_PROXY": "upper:1", "https_proxy": ""}) == {}
    assert proxy_variables({"HTTPS_PROXY": " "}) == {}
    assert proxy_variables({"PATH": "/bin", "no_proxy": "a,b"}) == {"no": "a,b"}


def test_in_a_cgi_program_upper_case_http_proxy_is_the_client_s_and_ignored() -> None:
    environ = {"REQUEST_METHOD": "GET", "HTTP_PROXY": "evil:1"}
    assert proxy_for(False, "ntfy.sh", 80, environ) is None
    assert proxy_for(False, "ntfy.sh", 80, {**environ, "http_proxy": "good:2"}) == Proxy(
        "good", 2, None
    )


@pytest.mark.parametrize(
    ("no_proxy", "host", "port", "expected"),
    [
        ("*", "ntfy.sh", 443, True),
        ("ntfy.sh", "ntfy.sh", 443, True),
        ("ntfy.sh", "push.ntfy.sh", 443, True),
        (".ntfy.sh", "push.ntfy.sh", 443, True),
        ("ntfy.sh", "notntfy.sh", 443, False),
        ("NTFY.sh", "ntfy.SH", 443, True),
        ("other.org, ntfy.sh ", "ntfy.sh", 443, True),
        ("ntfy.sh:8080", "ntfy.sh", 8080, True),
        ("ntfy.sh:8080", "ntfy.sh", 443, False),
        ("127.0.0.1", "127.0.0.1", 2586, True),
        ("127.0.0.0/8", "127.0.0.1", 2586, True),
        ("10.0.0.0/8", "127.0.0.1", 2586, False),
        ("::1", "::1", 2586, True),
        ("[::1]:2586", "::1", 2586, True),
        ("fe80::/10", "fe80::1", 2586, True),
        ("", "ntfy.sh", 443, False),
        ("not/a/network", "127.0.0.1", 80, False),
    ],
)
def test_no_proxy_names_hosts_domains_ports_and_networks(
    no_proxy: str, host: str, port: int, expected: bool
) -> None:
    assert bypassed(host, port, no_proxy) is expected
    environ = {"HTTPS_PROXY": "proxy:3128", "NO_PROXY": no_proxy}
    assert (proxy_for(True, host, port, environ) is None) is expected


def test_a_proxy_s_user_and_password_become_its_authorization() -> None:
    proxy = parse_proxy(f"http://me%40corp:{SECRET}@proxy.corp:3128", "HTTPS_PROXY")
    expected = base64.b64encode(f"me@corp:{SECRET}".encode()).decode()
    assert proxy == Proxy("proxy.corp", 3128, f"Basic {expected}")
    assert proxy.headers() == {"Proxy-Authorization": f"Basic {expected}"}
    assert parse_proxy("[::1]:3128", "HTTP_PROXY") == Proxy("::1", 3128, None)
    assert parse_proxy("http://proxy.corp", "HTTP_PROXY") == Proxy("proxy.corp", 80, None)
    assert Proxy("proxy.corp", 80, None).headers() == {}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (f"https://me:{SECRET}@proxy:443", "HTTPS_PROXY: only an http:// proxy is supported"),
        (f"socks5://me:{SECRET}@proxy:1080", "HTTPS_PROXY: only an http:// proxy is supported"),
        (f"http://me:{SECRET}@proxy:port", "HTTPS_PROXY is not a proxy URL"),
        (f"http://me:{SECRET}@:3128", "HTTPS_PROXY names no host"),
    ],
)
def test_a_proxy_that_cannot_be_used_is_named_by_its_variable_alone(
    value: str, message: str
) -> None:
    with pytest.raises(ProxySettingError) as raised:
        proxy_for(True, "ntfy.sh", 443, {"https_proxy": value})
    assert str(raised.value) == message
    # Nor through a chained error's text (urlsplit's names the port it could not read).
    assert raised.value.__cause__ is None
    assert raised.value.__context__ is None or raised.value.__suppress_context__
