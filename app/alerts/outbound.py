"""Where notifications may be posted: the egress policy that keeps channels from SSRF.

A channel URL must be http(s) with a host, no ``user:password@`` and no whitespace or
control characters (CRLF would split the request line). Its host must resolve only to
public addresses: loopback, link-local, private (RFC 1918, ULA ``fc00::/7``), CGNAT
``100.64/10``, unspecified, multicast, reserved and cloud metadata addresses are refused,
whatever spelling names them (``0x7f000001``, ``2130706433``, ``[::ffff:127.0.0.1]``).
Operators open on-prem receivers with an allow-list of CIDRs and host names
(``TELLTALE_OUTBOUND_ALLOW``); metadata hosts and addresses stay refused even then.

The URL is checked when the channel is created and again on every delivery, where
:class:`PinnedTransport` connects to the very address it checked (no second DNS lookup
that a rebinding answer could change).
"""

from __future__ import annotations

import socket
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address, ip_network

import httpx

Address = IPv4Address | IPv6Address
Network = IPv4Network | IPv6Network
# (host, port) -> the addresses it resolves to, as strings; raises OSError when it cannot.
Resolver = Callable[[str, int], Sequence[str]]

METADATA_HOSTS = frozenset(
    {"metadata", "metadata.google.internal", "metadata.goog", "metadata.azure.internal",
     "instance-data", "instance-data.ec2.internal"}
)  # fmt: skip
METADATA_ADDRESSES = frozenset(
    ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "fd00:ec2::254", "168.63.129.16",
              "100.100.100.200")
)  # fmt: skip
_CGNAT = ip_network("100.64.0.0/10")
_NAT64 = ip_network("64:ff9b::/96")
# Python 3.11 before 3.11.10 calls 192.0.0.0/24 global; Teredo (2001::/32) tunnels to any
# IPv4 address, so neither can be judged by what it looks like.
_SPECIAL = (ip_network("192.0.0.0/24"), ip_network("2001::/32"))
DEFAULT_PORTS = {"http": 80, "https": 443}


class OutboundRefused(ValueError):
    """Telltale will not post to this URL or address; retrying cannot change that."""


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def parse_url(url: str) -> httpx.URL:
    """``url`` parsed as the sender will parse it, or :class:`OutboundRefused`."""
    bad = next(
        (c for c in url if c.isspace() or c == "\\" or unicodedata.category(c) == "Cc"), None
    )
    if bad is not None:
        raise OutboundRefused(f"must not contain whitespace or control characters ({bad!r})")
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise OutboundRefused(f"not a valid URL: {exc}") from None
    if parsed.scheme not in DEFAULT_PORTS:
        raise OutboundRefused("must be an http(s) URL")
    if not parsed.host:
        raise OutboundRefused("must name a host")
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise OutboundRefused(f"port {parsed.port} is out of range")
    if parsed.userinfo:
        raise OutboundRefused("must not carry user:password@ (use the channel secret)")
    return parsed


def ascii_host(url: httpx.URL) -> str:
    """The host as DNS and TLS see it (IDNA-encoded, no brackets)."""
    return url.raw_host.decode("ascii")


def literal_address(host: str) -> Address | None:
    """``host`` as an address when it is one, in any form ``inet_aton`` accepts too.

    >>> [str(literal_address(h)) for h in ("0x7f000001", "2130706433", "127.1", "::1")]
    ['127.0.0.1', '127.0.0.1', '127.0.0.1', '::1']
    >>> literal_address("hooks.slack.com") is None
    True
    """
    try:
        return ip_address(host)
    except ValueError:
        pass
    try:
        return ip_address(socket.inet_aton(host))
    except OSError:
        return None


