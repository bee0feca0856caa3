"""Input groups: the approximate input identity of :mod:`app.derive.groups`."""

from __future__ import annotations

from sqlalchemy import Integer, LargeBinary, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base
from app.models.columns import BigId, Created, ProjectOwned


class InputGroup(BigId, ProjectOwned, Created, Base):
    """The group of one distinct input (``input_hash``) of one agent.

    The first input of a group is its leader: ``group_key`` is its own hash and it keeps
    its input embedding in ``vector``; later members have no vector. A trace's attribute
    ``telltale.input_group`` is the ``group_key`` of its input.
    """

    __tablename__ = "input_groups"
    __table_args__ = (UniqueConstraint("project_id", "agent", "input_hash"),)

    agent: Mapped[str] = mapped_column(String(128))
    input_hash: Mapped[str] = mapped_column(String(128))
    group_key: Mapped[str] = mapped_column(String(128))
    dim: Mapped[int | None] = mapped_column(Integer, nullable=True)
    vector: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
