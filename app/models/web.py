"""What the web UI and the installation keep server-side: the session secret and sessions.

The secret lives in the database, not a file, so every API replica behind a load balancer
signs and checks cookies with the same key without any configuration.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, UTCDateTime
from app.models.columns import Created


class InstallationSecret(Created, Base):
    """A secret generated once per installation (``name`` = what it signs)."""

    __tablename__ = "installation_secrets"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(String(128))


class WebSession(Created, Base):
    """A logged-in browser: the cookie is valid only while its row exists (logout deletes it)."""

    __tablename__ = "web_sessions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key_id: Mapped[int] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"))
    # SHA-256 of the cookie's nonce: a database reader learns no live cookie.
    nonce_hash: Mapped[str] = mapped_column(String(64), unique=True)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
