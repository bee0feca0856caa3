"""Durable notification delivery from the ``notifications`` table (the outbox).

A row is one notification of a channel's group (:mod:`app.alerts.groups`: it is due
after the group's wait or interval, and takes the group's alerts until it is claimed).
A row stays ``pending`` until a receiver answers 2xx, so delivery is at-least-once across
crashes and restarts (receivers dedupe on ``X-Telltale-Delivery``). A sender claims due
rows (:func:`app.db.claim_rows`) by pushing their ``next_attempt_at`` one lease ahead
inside a short transaction, then posts outside any transaction; a sender killed mid-post
leaves the row to be retried when the lease runs out. Failures back off exponentially
with jitter ("equal jitter": the delay is drawn from [(1 - jitter) d, d] with
d = base * 2^(attempt - 1), capped); 408, 429 and 5xx are retried and ``Retry-After`` is
honoured; any other 4xx is permanent (``dead``).

Every post goes through :class:`~app.alerts.outbound.PinnedTransport`: the host is resolved
and checked against the outbound policy right before the request, and the connection goes
to the checked address. A refused URL or address is permanent (``dead``, ``last_error``
says why). Redirects are never followed: a 3xx is a permanent failure too, since following
one would post to a URL nobody checked.
"""

from __future__ import annotations

import json
import logging
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
from sqlalchemy import Engine, func, select, update

from app import metrics
from app.alerts.channels import target_url
from app.alerts.outbound import OutboundPolicy, OutboundRefused, PinnedTransport, parse_url
from app.alerts.signing import SIGNATURE_HEADER, sign
from app.db import as_utc, claim_rows, write_session
from app.models import Channel, Notification
from app.models.base import utcnow
from app.retry import Backoff

log = logging.getLogger("telltale.outbox")
RETRYABLE_4XX = frozenset({408, 429})


# Failures back off from 2 s to at most 15 minutes, with jitter; a notification is dead
# after 12 attempts (24 to 47 minutes of waits between them, unless Retry-After says more).
OUTBOX_BACKOFF = Backoff(max_attempts=12, backoff_base_s=2.0, backoff_max_s=900.0, jitter=0.5)


@dataclass(frozen=True)
class DeliveryPolicy:
    retry: Backoff = OUTBOX_BACKOFF
    claim_lease_s: float = 120.0
    timeout_s: float = 10.0
    batch_size: int = 50
    max_retry_after_s: float = 3600.0


@dataclass(frozen=True)
class Delivery:
    id: int
    url: str
    body: bytes
    headers: dict[str, str]
    channel_type: str
    attempts: int