def _embedded_ipv4(addr: Address) -> IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, NAT64), if any."""
    if not isinstance(addr, IPv6Address):
        return None
    if addr.ipv4_mapped or addr.sixtofour:
        return addr.ipv4_mapped or addr.sixtofour
    return IPv4Address(int(addr) & 0xFFFFFFFF) if addr in _NAT64 else None


def is_metadata(addr: Address) -> bool:
    embedded = _embedded_ipv4(addr)
    return addr in METADATA_ADDRESSES or (embedded is not None and embedded in METADATA_ADDRESSES)


def address_refusal(addr: Address) -> str | None:
    """Why ``addr`` is no public address, or None when it is one.

    >>> address_refusal(ip_address("100.64.0.1")), address_refusal(ip_address("8.8.8.8"))
    ('a shared (CGNAT) address', None)
    """
    if is_metadata(addr):
        return "a cloud metadata address"
    embedded = _embedded_ipv4(addr)
    if embedded is not None:
        return address_refusal(embedded)
    checks = (
        (addr.is_unspecified, "unspecified"),
        (addr.is_loopback, "a loopback address"),
        (addr.is_link_local, "a link-local address"),
        (addr.is_multicast, "a multicast address"),
        (addr in _CGNAT, "a shared (CGNAT) address"),
        (addr.is_private, "a private address"),
        (addr.is_reserved, "a reserved address"),
        (any(addr in n for n in _SPECIAL) or not addr.is_global, "not a global address"),
    )
    return next((reason for hit, reason in checks if hit), None)


def allow_entry(entry: str) -> Network | str:
    """One allow-list entry: a CIDR (or single address), a host name or ``*.suffix``."""
    text = entry.strip().lower().rstrip(".")
    try:
        return ip_network(text, strict=False)
    except ValueError:
        pass
    name = text.removeprefix("*.")
    labels = name.split(".")
    if not name or not all(lab and all(c.isalnum() or c == "-" for c in lab) for lab in labels):
        raise ValueError(f"outbound_allow: {entry!r} is neither a CIDR nor a host name")
    return text


@dataclass(frozen=True)
class OutboundPolicy:
    """Public addresses, plus the allow-listed networks and host names."""

    networks: tuple[Network, ...] = ()
    hosts: frozenset[str] = frozenset()
    resolver: Resolver = field(default=system_resolver, compare=False)

    @classmethod
    def from_allow(
        cls, entries: Iterable[str], *, resolver: Resolver = system_resolver
    ) -> OutboundPolicy:
        parsed = [allow_entry(e) for e in entries if e.strip()]
        networks = tuple(p for p in parsed if not isinstance(p, str))
        hosts = frozenset(p for p in parsed if isinstance(p, str))
        return cls(networks, hosts, resolver)

    def _host_allowed(self, host: str) -> bool:
        return host in self.hosts or any(
            h.startswith("*.") and host.endswith(h[1:]) for h in self.hosts
        )

    def addresses(self, host: str, port: int) -> list[Address]:
        """Resolve ``host`` once and check EVERY address; connect only to what it returns.

        Raises :class:`OutboundRefused` when any address is refused, ``OSError`` when the
        name does not resolve (which may be transient).
        """
        host = host.lower().rstrip(".")
        if host in METADATA_HOSTS:
            raise OutboundRefused(f"{host} is a cloud metadata host")
        literal = literal_address(host)
        try:
            found = (
                [literal]
                if literal is not None
                else [ip_address(a) for a in self.resolver(host, port)]
            )
        except UnicodeError:  # idna: an empty or over-long label
            raise OutboundRefused(f"{host!r} is not a valid host name") from None
        if not found:
            raise OSError(f"{host} resolves to no address")
        by_name = self._host_allowed(host)
        for addr in found:
            metadata = is_metadata(addr)  # refused even where the allow-list covers it
            if not metadata and (by_name or any(addr in n for n in self.networks)):
                continue
            reason = address_refusal(addr)
            if reason is None:
                continue
            if literal is None:
                what = f"{host} resolves to {addr}, {reason}"
            else:
                what = (
                    f"{host} is {reason}" if host == str(addr) else f"{host} ({addr}) is {reason}"
                )
            hint = "" if metadata else "; TELLTALE_OUTBOUND_ALLOW can allow it"
            raise OutboundRefused(what + hint)
        return found

    def check_url(self, url: str) -> httpx.URL:
        """The check at channel creation: syntax, and every address the host has now.

        A name that does not resolve yet is accepted; the check at delivery refuses it if
        it ever resolves to a refused address.
        """
        parsed = parse_url(url)
        try:
            self.addresses(ascii_host(parsed), parsed.port or DEFAULT_PORTS[parsed.scheme])
        except OutboundRefused:
            raise
        except OSError:
            pass
        return parsed


def _target(policy: OutboundPolicy, request: httpx.Request) -> tuple[str, int, list[Address]]:
    """The request's host and port, and the addresses the policy checked for them."""
    url = request.url
    host, port = ascii_host(url), url.port or DEFAULT_PORTS.get(url.scheme, 0)
    try:
        return host, port, policy.addresses(host, port)
    except OutboundRefused:
        raise
    except OSError as exc:
        raise httpx.ConnectError(f"cannot resolve {host}: {exc}", request=request) from exc


