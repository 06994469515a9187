"""Which web proxy a request goes through, read from the standard variables as requests
(and so Apprise) reads them.

``https_proxy`` for an https URL, ``http_proxy`` for an http one, ``all_proxy`` for
either when that one is unset; ``no_proxy`` lists the hosts reached directly. Each in
lower or upper case, the lower one winning, and an empty one unset. ``HTTP_PROXY`` in
upper case is ignored where ``REQUEST_METHOD`` is set: in a CGI program a client's
``Proxy:`` header arrives as that variable ("httpoxy").

The environment is an argument, never ``os.environ`` read here. A proxy is an
``http://`` URL (or a bare ``host:port``), with a user and password when it asks for
them. A proxy URL may hold a password: only the variable's name ever goes into a
message.
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

HTTP_PORT = 80
_SUFFIX = "_proxy"


class ProxySettingError(ValueError):
    """A proxy variable that cannot be used; the message names the variable only."""


@dataclass(frozen=True, slots=True)
class Proxy:
    """An http proxy: where it is, and its ``Proxy-Authorization`` when it has a user."""

    host: str  # as http.client takes it: an IPv6 address without brackets
    port: int
    authorization: str | None

    def headers(self) -> dict[str, str]:
        return {"Proxy-Authorization": self.authorization} if self.authorization else {}


def proxy_variables(environ: Mapping[str, str]) -> dict[str, str]:
    """The set proxy variables by scheme (``https``, ``http``, ``all``, ``no``)."""
    found: dict[str, str] = {}
    # Upper case first (and any other), then lower case over it.
    for lower_pass in (False, True):
        for name, value in environ.items():
            if not name.lower().endswith(_SUFFIX) or (name == name.lower()) != lower_pass:
                continue
            scheme = name[: -len(_SUFFIX)].lower()
            if name == "HTTP_PROXY" and "REQUEST_METHOD" in environ:
                continue
            if value.strip():
                found[scheme] = value.strip()
            else:
                found.pop(scheme, None)
    return found


def bypassed(host: str, port: int, no_proxy: str) -> bool:
    """Whether ``no_proxy`` names the host: ``*``, the host or a domain it is in (a
    leading dot or not), ``host:port``, or a network (``10.0.0.0/8``) around an address."""
    host = host.lower().strip("[]")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if entry == "*":
            return True
        if not entry:
            continue
        name, _, entry_port = entry.rpartition(":") if _has_port(entry) else (entry, "", "")
        if entry_port and entry_port != str(port):
            continue
        name = name.lstrip(".").strip("[]")
        if address is not None and "/" in name:
            try:
                if address in ipaddress.ip_network(name, strict=False):
                    return True
            except ValueError:
                continue
        elif host == name or host.endswith(f".{name}"):
            return True
    return False


def _has_port(entry: str) -> bool:
    # "host:8080" and "[::1]:8080" have one; "::1" and "fe80::/10" do not.
    head, colon, tail = entry.rpartition(":")
    return bool(colon) and tail.isdigit() and (head.endswith("]") or ":" not in head)


def proxy_for(https: bool, host: str, port: int, environ: Mapping[str, str]) -> Proxy | None:
    """The proxy for a request to ``host:port``, or None to connect directly.

    Raises :class:`ProxySettingError` when the variable that applies cannot be used.
    """
    variables = proxy_variables(environ)
    scheme = "https" if https else "http"
    chosen = scheme if scheme in variables else "all"
    value = variables.get(chosen)
    if value is None or bypassed(host, port, variables.get("no", "")):
        return None
    return parse_proxy(value, f"{chosen.upper()}{_SUFFIX.upper()}")


def parse_proxy(value: str, variable: str) -> Proxy:
    """The proxy in ``value``, the text of ``variable``."""
    text = value if "://" in value else f"http://{value}"
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise ProxySettingError(f"{variable} is not a proxy URL") from None
    if parts.scheme.lower() != "http":
        raise ProxySettingError(f"{variable}: only an http:// proxy is supported")
    if not parts.hostname:
        raise ProxySettingError(f"{variable} names no host")
    authorization = None
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        authorization = f"Basic {base64.b64encode(pair.encode()).decode()}"
    return Proxy(parts.hostname, port or HTTP_PORT, authorization)


__all__ = ["Proxy", "ProxySettingError", "bypassed", "parse_proxy", "proxy_for", "proxy_variables"]