def encode(payload: Any) -> bytes:
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def retry_after_seconds(value: str | None, now: datetime) -> float | None:
    """``Retry-After`` as seconds (delta-seconds or an HTTP date); None when absent/bad."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        return max(0.0, (as_utc(parsedate_to_datetime(value)) - now).total_seconds())
    except (TypeError, ValueError):
        return None


class OutboxSender:
    """Claims due notifications and posts them; a background service or a one-shot pass."""

    name = "outbox-sender"

    def __init__(
        self,
        engine: Engine,
        *,
        policy: DeliveryPolicy | None = None,
        clock: Callable[[], datetime] = utcnow,
        seed: int | None = None,
        poll_interval_s: float = 1.0,
        outbound: OutboundPolicy | None = None,
    ) -> None:
        self.engine = engine
        self.policy = policy or DeliveryPolicy()
        self.outbound = outbound or OutboundPolicy()
        self.clock = clock
        self.rng = random.Random(seed)
        self.poll_interval_s = poll_interval_s
        self._client: httpx.Client | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- one pass --------------------------------------------------------------------
    def deliver_due(self) -> int:
        """Claim and post every due notification once; return how many were attempted."""
        deliveries = self._claim()
        for d in deliveries:
            self._deliver(d)
        self._update_backlog()
        return len(deliveries)

    def _claim(self) -> list[Delivery]:
        now = self.clock()
        with write_session(self.engine) as s:
            q = (
                select(Notification.id)
                .where(Notification.status == "pending", Notification.next_attempt_at <= now)
                .order_by(Notification.next_attempt_at, Notification.id)
                .limit(self.policy.batch_size)
            )
            ids = [row.id for row in claim_rows(s, q)]
            if not ids:
                return []
            s.execute(
                update(Notification)
                .where(Notification.id.in_(ids))
                # A claimed group row takes no more alerts: what is posted is what stays.
                .values(
                    next_attempt_at=now + timedelta(seconds=self.policy.claim_lease_s),
                    collecting=False,
                )
            )
            rows = s.execute(
                select(Notification, Channel)
                .join(Channel, Channel.id == Notification.channel_id)
                .where(Notification.id.in_(ids))
                .order_by(Notification.id)
            ).all()
        out = []
        for n, ch in rows:
            body = encode(n.payload)
            headers = {
                "Content-Type": "application/json",
                "User-Agent": "telltale-notifier/1",
                "X-Telltale-Event": n.event,
                "X-Telltale-Delivery": str(n.id),
            }
            if ch.secret and ch.type in ("webhook", "alertmanager"):
                headers[SIGNATURE_HEADER] = sign(ch.secret, body)
            out.append(Delivery(n.id, target_url(ch), body, headers, ch.type, n.attempts))
        return out

    def _http(self) -> httpx.Client:
        if self._client is None:
            self._client = httpx.Client(
                transport=PinnedTransport(self.outbound),
                timeout=self.policy.timeout_s,
                follow_redirects=False,
                trust_env=False,  # no proxy or .netrc from the environment
            )
        return self._client

    def _deliver(self, d: Delivery) -> None:
        retry_after: float | None = None
        try:
            parse_url(d.url)  # channels stored before the URL syntax was checked
            response = self._http().post(d.url, content=d.body, headers=d.headers)
        except OutboundRefused as exc:
            self._failed(d, f"refused: {exc}"[:500], permanent=True, reason="refused")
            return
        except httpx.HTTPError as exc:
            self._failed(d, f"{type(exc).__name__}: {exc}"[:500], permanent=False, reason="network")
            return
        code = response.status_code
        if 200 <= code < 300:
            self._sent(d)
            return
        retry_after = retry_after_seconds(response.headers.get("retry-after"), self.clock())
        permanent = not (code >= 500 or code in RETRYABLE_4XX)
        if 300 <= code < 400:
            detail = f"HTTP {code}: redirect not followed"
        else:
            detail = f"HTTP {code}: {response.text[:300]}"
        self._failed(d, detail, permanent=permanent, reason=str(code), retry_after=retry_after)

    def _sent(self, d: Delivery) -> None:
        with write_session(self.engine) as s:
            s.execute(
                update(Notification)
                .where(Notification.id == d.id)
                .values(
                    status="sent", attempts=d.attempts + 1, sent_at=self.clock(), last_error=None
                )
            )
        metrics.NOTIFICATIONS_SENT.labels(channel_type=d.channel_type).inc()

    def _failed(
        self,
        d: Delivery,
        error: str,
        *,
        permanent: bool,
        reason: str,
        retry_after: float | None = None,
    ) -> None:
        attempts = d.attempts + 1
        now = self.clock()
        dead = permanent or attempts >= self.policy.retry.max_attempts
        if retry_after is not None:
            delay = min(retry_after, self.policy.max_retry_after_s)
        else:
            delay = self.policy.retry.seconds(attempts, draw=self.rng.random())
        with write_session(self.engine) as s:
            s.execute(
                update(Notification)
                .where(Notification.id == d.id)
                .values(
                    status="dead" if dead else "pending",
                    attempts=attempts,
                    last_error=error,
                    next_attempt_at=now + timedelta(seconds=delay),
                )
            )
        metrics.NOTIFICATION_FAILURES.labels(channel_type=d.channel_type, reason=reason).inc()
        log.warning(
            "notification %s to %s failed (attempt %d%s): %s",
            d.id,
            d.channel_type,
            attempts,
            ", giving up" if dead else f", retry in {delay:.1f}s",
            error,
        )

    def _update_backlog(self) -> None:
        with self.engine.connect() as conn:
            pending = conn.scalar(
                select(func.count())
                .select_from(Notification)
                .where(Notification.status == "pending")
            )
        metrics.OUTBOX_BACKLOG.set(int(pending or 0))

    # -- background service ----------------------------------------------------------
    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                busy = self.deliver_due() >= self.policy.batch_size
            except Exception:
                log.exception("outbox pass failed; retrying")
                busy = False
            if not busy:
                self._stop.wait(self.poll_interval_s)

    @property
    def running(self) -> bool:
        """Whether the sender's thread is alive (the scheduler's heartbeat asks)."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.policy.timeout_s + 5)
        self.close()

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