def _pinned(request: httpx.Request, host: str, addr: Address) -> httpx.Request:
    """``request`` sent to ``addr``; the ``Host`` header (set when the request was built)
    and the TLS SNI stay the name's."""
    extensions = dict(request.extensions)
    if request.url.scheme == "https":
        extensions["sni_hostname"] = host
    return httpx.Request(request.method, request.url.copy_with(host=str(addr)),
                         headers=request.headers, stream=request.stream,
                         extensions=extensions)  # fmt: skip


class PinnedTransport(httpx.BaseTransport):
    """Sends each request to an address the policy checked, never to a second lookup.

    httpx would resolve the host again when it connects, and a DNS answer that changed in
    between (rebinding) would reach an address the check never saw. So the URL's host is
    replaced by a checked address while the ``Host`` header and the TLS SNI, hence the
    certificate check, stay the name's. One pool per (scheme, name, port): a TLS connection
    verified for one name is never reused for another name served from the same address.
    """

    def __init__(
        self,
        policy: OutboundPolicy,
        *,
        make_transport: Callable[[], httpx.BaseTransport] = httpx.HTTPTransport,
    ) -> None:
        self.policy = policy
        self.make_transport = make_transport
        self._pools: dict[tuple[str, str, int], httpx.BaseTransport] = {}

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        host, port, found = _target(self.policy, request)
        key = (request.url.scheme, host, port)
        if key not in self._pools:
            self._pools[key] = self.make_transport()
        pool = self._pools[key]
        error: httpx.TransportError | None = None
        for addr in found:  # every one was checked: try the next when one does not answer
            try:
                return pool.handle_request(_pinned(request, host, addr))
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                error = exc
        assert error is not None
        raise error

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()


class AsyncPinnedTransport(httpx.AsyncBaseTransport):
    """:class:`PinnedTransport` for asyncio clients (the online evaluators' judge calls):
    the same check of every address, the same pinning, one pool per name. Addresses are
    looked up once per name and port for the transport's life (one batch of calls)."""

    def __init__(
        self,
        policy: OutboundPolicy,
        *,
        make_transport: Callable[[], httpx.AsyncBaseTransport] = httpx.AsyncHTTPTransport,
    ) -> None:
        self.policy = policy
        self.make_transport = make_transport
        self._pools: dict[tuple[str, str, int], httpx.AsyncBaseTransport] = {}
        self._checked: dict[tuple[str, int], tuple[str, list[Address]]] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        name = (ascii_host(url), url.port or DEFAULT_PORTS.get(url.scheme, 0))
        if name not in self._checked:
            host, _, found = _target(self.policy, request)
            self._checked[name] = (host, found)
        host, found = self._checked[name]
        key = (url.scheme, *name)
        if key not in self._pools:
            self._pools[key] = self.make_transport()
        pool = self._pools[key]
        error: httpx.TransportError | None = None
        for addr in found:
            try:
                return await pool.handle_async_request(_pinned(request, host, addr))
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                error = exc
        assert error is not None
        raise error

    async def aclose(self) -> None:
        for pool in self._pools.values():
            await pool.aclose()
        self._pools.clear()
